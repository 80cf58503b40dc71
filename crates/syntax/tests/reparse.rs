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
            let Some((range, insert)) = random_edit(&mut rng, &text) else { continue };
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
