//! Re-lowering one edited op equals lowering from scratch: random edits inside ops of the
//! bundled samples, the TTNN corpus (`/work/shared/corpus/ttnn`, read when present) and a
//! generated-looking function, each re-parsed with `Parse::reparse_edit`, re-lowered with
//! `ir::relower_edit` from the old lowering, and compared with `lower_parse` of a fresh
//! parse of the new text.

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

/// Replacements that keep an op an op, mostly: attribute values, names, types, locations.
const SWAPS: &[(&str, &str)] = &[
    ("true", "false"),
    ("false", "true"),
    ("bf16", "f32"),
    ("f32", "bf16"),
    ("dram", "l1"),
    ("l1", "dram"),
    ("interleaved", "height_sharded"),
    ("loc(\"", "loc(\"x"),
    ("relu", "gelu"),
    ("%0", "%9999"),
    ("1x", "2x"),
    (", ", ",  "),
    ("#", "#q"),
];

/// An edit on a line holding an op: a swap, a digit change or a one-byte deletion.
fn random_edit(rng: &mut Rng, text: &str) -> Option<(TextRange, String)> {
    let at = rng.below(text.len());
    let line = text[at..].find("\n    %").or_else(|| text.find("\n  %"))?;
    let start = if text[at..].contains("\n    %") { at + line } else { line } + 1;
    let len = text[start..].find('\n').unwrap_or(text.len() - start);
    let line_text = &text[start..start + len];
    match rng.below(3) {
        0 => {
            let (from, to) = SWAPS[rng.below(SWAPS.len())];
            let i = line_text.find(from)? + start;
            Some((TextRange::new(i as u32, (i + from.len()) as u32), to.to_owned()))
        }
        1 => {
            let i = line_text.find(|c: char| c.is_ascii_digit())? + start;
            Some((
                TextRange::new(i as u32, i as u32 + 1),
                ((rng.next() % 10) as u8 + b'0').to_string(),
            ))
        }
        _ => {
            let i = start + 1 + rng.below(len.saturating_sub(2));
            if !text.is_char_boundary(i) || !text.is_char_boundary(i + 1) {
                return None;
            }
            Some((TextRange::new(i as u32, i as u32 + 1), String::new()))
        }
    }
}

