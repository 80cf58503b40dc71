//! `cargo xtask ttmlir-tests [DIR]`: run tt-mlir's legacy optimizer lit tests against our
//! optimizer and count the decisions we agree on.
//!
//! The tests live in `../shared/corpus/ttmlir-legacy-optimizer/` and are read here, never
//! copied. For each file: the RUN lines' pipeline options select a policy and give the
//! overrides; the TTIR input is imported with `crates/import` (a TTNN input is used as is);
//! the file is optimized; and each CHECK line is compared with the result:
//!
//! - a line naming a TTNN op with a result layout (`"ttnn.add"{{.*}} -> tensor<.., #[[L]]>`)
//!   is a *layout decision*: the layout it asserts (buffer, memory layout, grid, memref shape,
//!   page layout and data type, each only where the line spells it) must be the planned
//!   layout of the op the CHECK line sits above (matched by `loc` name, else by the op's
//!   kind and ordinal);
//! - a `ttnn.to_memory_config` / `ttnn.to_layout` line is a *conversion decision*: the op
//!   below it must get an operand converted to that layout, or the op above it spilled to it;
//! - a line with `conv2d_config` or `program_config` fields is a *config decision*: every
//!   `key = value` it spells must appear on that op in the optimized IR;
//! - a `CHECK-NOT` naming `#l1` is an *absence of L1* decision: no op may be planned in L1;
//! - any other line is matched as text against the optimized IR, FileCheck-like but lenient:
//!   `{{regex}}` and `[[VAR]]` stand for any text, and the order of lines is not checked.
//!   Alias definitions (`#[[L:.*]] = ...`) are not decisions; they name layouts for the rest.
//!
//! Tests that need what we lack (d2m subgraph creation, a pass other than the optimizer, an
//! input outside the file) are skipped with the reason, and so are tests tt-mlir itself marks
//! `XFAIL` and tests whose pipeline runs no optimizer. The summary line gives the agreed decisions over all of them;
//! `--table` prints the per-test table that `docs/optimizer.md` holds.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
};

use ide::{AnalysisHost, Change, OpDecision, Options, PlanReport, Policy};
use ttnn_types::{BufferType, TtnnLayout};

/// One test's outcome.
struct Outcome {
    name: String,
    /// Why the test was not run, if it was not.
    skipped: Option<String>,
    /// The options read from the RUN line, as the policy and the overrides text.
    setup: String,
    decisions: Vec<Decision>,
}

/// One asserted decision and whether we agree.
struct Decision {
    /// The CHECK line, trimmed (one line, `CHECK-SAME` continuations joined).
    check: String,
    kind: &'static str,
    /// `None` when we agree; else what we did instead.
    disagreement: Option<String>,
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let table = args.iter().any(|a| a == "--table");
    let verbose = args.iter().any(|a| a == "--verbose");
    let min = args
        .iter()
        .find_map(|a| a.strip_prefix("--min-agreement="))
        .map(str::parse::<f64>)
        .transpose()?;
    // `../shared` beside the checkout; a worktree one level deeper finds it one level up.
    let default = ["../shared", "../../shared"]
        .iter()
        .map(|s| root.join(s).join("corpus/ttmlir-legacy-optimizer"))
        .find(|d| d.exists())
        .unwrap_or_else(|| root.join("../shared/corpus/ttmlir-legacy-optimizer"));
    let dir =
        args.iter().find(|a| !a.starts_with("--")).map_or(default, |d| Path::new(d).to_path_buf());
    let mut out = std::io::stdout().lock();
    if !dir.exists() {
        writeln!(out, "no tt-mlir tests at {}; nothing to check", dir.display())?;
        return Ok(());
    }
    let mut files: Vec<PathBuf> = Vec::new();
    crate::corpus::collect_mlir_files(&dir, &mut files)?;
    files.sort();
    let mut outcomes = Vec::new();
    for path in &files {
        let text = crate::util::read_text(path)?;
        let name = path.strip_prefix(&dir).unwrap_or(path).display().to_string();
        outcomes.push(run_test(&name, &text));
    }
    let run_tests: Vec<&Outcome> = outcomes.iter().filter(|o| o.skipped.is_none()).collect();
    let asserted: usize = run_tests.iter().map(|o| o.decisions.len()).sum();
    let agreed: usize = run_tests
        .iter()
        .map(|o| o.decisions.iter().filter(|d| d.disagreement.is_none()).count())
        .sum();
    if table {
        write!(out, "{}", markdown_table(&outcomes))?;
    }
    for o in &outcomes {
        match &o.skipped {
            Some(why) => {
                if verbose {
                    writeln!(out, "SKIP {}: {why}", o.name)?;
                }
            }
            None => {
                let bad: Vec<&Decision> =
                    o.decisions.iter().filter(|d| d.disagreement.is_some()).collect();
                if verbose || !bad.is_empty() {
                    writeln!(
                        out,
                        "{} {} ({}): {}/{} agreed",
                        if bad.is_empty() { "ok  " } else { "DIFF" },
                        o.name,
                        o.setup,
                        o.decisions.len() - bad.len(),
                        o.decisions.len()
                    )?;
                }
                for d in o.decisions.iter().filter(|d| verbose || d.disagreement.is_some()) {
                    let verdict = d.disagreement.as_deref().unwrap_or("agreed");
                    writeln!(out, "    [{}] {}\n        {verdict}", d.kind, d.check)?;
                }
            }
        }
    }
    let percent = if asserted == 0 { 100.0 } else { 100.0 * agreed as f64 / asserted as f64 };
    writeln!(
        out,
        "ttmlir-tests: {} files, {} run, {} skipped; {agreed} of {asserted} asserted decisions agreed ({percent:.1}%)",
        outcomes.len(),
        run_tests.len(),
        outcomes.len() - run_tests.len()
    )?;
    if let Some(min) = min
        && percent < min
    {
        anyhow::bail!("agreement {percent:.1}% is below the required {min}%");
    }
    Ok(())
}

