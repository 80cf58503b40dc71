//! The `textDocument/publishDiagnostics` notification written straight to JSON bytes.
//!
//! A 10k-op file publishes about 3500 diagnostics (870 KB) after every keystroke. Through
//! serde, each string is escaped a byte at a time through a table and each field goes
//! through the generic serializer: about 15M instructions per publication, on the path
//! from the edit to the diagnostics. Building an `lsp::Diagnostic` of each first cost three
//! allocations per diagnostic besides. So `ide`'s diagnostics are written here directly,
//! with their positions converted on the way and a fast path for strings that need no
//! escaping. The output is the same JSON value serde writes for the `lsp` form
//! ([`DocDiagnostics::to_lsp`]; tested below).

use std::io::Write;

use lsp_types as lsp;

use crate::{convert, handlers::DocDiagnostics};

/// The whole JSON-RPC notification for one document's diagnostics.
pub(crate) fn notification(doc: &DocDiagnostics) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + 256 * doc.len());
    out.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"#,
    );
    string(&mut out, doc.uri.as_str());
    out.extend_from_slice(br#","diagnostics":["#);
    let lines = doc.lines();
    // Diagnostics come mostly sorted by position: each start is looked for from the last.
    let mut hint = 0;
    for (i, d) in doc.all().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"range":"#);
        range(&mut out, lines.lsp_range_from(d.range, &mut hint));
        out.extend_from_slice(br#","severity":"#);
        // `DiagnosticSeverity` serializes as its number, which it does not expose.
        out.push(match convert::severity(d.severity) {
            lsp::DiagnosticSeverity::ERROR => b'1',
            lsp::DiagnosticSeverity::WARNING => b'2',
            lsp::DiagnosticSeverity::INFORMATION => b'3',
            _ => b'4',
        });
        out.extend_from_slice(br#","code":"#);
        string(&mut out, d.code);
        out.extend_from_slice(br#","source":"#);
        string(&mut out, convert::SOURCE);
        out.extend_from_slice(br#","message":"#);
        string(&mut out, d.message);
        out.push(b'}');
    }
    out.push(b']');
    if let Some(v) = doc.version {
        out.extend_from_slice(br#","version":"#);
        number(&mut out, i64::from(v));
    }
    out.extend_from_slice(b"}}");
    out
}

fn range(out: &mut Vec<u8>, r: lsp::Range) {
    out.extend_from_slice(br#"{"start":"#);
    position(out, r.start);
    out.extend_from_slice(br#","end":"#);
    position(out, r.end);
    out.push(b'}');
}

fn position(out: &mut Vec<u8>, p: lsp::Position) {
    out.extend_from_slice(br#"{"line":"#);
    number(out, i64::from(p.line));
    out.extend_from_slice(br#","character":"#);
    number(out, i64::from(p.character));
    out.push(b'}');
}

fn number(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(syntax::decimal(n.unsigned_abs(), &mut [0; 20]).as_bytes());
}

/// A JSON string: runs of bytes that need no escape are copied whole, found eight bytes at
/// a time.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    // Bytes before `start` are written; `i` is the next to look at.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok())
            && !needs_escape(u64::from_le_bytes(word))
        {
            i += 8;
            continue;
        }
        let b = bytes[i];
        let escape: &[u8] = match b {
            b'"' => br#"\""#,
            b'\\' => br"\\",
            b'\n' => br"\n",
            b'\r' => br"\r",
            b'\t' => br"\t",
            0x08 => br"\b",
            0x0c => br"\f",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                let _ = write!(out, "\\u{b:04x}");
                i += 1;
                start = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether any of the eight bytes of `w` is a control character, a quote or a backslash.
/// Exact (the usual word-at-a-time tests: a byte below `n` for `n <= 128`, a zero byte).
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = zero_in(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_in(w ^ (ONES * u64::from(b'\\')));
    (below_space | quote | backslash) != 0
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn check(doc: &DocDiagnostics) {
        let ours: serde_json::Value = serde_json::from_slice(&notification(doc)).expect("is JSON");
        let params = lsp::PublishDiagnosticsParams {
            uri: doc.uri.clone(),
            diagnostics: doc.to_lsp(),
            version: doc.version,
        };
        let serde = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "textDocument/publishDiagnostics",
            "params": serde_json::to_value(params).expect("serializes"),
        });
        assert_eq!(ours, serde);
    }

    fn diag(range: (u32, u32), severity: ide::Severity, message: &str) -> ide::Diagnostic {
        ide::Diagnostic {
            range: syntax::TextRange::new(range.0, range.1),
            severity,
            code: "spill",
            message: message.to_owned(),
        }
    }

    #[test]
    fn the_word_test_finds_exactly_the_bytes_that_need_an_escape() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut word = [b'a'; 8];
                word[at] = b;
                let expected = b < 0x20 || b == b'"' || b == b'\\';
                assert_eq!(needs_escape(u64::from_le_bytes(word)), expected, "byte {b:#x} at {at}");
            }
        }
        // Neighbours that borrow in the subtraction do not make a false positive.
        assert!(!needs_escape(u64::from_le_bytes([
            0x80, 0x21, 0xff, 0x23, 0x5d, 0x5b, 0x7f, 0x20
        ])));
    }

    #[test]
    fn written_notifications_equal_what_serde_writes() {
        let uri = lsp::Uri::from_str("file:///tmp/a%20b/model.mlir").expect("a URI");
        let text: std::sync::Arc<str> =
            std::sync::Arc::from("%0 = \"ttnn.relu\"(%a)\n  ünïcødé ✓ %1 = x\n\nlast line");
        let index = std::sync::Arc::new(syntax::LineIndex::new(&text));
        for version in [Some(7), None] {
            check(&DocDiagnostics {
                uri: uri.clone(),
                version,
                text: text.clone(),
                index: index.clone(),
                diagnostics: vec![
                    diag(
                        (0, 2),
                        ide::Severity::Info,
                        "output goes to L1 (height sharded, 8x8 cores): \"quoted\" \\ back",
                    ),
                    diag(
                        (21, 40),
                        ide::Severity::Warning,
                        "tabs\tnew\nlines\r\u{1}\u{8}\u{c}\u{1f} and ünïcødé ✓",
                    ),
                    diag(
                        (39, 55),
                        ide::Severity::Error,
                        "a long message with an escape \" only after the first sixteen bytes\\",
                    ),
                    diag((55, 55), ide::Severity::Hint, "at the very end"),
                    diag((2, 9), ide::Severity::Info, "a note after the findings"),
                ],
            });
            check(&DocDiagnostics {
                uri: uri.clone(),
                version,
                text: text.clone(),
                index: index.clone(),
                diagnostics: Vec::new(),
            });
        }
    }
}
