//! `cargo xtask models [--corpus DIR] [--no-mlir-opt] [--strict] [--markdown]`: every TTIR model
//! of the corpus through the whole tool, as a user would run it, with the comparison tables
//! pinned as snapshots in `test-data/models/<model>.txt`.
//!
//! For each `DIR/ttir-models/**/*.mlir`, in path order:
//!
//! 1. `ttnn-analyzer import` must succeed with no error diagnostic;
//! 2. `ttnn-analyzer check` must accept the imported text, and so must
//!    `mlir-opt --allow-unregistered-dialect` when it is installed;
//! 3. `ttnn-analyzer report --compare --no-timing` on the model must print exactly the snapshot
//!    (`UPDATE_EXPECT=1` rewrites the snapshots instead, as expect-test does);
//! 4. the acceptance checks are evaluated on a timed run of the same comparison: no policy may
//!    introduce a verifier violation, and `df-sharding-merge` must not be estimated slower than
//!    `df-sharding`.
//!
//! A few models also run a second time with tt-mlir pipeline options (`VARIANTS`), because
//! a measurement they are compared with was compiled so; their snapshots are
//! `test-data/models/<model>.<suffix>.txt`.
//!
//! Steps 1 to 3 fail the task. Step 4 reports what it finds; those properties belong to the
//! planner, and the snapshots already pin the current numbers, so a change is seen either way.
//! `--strict` makes step 4 fail the task too. `--markdown` also prints one markdown table of all
//! models (the one in `docs/results.md`).
//!
//! The CLI binary is built once in release mode and run as a separate process, so what is
//! checked is the command users run, and the wall times are those of a release build. Models
//! run one at a time so the times are not disturbed by each other.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use crate::{
    corpus::{collect_mlir_files, find_mlir_opt},
    util::{Flags, read_text, workspace_root, write_file},
};

/// Models also run with tt-mlir pipeline options, because a measured run was compiled with
/// them (`cost::whole_model_table` compares those runs): the model's file stem, the suffix of
/// the variant's snapshot (`test-data/models/<model>.<suffix>.txt`) and the options, which
/// `import` and `report` both take.
const VARIANTS: &[(&str, &str, &[&str])] = &[
    // tt-xla's LLM benchmarks (the measured Llama-3.2-1B decode step) compile with weight
    // conversion to bfp8, and tt-mlir's perf tests of these files use the same option. The
    // block carries no per-weight marks; the layer carries tt-xla's marks on its projections
    // and lm_head, and the option reaches the matmuls left (the rotary frequencies'). The
    // decoder is one layer with its KV cache, the part the measured step runs 15 more times.
    ("llama_3_2_1b_decode_block", "weight_dtype_bfp_bf8", &["--weight-dtype", "bfp_bf8"]),
    ("llama_3_2_1b_decoder", "weight_dtype_bfp_bf8", &["--weight-dtype", "bfp_bf8"]),
    ("llama_3_2_1b_decode_layer", "weight_dtype_bfp_bf8", &["--weight-dtype", "bfp_bf8"]),
    // tt-metal's hand-written ResNet-50 (the device-time measurement) runs `bfp_bf8` at LoFi.
    // The nearest tt-mlir's global options reach: LoFi in every compute config, and `bfp_bf8`
    // weights where `experimental-weight-dtype` reaches (matmuls and linears: the final
    // linear, no conv).
    (
        "resnet_hf",
        "weight_dtype_bfp_bf8.math_fidelity_lofi",
        &["--weight-dtype", "bfp_bf8", "--math-fidelity", "lofi"],
    ),
];

