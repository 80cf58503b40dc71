//! The `textDocument/publishDiagnostics` notification written straight to JSON bytes.
//!
//! A 10k-op file publishes about 3500 diagnostics (870 KB) after every keystroke. Through
//! serde, each string is escaped a byte at a time through a table and each field goes
//! through the generic serializer: about 15M instructions per publication, on the path
//! from the edit to the diagnostics. The diagnostics the server makes have five fields, so
//! they are written here directly, with a fast path for strings that need no escaping; a
//! diagnostic with any other field set goes through serde as before. The output is the same
//! JSON value serde would write (tested below).

use std::io::Write;

use lsp_types as lsp;

/// The whole JSON-RPC notification for `params`.
pub(crate) fn notification(params: &lsp::PublishDiagnosticsParams) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128 + 256 * params.diagnostics.len());
    out.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"#,
    );
    string(&mut out, params.uri.as_str());
    out.extend_from_slice(br#","diagnostics":["#);
    for (i, d) in params.diagnostics.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        diagnostic(&mut out, d)?;
    }
    out.push(b']');
    if let Some(v) = params.version {
        out.extend_from_slice(br#","version":"#);
        number(&mut out, i64::from(v));
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

fn diagnostic(out: &mut Vec<u8>, d: &lsp::Diagnostic) -> serde_json::Result<()> {
    if d.code_description.is_some()
        || d.related_information.is_some()
        || d.tags.is_some()
        || d.data.is_some()
    {
        return serde_json::to_writer(out, d);
    }
    out.extend_from_slice(br#"{"range":"#);
    range(out, d.range);
    if let Some(s) = d.severity {
        out.extend_from_slice(br#","severity":"#);
        // `DiagnosticSeverity` serializes as its number, which it does not expose.
        match s {
            lsp::DiagnosticSeverity::ERROR => out.push(b'1'),
            lsp::DiagnosticSeverity::WARNING => out.push(b'2'),
            lsp::DiagnosticSeverity::INFORMATION => out.push(b'3'),
            lsp::DiagnosticSeverity::HINT => out.push(b'4'),
            other => serde_json::to_writer(&mut *out, &other)?,
        }
    }
    match &d.code {
        Some(lsp::NumberOrString::Number(n)) => {
            out.extend_from_slice(br#","code":"#);
            number(out, i64::from(*n));
        }
        Some(lsp::NumberOrString::String(s)) => {
            out.extend_from_slice(br#","code":"#);
            string(out, s);
        }
        None => {}
    }
    if let Some(s) = &d.source {
        out.extend_from_slice(br#","source":"#);
        string(out, s);
    }
    out.extend_from_slice(br#","message":"#);
    string(out, &d.message);
    out.push(b'}');
    Ok(())
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

    fn check(params: &lsp::PublishDiagnosticsParams) {
        let ours: serde_json::Value =
            serde_json::from_slice(&notification(params).expect("serializes")).expect("is JSON");
        let serde = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "textDocument/publishDiagnostics",
            "params": serde_json::to_value(params).expect("serializes"),
        });
        assert_eq!(ours, serde);
    }

    fn diag(message: &str) -> lsp::Diagnostic {
        lsp::Diagnostic {
            range: lsp::Range::new(lsp::Position::new(3, 7), lsp::Position::new(3, 19)),
            severity: Some(lsp::DiagnosticSeverity::INFORMATION),
            code: Some(lsp::NumberOrString::String("spill".to_owned())),
            source: Some("ttnn-analyzer".to_owned()),
            message: message.to_owned(),
            ..lsp::Diagnostic::default()
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
        let mut related = diag("with related information");
        related.related_information = Some(vec![lsp::DiagnosticRelatedInformation {
            location: lsp::Location { uri: uri.clone(), range: lsp::Range::default() },
            message: "here".to_owned(),
        }]);
        let mut numbered = diag("numbered, no severity, no source");
        numbered.code = Some(lsp::NumberOrString::Number(-4));
        numbered.severity = None;
        numbered.source = None;
        for version in [Some(7), None] {
            check(&lsp::PublishDiagnosticsParams {
                uri: uri.clone(),
                diagnostics: vec![
                    diag("output goes to L1 (height sharded, 8x8 cores): \"quoted\" \\ back"),
                    diag("tabs\tnew\nlines\r\u{1}\u{8}\u{c}\u{1f} and ünïcødé ✓"),
                    diag("a long message with an escape \" only after the first sixteen bytes\\"),
                    related.clone(),
                    numbered.clone(),
                ],
                version,
            });
            check(&lsp::PublishDiagnosticsParams {
                uri: uri.clone(),
                diagnostics: Vec::new(),
                version,
            });
        }
    }
}
