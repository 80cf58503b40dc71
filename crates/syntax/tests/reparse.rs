//! Incremental reparsing equals parsing from scratch: random edits of the bundled samples and
//! of tt-mlir's TTNN corpus (`/work/shared/corpus/ttnn`, read when present), each applied to
//! the previous parse with `Parse::reparse_edit` and compared with `parse` of the new text.
//!
//! Edits are drawn the way typing makes them (a digit changed, a character inserted, a few
//! bytes deleted, a word swapped, a bracket or quote or `// -----` line typed) at random
//! positions, so both the fast path and every condition that refuses it are exercised.

#![expect(
    clippy::disallowed_methods,
    reason = "the test reads sample and corpus files at run time; the library does no IO"
)]

use std::path::{Path, PathBuf};

use syntax::{TextRange, parse};

/// A small deterministic generator, so a failure names its seed and reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INSERTS: &[&str] = &[
    "1",
    "x",
    " ",
    ",",
    ">",
    "<",
    "\"",
    "\n",
    "}",
    "{",
    "(",
    ")",
    "%9",
    "// -----\n",
    "// c\n",
    "#",
    "!",
    ":",
    "= ",
    "loc(",
    "tensor<1x",
    "#-}",
    "{-#",
];

/// One random edit of `text`: the old range and the replacement.
fn random_edit(rng: &mut Rng, text: &str) -> Option<(TextRange, String)> {
    let mut at = rng.below(text.len());
    // Half the edits go to a line holding an op, where an editor's user mostly types.
    if rng.below(2) == 0
        && let Some(line) = text[at..].find("\n    %").or_else(|| text.find("\n    %"))
    {
        let start = if text[at..].contains("\n    %") { at + line } else { line } + 5;
        let len = text[start..].find('\n').unwrap_or(text.len() - start);
        at = start + rng.below(len);
    }
    if !text.is_char_boundary(at) {
        return None;
    }
    let edit = match rng.below(5) {
        // Change a digit.
        0 => {
            let i = text[at..].find(|c: char| c.is_ascii_digit())? + at;
            (TextRange::new(i as u32, i as u32 + 1), ((rng.next() % 10) as u8 + b'0').to_string())
        }
        // Insert a fragment.
        1 | 2 => (TextRange::empty(at as u32), INSERTS[rng.below(INSERTS.len())].to_owned()),
        // Delete a few bytes.
        3 => {
            let end = (at + 1 + rng.below(12)).min(text.len());
            if !text.is_char_boundary(end) {
                return None;
            }
            (TextRange::new(at as u32, end as u32), String::new())
        }
        // Swap a word the way attribute edits do.
        _ => {
            let (from, to) =
                [("true", "false"), ("false", "true"), ("bf16", "f32"), ("dram", "l1")]
                    [rng.below(4)];
            let i = text[at..].find(from)? + at;
            (TextRange::new(i as u32, (i + from.len()) as u32), to.to_owned())
        }
    };
    Some(edit)
}

/// Applies `edits` random edits to `text` in sequence; returns how many took the fast path.
fn check_random_edits(name: &str, text: &str, seed: u64, edits: usize) -> usize {
    let mut rng = Rng(seed | 1);
    let original = text;
    let mut text = text.to_owned();
    let mut current = parse(&text);
    let mut fast = 0;
    for step in 0..edits {
        // Chains of a few edits, then back to the file as written: a long chain of random
        // edits breaks the file beyond what anyone types.
        if step % 4 == 0 && step > 0 {
            text = original.to_owned();
            current = parse(&text);
        }
        let Some((range, insert)) = random_edit(&mut rng, &text) else { continue };
        let mut new_text = text.clone();
        new_text.replace_range(range.start as usize..range.end as usize, &insert);
        let fresh = parse(&new_text);
        let mut patched = current.clone();
        if patched.reparse_edit(&new_text, range, insert.len() as u32).is_some() {
            fast += 1;
            assert!(
                patched == fresh,
                "{name} (seed {seed}, step {step}): reparsing {range:?} -> {insert:?} differs \
                 from parsing from scratch"
            );
        } else {
            assert!(patched == current, "{name}: a refused reparse changed the parse");
        }
        text = new_text;
        current = fresh;
    }
    fast
}

fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, acc: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, acc);
            } else if p.extension().is_some_and(|x| x == "mlir") {
                acc.push(p);
            }
        }
    }
    let mut acc = Vec::new();
    walk(Path::new("/work/shared/corpus/ttnn"), &mut acc);
    acc.sort();
    acc
}

/// The bundled samples, by path, with their text.
fn sample_files() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data/samples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            Some((path.display().to_string(), std::fs::read_to_string(&path).ok()?))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn reparsing_an_edit_equals_parsing_the_edited_sample_from_scratch() {
    let mut fast = 0;
    let mut total = 0;
    for (name, text) in sample_files() {
        for seed in 1..=20 {
            fast += check_random_edits(&name, &text, seed, 50);
            total += 50;
        }
    }
    // The fast path must actually be taken, or the comparison above shows nothing.
    assert!(fast * 5 > total, "only {fast} of {total} edits took the fast path");
}