/// The configurations of a comparison table, in row order.
const CONFIGS: [&str; 4] = ["as-written", "df-sharding", "df-sharding-merge", "greedy"];

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags =
        Flags::parse("models", args, &["--corpus"], &["--no-mlir-opt", "--strict", "--markdown"])?;
    let root = workspace_root();
    let dir = match flags.value("--corpus") {
        Some(d) => PathBuf::from(d),
        None => root.parent().map_or(root.clone(), Path::to_path_buf).join("shared").join("corpus"),
    };
    let models_dir = dir.join("ttir-models");
    let mut out = std::io::stdout().lock();
    if !models_dir.is_dir() {
        // `--strict` is an acceptance check (CI runs it): passing it without looking at a
        // single model would say nothing, so a missing corpus fails it.
        if flags.switch("--strict") {
            return Err(anyhow::format_err!(
                "no corpus models at {}; pass `--corpus DIR` (the directory holding `ttir-models`)",
                models_dir.display()
            ));
        }
        writeln!(out, "note: no corpus models at {}, nothing to check", models_dir.display())?;
        return Ok(());
    }
    let mut files = Vec::new();
    collect_mlir_files(&models_dir, &mut files)?;
    files.sort();
    let mlir_opt = if flags.switch("--no-mlir-opt") { None } else { find_mlir_opt() };
    let update = std::env::var_os("UPDATE_EXPECT").is_some();

    let bin = crate::util::build_cli(&root)?;
    let start = Instant::now();
    let tmp = std::env::temp_dir().join(format!("ttnn-xtask-models-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let _cleanup = RemoveDir(tmp.clone());

    let mut failures: Vec<String> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    let mut results: Vec<(String, Vec<Row>)> = Vec::new();
    // Every model as tt-mlir's default pipeline compiles it, then the variants.
    let mut runs: Vec<(&PathBuf, String, &[&str])> = Vec::new();
    for file in &files {
        let model = file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let variants: Vec<(&PathBuf, String, &[&str])> = VARIANTS
            .iter()
            .filter(|(name, _, _)| *name == model)
            .map(|(_, suffix, options)| (file, format!("{model}.{suffix}"), *options))
            .collect();
        runs.push((file, model, &[]));
        runs.extend(variants);
    }
    for (file, model, options) in &runs {
        let (file, model) = (*file, model.as_str());
        let options: Vec<&std::ffi::OsStr> = options.iter().map(|o| o.as_ref()).collect();
        let rel = file.strip_prefix(&models_dir).unwrap_or(file).display().to_string();
        let rel = if options.is_empty() {
            rel
        } else {
            format!(
                "{rel} ({})",
                options.iter().map(|o| o.to_string_lossy()).collect::<Vec<_>>().join(" ")
            )
        };
        let mut fail = |what: String| failures.push(format!("{rel}: {what}"));

        // 1. Import.
        let imported = tmp.join(format!("{model}.ttnn.mlir"));
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["import".as_ref(), file.as_os_str(), "-o".as_ref(), imported.as_os_str()];
        args.extend(&options);
        let import = run_cli(&bin, &args)?;
        if import.code != 0 || import.stderr.contains("error[") {
            fail(format!("import failed (exit {}): {}", import.code, first_error(&import.stderr)));
            continue;
        }
        // 2. The imported text passes our own check and MLIR's parser.
        let check = run_cli(&bin, &["check".as_ref(), imported.as_os_str()])?;
        if check.code != 0 {
            fail(format!("check rejects the import: {}", first_error(&check.stdout)));
        }
        if let Some(mlir_opt) = &mlir_opt {
            let o = Command::new(mlir_opt)
                .arg("--allow-unregistered-dialect")
                .arg(&imported)
                .output()
                .map_err(|e| anyhow::format_err!("cannot run {}: {e}", mlir_opt.display()))?;
            if !o.status.success() {
                let err = String::from_utf8_lossy(&o.stderr);
                fail(format!("mlir-opt rejects the import: {}", err.lines().next().unwrap_or("")));
            }
        }
        // 3. The snapshot.
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["report".as_ref(), "--compare".as_ref(), "--no-timing".as_ref(), file.as_os_str()];
        args.extend(&options);
        let table = run_cli(&bin, &args)?;
        if table.code > 1 || !table.stderr.is_empty() {
            fail(format!(
                "report --compare failed (exit {}): {}",
                table.code,
                first_error(&table.stderr)
            ));
            continue;
        }
        let snapshot = root.join("test-data").join("models").join(format!("{model}.txt"));
        let expected = if snapshot.is_file() { read_text(&snapshot)? } else { String::new() };
        if table.stdout != expected {
            if update {
                write_file(&snapshot, table.stdout.as_bytes())?;
                writeln!(
                    out,
                    "updated {}",
                    snapshot.strip_prefix(&root).unwrap_or(&snapshot).display()
                )?;
            } else {
                fail(format!(
                    "the comparison differs from test-data/models/{model}.txt ({}); rerun with UPDATE_EXPECT=1 and review the diff",
                    first_difference(&expected, &table.stdout)
                ));
            }
        }
        // 4. The acceptance checks, on the timed table (the one shown to people).
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["report".as_ref(), "--compare".as_ref(), file.as_os_str()];
        args.extend(&options);
        let timed = run_cli(&bin, &args)?;
        writeln!(out, "{}", timed.stdout)?;
        let rows = parse_table(&timed.stdout);
        if rows.len() != CONFIGS.len() {
            fail(format!(
                "the comparison table has {} rows, expected {}",
                rows.len(),
                CONFIGS.len()
            ));
            continue;
        }
        for r in &rows[1..] {
            if r.new_violations > 0 {
                let detail = violations_under(&timed.stdout, &r.config);
                findings.push(format!(
                    "{rel}: {} introduces {} verifier violation(s):\n{detail}",
                    r.config, r.new_violations
                ));
            }
        }
        if rows[2].time_us > rows[1].time_us {
            findings.push(format!(
                "{rel}: df-sharding-merge is estimated slower than df-sharding: {:.1} µs vs {:.1} µs",
                rows[2].time_us, rows[1].time_us
            ));
        }
        results.push((model.to_owned(), rows));
    }
    let elapsed = start.elapsed().as_secs_f64();

    if flags.switch("--markdown") {
        writeln!(out, "{}", markdown(&results))?;
    }
    writeln!(
        out,
        "{} models and {} variants in {elapsed:.1} s (import, check{}, two comparisons each)",
        files.len(),
        runs.len() - files.len(),
        if mlir_opt.is_some() { ", mlir-opt" } else { "" }
    )?;
    if findings.is_empty() {
        writeln!(
            out,
            "acceptance: no policy introduces a violation; df-sharding-merge is never slower than df-sharding"
        )?;
    } else {
        writeln!(out, "acceptance: {} finding(s):", findings.len())?;
        for f in &findings {
            writeln!(out, "  {f}")?;
        }
    }
    if !failures.is_empty() {
        writeln!(out, "\nfailures:")?;
        for f in &failures {
            writeln!(out, "  {f}")?;
        }
        out.flush()?;
        return Err(anyhow::format_err!(
            "{} failure(s) over {} models",
            failures.len(),
            files.len()
        ));
    }
    if flags.switch("--strict") && !findings.is_empty() {
        return Err(anyhow::format_err!("{} acceptance finding(s) with --strict", findings.len()));
    }
    writeln!(out, "all {} models passed", files.len())?;
    Ok(())
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_cli(bin: &Path, args: &[&std::ffi::OsStr]) -> anyhow::Result<Output> {
    let o = Command::new(bin)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| anyhow::format_err!("cannot run {}: {e}", bin.display()))?;
    Ok(Output {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    })
}

/// One row of a comparison table, as printed by `report --compare`.
struct Row {
    config: String,
    time_us: f64,
    ratio: String,
    ops_in_l1: String,
    reshards: String,
    spills: String,
    peak_percent: String,
    new_violations: usize,
    preexisting: String,
    optimize_ms: String,
}

/// The rows of a human comparison table: the lines that start with a configuration name.
/// Cells are separated by spaces and none contains one.
fn parse_table(table: &str) -> Vec<Row> {
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            let config = *cells.first()?;
            if !CONFIGS.contains(&config) || cells.len() < 10 {
                return None;
            }
            Some(Row {
                config: config.to_owned(),
                time_us: cells[1].parse().ok()?,
                ratio: cells[2].to_owned(),
                ops_in_l1: cells[3].to_owned(),
                reshards: cells[4].to_owned(),
                spills: cells[5].to_owned(),
                peak_percent: cells[7].to_owned(),
                new_violations: cells[8].parse().ok()?,
                preexisting: cells[9].to_owned(),
                optimize_ms: cells.get(10).map_or_else(|| "-".to_owned(), |s| (*s).to_owned()),
            })
        })
        .collect()
}

