//! Where an editor's edit spends its time, per step: `apply_change` (re-parse), the file's
//! diagnostics (re-lowering and the lowering's own checks), the problems (the op model on the
//! IR as written) and the override diagnostics, as the language server asks for them after
//! each change. In-process, so it shows the analysis without the transport.
//!
//! `cargo run --release -p ide --example edit_classes -- FILE [ROUNDS]`; `EDIT_CLASS=insert` runs
//! only the classes whose name contains `insert`; `IDLE=1` pauses after each step with the
//! server's idle upkeep; `QUERIES=1` prints the queries each step executed.
//!
//! Each class's edit is made in the middle of the file and undone, `ROUNDS` times; with
//! `SPREAD=1`, at a sixth, half and five sixths of the file in turn (as `xtask bench-edits`
//! samples), so an edit far from the one before it pays for the distance if anything
//! does. Each line gives the median step's wall times and the CPU time of the thread that
//! made it (`cpu`, from `/proc/thread-self/schedstat`: other load on the machine does not
//! count), and the largest step's CPU time.

#![expect(
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "an example prints its timings and reads its input file"
)]

use std::time::Instant;

use ide::{AnalysisHost, Change, HostConfig, HostMode, Options, TextEdit};
use syntax::TextRange;

const FILE: &str = "bench.mlir";

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        println!("usage: edit_classes FILE [ROUNDS]");
        return;
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    // `QUERIES=1`: after each step, how many times each query executed.
    let queries = std::env::var("QUERIES").is_ok_and(|v| v == "1");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut host = AnalysisHost::with_config(
        target::Target::n150(),
        Options::tt_mlir_defaults(),
        HostConfig { mode: HostMode::Editor, query_log: queries },
    );
    let t = Instant::now();
    host.apply_change(Change::new().set_file(FILE, text.clone()));
    diagnose(&host);
    println!("open: {:.1} ms", ms(t));
    let _ = host.take_executed_queries();
    let spread = std::env::var("SPREAD").is_ok_and(|v| v == "1");
    let at: &[usize] = if spread { &[1, 3, 5] } else { &[3] };
    // The classes at each place, by class.
    let places: Vec<_> =
        at.iter().map(|&sixths| classes_at(&text, text.len() * sixths / 6)).collect();
    // `EDIT_CLASS=insert` runs only the classes whose name contains it (for a profiler).
    let only = std::env::var("EDIT_CLASS").unwrap_or_default();
    // `IDLE=1`: a pause after each step with the server's idle upkeep, so the next step
    // does not pay for what this one left to do (an editor's typing speed, not a storm).
    let idle = std::env::var("IDLE").is_ok_and(|v| v == "1");
    for ci in 0..places[0].len() {
        let class = places[0][ci].0;
        if !class.contains(only.as_str()) {
            continue;
        }
        // Each round makes the edit and then undoes it, timing both, so every edit starts
        // from the text it was written against.
        let mut times: [Vec<Step>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..rounds {
            for place in &places {
                let (_, edit, undo) = &place[ci];
                for (k, edits) in [edit, undo].into_iter().enumerate() {
                    let c0 = thread_cpu_ms();
                    let t0 = Instant::now();
                    host.apply_change(Change::new().edit_file(FILE, edits.clone()));
                    let t1 = ms(t0);
                    let a = host.analysis();
                    let file = host.file(FILE).expect("open");
                    let d0 = Instant::now();
                    let _ = a.diagnostics(file);
                    let t2 = ms(d0);
                    let p0 = Instant::now();
                    let _ = a.problems(file);
                    let t3 = ms(p0);
                    let o0 = Instant::now();
                    let _ = a.override_diagnostics(&[file]);
                    let t4 = ms(o0);
                    drop(a);
                    times[k].push((t1, t2, t3, t4, thread_cpu_ms() - c0));
                    if queries {
                        let mut counts = std::collections::BTreeMap::<String, usize>::new();
                        for q in host.take_executed_queries() {
                            let name = q.split('(').next().unwrap_or_default().to_owned();
                            *counts.entry(name).or_default() += 1;
                        }
                        println!("{class} ({}): executed {counts:?}", ["do", "undo"][k]);
                    }
                    if idle {
                        // As the server does once diagnostics are out: old values freed aside.
                        host.free_unused();
                        std::thread::sleep(std::time::Duration::from_millis(30));
                    }
                }
            }
        }
        for (k, what) in ["do", "undo"].into_iter().enumerate() {
            let t = &mut times[k];
            let most = t.iter().map(|s| s.4).fold(0.0, f64::max);
            t.sort_by(|a, b| (a.0 + a.1 + a.2 + a.3).total_cmp(&(b.0 + b.1 + b.2 + b.3)));
            let (a, d, p, o, _) = t[t.len() / 2];
            let mut cpu: Vec<f64> = t.iter().map(|s| s.4).collect();
            cpu.sort_by(f64::total_cmp);
            let c = cpu[cpu.len() / 2];
            println!(
                "{class} ({what}): apply {a:.1} ms, diagnostics {d:.1} ms, problems {p:.1} ms, overrides {o:.1} ms; cpu {c:.1} ms (largest {most:.1} ms)"
            );
        }
    }
}