#[test]
fn reparsing_an_edit_equals_parsing_the_edited_corpus_file_from_scratch() {
    let files = corpus_files();
    let mut fast = 0;
    for (i, path) in files.iter().enumerate() {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        fast += check_random_edits(&path.display().to_string(), &text, i as u64 + 7, 12);
    }
    assert!(files.is_empty() || fast > files.len(), "only {fast} edits took the fast path");
}

/// Applies chains of edits to one parse without reading its tree in between, so each
/// re-parse starts from a parse whose previous re-parse left positions to move; the tree is
/// compared with a parse from scratch at the end of each chain. The tree as the re-lowering
/// of one op reads it (`with_current_tree`) must already have the new names and shape.
fn check_chained_edits(name: &str, text: &str, seed: u64, chains: usize) -> usize {
    let mut rng = Rng(seed | 1);
    let mut fast = 0;
    for chain in 0..chains {
        let mut text = text.to_owned();
        let mut patched = parse(&text);
        for step in 0..4 {
            // Typing, or (every other edit) a whole-line, comment or breaking edit.
            let edit = if rng.below(2) == 0 {
                random_edit(&mut rng, &text)
            } else {
                let class = CLASSES[rng.below(CLASSES.len())];
                class_edit(&mut rng, &text, class)
            };
            let Some((range, insert)) = edit else { continue };
            let mut new_text = text.clone();
            new_text.replace_range(range.start as usize..range.end as usize, &insert);
            if patched.reparse_edit(&new_text, range, insert.len() as u32).is_none() {
                patched = parse(&new_text);
            } else {
                fast += 1;
                let fresh = parse(&new_text);
                // Names and shape, without waiting for the positions.
                let current = patched.with_current_tree(shape);
                assert_eq!(current, shape(fresh.file()), "{name} (seed {seed}, chain {chain})");
                // The tokens with current positions are the fresh parse's, through the op.
                let edited_end = range.start + insert.len() as u32;
                let (same, through_op) = patched.with_current(|_, toks| {
                    (
                        fresh.tokens().get(..toks.len()) == Some(toks),
                        toks.last().is_some_and(|t| t.range.end > edited_end),
                    )
                });
                assert!(
                    same && through_op,
                    "{name} (seed {seed}, chain {chain}): the current tokens are not the fresh ones"
                );
            }
            text = new_text;
            let _ = step;
        }
        assert!(
            patched == parse(&text),
            "{name} (seed {seed}, chain {chain}): chained reparses differ from a parse from scratch"
        );
    }
    fast
}

#[test]
fn the_current_tokens_after_a_reparse_reach_past_an_alias_written_after_the_op() {
    // Re-lowering the op reads its chunk's aliases through the current tokens, so those of
    // an alias after the op have moved before the rest.
    let ty = "tensor<4xf32>";
    let text = format!(
        "func.func @f(%a: {ty}) -> {ty} {{\n  %0 = \"ttnn.relu\"(%a) {{x = 1}} : ({ty}) -> !late\n  \
         return %0 : !late\n}}\n!late = {ty}\n"
    );
    let at = text.find("x = 1").expect("the attribute is there") as u32 + 4;
    let mut new_text = text.clone();
    new_text.replace_range(at as usize..at as usize + 1, "22");
    let mut patched = parse(&text);
    assert!(
        patched.reparse_edit(&new_text, syntax::TextRange::new(at, at + 1), 2).is_some(),
        "the edit takes the fast path"
    );
    let fresh = parse(&new_text);
    let current = patched.with_current(|_, toks| toks.to_vec());
    assert_eq!(current, fresh.tokens(), "every token is current, through the alias");
    assert!(patched == fresh);

    // Without it, the tokens past the parser's window after the op wait for a first read.
    let relus: String =
        (1..40).map(|i| format!("  %{i} = \"ttnn.relu\"(%a) : ({ty}) -> {ty}\n")).collect();
    let text = format!(
        "func.func @f(%a: {ty}) -> {ty} {{\n  %0 = \"ttnn.relu\"(%a) {{x = 1}} : ({ty}) -> {ty}\n\
         {relus}  return %0 : {ty}\n}}\n"
    );
    let at = text.find("x = 1").expect("the attribute is there") as u32 + 4;
    let mut new_text = text.clone();
    new_text.replace_range(at as usize..at as usize + 1, "22");
    let mut patched = parse(&text);
    assert!(patched.reparse_edit(&new_text, syntax::TextRange::new(at, at + 1), 2).is_some());
    let fresh = parse(&new_text);
    let current = patched.with_current(|_, toks| toks.len());
    assert!(current < fresh.tokens().len(), "some tokens wait ({current} current)");
    assert!(patched == fresh);
}

#[test]
fn chained_reparses_whose_positions_move_later_equal_parsing_from_scratch() {
    let mut fast = 0;
    for (name, text) in sample_files() {
        for seed in 1..=10 {
            fast += check_chained_edits(&name, &text, seed, 10);
        }
    }
    for (i, path) in corpus_files().iter().enumerate().step_by(7) {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        fast += check_chained_edits(&path.display().to_string(), &text, i as u64 + 3, 3);
    }
    assert!(fast > 100, "only {fast} edits took the fast path");
}