/// An edit of whole lines in a function body: a copy of an op's line under a fresh name
/// inserted after it, an op's line deleted, a block of lines pasted again under fresh names,
/// a comment line added, or a comment typed at the end of an op's line.
fn random_window_edit(rng: &mut Rng, text: &str, fresh: usize) -> Option<(TextRange, String)> {
    let mut at = rng.below(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let line = text[at..].find("\n    %")? + at + 1;
    let len = text[line..].find('\n')?;
    let line_text = &text[line..line + len];
    let renamed = |l: &str, k: usize| {
        let n = l.trim_start().split(' ').next().unwrap_or("");
        l.replacen(n, &format!("%fresh{fresh}_{k}"), 1)
    };
    match rng.below(5) {
        4 => {
            // A trailing comment typed after the op.
            let end = (line + len) as u32;
            Some((TextRange::new(end, end), " // note".to_owned()))
        }
        0 => {
            let end = (line + len + 1) as u32;
            Some((TextRange::new(end, end), format!("{}\n", renamed(line_text, 0))))
        }
        1 => Some((TextRange::new(line as u32, (line + len + 1) as u32), String::new())),
        2 => {
            let block: Vec<&str> = text[line..].lines().take(1 + rng.below(20)).collect();
            if block.iter().any(|l| !l.starts_with("    %")) {
                return None;
            }
            let pasted: String =
                block.iter().enumerate().map(|(k, l)| format!("{}\n", renamed(l, k))).collect();
            let end = (line + len + 1) as u32;
            Some((TextRange::new(end, end), pasted))
        }
        _ => Some((TextRange::new(line as u32, line as u32), "    // a note\n".to_owned())),
    }
}

/// Applies `edits` random edits to `text` (each from the text as written); returns how many
/// were re-lowered incrementally.
fn check_random_edits(name: &str, text: &str, seed: u64, edits: usize) -> usize {
    check_edits(name, text, seed, edits, |rng, text, _| random_edit(rng, text))
}

/// [`check_random_edits`] with edits from `make`.
fn check_edits(
    name: &str,
    text: &str,
    seed: u64,
    edits: usize,
    make: impl Fn(&mut Rng, &str, usize) -> Option<(TextRange, String)>,
) -> usize {
    let mut rng = Rng(seed | 1);
    let old_parse = parse(text);
    let old = ir::lower_parse(text, &old_parse);
    let mut fast = 0;
    for step in 0..edits {
        let Some((range, insert)) = make(&mut rng, text, step) else { continue };
        let mut new_text = text.to_owned();
        new_text.replace_range(range.start as usize..range.end as usize, &insert);
        let mut patched = old_parse.clone();
        let Some(op) = patched.reparse_edit(&new_text, range, insert.len() as u32) else {
            continue;
        };
        let Some(again) = ir::relower_edit(&old, &new_text, &patched, op) else { continue };
        fast += 1;
        let fresh = ir::lower_parse(&new_text, &parse(&new_text));
        assert!(
            again == fresh,
            "{name} (seed {seed}, step {step}): re-lowering {range:?} -> {insert:?} differs \
             from lowering from scratch"
        );
    }
    fast
}

/// A function of `n` ops in the shape the generator and tt-mlir print.
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

#[test]
fn relowering_an_edited_op_equals_lowering_the_generated_function_from_scratch() {
    let text = generated(300);
    let fast = check_random_edits("generated", &text, 3, 400);
    // The fast path must actually be taken, or the comparison above shows nothing.
    assert!(fast > 50, "only {fast} of 400 edits were re-lowered incrementally");
}

#[test]
fn relowering_inserted_deleted_and_pasted_ops_equals_lowering_from_scratch() {
    // Whole ops inserted under fresh names, deleted (mostly used by the next op, so lowered
    // from scratch, and the last op's results unused), pasted in blocks, and comment lines:
    // each re-lowered window equals lowering the new text from scratch.
    let text = generated(300);
    let fast = check_edits("generated", &text, 5, 400, random_window_edit);
    // Deleting an op the next one uses (most deletions in this chain) lowers from scratch.
    assert!(fast > 200, "only {fast} of 400 window edits were re-lowered incrementally");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data/samples");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    files.sort();
    files.extend(corpus_files());
    for (i, path) in files.iter().enumerate() {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        check_edits(&path.display().to_string(), &text, i as u64 + 7, 10, random_window_edit);
    }
}

#[test]
fn relowering_an_edited_op_equals_lowering_the_samples_and_corpus_from_scratch() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data/samples");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    files.sort();
    files.extend(corpus_files());
    let mut fast = 0;
    for (i, path) in files.iter().enumerate() {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        fast += check_random_edits(&path.display().to_string(), &text, i as u64 + 11, 20);
    }
    assert!(fast > 0, "no edit was re-lowered incrementally");
}