/// The per-test table of `docs/optimizer.md`: test, setup, asserted, agreed.
fn markdown_table(outcomes: &[Outcome]) -> String {
    let mut s = String::from("| test | run as | asserted | agreed |\n|---|---|---:|---:|\n");
    for o in outcomes {
        match &o.skipped {
            Some(why) => {
                let _ = writeln!(s, "| `{}` | skipped: {why} | | |", o.name);
            }
            None => {
                let agreed = o.decisions.iter().filter(|d| d.disagreement.is_none()).count();
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {} | {agreed} |",
                    o.name,
                    o.setup,
                    o.decisions.len()
                );
            }
        }
    }
    s
}

/// The RUN lines of a test, continuation lines (`\`) joined.
fn run_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for l in text.lines() {
        let Some(rest) = l.trim_start().strip_prefix("// RUN:") else { continue };
        let rest = rest.trim();
        if let Some(part) = rest.strip_suffix('\\') {
            cur.push_str(part);
            cur.push(' ');
        } else {
            cur.push_str(rest);
            lines.push(std::mem::take(&mut cur));
        }
    }
    lines
}

/// The quoted option string of `--flag="..."` in `line`.
fn quoted_option<'a>(line: &'a str, flag: &str) -> Option<&'a str> {
    let start = line.find(flag)? + flag.len();
    let rest = line[start..].strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// What a RUN line's options ask of the optimizer, or why we cannot run it.
struct Setup {
    policy: Policy,
    overrides: String,
    /// Options that change tt-mlir's result and that we do not honour.
    unsupported: Vec<String>,
    ttnn_input: bool,
    description: String,
}

