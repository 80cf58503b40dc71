//! Diagnostic output: rustc-style snippets for people, JSON lines for tools.

use std::io::IsTerminal as _;

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use ide::{Diagnostic, Severity};
use syntax::{LineIndex, TextRange};

/// Renders diagnostics the way rustc does, with a source snippet.
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
    for d in diags {
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Info => Level::INFO,
            Severity::Hint => Level::HELP,
        };
        let range = clamp(text, d.range);
        let report = &[level.primary_title(d.message.as_str()).id(d.code).element(
            Snippet::source(text)
                .path(path)
                .fold(true)
                .annotation(AnnotationKind::Primary.span(range.start as usize..range.end as usize)),
        )];
        writeln!(out, "{}\n", renderer.render(report))?;
    }
    Ok(())
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
