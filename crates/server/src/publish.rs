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
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{n}");
}

/// A JSON string: the bytes between escapes are copied whole.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
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
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
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
