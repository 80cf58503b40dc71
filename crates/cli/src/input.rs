//! Reading input files: I/O errors are fatal (exit 2), bad encodings are diagnostics.

use anyhow::Context as _;
use camino::Utf8Path;
use ide::{Diagnostic, Severity};
use syntax::TextRange;

/// A file read from disk, with a diagnostic if it was not valid UTF-8.
pub(crate) struct InputFile {
    pub(crate) path: String,
    pub(crate) text: String,
    pub(crate) encoding_error: Option<Diagnostic>,
}

pub(crate) fn read(path: &Utf8Path) -> anyhow::Result<InputFile> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{path}`"))?;
    Ok(decode(path.as_str(), bytes))
}

/// Decodes bytes as UTF-8. Invalid sequences are replaced (so the rest of the file is still
/// analyzed) and the first one is reported at its position.
pub(crate) fn decode(path: &str, bytes: Vec<u8>) -> InputFile {
    match String::from_utf8(bytes) {
        Ok(text) => InputFile { path: path.to_owned(), text, encoding_error: None },
        Err(e) => {
            let utf8 = e.utf8_error();
            let valid = utf8.valid_up_to();
            let bad_len = utf8.error_len().unwrap_or(1);
            let bytes = e.into_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // In the lossy text the bad sequence became U+FFFD (3 bytes) at the same offset.
            let start = valid as u32;
            let message = format!(
                "file is not valid UTF-8: invalid byte{} {} at offset {valid}",
                if bad_len > 1 { "s" } else { "" },
                bytes[valid..(valid + bad_len).min(bytes.len())]
                    .iter()
                    .map(|b| format!("0x{b:02X}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            InputFile {
                path: path.to_owned(),
                text,
                encoding_error: Some(Diagnostic {
                    range: TextRange::new(start, start + 3),
                    severity: Severity::Error,
                    code: "invalid-utf8",
                    message,
                }),
            }
        }
    }
}