/// Every op's name and result names, nested ops in brackets: what a tree says besides its
/// positions.
fn shape(file: &syntax::ast::SourceFile) -> String {
    fn op(o: &syntax::ast::Op, out: &mut String) {
        for r in &o.results {
            out.push_str(&r.name.text);
            out.push(' ');
        }
        out.push_str(&o.name.text);
        let regions: &[syntax::ast::Region] = match &o.body {
            syntax::ast::OpBody::Generic(g) => &g.regions,
            syntax::ast::OpBody::Module(m) => std::slice::from_ref(&m.body),
            syntax::ast::OpBody::Func(f) => f.body.as_slice(),
            syntax::ast::OpBody::RegionOp(r) => std::slice::from_ref(&r.body),
            _ => &[],
        };
        for b in regions.iter().flat_map(|r| &r.blocks) {
            out.push('[');
            for inner in &b.ops {
                op(inner, out);
                out.push(';');
            }
            out.push(']');
        }
    }
    let mut out = String::new();
    for c in &file.chunks {
        for item in &c.items {
            match item {
                syntax::ast::Item::Op(o) => op(o, &mut out),
                other => out.push_str(&format!("{other:?}")),
            }
            out.push('\n');
        }
    }
    out
}

/// The kinds of edit people make to whole lines and between ops, beyond typing in one op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Copies of one to three op lines inserted before an op line.
    InsertOps,
    /// One to three consecutive op lines deleted.
    DeleteOps,
    /// A block of 100 op lines pasted before an op line.
    Paste100,
    /// One to three consecutive op lines replaced by one to three others.
    ReplaceOps,
    /// A comment line inserted before an op line.
    CommentLine,
    /// A trailing comment typed at the end of an op line.
    TrailingComment,
    /// A blank line inserted before an op line.
    BlankLine,
    /// An op line's indentation grown or shrunk by two spaces.
    Indent,
    /// One `>` or `)` of an op line deleted: the op no longer parses.
    Break,
}

const CLASSES: &[Class] = &[
    Class::InsertOps,
    Class::DeleteOps,
    Class::Paste100,
    Class::ReplaceOps,
    Class::CommentLine,
    Class::TrailingComment,
    Class::BlankLine,
    Class::Indent,
    Class::Break,
];

/// The ranges (line break included) of the lines holding an op of a function body: the
/// indented lines starting with `%`.
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

/// One random edit of `class`, or `None` when the text has nothing to make it from.
fn class_edit(rng: &mut Rng, text: &str, class: Class) -> Option<(TextRange, String)> {
    let lines = op_lines(text);
    if lines.is_empty() {
        return None;
    }
    let i = rng.below(lines.len());
    let line = lines[i];
    // `k` consecutive op lines from `i`, if they are adjacent.
    let run = |k: usize| {
        let last = lines.get(i + k - 1)?;
        let adjacent = lines[i..i + k].windows(2).all(|w| w[0].end == w[1].start);
        adjacent.then(|| TextRange::new(line.start, last.end))
    };
    let some_lines = |rng: &mut Rng, n: usize| -> String {
        (0..n).map(|_| slice(text, lines[rng.below(lines.len())])).collect()
    };
    let edit = match class {
        Class::InsertOps => {
            let n = 1 + rng.below(3);
            (TextRange::empty(line.start), some_lines(rng, n))
        }
        Class::DeleteOps => (run(1 + rng.below(3))?, String::new()),
        Class::Paste100 => (TextRange::empty(line.start), some_lines(rng, 100)),
        Class::ReplaceOps => {
            let n = 1 + rng.below(3);
            (run(1 + rng.below(3))?, some_lines(rng, n))
        }
        Class::CommentLine => (TextRange::empty(line.start), "    // a note\n".to_owned()),
        Class::TrailingComment => (TextRange::empty(line.end - 1), " // note".to_owned()),
        Class::BlankLine => (TextRange::empty(line.start), "\n".to_owned()),
        Class::Indent => {
            if rng.below(2) == 0 {
                (TextRange::empty(line.start), "  ".to_owned())
            } else {
                (TextRange::new(line.start, line.start + 2), String::new())
            }
        }
        Class::Break => {
            let body = slice(text, line);
            let closers: Vec<usize> = body.match_indices(['>', ')']).map(|(k, _)| k).collect();
            let k = closers[rng.below(closers.len().max(1)).min(closers.len().checked_sub(1)?)];
            let at = line.start + k as u32;
            (TextRange::new(at, at + 1), String::new())
        }
    };
    Some(edit)
}

fn apply(text: &str, range: TextRange, insert: &str) -> String {
    let mut new_text = text.to_owned();
    new_text.replace_range(range.start as usize..range.end as usize, insert);
    new_text
}