/// The indented lines the table prints under `new violations under CONFIG:`.
fn violations_under(table: &str, config: &str) -> String {
    let header = format!("new violations under {config}:");
    table
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// All models in one markdown table, one row per model and configuration.
fn markdown(results: &[(String, Vec<Row>)]) -> String {
    let mut s = String::from(
        "| model | configuration | time µs | × bound | ops in L1 | reshards | spills | peak L1 | new violations | pre-existing | optimize ms |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (model, rows) in results {
        for (i, r) in rows.iter().enumerate() {
            let name = if i == 0 { format!("`{model}`") } else { String::new() };
            s.push_str(&format!(
                "| {name} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.config,
                r.time_us,
                r.ratio,
                r.ops_in_l1,
                r.reshards,
                r.spills,
                r.peak_percent,
                r.new_violations,
                r.preexisting,
                r.optimize_ms
            ));
        }
    }
    s
}

/// The first `error...` line of a command's output, for a one-line failure message.
fn first_error(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or_else(|| text.lines().next().unwrap_or(""))
        .to_owned()
}

/// Where two texts first differ, by line, for a mismatch message.
fn first_difference(expected: &str, actual: &str) -> String {
    if expected.is_empty() {
        return "no snapshot yet".to_owned();
    }
    let mut e = expected.lines();
    let mut a = actual.lines();
    for n in 1.. {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (None, None) => break,
            (x, y) => {
                return format!(
                    "line {n}: expected `{}`, got `{}`",
                    x.unwrap_or("<end>").trim_end(),
                    y.unwrap_or("<end>").trim_end()
                );
            }
        }
    }
    "trailing whitespace differs".to_owned()
}