fn setup_of(text: &str) -> Result<Setup, String> {
    if text.lines().any(|l| l.trim_start().starts_with("// XFAIL:")) {
        return Err("marked XFAIL in tt-mlir".to_owned());
    }
    // lit never runs a test whose `UNSUPPORTED:` condition holds (`true` always does), so
    // its CHECK lines are not decisions tt-mlir makes.
    if text
        .lines()
        .any(|l| l.trim_start().strip_prefix("// UNSUPPORTED:").is_some_and(|c| c.trim() == "true"))
    {
        return Err("marked `UNSUPPORTED: true` in tt-mlir (lit never runs it)".to_owned());
    }
    let runs = run_lines(text);
    let Some(first) = runs.first() else { return Err("no RUN line".to_owned()) };
    if first.contains("%models") {
        return Err("its input is a model file outside the test".to_owned());
    }
    let (options, ttnn_input) = if let Some(o) =
        quoted_option(first, "--ttir-to-ttnn-backend-pipeline=")
    {
        (o, false)
    } else if let Some(o) = quoted_option(first, "--ttnn-optimizer=") {
        (o, true)
    } else {
        let pass =
            first.split_whitespace().find(|w| w.starts_with("--ttnn-")).unwrap_or("another pass");
        return Err(format!("tests `{pass}`, not the optimizer"));
    };
    if first.contains("--mlir-print-ir-after=ttnn-fusing") {
        return Err("tests the IR after `ttnn-fusing`, a pass other than the optimizer".to_owned());
    }
    if first.contains("--ttnn-create-d2m-subgraphs") {
        return Err(
            "needs d2m subgraph creation (`--ttnn-create-d2m-subgraphs`), which we do not do"
                .to_owned(),
        );
    }
    let mut opts: BTreeMap<&str, &str> = BTreeMap::new();
    for o in options.split_whitespace() {
        let (k, v) = o.split_once('=').unwrap_or((o, "true"));
        opts.insert(k, v);
    }
    let get = |k: &str| opts.get(k).copied();
    if get("enable-create-d2m-subgraphs") == Some("true") {
        return Err(
            "needs d2m subgraph creation (`enable-create-d2m-subgraphs`), which we do not do"
                .to_owned(),
        );
    }
    let level: u32 = get("optimization-level").and_then(|v| v.parse().ok()).unwrap_or(0);
    // `enable-greedy-optimizer=true` picks which optimizer runs, not whether one does: in
    // tt-mlir's pipeline (e9a7aead68fe, `resolveOptimizationLevelOptions` and
    // `createTTNNPipelineAnalysisPasses`) the optimizer runs only at level 1 or above or with
    // `enable-optimizer=true`, and greedy's spill management only with the memory-layout
    // analysis (level 2). A RUN line with the flag alone runs no optimizer, whatever the
    // test's comments expect of it.
    let greedy_flag = get("enable-greedy-optimizer") == Some("true");
    let optimizer = ttnn_input || level >= 1 || get("enable-optimizer") == Some("true");
    // tt-mlir HEAD runs the greedy optimizer wherever the optimizer runs on a TTIR input,
    // unless the RUN line turns it off.
    let greedy = greedy_flag
        || (optimizer && !ttnn_input && get("enable-greedy-optimizer") != Some("false"));
    if !optimizer {
        return Err(if greedy_flag {
            "runs without the optimizer (`enable-greedy-optimizer=true` at optimization level \
             0 selects greedy for when the optimizer runs, and it does not)"
                .to_owned()
        } else {
            "runs without the optimizer".to_owned()
        });
    }
    let sharding = match get("memory-layout-analysis-enabled") {
        Some(v) => v == "true",
        None => level >= 2,
    };
    let mut overrides = Vec::new();
    let mut description = Vec::new();
    for key in [
        "override-output-layout",
        "override-conv2d-config",
        "insert-memreconfig",
        "max-legal-layouts",
        "row-major-enabled",
        "l1-interleaved-fallback-analysis-enabled",
        "tensor-l1-usage-cap",
    ] {
        if let Some(v) = get(key) {
            overrides.push(format!("{key}={v}"));
            description.push(format!("`{key}`"));
        }
    }
    if !sharding {
        // Without the memory-layout analysis tt-mlir builds no chain: every op takes its first
        // legal layout, the one an output-layout override leaves included.
        overrides.push("memory-layout-analysis-enabled=false".to_owned());
        description.insert(0, "no memory-layout analysis".to_owned());
    }
    let mut unsupported = Vec::new();
    for key in ["override-conv3d-config", "disable-workarounds"] {
        if get(key).is_some() {
            unsupported.push(format!("`{key}`"));
        }
    }
    if let Some(p) = get("memory-layout-analysis-policy")
        && p != "DFSharding"
    {
        return Err(format!("uses the `{p}` policy, which we do not have"));
    }
    let policy = if greedy { Policy::Greedy } else { Policy::DfSharding };
    let mut d = format!(
        "{}{}",
        policy.name(),
        if description.is_empty() {
            String::new()
        } else {
            format!(", {}", description.join(", "))
        }
    );
    if !unsupported.is_empty() {
        let _ = write!(d, "; not honoured: {}", unsupported.join(", "));
    }
    Ok(Setup { policy, overrides: overrides.join(" "), unsupported, ttnn_input, description: d })
}

fn run_test(name: &str, text: &str) -> Outcome {
    // tt-mlir keeps its fusion tests under `optimizer/ttnn_fusing/`; they assert which ops
    // `ttnn-fusing` forms, which the importer does only in part (docs/import.md).
    let fusing = Path::new(name).components().any(|c| c.as_os_str() == "ttnn_fusing");
    let setup = if fusing {
        Err("tests tt-mlir's `ttnn-fusing` pass (which ops it fuses), not the optimizer".to_owned())
    } else {
        setup_of(text)
    };
    let setup = match setup {
        Ok(s) => s,
        Err(why) => {
            return Outcome {
                name: name.to_owned(),
                skipped: Some(why),
                setup: String::new(),
                decisions: Vec::new(),
            };
        }
    };
    let _ = &setup.unsupported;
    let skip = |why: String| Outcome {
        name: name.to_owned(),
        skipped: Some(why),
        setup: setup.description.clone(),
        decisions: Vec::new(),
    };
    let ttnn = if setup.ttnn_input {
        text.to_owned()
    } else {
        let imported = import::import_ttir(text, name);
        if imported.has_errors() {
            let first = imported.diagnostics.iter().find(|d| d.severity == import::Severity::Error);
            return skip(format!(
                "the import has errors ({})",
                first.map_or_else(String::new, |d| d.message.clone())
            ));
        }
        imported.ttnn
    };
    let options = Options { policy: setup.policy, ..Options::tt_mlir_defaults() };
    let mut host = AnalysisHost::new(target::Target::n150(), options);
    host.apply_change(
        Change::new()
            .set_file(name.to_owned(), ttnn.clone())
            .set_overrides("options", setup.overrides.clone()),
    );
    let Some(file) = host.file(name) else { return skip("the file was not loaded".to_owned()) };
    let analysis = host.analysis();
    let (Ok(report), Ok(final_ir)) = (analysis.plan_report(file), analysis.final_ir(file)) else {
        return skip("the analysis was cancelled".to_owned());
    };
    // A RUN line with `--mlir-print-local-scope` prints attributes inline, no aliases: the
    // CHECK lines spell layouts in place, so they are matched against the text so printed.
    let printed = if run_lines(text).first().is_some_and(|l| l.contains("mlir-print-local-scope")) {
        inline_aliases(&final_ir.text)
    } else {
        final_ir.text.clone()
    };
    let decisions = compare(text, &report, &printed);
    Outcome { name: name.to_owned(), skipped: None, setup: setup.description, decisions }
}