/// Re-parses `edit` of `text` from `current` (a parse of `text`), and checks the result
/// equals a fresh parse when accepted. Returns the fresh parse and whether it was accepted.
fn reparse_checked(
    name: &str,
    current: &syntax::Parse,
    text: &str,
    (range, insert): (TextRange, &str),
    what: &str,
) -> (String, syntax::Parse, bool) {
    let new_text = apply(text, range, insert);
    let fresh = parse(&new_text);
    let mut patched = current.clone();
    let accepted = match patched.reparse_edit(&new_text, range, insert.len() as u32) {
        Some(op) => {
            assert!(
                patched == fresh,
                "{name}: {what} {range:?} -> {insert:?} differs from parsing from scratch"
            );
            check_op_edit(current, &fresh, op, range, insert.len() as u32);
            true
        }
        None => {
            assert!(patched == *current, "{name}: a refused reparse changed the parse");
            false
        }
    };
    (new_text, fresh, accepted)
}

/// The `OpEdit` contract: the ops of one block within `old` were replaced by those within
/// `new`, everything before is unchanged and everything after moved.
fn check_op_edit(
    old: &syntax::Parse,
    new: &syntax::Parse,
    op: syntax::OpEdit,
    edit: TextRange,
    new_len: u32,
) {
    assert_eq!(op.old.start, op.new.start);
    assert!(op.old.start <= edit.start && edit.end <= op.old.end, "{op:?} covers {edit:?}");
    let delta = i64::from(new_len) - i64::from(edit.len());
    assert_eq!(i64::from(op.new.end) - i64::from(op.old.end), delta);
    // Every op's range in the old parse, mapped to the new text, is in the new parse unless
    // it lies within `old`; and the new parse has exactly `new_ops` more ops within `new`.
    let ranges = |p: &syntax::Parse| {
        let mut out = Vec::new();
        fn walk(o: &syntax::ast::Op, out: &mut Vec<TextRange>) {
            out.push(o.range);
            let regions: &[syntax::ast::Region] = match &o.body {
                syntax::ast::OpBody::Generic(g) => &g.regions,
                syntax::ast::OpBody::Module(m) => std::slice::from_ref(&m.body),
                syntax::ast::OpBody::Func(f) => f.body.as_slice(),
                syntax::ast::OpBody::RegionOp(r) => std::slice::from_ref(&r.body),
                _ => &[],
            };
            for b in regions.iter().flat_map(|r| &r.blocks) {
                for inner in &b.ops {
                    walk(inner, out);
                }
            }
        }
        for c in &p.file().chunks {
            for item in &c.items {
                if let syntax::ast::Item::Op(o) = item {
                    walk(o, &mut out);
                }
            }
        }
        out
    };
    let within = |r: TextRange, w: TextRange| w.start <= r.start && r.end <= w.end;
    let old_kept: Vec<TextRange> = ranges(old)
        .into_iter()
        .filter(|r| !within(*r, op.old))
        .map(|r| {
            let m = |o: u32| if o >= op.old.end { (i64::from(o) + delta) as u32 } else { o };
            TextRange::new(m(r.start), m(r.end))
        })
        .collect();
    let new_all = ranges(new);
    let new_kept: Vec<TextRange> =
        new_all.iter().copied().filter(|r| !within(*r, op.new)).collect();
    assert_eq!(old_kept, new_kept, "{op:?}: the ops outside the edit moved as it says");
    let replaced_old = ranges(old).into_iter().filter(|r| within(*r, op.old)).count();
    let replaced_new = new_all.iter().filter(|r| within(**r, op.new)).count();
    // Nested ops of replaced ops count too; top-level ones are at least the counts given.
    assert!(replaced_old >= op.old_ops as usize && replaced_new >= op.new_ops as usize);
}

/// Tallies of accepted edits per class: the edit, and its undo (a removed comment, a fixed
/// op, deleted lines put back).
#[derive(Default)]
struct Tally(Vec<((Class, bool), usize, usize)>);

impl Tally {
    fn add(&mut self, key: (Class, bool), accepted: bool) {
        match self.0.iter_mut().find(|(k, _, _)| *k == key) {
            Some(t) => {
                t.1 += usize::from(accepted);
                t.2 += 1;
            }
            None => self.0.push((key, usize::from(accepted), 1)),
        }
    }

    /// The share of `class` edits (or their undos) accepted, in percent.
    fn rate(&self, class: Class, undo: bool) -> usize {
        self.0.iter().find(|(k, _, _)| *k == (class, undo)).map_or(0, |(_, a, n)| a * 100 / n)
    }

    fn report(&self) -> String {
        self.0
            .iter()
            .map(|((c, undo), a, n)| {
                format!("{c:?}{}: {a}/{n}\n", if *undo { " undone" } else { "" })
            })
            .collect()
    }
}

