//! Times `Parse::reparse_edit` per edit class on one file, beside a parse from scratch.
//!
//! `cargo run --release -p syntax --example reparse_edits -- FILE [EDITS]`, with `FILE` for
//! instance a generated graph (`cargo xtask gen --ops 10000 -o g10k.mlir`). For each class
//! it makes `EDITS` edits (30 by default) at op lines spread over the file, each to a fresh
//! copy of the file's parse, and prints the median and 95th percentile of the re-parse
//! (the keystroke's path) and of moving the positions it leaves for later (the first full
//! read of the parse, which a host does off that path), and how many edits were accepted.
//! A timing tool, not a test: figures depend on the machine.

#![expect(
    clippy::disallowed_methods,
    reason = "the example reads the file it times; the library does no IO"
)]
#![expect(clippy::print_stdout, clippy::print_stderr, reason = "a timing tool prints its report")]

use std::time::{Duration, Instant};

use syntax::{Parse, TextRange, parse};

/// An edit: the old range and its replacement.
type Edit = (TextRange, String);

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: reparse_edits FILE [EDITS]");
        std::process::exit(2);
    };
    let edits: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(30);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    let lines = op_lines(&text);
    if lines.len() < 200 {
        eprintln!("{path} has {} op lines; the classes need 200", lines.len());
        std::process::exit(1);
    }
    let full = time(|| drop(parse(&text)));
    println!("{path}: {} bytes, {} op lines", text.len(), lines.len());
    println!("parse from scratch: {:.2} ms", ms(full));
    println!(
        "{:<22} {:>9} {:>9} {:>11} {:>11}",
        "class", "p50 ms", "p95 ms", "finish p50", "accepted"
    );
    let original = parse(&text);
    let pick = |k: usize| lines[(k * 7919 + lines.len() / 3) % (lines.len() - 101)];
    type MakeEdit<'a> = Box<dyn Fn(usize) -> Option<Edit> + 'a>;
    let classes: Vec<(&str, MakeEdit)> = vec![
        ("type a digit", Box::new(|k| digit(&text, pick(k)))),
        (
            "insert an op",
            Box::new(|k| {
                Some((TextRange::empty(pick(k).start), slice(&text, pick(k + 1)).to_owned()))
            }),
        ),
        ("delete an op", Box::new(|k| Some((pick(k), String::new())))),
        (
            "paste 100 ops",
            Box::new(|k| {
                let from = pick(k + 3);
                let block = TextRange::new(
                    from.start,
                    lines[lines.iter().position(|l| *l == from)? + 99].end,
                );
                Some((TextRange::empty(pick(k).start), slice(&text, block).to_owned()))
            }),
        ),
        (
            "comment line",
            Box::new(|k| Some((TextRange::empty(pick(k).start), "    // a note\n".to_owned()))),
        ),
        (
            "trailing comment",
            Box::new(|k| Some((TextRange::empty(pick(k).end - 1), " // note".to_owned()))),
        ),
        ("blank line", Box::new(|k| Some((TextRange::empty(pick(k).start), "\n".to_owned())))),
        ("break an op", Box::new(|k| breaking(&text, pick(k)))),
    ];
    for (name, make) in &classes {
        // As an editor session does: each edit patches the parse the last one left (then
        // is undone, patching it again), so the vectors' room to spare is used as a host
        // uses it.
        let mut session = Session { parse: original.clone(), text: text.clone() };
        let mut runs = Vec::new();
        let mut undos = Vec::new();
        for k in 0..edits {
            let Some((range, insert)) = make(k) else { continue };
            runs.push(session.edit(range, &insert));
            let undo = TextRange::new(range.start, range.start + insert.len() as u32);
            undos.push(session.edit(undo, slice(&text, range)));
        }
        report(name, &runs);
        if *name == "break an op" {
            report("fix the op", &undos);
        }
    }
}

/// A parse patched edit after edit, as a host keeps it.
struct Session {
    parse: Parse,
    text: String,
}

impl Session {
    /// One timed edit: the re-parse, the first full read that moves what it deferred, and
    /// whether it was accepted (if not, the text is parsed from scratch, untimed).
    fn edit(&mut self, range: TextRange, insert: &str) -> (Duration, Duration, bool) {
        let new_text = apply(&self.text, range, insert);
        let Ok(len) = u32::try_from(insert.len()) else {
            return (Duration::ZERO, Duration::ZERO, false);
        };
        let started = Instant::now();
        let accepted = self.parse.reparse_edit(&new_text, range, len).is_some();
        let reparse = started.elapsed();
        let started = Instant::now();
        std::hint::black_box(self.parse.file());
        let finish = started.elapsed();
        if !accepted {
            self.parse = parse(&new_text);
        }
        self.text = new_text;
        (reparse, finish, accepted)
    }
}

fn report(name: &str, runs: &[(Duration, Duration, bool)]) {
    let mut reparse: Vec<Duration> = runs.iter().filter(|r| r.2).map(|r| r.0).collect();
    let mut finish: Vec<Duration> = runs.iter().filter(|r| r.2).map(|r| r.1).collect();
    reparse.sort();
    finish.sort();
    let accepted = reparse.len();
    let q = |v: &[Duration], p: usize| {
        v.get((v.len() * p / 100).min(v.len().saturating_sub(1))).map_or(f64::NAN, |d| ms(*d))
    };
    println!(
        "{name:<22} {:>9.3} {:>9.3} {:>11.3} {:>8}/{}",
        q(&reparse, 50),
        q(&reparse, 95),
        q(&finish, 50),
        accepted,
        runs.len()
    );
}

fn time(f: impl Fn()) -> Duration {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The lines (line break included) holding an op of a function body.
fn op_lines(text: &str) -> Vec<TextRange> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        if line.len() > trimmed.len() && trimmed.starts_with('%') && line.ends_with('\n') {
            out.push(TextRange::new(start as u32, (start + line.len()) as u32));
        }
        start += line.len();
    }
    out
}

fn slice(text: &str, r: TextRange) -> &str {
    &text[r.start as usize..r.end as usize]
}

fn apply(text: &str, range: TextRange, insert: &str) -> String {
    let mut out = String::with_capacity(text.len() + insert.len());
    out.push_str(&text[..range.start as usize]);
    out.push_str(insert);
    out.push_str(&text[range.end as usize..]);
    out
}

/// A digit of the line changed, as typing does.
fn digit(text: &str, line: TextRange) -> Option<Edit> {
    let at = line.start + slice(text, line).rfind(|c: char| c.is_ascii_digit())? as u32;
    let next = if slice(text, TextRange::new(at, at + 1)) == "7" { "8" } else { "7" };
    Some((TextRange::new(at, at + 1), next.to_owned()))
}

/// The line's first `)` deleted: its operand list no longer closes.
fn breaking(text: &str, line: TextRange) -> Option<Edit> {
    let at = line.start + slice(text, line).find(')')? as u32;
    Some((TextRange::new(at, at + 1), String::new()))
}