/// `ir` with every attribute alias (`#name = ...` at the top) replaced by its definition,
/// as `--mlir-print-local-scope` prints it, and the alias definitions dropped.
fn inline_aliases(ir: &str) -> String {
    let mut defs: Vec<(String, String)> = Vec::new();
    let mut body = String::new();
    for line in ir.lines() {
        let alias = line
            .strip_prefix('#')
            .and_then(|rest| rest.split_once(" = "))
            .filter(|(name, _)| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        match alias {
            Some((name, def)) => defs.push((format!("#{name}"), def.to_owned())),
            None => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    // Definitions may name earlier aliases (`#dram` in a layout): resolve them first.
    for i in 0..defs.len() {
        let (head, tail) = defs.split_at_mut(i);
        for (name, def) in head.iter() {
            tail[0].1 = replace_alias(&tail[0].1, name, def);
        }
    }
    // Longest names first, so `#ttnn_layout` does not eat the front of `#ttnn_layout1`.
    defs.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    for (name, def) in &defs {
        body = replace_alias(&body, name, def);
    }
    body
}

/// `text` with the alias `name` replaced by `def` where it stands alone (not followed by
/// another identifier character).
fn replace_alias(text: &str, name: &str, def: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(name) {
        let after = &rest[at + name.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            out.push_str(name);
        } else {
            out.push_str(def);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A CHECK directive: its kind (`CHECK`, `CHECK-NOT`, ...), pattern, and the source line it
/// sits on.
struct Check {
    directive: String,
    pattern: String,
    line: usize,
}

fn checks(text: &str) -> Vec<Check> {
    let mut out: Vec<Check> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim_start();
        let Some(rest) = t.strip_prefix("//") else { continue };
        let rest = rest.trim_start();
        let Some((directive, pattern)) = rest.split_once(':') else { continue };
        if !directive.starts_with("CHECK") || directive.contains(' ') {
            continue;
        }
        let pattern = pattern.trim().to_owned();
        if directive == "CHECK-SAME"
            && let Some(prev) = out.last_mut()
        {
            // FileCheck reads a `CHECK-SAME` anywhere after the previous match on its line,
            // with nothing between required: not even a space (`"ttnn.argmax"` and `-> ..`
            // of `"ttnn.argmax"(%0) ... -> tensor<3xui32>`).
            prev.pattern.push_str("{{.*}}");
            prev.pattern.push_str(&pattern);
            continue;
        }
        out.push(Check { directive: directive.to_owned(), pattern, line: i });
    }
    out
}

/// The `loc` names of a file: `#locN` alias -> name.
fn loc_aliases(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let l = l.trim();
        if let Some((alias, rest)) = l.split_once(" = loc(\"")
            && alias.starts_with("#loc")
            && let Some(end) = rest.find('"')
        {
            m.insert(alias.to_owned(), rest[..end].to_owned());
        }
    }
    m
}

/// The op a CHECK line describes: the first op line after it, as (`loc` name, op kind).
fn op_below(
    text: &str,
    line: usize,
    locs: &BTreeMap<String, String>,
) -> Option<(Option<String>, String)> {
    for l in text.lines().skip(line + 1) {
        let t = l.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let q = t.find("\"ttir.").or_else(|| t.find("\"ttnn."))?;
        let kind_end = t[q + 1..].find('"')? + q + 1;
        let kind = t[q + 1..kind_end].replacen("ttir.", "ttnn.", 1);
        let loc = t.rfind("loc(").and_then(|p| {
            let inner = &t[p + 4..];
            if let Some(s) = inner.strip_prefix('"') {
                s.find('"').map(|e| s[..e].to_owned())
            } else {
                let alias: String = inner.chars().take_while(|c| *c != ')').collect();
                locs.get(&alias).cloned()
            }
        });
        return Some((loc, kind));
    }
    None
}

/// The fields of an asserted layout that the CHECK text spells out.
#[derive(Debug, Default)]
struct AssertedLayout {
    buffer: Option<BufferType>,
    memory_layout: Option<String>,
    grid: Option<(u64, u64)>,
    memref: Option<Vec<u64>>,
    tiled: Option<bool>,
    dtype: Option<String>,
}

/// Decodes what a (possibly partial) `#ttnn.ttnn_layout<...>` CHECK text says. `buffers`
/// maps FileCheck names bound to buffer types (`L1_` -> l1).
fn decode_layout(text: &str, buffers: &BTreeMap<String, BufferType>) -> AssertedLayout {
    let mut a = AssertedLayout::default();
    // The grid follows the affine map: `-> (...), <RxC>`.
    if let Some(p) = text.find("), <") {
        let rest = &text[p + 4..];
        if let Some(e) = rest.find('>')
            && let Some((r, c)) = rest[..e].split_once('x')
            && let (Ok(r), Ok(c)) = (r.parse(), c.parse())
        {
            a.grid = Some((r, c));
        }
    }
    if let Some(p) = text.find("memref<") {
        let rest = &text[p + 7..];
        let dims: Vec<&str> = rest.split('x').collect();
        let mut shape = Vec::new();
        for d in &dims {
            match d.parse::<u64>() {
                Ok(v) => shape.push(v),
                Err(_) => break,
            }
        }
        let elem_start: usize = dims.iter().take(shape.len()).map(|d| d.len() + 1).sum();
        let elem = &rest[elem_start.min(rest.len())..];
        if !shape.is_empty() && !elem.starts_with('{') {
            a.memref = Some(shape);
        }
        if let Some(t) = elem.strip_prefix("!ttcore.tile<32x32, ") {
            a.tiled = Some(true);
            a.dtype = t.split(['>', ',', '{']).next().map(str::to_owned);
        } else if !elem.starts_with('{') && !elem.is_empty() {
            a.tiled = Some(false);
            a.dtype = elem.split([',', '>', '{']).next().map(str::to_owned);
        }
        // The buffer: `#dram`, `#l1`, `#l1_` or a FileCheck name bound to a buffer type.
        if let Some(h) = rest.find(", #") {
            let b = &rest[h + 3..];
            let word: String = b.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            a.buffer = match word.trim_end_matches('_') {
                "dram" => Some(BufferType::Dram),
                "l1" => Some(BufferType::L1),
                "system_memory" => Some(BufferType::SystemMemory),
                _ => b
                    .strip_prefix("[[")
                    .and_then(|n| buffers.get(n.split(']').next().unwrap_or("")).copied()),
            };
        }
        // `memref<{{.*}}#l1>`: the buffer after a FileCheck wildcard, with no `, ` before it.
        if a.buffer.is_none() {
            a.buffer = [
                ("#l1>", BufferType::L1),
                ("#l1_>", BufferType::L1),
                ("#dram>", BufferType::Dram),
                ("#system_memory>", BufferType::SystemMemory),
            ]
            .into_iter()
            .filter_map(|(k, b)| rest.find(k).map(|p| (p, b)))
            .min_by_key(|(p, _)| *p)
            .map(|(_, b)| b);
        }
    }
    for ml in ["interleaved", "height_sharded", "width_sharded", "block_sharded"] {
        if text.contains(&format!("<{ml}>")) {
            a.memory_layout = Some(ml.to_owned());
        }
    }
    // A check such as `"ttnn.rotary_embedding"{{.*}}height_sharded` names the memory layout
    // of the result printed inline (`--mlir-print-local-scope`).
    if a.memory_layout.is_none() {
        a.memory_layout = ["height_sharded", "width_sharded", "block_sharded"]
            .into_iter()
            .find(|ml| text.contains(ml))
            .map(str::to_owned);
    }
    a
}

/// How `ours` differs from the asserted fields, or `None` when it has every one.
fn layout_mismatch(a: &AssertedLayout, ours: Option<&TtnnLayout>) -> Option<String> {
    let Some(l) = ours else { return Some("no layout".to_owned()) };
    let mut diffs = Vec::new();
    if let Some(b) = a.buffer
        && b != l.buffer
    {
        diffs.push(format!("buffer {} (asserted {})", l.buffer.keyword(), b.keyword()));
    }
    let ml = l.memory_layout.map(|m| m.keyword().to_owned()).unwrap_or_default();
    if let Some(m) = &a.memory_layout
        && *m != ml
    {
        diffs.push(format!("memory layout {ml} (asserted {m})"));
    }
    let g = l.grid2d();
    if let Some((r, c)) = a.grid
        && (r, c) != (g.rows, g.cols)
    {
        diffs.push(format!("grid {}x{} (asserted {r}x{c})", g.rows, g.cols));
    }
    if let Some(m) = &a.memref
        && m.as_slice() != &l.memref_shape[..]
    {
        diffs.push(format!("memref {:?} (asserted {m:?})", l.memref_shape));
    }
    if let Some(t) = a.tiled
        && t != (l.page_layout() == ttnn_types::PageLayout::Tile)
    {
        diffs.push(format!(
            "page layout {} (asserted {})",
            l.page_layout(),
            if t { "tile" } else { "row_major" }
        ));
    }
    if let Some(d) = &a.dtype
        && let Some(ours) = l.data_type()
        && ours.keyword() != d
    {
        diffs.push(format!("data type {ours} (asserted {d})"));
    }
    if diffs.is_empty() { None } else { Some(diffs.join(", ")) }
}

/// Compares every CHECK line of `text` with our plan and optimized IR.
fn compare(text: &str, report: &PlanReport, final_ir: &str) -> Vec<Decision> {
    let locs = loc_aliases(text);
    let checks = checks(text);
    // FileCheck names bound by definition lines: layouts and buffer types.
    let mut layouts: BTreeMap<String, String> = BTreeMap::new();
    let mut buffers: BTreeMap<String, BufferType> = BTreeMap::new();
    for c in &checks {
        if let Some(rest) = c.pattern.strip_prefix("#[[")
            && let Some((name, def)) = rest.split_once(":.*]] = ")
        {
            if let Some(b) = def.strip_prefix("#ttnn.buffer_type<") {
                if let Some(bt) = BufferType::from_keyword(b.trim_end_matches('>')) {
                    buffers.insert(name.to_owned(), bt);
                }
            } else {
                layouts.insert(name.to_owned(), def.to_owned());
            }
        }
    }
    let mut kind_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut decisions = Vec::new();
    for c in &checks {
        let p = &c.pattern;
        if p.starts_with("#[[") && p.contains(":.*]] = ") {
            continue;
        }
        if c.directive == "CHECK-NOT" {
            if p.contains("#l1") || p.contains("<l1>") {
                let in_l1: Vec<&str> = report
                    .ops
                    .iter()
                    .filter(|d| d.planned.as_ref().is_some_and(|l| l.buffer == BufferType::L1))
                    .map(|d| d.op.as_str())
                    .collect();
                decisions.push(Decision {
                    check: format!("{}: {p}", c.directive),
                    kind: "no L1",
                    disagreement: (!in_l1.is_empty())
                        .then(|| format!("planned in L1: {}", in_l1.join(", "))),
                });
            } else {
                let found = final_ir.lines().any(|l| glob_match(p, l));
                decisions.push(Decision {
                    check: format!("{}: {p}", c.directive),
                    kind: "text absent",
                    disagreement: found.then(|| "the optimized IR has such a line".to_owned()),
                });
            }
            continue;
        }
        let op_kind = p
            .find("\"ttnn.")
            .and_then(|q| p[q + 1..].find('"').map(|e| p[q + 1..q + 1 + e].to_owned()));
        let layout_text = asserted_layout(p, &layouts);
        let below = op_below(text, c.line, &locs);
        let ordinal = op_kind.as_ref().map(|k| {
            let n = kind_seen.entry(k.clone()).or_default();
            *n += 1;
            *n - 1
        });
        let find_op = |kind: &str| -> Option<&OpDecision> {
            if let Some((Some(loc), _)) = &below
                && let Some(d) = report.ops.iter().find(|d| d.op == *loc && d.kind == kind)
            {
                return Some(d);
            }
            report.ops.iter().filter(|d| d.kind == kind).nth(ordinal.unwrap_or(0))
        };
        let check = format!("{}: {p}", c.directive);
        match (&op_kind, &layout_text) {
            (Some(k), Some(lt)) if k == "ttnn.to_memory_config" || k == "ttnn.to_layout" => {
                let asserted = decode_layout(lt, &buffers);
                let consumer = below.as_ref().and_then(|(loc, kind)| {
                    report
                        .ops
                        .iter()
                        .find(|d| loc.as_ref().is_some_and(|l| d.op == *l) && d.kind == *kind)
                });
                let ok = consumer.is_some_and(|d| {
                    d.reshards.iter().any(|(_, l, _)| layout_mismatch(&asserted, Some(l)).is_none())
                }) || report.ops.iter().any(|d| {
                    d.spill
                        .as_ref()
                        .is_some_and(|(l, _)| layout_mismatch(&asserted, Some(l)).is_none())
                });
                decisions.push(Decision {
                    check,
                    kind: "conversion",
                    disagreement: (!ok).then(|| match consumer {
                        Some(d) => format!(
                            "no conversion to that layout in front of `{}` (ours: {})",
                            d.op,
                            describe_reshards(d)
                        ),
                        None => "no conversion to that layout".to_owned(),
                    }),
                });
            }
            (Some(k), Some(lt)) => {
                let asserted = decode_layout(lt, &buffers);
                let disagreement = match find_op(k) {
                    None => Some(format!("no `{k}` op in our plan")),
                    Some(d) => layout_mismatch(&asserted, d.planned.as_ref())
                        .map(|m| format!("`{}`: {m}", d.op)),
                };
                decisions.push(Decision { check, kind: "layout", disagreement });
            }
            (Some(k), None) if p.contains("conv2d_config") || p.contains("program_config") => {
                let fields = literal_fields(p);
                let op_text = find_op(k).and_then(|d| op_line(final_ir, &d.op));
                let missing: Vec<&String> = fields
                    .iter()
                    .filter(|f| !op_text.as_ref().is_some_and(|t| t.contains(f.as_str())))
                    .collect();
                decisions.push(Decision {
                    check,
                    kind: "config",
                    disagreement: (!missing.is_empty()).then(|| {
                        format!(
                            "missing on our op: {}",
                            missing.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
                        )
                    }),
                });
            }
            _ => {
                let found = final_ir.lines().any(|l| glob_match(p, l));
                decisions.push(Decision {
                    check,
                    kind: "text",
                    disagreement: (!found)
                        .then(|| "no line of the optimized IR matches".to_owned()),
                });
            }
        }
    }
    decisions
}

fn describe_reshards(d: &OpDecision) -> String {
    if d.reshards.is_empty() {
        return "none".to_owned();
    }
    d.reshards
        .iter()
        .map(|(k, l, _)| format!("operand {k} to {}", l.describe()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The text of the layout a CHECK op line gives its (first) result: an inline
/// `#ttnn.ttnn_layout<...>` or the definition of a `#[[NAME]]` it names after `->`.
fn result_layout(p: &str, layouts: &BTreeMap<String, String>) -> Option<String> {
    let arrow = p.rfind("->")?;
    let after = &p[arrow..];
    if let Some(q) = after.find("#ttnn.ttnn_layout<") {
        return Some(after[q..].to_owned());
    }
    let q = after.find("#[[")?;
    let name: String = after[q + 3..].chars().take_while(|c| *c != ']').collect();
    layouts.get(&name).cloned()
}

/// The layout text a CHECK op line asserts for its result: the one after `->`, else the
/// line's own text when it names a buffer or a sharding. A `shard_layout = ..._sharded` field
/// of a config the line spells is the config's, not the result's, so such a line without a
/// result layout asserts none (it is a config decision).
fn asserted_layout(p: &str, layouts: &BTreeMap<String, String>) -> Option<String> {
    result_layout(p, layouts).or_else(|| {
        let after = &p[p.find("\"ttnn.")?..];
        if after.contains("conv2d_config") || after.contains("program_config") {
            return None;
        }
        ["_sharded", "#l1", "#dram"].iter().any(|k| after.contains(k)).then(|| after.to_owned())
    })
}

/// `key = value` pairs a config CHECK spells literally; a FileCheck pattern (`{{...}}`)
/// separates fields as a comma does, and a piece with a capture (`[[...]]`) is not literal.
fn literal_fields(p: &str) -> Vec<String> {
    let start = p.find("config").unwrap_or(0);
    let body = &p[start..];
    let body = body.find('<').map_or(body, |q| &body[q + 1..]);
    let mut plain = String::new();
    let mut rest = body;
    while let Some(open) = rest.find("{{") {
        plain.push_str(&rest[..open]);
        plain.push_str(", ");
        rest = rest[open + 2..].find("}}").map_or("", |close| &rest[open + 2 + close + 2..]);
    }
    plain.push_str(rest);
    plain
        .split(", ")
        .map(|s| s.trim().trim_end_matches(['>', '}', ')']).trim())
        .filter(|s| s.contains(" = ") && !s.contains("[["))
        .map(str::to_owned)
        .collect()
}

/// The line of the optimized IR that defines the op named `name` (by its `loc`).
fn op_line(ir: &str, name: &str) -> Option<String> {
    let inline = format!("loc(\"{name}\")");
    if let Some(l) = ir.lines().find(|l| l.contains(&inline)) {
        return Some(l.to_owned());
    }
    // Through a location alias: `#locN = loc("name")`.
    let alias = ir.lines().find_map(|l| {
        let (a, rest) = l.trim().split_once(" = ")?;
        (rest.starts_with(&format!("loc(\"{name}\"")) && a.starts_with("#loc"))
            .then(|| a.to_owned())
    })?;
    let use_ = format!("loc({alias})");
    ir.lines().find(|l| l.contains(&use_)).map(str::to_owned)
}

/// FileCheck-like match of one pattern against one line, lenient: `{{regex}}` and `[[...]]`
/// match any text, literal parts must appear in order.
fn glob_match(pattern: &str, line: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = pattern;
    loop {
        let next = [rest.find("{{"), rest.find("[[")].into_iter().flatten().min();
        let Some(p) = next else {
            literals.push(rest);
            break;
        };
        literals.push(&rest[..p]);
        let close = if rest[p..].starts_with("{{") { "}}" } else { "]]" };
        match rest[p + 2..].find(close) {
            Some(e) => rest = &rest[p + 2 + e + 2..],
            None => break,
        }
    }
    let mut at = 0;
    for lit in literals.iter().filter(|l| !l.is_empty()) {
        match line[at..].find(lit) {
            Some(p) => at += p + lit.len(),
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::{
        asserted_layout, checks, decode_layout, glob_match, inline_aliases, literal_fields,
        setup_of,
    };

    #[test]
    fn a_check_same_continues_the_line_of_its_check_with_nothing_required_between() {
        let text = "// CHECK: \"ttnn.argmax\"\n// CHECK-SAME: -> tensor<3xui32\n";
        let c = checks(text);
        expect![[r#"["\"ttnn.argmax\"{{.*}}-> tensor<3xui32"]"#]]
            .assert_eq(&format!("{:?}", c.iter().map(|c| c.pattern.as_str()).collect::<Vec<_>>()));
        let line =
            r#"%1 = "ttnn.argmax"(%0) <{dim = 1 : si32}> : (tensor<3x3xsi32>) -> tensor<3xui32>"#;
        assert!(glob_match(&c[0].pattern, line));
        // Not before the check's own match.
        assert!(!glob_match(&c[0].pattern, r#"-> tensor<3xui32> "ttnn.argmax""#));
    }

    /// The options a test's RUN line leads to, or why it is skipped.
    fn describe(text: &str) -> String {
        match setup_of(text) {
            Ok(s) => format!("{}: {}", s.description, s.overrides),
            Err(why) => format!("skipped: {why}"),
        }
    }

    /// tt-mlir's `resnet50_layer1_module2.mlir` asserts the conv2d config an override gives,
    /// not the conv's output layout (which stays in DRAM at optimization level 1).
    #[test]
    fn a_config_check_naming_a_sharding_asserts_the_config_field_not_the_result_layout() {
        let p = r#""ttnn.conv2d"{{.*}} conv2d_config = #ttnn.conv2d_config<{{.*}}shard_layout = height_sharded{{.*}}>"#;
        assert_eq!(asserted_layout(p, &Default::default()), None);
        expect![[r#"["shard_layout = height_sharded"]"#]]
            .assert_eq(&format!("{:?}", literal_fields(p)));
    }

    /// tt-mlir's `l1_interleaved/*.mlir` bind `#[[L1:.*]]` to a layout whose buffer follows
    /// a wildcard; an L1 assertion must not pass for a DRAM op.
    #[test]
    fn a_buffer_after_a_wildcard_in_the_memref_is_asserted() {
        let l1 = r#"#ttnn.ttnn_layout<{{.*}}memref<{{.*}}#l1>{{.*}}<interleaved>>"#;
        let dram = r#"#ttnn.ttnn_layout<{{.*}}memref<{{.*}}#dram>{{.*}}<interleaved>>"#;
        expect![[r#"(Some(L1), Some("interleaved")), (Some(Dram), Some("interleaved"))"#]]
            .assert_eq(&format!(
                "{:?}, {:?}",
                (
                    decode_layout(l1, &Default::default()).buffer,
                    decode_layout(l1, &Default::default()).memory_layout
                ),
                (
                    decode_layout(dram, &Default::default()).buffer,
                    decode_layout(dram, &Default::default()).memory_layout
                ),
            ));
    }

    #[test]
    fn aliases_are_printed_in_place_as_mlir_print_local_scope_prints_them() {
        let ir = "#dram = #ttnn.buffer_type<dram>\n#ttnn_layout = #ttnn.ttnn_layout<memref<2x2xbf16, #dram>>\n\
                  #ttnn_layout1 = #ttnn.ttnn_layout<memref<1x1xbf16, #dram>>\n\
                  %0 = \"ttnn.add\"(%a) : (tensor<2x2xbf16, #ttnn_layout>) -> tensor<1x1xbf16, #ttnn_layout1>\n";
        expect![[r#"
            %0 = "ttnn.add"(%a) : (tensor<2x2xbf16, #ttnn.ttnn_layout<memref<2x2xbf16, #ttnn.buffer_type<dram>>>>) -> tensor<1x1xbf16, #ttnn.ttnn_layout<memref<1x1xbf16, #ttnn.buffer_type<dram>>>>
        "#]]
        .assert_eq(&inline_aliases(ir));
    }

    #[test]
    fn a_test_lit_never_runs_is_skipped_rather_than_counted() {
        let text = "// RUN: ttmlir-opt --ttir-to-ttnn-backend-pipeline=\"optimization-level=1 \
                    enable-greedy-optimizer=false\" -o %t %s\n// UNSUPPORTED: true\n";
        expect!["skipped: marked `UNSUPPORTED: true` in tt-mlir (lit never runs it)"]
            .assert_eq(&describe(text));
    }

    #[test]
    fn optimization_level_one_runs_without_the_memory_layout_analysis() {
        let text = "// RUN: ttmlir-opt --ttir-to-ttnn-backend-pipeline=\"optimization-level=1 \
                    enable-greedy-optimizer=false override-output-layout=add_1=block_sharded\" \
                    -o %t %s\n";
        expect![[r#"df-sharding, no memory-layout analysis, `override-output-layout`: override-output-layout=add_1=block_sharded memory-layout-analysis-enabled=false"#]]
            .assert_eq(&describe(text));
    }

    #[test]
    fn the_greedy_flag_alone_runs_no_optimizer_as_in_tt_mlirs_pipeline() {
        let alone = "// RUN: ttmlir-opt --ttir-to-ttnn-backend-pipeline=\"enable-greedy-optimizer=true \
                     tensor-l1-usage-cap=0.01\" -o %t %s\n";
        expect!["skipped: runs without the optimizer (`enable-greedy-optimizer=true` at optimization level 0 selects greedy for when the optimizer runs, and it does not)"]
            .assert_eq(&describe(alone));
        let with_level = "// RUN: ttmlir-opt --ttir-to-ttnn-backend-pipeline=\"optimization-level=2 \
                          enable-greedy-optimizer=true\" -o %t %s\n";
        expect!["greedy: "].assert_eq(&describe(with_level));
    }
}
