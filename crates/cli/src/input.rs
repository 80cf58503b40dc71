//! Reading input files: I/O errors are fatal (exit 2), bad encodings are diagnostics.
//!
//! Every file the CLI reads (IR, overrides, target files) goes through [`read_bytes`]: only
//! regular files are read, so a device (`/dev/zero`) or a named pipe is refused at once
//! instead of read without end or waited on, and no file over [`MAX_INPUT_BYTES`] is read.

use std::io::Read as _;

use anyhow::Context as _;
use camino::Utf8Path;
use ide::{Diagnostic, Severity};
use syntax::TextRange;

/// A file read from disk, with a diagnostic if it was not valid UTF-8.
pub struct InputFile {
    pub path: String,
    pub text: String,
    pub encoding_error: Option<Diagnostic>,
}

/// The largest file read as an input: 256 MiB. The biggest real model IR we know of is a
/// few tens of MiB; the analysis holds several times its input in memory.
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

pub fn read(path: &Utf8Path) -> anyhow::Result<InputFile> {
    Ok(decode(path.as_str(), read_bytes(path)?))
}

/// A UTF-8 text file (overrides, target files), read with the same checks as [`read`].
pub fn read_text(path: &Utf8Path) -> anyhow::Result<String> {
    String::from_utf8(read_bytes(path)?).map_err(|e| {
        anyhow::format_err!("cannot read `{path}`: not valid UTF-8: {}", e.utf8_error())
    })
}

/// The bytes of a regular file of at most [`MAX_INPUT_BYTES`].
pub fn read_bytes(path: &Utf8Path) -> anyhow::Result<Vec<u8>> {
    let fail = || format!("cannot read `{path}`");
    // Checked before opening: opening a named pipe blocks until a writer appears.
    let meta = std::fs::metadata(path).with_context(fail)?;
    check_kind(path, &meta)?;
    let file = std::fs::File::open(path).with_context(fail)?;
    // Checked again on the open file, in case the path was swapped in between.
    let meta = file.metadata().with_context(fail)?;
    check_kind(path, &meta)?;
    // The size may grow while the file is read: never read more than the cap plus one byte.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes).with_context(fail)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large(path));
    }
    Ok(bytes)
}

fn check_kind(path: &Utf8Path, meta: &std::fs::Metadata) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        if meta.len() > MAX_INPUT_BYTES {
            return Err(too_large(path));
        }
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    anyhow::bail!("cannot read `{path}`: it is {what}; only regular files are read as inputs")
}

fn too_large(path: &Utf8Path) -> anyhow::Error {
    anyhow::format_err!(
        "cannot read `{path}`: it is larger than {} MiB, the limit for an input file",
        MAX_INPUT_BYTES / (1024 * 1024)
    )
}

/// Decodes bytes as UTF-8. Invalid sequences are replaced (so the rest of the file is still
/// analyzed) and the first one is reported at its position.
pub fn decode(path: &str, bytes: Vec<u8>) -> InputFile {
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