#[test]
fn relowering_finds_the_same_definitions_when_names_are_defined_twice() {
    // `%d` is defined twice (the later definition counts), `%b` is an argument and an op
    // result: re-lowering the op that reads them, through the sorted op keys, must resolve
    // them as lowering the whole function does.
    let t = "tensor<64x64xbf16, #l>";
    let text = format!(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n\
         func.func @main(%a: {t}, %b: {t}) -> {t} {{\n\
         \x20 %d = \"ttnn.relu\"(%a) : ({t}) -> {t} loc(\"d1\")\n\
         \x20 %b = \"ttnn.exp\"(%a) : ({t}) -> {t} loc(\"b1\")\n\
         \x20 %d = \"ttnn.gelu\"(%b) : ({t}) -> {t} loc(\"d2\")\n\
         \x20 %e = \"ttnn.add\"(%d, %b) {{note = 1 : i64}} : ({t}, {t}) -> {t} loc(\"e\")\n\
         \x20 return %e : {t}\n}}\n"
    );
    let at = text.find("note = 1").expect("the note is there") as u32 + 7;
    let range = TextRange::new(at, at + 1);
    let mut new_text = text.clone();
    new_text.replace_range(at as usize..at as usize + 1, "2");
    let old_parse = parse(&text);
    let old = ir::lower_parse(&text, &old_parse);
    let mut patched = old_parse.clone();
    let op = patched.reparse_edit(&new_text, range, 1).expect("the edit takes the fast path");
    let again = ir::relower_edit(&old, &new_text, &patched, op).expect("re-lowered");
    assert!(again == ir::lower_parse(&new_text, &parse(&new_text)));
}

#[test]
fn relowering_a_result_type_change_checks_the_uses_again_as_lowering_does() {
    // `%0`'s result becomes f32: its two uses now mismatch their declared bf16 operands, and
    // changing it back clears both errors; each step re-lowers the one op and re-checks the
    // uses without lowering the file again.
    let t = "tensor<64x64xbf16, #l>";
    let text = format!(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n\
         func.func @main(%a: {t}) -> {t} {{\n\
         \x20 %0 = \"ttnn.relu\"(%a) : ({t}) -> {t} loc(\"r\")\n\
         \x20 %1 = \"ttnn.exp\"(%0) : ({t}) -> {t} loc(\"e\")\n\
         \x20 %2 = \"ttnn.add\"(%0, %1) : ({t}, {t}) -> {t} loc(\"s\")\n\
         \x20 return %2 : {t}\n}}\n"
    );
    let relu = text.find("ttnn.relu").expect("the relu");
    let at =
        (relu + text[relu..].find("-> tensor<64x64xbf16").expect("its result type")) as u32 + 16;
    let step = |before: &str, range: TextRange, insert: &str| {
        let (after, fresh) = relowered_alone(before, range, insert);
        (after, fresh.diagnostics.iter().filter(|d| d.code == "type-mismatch").count())
    };
    let (retyped, mismatches) = step(&text, TextRange::new(at, at + 4), "f32");
    assert_eq!(mismatches, 2);
    let (back, mismatches) = step(&retyped, TextRange::new(at, at + 3), "bf16");
    assert_eq!(mismatches, 0);
    assert_eq!(back, text);
}

#[test]
fn relowering_an_op_broken_and_fixed_equals_lowering_from_scratch() {
    // The exp's operand list loses its `(`, a syntax error inside the op: the op is lowered
    // again with its new errors, and its user (the add) loses its check against the exp's
    // now unknown result type; putting the `(` back clears it all. One op each time.
    let t = "tensor<64x64xbf16, #l>";
    let text = format!(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n\
         func.func @main(%a: {t}) -> {t} {{\n\
         \x20 %0 = \"ttnn.relu\"(%a) : ({t}) -> {t} loc(\"r\")\n\
         \x20 %1 = \"ttnn.exp\"(%0) : ({t}) -> {t} loc(\"e\")\n\
         \x20 %2 = \"ttnn.add\"(%0, %1) : ({t}, {t}) -> {t} loc(\"s\")\n\
         \x20 return %2 : {t}\n}}\n"
    );
    let at = text.find("\"ttnn.exp\"(").expect("the exp") as u32 + 10;
    let step = |before: &str, range: TextRange, insert: &str| {
        let (after, fresh) = relowered_alone(before, range, insert);
        (after, fresh.diagnostics.len())
    };
    let (broken, errors) = step(&text, TextRange::new(at, at + 1), "");
    assert!(errors > 0, "breaking the op gives a syntax error");
    let (fixed, errors) = step(&broken, TextRange::new(at, at), "(");
    assert_eq!(errors, 0);
    assert_eq!(fixed, text);
}

/// `before` with `range` replaced by `insert`, re-parsed and re-lowered incrementally (which
/// must take the fast path), checked equal to lowering the new text from scratch; the new
/// text and that lowering.
fn relowered_alone(before: &str, range: TextRange, insert: &str) -> (String, ir::LoweredFile) {
    let mut after = before.to_owned();
    after.replace_range(range.start as usize..range.end as usize, insert);
    let old_parse = parse(before);
    let old = ir::lower_parse(before, &old_parse);
    let mut patched = old_parse.clone();
    let op = patched.reparse_edit(&after, range, insert.len() as u32).expect("re-parsed");
    let again = ir::relower_edit(&old, &after, &patched, op).expect("re-lowered alone");
    let fresh = ir::lower_parse(&after, &parse(&after));
    assert!(again == fresh, "the re-lowering differs from lowering {after}");
    (after, fresh)
}
