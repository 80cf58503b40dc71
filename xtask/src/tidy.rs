//! Tidy: the habits of `docs/architecture.md` and `../shared/reference/style.md` that a
//! test can check, run with the workspace's tests.
//!
//! - every Rust file starts with a `//!` doc comment saying what it is for;
//! - no `.unwrap()` outside tests (clippy's `unwrap_used` cannot tell user data from an
//!   invariant, and the crates keep `.expect("why")` for invariants);
//! - no tracked function takes a position (an index into a body, a schedule or a list of
//!   chunks) as its key, except the ones listed in [`POSITION_KEYED`] with the reason they
//!   still do: a new one has to be added there, in review, with its reason.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Tracked functions still keyed by a position, as `crate::function`, each with why.
    /// Removing an entry is progress; adding one needs a reason that convinces a reviewer.
    const POSITION_KEYED: &[(&str, &str)] = &[
        ("ir::func_group", "a group's ordinal among its function's groups (content-cut)"),
        ("plan::chain_block", "schedule positions in blocks; the chains are rebuilt per block"),
        ("plan::chunk_ops", "plan chunks are cut along the schedule"),
        ("plan::chunk_chains", "plan chunks are cut along the schedule"),
        ("plan::plan_parts_chunk", "plan chunks are cut along the schedule"),
        ("plan::merge_base_chunk", "plan chunks are cut along the schedule"),
        ("plan::plan_chunk", "plan chunks are cut along the schedule"),
        ("plan::plan_slice", "plan chunks are cut along the schedule"),
        ("plan::plan_carry", "plan chunks are cut along the schedule"),
        ("plan::base_chunk", "plan chunks are cut along the schedule"),
        ("plan::base_carry", "plan chunks are cut along the schedule"),
        ("plan::base_slice", "plan chunks are cut along the schedule"),
        ("plan::chunk_overridden", "plan chunks are cut along the schedule"),
        ("plan::overridden_chunk", "plan chunks (and a run's first) cut along the schedule"),
        ("plan::overridden_carry", "plan chunks (and a run's first) cut along the schedule"),
        ("plan::chunk_incoming", "plan chunks are cut along the schedule"),
        ("plan::chunk_cost", "plan chunks are cut along the schedule"),
        ("plan::foreign_op_plan", "an op's body index, read across a chunk cut"),
        ("plan::foreign_chain", "a chain's last op's body index, read across a chunk cut"),
        ("rewrite::rewrite_chunk", "plan chunks are cut along the schedule"),
        ("rewrite::reads_unscheduled", "plan chunks are cut along the schedule"),
        ("ide::chunk_findings", "plan chunks are cut along the schedule"),
    ];

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    fn rust_files() -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![workspace().join("crates"), workspace().join("xtask")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    if !p.ends_with("target") {
                        stack.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    fn read(p: &Path) -> String {
        crate::util::read_text(p).unwrap_or_default()
    }

    fn rel(p: &Path) -> String {
        p.strip_prefix(workspace()).unwrap_or(p).display().to_string()
    }

    /// The part of a source file before its test module (by convention, at the end).
    fn non_test(text: &str) -> &str {
        let cut = text
            .match_indices("#[cfg(test)]")
            .map(|(i, _)| i)
            .find(|&i| text[i..].lines().nth(1).is_some_and(|l| l.trim_start().starts_with("mod ")))
            .unwrap_or(text.len());
        &text[..cut]
    }

    fn is_test_file(p: &Path) -> bool {
        let s = rel(p);
        s.contains("/tests/") || s.ends_with("tests.rs") || s.ends_with("_tests.rs")
    }

    #[test]
    fn every_rust_file_starts_with_a_module_doc_comment() {
        let missing: Vec<String> = rust_files()
            .into_iter()
            .filter(|p| !read(p).trim_start().starts_with("//!"))
            .map(|p| rel(&p))
            .collect();
        assert!(missing.is_empty(), "files without a `//!` doc comment: {missing:#?}");
    }

    #[test]
    fn no_unwrap_outside_tests() {
        let mut found = Vec::new();
        for p in rust_files().into_iter().filter(|p| !is_test_file(p)) {
            if rel(&p).starts_with("xtask/src/tidy.rs") {
                continue;
            }
            let text = read(&p);
            for (n, line) in non_test(&text).lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains(".unwrap()") {
                    found.push(format!("{}:{}: {}", rel(&p), n + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "`.unwrap()` outside tests (say why with `.expect`, or handle the case): {found:#?}"
        );
    }

    /// The tracked functions of the workspace with a parameter of an integer type after the
    /// database, as `crate::function`.
    fn position_keyed() -> Vec<String> {
        let mut out = Vec::new();
        for p in rust_files().into_iter().filter(|p| !is_test_file(p)) {
            let path = rel(&p);
            let Some(krate) = path.strip_prefix("crates/").and_then(|s| s.split('/').next()) else {
                continue;
            };
            let krate = krate.replace('-', "_");
            let text = read(&p);
            let text = non_test(&text);
            for (i, _) in text.match_indices("#[salsa::tracked") {
                let rest = &text[i..];
                let Some(f) = rest.find("fn ") else { continue };
                let sig = &rest[f..];
                let Some(end) = sig.find(')') else { continue };
                let sig = &sig[..end];
                let name = sig[3..].split('(').next().unwrap_or("").trim();
                let params = sig.split_once('(').map_or("", |(_, p)| p);
                let integer = params.split(',').skip(1).any(|param| {
                    let ty = param.split(':').nth(1).unwrap_or("").trim();
                    matches!(ty, "u32" | "usize" | "u64" | "i32" | "i64")
                });
                if integer {
                    out.push(format!("{krate}::{name}"));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn no_new_tracked_function_is_keyed_by_a_position() {
        let found = position_keyed();
        let listed: Vec<&str> = POSITION_KEYED.iter().map(|(f, _)| *f).collect();
        let new: Vec<&String> = found.iter().filter(|f| !listed.contains(&f.as_str())).collect();
        assert!(
            new.is_empty(),
            "tracked functions keyed by an integer (a position?): key them by ids built from \
             names, or list them in `POSITION_KEYED` with the reason: {new:#?}"
        );
        let stale: Vec<&&str> = listed.iter().filter(|f| !found.iter().any(|g| g == *f)).collect();
        assert!(stale.is_empty(), "`POSITION_KEYED` lists functions that are gone: {stale:#?}");
    }
}