/// Applies `edits` random edits of every class to `text` (each from the text as written),
/// then undoes each from the patched parse (the fix of a break, the removal of a comment);
/// tallies the accepted ones.
fn check_classes(name: &str, text: &str, seed: u64, edits: usize, tally: &mut Tally) {
    let mut rng = Rng(seed | 1);
    let original = parse(text);
    for step in 0..edits {
        let class = CLASSES[step % CLASSES.len()];
        let Some((range, insert)) = class_edit(&mut rng, text, class) else { continue };
        let what = format!("{class:?} (seed {seed}, step {step})");
        let (new_text, fresh, accepted) =
            reparse_checked(name, &original, text, (range, &insert), &what);
        tally.add((class, false), accepted);
        let undo_range = TextRange::new(range.start, range.start + insert.len() as u32);
        let what = format!("undoing {what}");
        let (back, _, undone) =
            reparse_checked(name, &fresh, &new_text, (undo_range, slice(text, range)), &what);
        assert_eq!(back, text);
        tally.add((class, true), undone);
    }
}

/// A module of `n` ops in the shape the generator and tt-mlir print.
fn generated(n: usize) -> String {
    let t = "tensor<64x64xbf16, #l>";
    let mut s = String::from(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\nmodule {\n  func.func @main(%a: ",
    );
    s.push_str(&format!("{t}) -> {t} {{\n"));
    let mut prev = "%a".to_owned();
    for i in 0..n {
        let op = ["relu", "exp", "gelu", "softmax"][i % 4];
        let props =
            if op == "softmax" { " <{dimension = 1 : si32, numericStable = true}>" } else { "" };
        s.push_str(&format!(
            "    %{i} = \"ttnn.{op}\"({prev}){props} : ({t}) -> {t} loc(\"op{i}\")\n"
        ));
        prev = format!("%{i}");
    }
    s.push_str(&format!("    return {prev} : {t}\n  }}\n}}\n"));
    s
}

#[test]
fn reparsing_whole_line_comment_and_breaking_edits_of_a_generated_module_equals_parsing_from_scratch()
 {
    let text = generated(400);
    let mut tally = Tally::default();
    for seed in 1..=4 {
        check_classes("generated", &text, seed, CLASSES.len() * 20, &mut tally);
    }
    let report = tally.report();
    // In a function of ops each on its line, the fast path takes every class.
    for &class in CLASSES {
        for undo in [false, true] {
            assert!(tally.rate(class, undo) >= 95, "too few accepted:\n{report}");
        }
    }
}

#[test]
fn reparsing_whole_line_comment_and_breaking_edits_of_samples_and_corpus_equals_parsing_from_scratch()
 {
    let mut tally = Tally::default();
    for (name, text) in sample_files() {
        for seed in 1..=3 {
            check_classes(&name, &text, seed, CLASSES.len() * 4, &mut tally);
        }
    }
    for (i, path) in corpus_files().iter().enumerate().step_by(3) {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        check_classes(&path.display().to_string(), &text, i as u64 + 5, CLASSES.len(), &mut tally);
    }
    let report = tally.report();
    // Refused: edits next to ops that share a line, or after a syntax error.
    for &class in CLASSES {
        for undo in [false, true] {
            assert!(tally.rate(class, undo) >= 85, "too few accepted:\n{report}");
        }
    }
}

/// Applies `edit` (`^` marks where the old text is replaced by `insert`, `old` is its
/// length) to `text` and shows the `OpEdit` with the texts of its ranges.
fn check_op_edit_of(text: &str, at: &str, old: u32, insert: &str, expect: expect_test::Expect) {
    let start = text.find(at).expect("the marker is in the text") as u32;
    let range = TextRange::new(start, start + old);
    let new_text = apply(text, range, insert);
    let mut patched = parse(text);
    let shown = match patched.reparse_edit(&new_text, range, insert.len() as u32) {
        Some(op) => {
            assert!(patched == parse(&new_text));
            format!(
                "ops {}: {} -> {}, errors changed: {}\nold {:?}\nnew {:?}",
                op.first_op,
                op.old_ops,
                op.new_ops,
                op.errors_changed,
                slice(text, op.old),
                slice(&new_text, op.new)
            )
        }
        None => "refused".to_owned(),
    };
    expect.assert_eq(&shown);
}

const FUNC: &str = "func.func @f(%a: i32) -> i32 {\n  %0 = \"t.a\"(%a) : (i32) -> i32\n  %1 = \"t.b\"(%0) : (i32) -> i32\n  %2 = \"t.c\"(%1) : (i32) -> i32\n  return %2 : i32\n}\n";

#[test]
fn an_op_edit_names_the_ops_replaced_and_nothing_for_trivia() {
    use expect_test::expect;
    // Typing inside an op: that op.
    check_op_edit_of(
        FUNC,
        "t.b",
        3,
        "t.bb",
        expect![[r#"
        ops 1: 1 -> 1, errors changed: false
        old "%1 = \"t.b\"(%0) : (i32) -> i32"
        new "%1 = \"t.bb\"(%0) : (i32) -> i32""#]],
    );
    // An op line inserted: no op before, one after.
    check_op_edit_of(
        FUNC,
        "  %1",
        0,
        "  %9 = \"t.x\"(%0) : (i32) -> i32\n",
        expect![[r#"
        ops 1: 0 -> 1, errors changed: false
        old ""
        new "  %9 = \"t.x\"(%0) : (i32) -> i32\n""#]],
    );
    // An op line deleted.
    check_op_edit_of(
        FUNC,
        "  %1",
        32,
        "",
        expect![[r#"
        ops 1: 1 -> 0, errors changed: false
        old "  %1 = \"t.b\"(%0) : (i32) -> i32\n"
        new """#]],
    );
    // A comment line: no op replaced, the edit's own range.
    check_op_edit_of(
        FUNC,
        "  %1",
        0,
        "  // note\n",
        expect![[r#"
        ops 1: 0 -> 0, errors changed: false
        old ""
        new "  // note\n""#]],
    );
    // A trailing comment touches the op it follows, which parses the same.
    check_op_edit_of(
        FUNC,
        "\n  %2",
        0,
        " // note",
        expect![[r#"
        ops 1: 1 -> 1, errors changed: false
        old "%1 = \"t.b\"(%0) : (i32) -> i32"
        new "%1 = \"t.b\"(%0) : (i32) -> i32 // note""#]],
    );
    // Breaking an op, then (from the broken text) fixing it.
    check_op_edit_of(
        FUNC,
        ") : (i32) -> i32\n  %2",
        1,
        "",
        expect![[r#"
        ops 1: 1 -> 1, errors changed: true
        old "%1 = \"t.b\"(%0) : (i32) -> i32"
        new "%1 = \"t.b\"(%0 : (i32) -> i32""#]],
    );
    let broken = FUNC.replacen("(%0) :", "(%0 :", 1);
    check_op_edit_of(
        &broken,
        " : (i32) -> i32\n  %2",
        0,
        ")",
        expect![[r#"
        ops 1: 1 -> 1, errors changed: true
        old "%1 = \"t.b\"(%0 : (i32) -> i32"
        new "%1 = \"t.b\"(%0) : (i32) -> i32""#]],
    );
}

#[test]
fn two_edits_compose_into_the_window_from_the_first_op_either_touched_to_the_last() {
    // `%b` and `%d` renamed at their definitions (ops 1 and 3 of five) and uses (ops 2 and
    // 4), the later occurrence first as an editor's rename sends them: together ops 1 to 4
    // are replaced, by four ops.
    let t = "tensor<4xbf16>";
    let line = |name: &str, arg: &str| format!("  {name} = \"ttnn.relu\"({arg}) : ({t}) -> {t}\n");
    let body = |b: &str, d: &str| {
        [line("%a", "%x"), line(b, "%a"), line("%c", b), line(d, "%c"), line("%e", d)].concat()
    };
    let text =
        format!("func.func @f(%x: {t}) -> {t} {{\n{}  return %e : {t}\n}}\n", body("%b", "%d"));
    let mut parse = syntax::parse(&text);
    let mut now = text.clone();
    let mut edits = Vec::new();
    // Each `%d` (its definition, then its use in `%e`), and each `%b`, last first.
    for from in ["%d", "%b"] {
        let mut at: Vec<usize> = now.match_indices(from).map(|(o, _)| o).collect();
        at.reverse();
        for o in at {
            let range = syntax::TextRange::new(o as u32, (o + from.len()) as u32);
            let to = format!("{from}{}", &from[1..]);
            now.replace_range(o..o + from.len(), &to);
            edits.push(parse.reparse_edit(&now, range, to.len() as u32).expect("re-parsed"));
        }
    }
    let all = edits.iter().skip(1).try_fold(edits[0], |a, &b| a.then(b)).expect("composed");
    assert_eq!(
        now,
        format!("func.func @f(%x: {t}) -> {t} {{\n{}  return %e : {t}\n}}\n", body("%bb", "%dd"))
    );
    assert_eq!((all.first_op, all.old_ops, all.new_ops), (1, 4, 4));
    let first = text.find("  %b =").expect("op 1") as u32 + 2;
    let last_old =
        text.find("  %e =").expect("op 4").checked_add(line("%e", "%d").len() - 1).expect("fits")
            as u32;
    assert_eq!(all.old, syntax::TextRange::new(first, last_old));
    assert_eq!(all.new.end - all.old.end, 4);
}

#[test]
fn edits_near_each_other_leave_the_ops_after_them_to_move_once() {
    // A long function: an edit, its undo and a run of edits nearby, without reading the tree
    // in between. Each re-parse keeps what the one before left to move pending past what it
    // reads, so the last op still has the original text's position until the tree is read;
    // read then, the tree and tokens are those of a parse from scratch.
    let ty = "tensor<64x64xbf16>";
    let relus: String = (0..300)
        .map(|i| format!("    %{i} = \"ttnn.relu\"(%a) {{n = {i} : i64}} : ({ty}) -> {ty}\n"))
        .collect();
    let text = format!(
        "module {{\n  func.func @f(%a: {ty}) -> {ty} {{\n{relus}    return %299 : {ty}\n  }}\n}}\n"
    );
    let last_start = |p: &syntax::Parse| {
        p.with_current_tree(|file| {
            let Some(syntax::ast::Item::Op(module)) = file.chunks[0].items.last() else {
                return None;
            };
            let syntax::ast::OpBody::Module(m) = &module.body else { return None };
            let func = m.body.blocks[0].ops.last()?;
            let syntax::ast::OpBody::Func(f) = &func.body else { return None };
            Some(f.body.as_ref()?.blocks[0].ops.last()?.range.start)
        })
    };
    let original_last = last_start(&parse(&text));
    let at = |text: &str, needle: &str| text.find(needle).expect("the needle is there") as u32;
    // (needle, bytes replaced after its start, replacement): an attribute edit, its undo,
    // an insert of an op before it, typing after it, a delete of an op before all of them.
    let steps: Vec<(String, u32, String)> = vec![
        ("n = 100 :".into(), 7, "n = 1000".into()),
        ("n = 1000 :".into(), 8, "n = 100".into()),
        ("    %120 =".into(), 0, format!("    %ins = \"ttnn.exp\"(%a) : ({ty}) -> {ty}\n")),
        ("n = 121 :".into(), 7, "n = 12345".into()),
        (
            "    %90 =".into(),
            (format!("    %90 = \"ttnn.relu\"(%a) {{n = 90 : i64}} : ({ty}) -> {ty}\n")).len()
                as u32,
            String::new(),
        ),
    ];
    let mut text = text;
    let mut patched = parse(&text);
    for (k, (needle, old, new)) in steps.iter().enumerate() {
        let start = at(&text, needle);
        let range = TextRange::new(start, start + old);
        let new_text = apply(&text, range, new);
        assert!(
            patched.reparse_edit(&new_text, range, new.len() as u32).is_some(),
            "step {k} takes the fast path"
        );
        let fresh = parse(&new_text);
        assert_eq!(patched.with_current_tree(shape), shape(fresh.file()), "step {k}: the shape");
        assert!(
            patched.with_current(|_, toks| fresh.tokens().get(..toks.len()) == Some(toks)),
            "step {k}: the current tokens are the fresh ones"
        );
        assert_eq!(last_start(&patched), original_last, "step {k}: the last op waits");
        text = new_text;
    }
    assert!(patched == parse(&text), "read at last, the tree is a fresh parse's");
    assert_ne!(last_start(&patched), original_last, "and the last op has moved");
}

/// The start of op `i` of the only function's body in `module { func }`, as the tree holds
/// it now (pending positions not moved).
fn body_op_start(p: &syntax::Parse, i: usize) -> Option<u32> {
    p.with_current_tree(|file| {
        let Some(syntax::ast::Item::Op(module)) = file.chunks[0].items.last() else {
            return None;
        };
        let syntax::ast::OpBody::Module(m) = &module.body else { return None };
        let func = m.body.blocks[0].ops.last()?;
        let syntax::ast::OpBody::Func(f) = &func.body else { return None };
        Some(f.body.as_ref()?.blocks[0].ops.get(i)?.range.start)
    })
}

#[test]
fn an_edit_before_the_pending_positions_moves_nothing_between_it_and_them() {
    // Edits far apart, without reading the tree in between: after, before, between and
    // after again the places left pending. An edit before them leaves what lies between
    // pending as a place of its own (op 150 keeps the original text's position, moved by
    // neither edit), an edit past a place moves that place, and every step's current part
    // is a fresh parse's; read at last, the whole tree is.
    let ty = "tensor<64x64xbf16>";
    let relus: String = (0..300)
        .map(|i| format!("    %{i} = \"ttnn.relu\"(%a) {{n = {i} : i64}} : ({ty}) -> {ty}\n"))
        .collect();
    let text = format!(
        "module {{\n  func.func @f(%a: {ty}) -> {ty} {{\n{relus}    return %299 : {ty}\n  }}\n}}\n"
    );
    let original = parse(&text);
    let original_start = |i: usize| body_op_start(&original, i);
    let at = |text: &str, needle: &str| text.find(needle).expect("the needle is there") as u32;
    let op_line =
        |i: usize| format!("    %{i} = \"ttnn.relu\"(%a) {{n = {i} : i64}} : ({ty}) -> {ty}\n");
    // (needle, bytes replaced after its start, replacement, ops whose start is still the
    // original text's after the step).
    let steps: Vec<(String, u32, String, Vec<usize>)> = vec![
        // After: ops from about 252 on wait.
        ("n = 250 :".into(), 7, "n = 25000".into(), vec![260, 299]),
        // Before: ops 52 to 250 wait as a place of their own, by this edit alone.
        ("n = 50 :".into(), 6, "n = 5".into(), vec![150, 240, 260]),
        // Before both, inserting an op: ops 10.. wait too, and nothing between moves.
        (
            "    %10 =".into(),
            0,
            format!("    %ins = \"ttnn.exp\"(%a) : ({ty}) -> {ty}\n"),
            vec![30, 150, 260],
        ),
        // Between: the places up to the edit move, the rest keep waiting.
        ("n = 200 :".into(), 7, "n = 2".into(), vec![260]),
        // Before all again, deleting an op.
        ("    %5 =".into(), op_line(5).len() as u32, String::new(), vec![260]),
        // After every place.
        ("n = 290 :".into(), 7, "n = 29".into(), vec![]),
    ];
    let mut text = text;
    let mut patched = parse(&text);
    // Op `i` of the original text is op `i + shift` after the insert and delete.
    let mut index_shift = 0i64;
    for (k, (needle, old, new, waiting)) in steps.iter().enumerate() {
        let start = at(&text, needle);
        let range = TextRange::new(start, start + old);
        let new_text = apply(&text, range, new);
        assert!(
            patched.reparse_edit(&new_text, range, new.len() as u32).is_some(),
            "step {k} takes the fast path"
        );
        if k == 2 {
            index_shift += 1;
        }
        if k == 4 {
            index_shift -= 1;
        }
        let fresh = parse(&new_text);
        assert_eq!(patched.with_current_tree(shape), shape(fresh.file()), "step {k}: the shape");
        assert!(
            patched.with_current(|_, toks| fresh.tokens().get(..toks.len()) == Some(toks)),
            "step {k}: the current tokens are the fresh ones"
        );
        for &i in waiting {
            let now = (i as i64 + index_shift) as usize;
            assert_eq!(body_op_start(&patched, now), original_start(i), "step {k}: op {i} waits");
        }
        text = new_text;
    }
    // Op 150 is between the places left by steps 0, 1, 2 and 4 and was passed by step 3:
    // moved, and now current.
    let fresh = parse(&text);
    assert!(patched == fresh, "read at last, the tree is a fresh parse's");
}

#[test]
fn reading_through_a_pending_place_moves_the_places_up_to_it_and_no_further() {
    // A rename at two uses, made last first as an editor sends it, is re-lowered as one
    // window: reading the ops through the later use moves the place between the two edits,
    // and leaves the ops after the later use pending.
    let ty = "tensor<64x64xbf16>";
    let relus: String = (0..300)
        .map(|i| format!("    %{i} = \"ttnn.relu\"(%a) {{n = {i} : i64}} : ({ty}) -> {ty}\n"))
        .collect();
    let text = format!(
        "module {{\n  func.func @f(%a: {ty}) -> {ty} {{\n{relus}    return %299 : {ty}\n  }}\n}}\n"
    );
    let original = parse(&text);
    let mut patched = parse(&text);
    let mut text = text;
    for needle in ["n = 200 :", "n = 20 :"] {
        let start = text.find(needle).expect("the needle is there") as u32 + 4;
        let range = TextRange::new(start, start + 2);
        let new_text = apply(&text, range, "77");
        assert!(patched.reparse_edit(&new_text, range, 2).is_some());
        text = new_text;
    }
    let fresh = parse(&text);
    let later_use_end = text.find("n = 770 :").expect("edited") as u32 + 10;
    let (through, after) = patched.with_current_through(later_use_end, |file, toks| {
        assert_eq!(fresh.tokens().get(..toks.len()), Some(toks), "the current tokens");
        let func = |file: &syntax::ast::SourceFile| {
            let Some(syntax::ast::Item::Op(module)) = file.chunks[0].items.last() else {
                return Vec::new();
            };
            let syntax::ast::OpBody::Module(m) = &module.body else { return Vec::new() };
            let Some(syntax::ast::OpBody::Func(f)) = m.body.blocks[0].ops.last().map(|o| &o.body)
            else {
                return Vec::new();
            };
            f.body
                .as_ref()
                .map_or(Vec::new(), |r| r.blocks[0].ops.iter().map(|o| o.range).collect())
        };
        let (now, want) = (func(file), func(fresh.file()));
        (now[..=200] == want[..=200], now[260] == func(original.file())[260])
    });
    assert!(through, "the ops through the later use are current");
    assert!(after, "the ops well after it still wait");
    assert!(patched == fresh, "read at last, the tree is a fresh parse's");
}

#[test]
fn edits_each_before_the_last_keep_a_bounded_number_of_pending_places() {
    // Fifteen edits, each before the one before it, leave more places than are kept: the
    // nearest are moved, and the parse stays a fresh one's throughout.
    let ty = "tensor<64x64xbf16>";
    let relus: String = (0..300)
        .map(|i| format!("    %{i} = \"ttnn.relu\"(%a) {{n = {i} : i64}} : ({ty}) -> {ty}\n"))
        .collect();
    let mut text = format!(
        "module {{\n  func.func @f(%a: {ty}) -> {ty} {{\n{relus}    return %299 : {ty}\n  }}\n}}\n"
    );
    let mut patched = parse(&text);
    for (k, i) in (1..=15).rev().map(|i| i * 19).enumerate() {
        let needle = format!("n = {i} :");
        let start = text.find(&needle).expect("the needle is there") as u32;
        let range = TextRange::new(start, start + needle.len() as u32 - 2);
        let new = if k % 2 == 0 { format!("n = {i}{i}") } else { "n = 1".to_owned() };
        let new_text = apply(&text, range, &new);
        assert!(patched.reparse_edit(&new_text, range, new.len() as u32).is_some(), "step {k}");
        let fresh = parse(&new_text);
        assert_eq!(patched.with_current_tree(shape), shape(fresh.file()), "step {k}: the shape");
        text = new_text;
    }
    assert!(patched == parse(&text), "read at last, the tree is a fresh parse's");
}
