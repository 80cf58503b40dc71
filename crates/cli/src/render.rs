//! Diagnostic output: rustc-style snippets for people, JSON lines for tools.

use std::io::IsTerminal as _;

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use ide::{Diagnostic, Severity};
use syntax::{LineIndex, TextRange};

/// The most diagnostics the human renderer shows per file; a last line counts the rest.
/// Thousands of snippets help no one, and a terminal takes a while to scroll them.
pub(crate) const MAX_SHOWN_PER_FILE: usize = 200;

/// Renders diagnostics the way rustc does, with a source snippet.
///
/// Each snippet is built from the lines its diagnostic covers only, so rendering is linear in
/// the file (handing the whole file to the snippet renderer per diagnostic was quadratic:
/// 20k errors in a 1.5 MB file took minutes).
pub(crate) fn human(
    path: &str,
    text: &str,
    diags: &[Diagnostic],
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let renderer = if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let starts = line_starts(text);
    for d in diags.iter().take(MAX_SHOWN_PER_FILE) {
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Info => Level::INFO,
            Severity::Hint => Level::HELP,
        };
        let range = clamp(text, d.range);
        let (start, end) = (range.start as usize, range.end as usize);
        let first = line_of(&starts, start);
        let last = line_of(&starts, end);
        let lo = starts[first];
        let hi = starts.get(last + 1).copied().unwrap_or(text.len());
        let report = &[level.primary_title(d.message.as_str()).id(d.code).element(
            Snippet::source(&text[lo..hi])
                .line_start(first + 1)
                .path(path)
                .fold(true)
                .annotation(AnnotationKind::Primary.span(start - lo..end - lo)),
        )];
        writeln!(out, "{}\n", renderer.render(report))?;
    }
    if diags.len() > MAX_SHOWN_PER_FILE {
        let rest = diags.len() - MAX_SHOWN_PER_FILE;
        writeln!(
            out,
            "... and {rest} more diagnostic{} in `{path}`, not shown (the first {MAX_SHOWN_PER_FILE} are)\n",
            if rest == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// The byte offset of the start of every line (the first is 0).
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

/// The 0-based line holding byte `offset` (an offset past the end is on the last line).
fn line_of(starts: &[usize], offset: usize) -> usize {
    starts.partition_point(|&s| s <= offset).saturating_sub(1)
}

/// A range that lies on character boundaries inside the text.
fn clamp(text: &str, r: TextRange) -> TextRange {
    let fix = |mut i: usize| {
        i = i.min(text.len());
        while i > 0 && !text.is_char_boundary(i) {
            i -= 1;
        }
        i as u32
    };
    TextRange::new(fix(r.start as usize), fix(r.end as usize).max(fix(r.start as usize)))
}

/// One JSON object per line with 0-based lines and UTF-16 characters, as LSP counts.
pub(crate) fn json(
    path: &str,
    text: &str,
    diags: &[Diagnostic],
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let index = LineIndex::new(text);
    for d in diags {
        let start = index.line_col(text, d.range.start);
        let end = index.line_col(text, d.range.end);
        let v = serde_json::json!({
            "file": path,
            "range": {
                "start": {"line": start.line, "character": start.col_utf16},
                "end": {"line": end.line, "character": end.col_utf16},
            },
            "severity": d.severity.as_str(),
            "code": d.code,
            "message": d.message,
        });
        writeln!(out, "{v}")?;
    }
    Ok(())
}
