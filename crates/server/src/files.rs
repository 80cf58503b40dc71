//! Reading files from disk (overrides sidecars, target files) without hanging the server.
//!
//! Only regular files are read: opening a named pipe blocks until a writer appears, which
//! would stall the main loop (and every request behind it) forever, and a device such as
//! `/dev/zero` never ends. Files over [`MAX_FILE_BYTES`] are refused, as the CLI refuses
//! them (docs/reliability.md).

use std::io::{self, Read as _};

/// The largest file read: 256 MiB, the CLI's input limit.
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The text of a regular UTF-8 file of at most [`MAX_FILE_BYTES`].
pub(crate) fn read_regular_file(path: &str) -> io::Result<String> {
    let check = |meta: &std::fs::Metadata| {
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(too_large());
        }
        Ok(())
    };
    // Checked before opening, since opening a named pipe is what blocks.
    check(&std::fs::metadata(path)?)?;
    let file = std::fs::File::open(path)?;
    check(&file.metadata()?)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(text)
}

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "larger than 256 MiB, the limit for a file")
}

#[cfg(test)]
mod tests {
    use std::{sync::mpsc, time::Duration};

    use super::*;

    #[test]
    fn a_named_pipe_is_refused_without_waiting_for_a_writer() {
        let path = std::env::temp_dir().join(format!("ttnn-files-{}-pipe", std::process::id()));
        let ok = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo runs");
        assert!(ok.success());
        let name = path.to_str().expect("temp paths are UTF-8 here").to_owned();
        let (tx, rx) = mpsc::channel();
        // On a thread: if the read blocked, the test fails at the timeout instead of hanging.
        std::thread::spawn(move || {
            let _ = tx.send(read_regular_file(&name).map_err(|e| e.to_string()));
        });
        let result = rx.recv_timeout(Duration::from_secs(10));
        let _ = std::fs::remove_file(&path);
        assert_eq!(result, Ok(Err("not a regular file".to_owned())));
    }

    #[test]
    fn a_device_is_refused() {
        let err = read_regular_file("/dev/zero").expect_err("a device is not read");
        assert_eq!(err.to_string(), "not a regular file");
    }
}