/// One step's wall times (apply, diagnostics, problems, override diagnostics) and the CPU
/// time of the thread that made it, in milliseconds.
type Step = (f64, f64, f64, f64, f64);

/// CPU time the calling thread has used, in milliseconds (0 where the kernel does not say).
fn thread_cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns: f64 = stat.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0.0);
    ns / 1e6
}

/// The edit classes at the first op line at or after `from`: each with its edit and undo.
fn classes_at(text: &str, from: usize) -> Vec<(&'static str, Vec<TextEdit>, Vec<TextEdit>)> {
    // An op line there whose result has a few uses (not a device handle every op reads),
    // and the lines of the next 100 ops.
    let mut line = from + text[from..].find("\n    %").unwrap_or(0) + 1;
    for _ in 0..100 {
        let name = text[line..].trim_start().split(' ').next().unwrap_or("%x");
        let end = line + text[line..].find("\n  }").unwrap_or(text.len() - line);
        if text[line..end].matches(name).take(9).count() <= 8 {
            break;
        }
        line += text[line..].find("\n    %").unwrap_or(0) + 1;
    }
    let line_end = line + text[line..].find('\n').unwrap_or(0) + 1;
    let op_line = text[line..line_end].to_owned();
    let name = op_line.trim_start().split(' ').next().unwrap_or("%x").to_owned();
    vec![
        ("comment line", vec![ins(line, "    // a note\n")], vec![del(line, 14)]),
        ("trailing comment", vec![ins(line_end - 1, " // note")], vec![del(line_end - 1, 8)]),
        (
            "insert an op",
            vec![ins(line_end, &op_line.replacen(&name, "%fresh_x", 1))],
            vec![del(line_end, op_line.len() - name.len() + 8)],
        ),
        (
            "break an op",
            vec![del(line_end - 2, 1)],
            vec![ins(line_end - 2, &op_line[op_line.len() - 2..op_line.len() - 1])],
        ),
        rename_at_uses(text, line, &name),
        paste_ops(text, line_end, 100),
    ]
}

/// The value `name` defined at `line` renamed at its definition and every use up to the end
/// of its function, one edit per occurrence, last first (as an editor's rename sends them);
/// and back.
fn rename_at_uses(
    text: &str,
    line: usize,
    name: &str,
) -> (&'static str, Vec<TextEdit>, Vec<TextEdit>) {
    let end = line + text[line..].find("\n  }").unwrap_or(text.len() - line);
    let whole = |o: usize| {
        let after = text.as_bytes().get(o + name.len()).copied().unwrap_or(b' ');
        !(after.is_ascii_alphanumeric() || after == b'_')
    };
    let at: Vec<usize> =
        text[line..end].match_indices(name).map(|(o, _)| o + line).filter(|&o| whole(o)).collect();
    let renamed = format!("%renamed{}", &name[1..]);
    let grow = renamed.len() - name.len();
    let forth = at
        .iter()
        .rev()
        .map(|&o| TextEdit {
            range: TextRange::new(o as u32, (o + name.len()) as u32),
            text: renamed.clone(),
        })
        .collect();
    let back = at
        .iter()
        .enumerate()
        .rev()
        .map(|(k, &o)| {
            let o = o + k * grow;
            TextEdit {
                range: TextRange::new(o as u32, (o + renamed.len()) as u32),
                text: name.to_owned(),
            }
        })
        .collect();
    ("rename at all uses", forth, back)
}

fn diagnose(host: &AnalysisHost) {
    let a = host.analysis();
    let file = host.file(FILE).expect("open");
    let _ = a.diagnostics(file);
    let _ = a.problems(file);
    let _ = a.override_diagnostics(&[file]);
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn ins(at: usize, text: &str) -> TextEdit {
    TextEdit { range: TextRange::empty(at as u32), text: text.to_owned() }
}

fn del(at: usize, len: usize) -> TextEdit {
    TextEdit { range: TextRange::new(at as u32, (at + len) as u32), text: String::new() }
}

/// A copy of the `n` op lines from `at` pasted after them, their results renamed (and their
/// uses among them); and the cut that takes it out again.
fn paste_ops(text: &str, at: usize, n: usize) -> (&'static str, Vec<TextEdit>, Vec<TextEdit>) {
    let lines: Vec<&str> = text[at..].split_inclusive('\n').take(n).collect();
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.trim_start().split(" = ").next().filter(|r| r.starts_with('%')))
        .collect();
    let mut pasted = String::new();
    for l in &lines {
        let mut out = String::new();
        let mut rest = *l;
        while let Some(k) = rest.find('%') {
            out.push_str(&rest[..k]);
            let tail = &rest[k..];
            let end = tail[1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(tail.len(), |e| e + 1);
            let word = &tail[..end];
            if names.contains(&word) {
                out.push_str("%pasted_");
                out.push_str(&word[1..]);
            } else {
                out.push_str(word);
            }
            rest = &tail[end..];
        }
        out.push_str(rest);
        pasted.push_str(&out);
    }
    let p = at + lines.iter().map(|l| l.len()).sum::<usize>();
    let len = pasted.len();
    ("paste ops", vec![ins(p, &pasted)], vec![del(p, len)])
}
