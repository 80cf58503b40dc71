//! Writing results: files are replaced atomically and never alias an input; stdout write
//! failures are errors (exit 2), not silently dropped output.
//!
//! Rules (docs/reliability.md lists them):
//! - An output that is the same file as an input, compared by device and inode after
//!   following links, is refused: a hard link or a symlink to the input is the input.
//! - An output is written to a temporary file in its own directory and renamed over the
//!   destination only once every byte is written and synced, so a failed run (full disk,
//!   a panic, Ctrl-C) leaves any previous output as it was and no partial file behind.

use std::{
    fs::Permissions,
    io::Write as _,
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
};

use anyhow::Context as _;
use camino::Utf8Path;

/// The device and inode of an existing file, following links; `None` if it does not exist.
fn identity(path: &Utf8Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuses `output` when it is the same file as any of `inputs` (by device and inode, so
/// hard links, symlinks and `./`-spellings are all caught). Called before any work is done.
pub(crate) fn ensure_not_an_input(output: &Utf8Path, inputs: &[&Utf8Path]) -> anyhow::Result<()> {
    for input in inputs {
        // Equal spellings of a file that does not exist yet are caught too.
        let same = output == *input
            || matches!((identity(output), identity(input)), (Some(o), Some(i)) if o == i);
        if same {
            anyhow::bail!(
                "refusing to overwrite the input file `{input}`: `{output}` is the same file \
                 (by device and inode); write the result elsewhere"
            );
        }
    }
    Ok(())
}

/// Writes `contents` to `path` atomically: a temporary file in the same directory, synced,
/// then renamed into place. An existing destination keeps its permissions; a new one gets
/// the usual `0o666` less the umask.
///
/// A destination that is a symlink or exists and is not a regular file (`/dev/stdout`, a
/// named pipe, a device) is written in place instead: renaming over it would replace the
/// link or the device node rather than write to what it names.
pub(crate) fn write_file(path: &Utf8Path, contents: &[u8]) -> anyhow::Result<()> {
    let fail = || format!("cannot write `{path}`");
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.is_file()
    {
        let mut file =
            std::fs::OpenOptions::new().write(true).truncate(true).open(path).with_context(fail)?;
        return file.write_all(contents).and_then(|()| file.flush()).with_context(fail);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_str().is_empty() => d,
        _ => Utf8Path::new("."),
    };
    let name = path.file_name().unwrap_or("output");
    let mode = std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map_or(0o666, |m| m.permissions().mode() & 0o777);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)
        .with_context(fail)?;
    tmp.write_all(contents).with_context(fail)?;
    // Synced before the rename: after a crash the destination is the old file or the new
    // one, never a renamed but empty file.
    tmp.as_file().sync_all().with_context(fail)?;
    // On any error above, dropping `tmp` removes the temporary file.
    tmp.persist(path).map_err(|e| e.error).with_context(fail)?;
    Ok(())
}

/// Writes all of `bytes` to stdout and flushes: a closed or full stdout is an I/O error.
pub(crate) fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(stdout_error)
}

/// The error for a failed write to stdout.
pub(crate) fn stdout_error(e: std::io::Error) -> anyhow::Error {
    anyhow::format_err!("cannot write to stdout: {e}")
}
