//! The stdio transport: LSP's `Content-Length` framing over stdin and stdout.
//!
//! lsp-server's own stdio transport stops reading at the first malformed message, which
//! ends the session. Here a payload that is not a JSON-RPC message is answered with a
//! `ParseError` (id `null`, which `lsp_server::Response` cannot express) and reading goes on;
//! only a broken frame header on a closed stream ends it. Both threads write whole frames
//! under the stdout lock, so their output never interleaves.
//!
//! Besides `Message`s, the writer takes frames already serialized (`Frames`): published
//! diagnostics are written straight from the typed values on the thread that computed them,
//! which skips building and dropping a `serde_json::Value` tree of thousands of diagnostics
//! (most of the server's time per edit on a 10k-op file went there).

use std::{
    io::{self, BufRead, Write},
    thread,
};

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use lsp_server::{Connection, ErrorCode, Message};

pub(crate) struct IoThreads {
    reader: thread::JoinHandle<()>,
    writer: thread::JoinHandle<()>,
}

impl IoThreads {
    /// Waits for the writer to flush; the reader may be blocked on stdin, so it is detached.
    pub(crate) fn join(self) {
        let _ = self.writer.join();
        drop(self.reader);
    }
}

/// Whole messages already serialized as JSON-RPC bodies, for the writer to frame and write,
/// and word back each time one is out.
pub(crate) struct Frames {
    pub(crate) send: Sender<Vec<u8>>,
    /// A unit per frame written: the main loop starts its quiet work once the publication
    /// (most of a megabyte on a large file) is out, not while it is being written.
    pub(crate) written: Receiver<()>,
}

pub(crate) fn connect() -> (Connection, Frames, IoThreads) {
    let (to_server, from_client) = bounded::<Message>(0);
    let (to_client, from_server): (Sender<Message>, Receiver<Message>) = unbounded();
    let (send, raw): (Sender<Vec<u8>>, Receiver<Vec<u8>>) = unbounded();
    let (written_tx, written) = unbounded::<()>();
    let frames = Frames { send, written };
    let writer = thread::Builder::new()
        .name("lsp-writer".to_owned())
        .spawn(move || write_loop(&from_server, &raw, &written_tx))
        .unwrap_or_else(|e| panic!("cannot spawn the writer thread: {e}"));
    let reader = thread::Builder::new()
        .name("lsp-reader".to_owned())
        .spawn(move || {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            loop {
                match read_frame(&mut input) {
                    Ok(Some(body)) => match serde_json::from_slice::<Message>(&body) {
                        Ok(msg) => {
                            let is_exit =
                                matches!(&msg, Message::Notification(n) if n.method == "exit");
                            if to_server.send(msg).is_err() || is_exit {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::warn!("malformed message: {e}");
                            write_parse_error(&e.to_string());
                        }
                    },
                    Ok(None) => return,
                    Err(e) => {
                        tracing::error!("cannot read from stdin: {e}");
                        return;
                    }
                }
            }
        })
        .unwrap_or_else(|e| panic!("cannot spawn the reader thread: {e}"));
    (Connection { sender: to_client, receiver: from_client }, frames, IoThreads { reader, writer })
}

/// Writes messages and serialized bodies as they come, until the message channel closes.
/// The two channels are not ordered with respect to each other, which LSP does not ask
/// for: a notification may overtake a response.
fn write_loop(messages: &Receiver<Message>, raw: &Receiver<Vec<u8>>, written: &Sender<()>) {
    let mut raw_open = true;
    loop {
        let written = if raw_open {
            crossbeam_channel::select! {
                recv(messages) -> msg => match msg {
                    Ok(msg) => msg.write(&mut io::stdout().lock()),
                    Err(_) => return,
                },
                recv(raw) -> body => match body {
                    Ok(body) => write_body(&body).map(|()| {
                        let _ = written.send(());
                    }),
                    Err(_) => {
                        raw_open = false;
                        Ok(())
                    }
                },
            }
        } else {
            match messages.recv() {
                Ok(msg) => msg.write(&mut io::stdout().lock()),
                Err(_) => return,
            }
        };
        if let Err(e) = written {
            tracing::error!("cannot write to stdout: {e}");
            return;
        }
    }
}

fn write_body(body: &[u8]) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.write_all(body)?;
    out.flush()
}

/// Reads one frame's body. `Ok(None)` at the end of input. Header lines that are not
/// `Name: value` are skipped with a warning, so one bad header does not end the session.
fn read_frame(input: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        match header.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => tracing::warn!("bad Content-Length header: {header:?}"),
                }
            }
            Some(_) => {}
            None => tracing::warn!("malformed header line skipped: {header:?}"),
        }
    }
    let mut body = vec![0; length.unwrap_or(0)];
    input.read_exact(&mut body)?;
    Ok(Some(body))
}

fn write_parse_error(message: &str) {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": ErrorCode::ParseError as i32, "message": format!("malformed message: {message}") },
    })
    .to_string();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
    let _ = out.flush();
}