/// A temporary directory removed when dropped.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "m: 8 ops, target n150, usable L1 1325652 B per core
lower bound: 50.4 µs

configuration      time µs  x bound  ops in L1  reshards  spills  peak L1 B/core  of budget  new violations  pre-existing  optimize ms
as-written            55.6    1.10x        0/8         0       0          135168      10.2%               0             0            -
df-sharding          111.7    2.22x        8/8         0       1          688128      51.9%               1             0          5.8
df-sharding-merge    111.7    2.22x        8/8         0       1          688128      51.9%               0             0         25.8

new violations under df-sharding:
  @main op 5 `conv` (ttnn.conv2d): unsupported: no
";

    #[test]
    fn comparison_tables_are_read_back_row_by_row() {
        let rows = parse_table(TABLE);
        let got: Vec<(&str, f64, usize, &str)> = rows
            .iter()
            .map(|r| (r.config.as_str(), r.time_us, r.new_violations, r.optimize_ms.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("as-written", 55.6, 0, "-"),
                ("df-sharding", 111.7, 1, "5.8"),
                ("df-sharding-merge", 111.7, 0, "25.8")
            ]
        );
        assert_eq!(
            violations_under(TABLE, "df-sharding"),
            "    @main op 5 `conv` (ttnn.conv2d): unsupported: no"
        );
        assert_eq!(violations_under(TABLE, "df-sharding-merge"), "");
    }

    #[test]
    fn the_first_difference_is_reported_by_line() {
        assert_eq!(first_difference("a\nb\n", "a\nc\n"), "line 2: expected `b`, got `c`");
        assert_eq!(first_difference("a\n", "a\nb\n"), "line 2: expected `<end>`, got `b`");
        assert_eq!(first_difference("", "a"), "no snapshot yet");
    }
}
