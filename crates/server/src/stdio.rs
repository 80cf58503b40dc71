//! The stdio transport: LSP's base protocol (`Content-Length` framing) over stdin and
//! stdout, with messages as `lsp_server::Message` through serde.
//!
//! lsp-server's own reader ends the session at the first malformed frame and reserves
//! whatever `Content-Length` says before reading it, so frames are read here, bounded and
//! strict, and a bad one does not end the session:
//!
//! - a header block is lines ended by CRLF, then an empty line; it must hold exactly one
//!   `Content-Length` (at most [`MAX_CONTENT_LENGTH`]) and may hold a `Content-Type`;
//!   a header line is at most [`MAX_HEADER_LINE`] bytes;
//! - a body is read as it arrives, never reserved from the header's word;
//! - a header block that breaks these rules (a bad, duplicate, missing or oversized
//!   `Content-Length`, an LF-only line, an unknown header or garbage) is reported with a
//!   `window/logMessage` error and the reader resynchronises: it skips to the next
//!   `Content-Length:` in the stream (where the next frame starts) and reads on;
//! - a body that is not a JSON-RPC message is answered with an error response when its id
//!   can be read (`ParseError` for text that is not JSON, `InvalidRequest` otherwise), else
//!   with a `window/logMessage` error.
//!
//! Whatever happens, the server stays responsive, `shutdown` included.

use std::{
    io::{self, BufRead, Read, Write},
    thread,
};

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use lsp_server::{Connection, ErrorCode, Message, Notification, RequestId, Response};
use lsp_types as lsp;

/// The largest body the server reads: 64 MiB, some fifty times the text of a 100k-op file
/// sent whole. A larger frame is refused and skipped.
pub(crate) const MAX_CONTENT_LENGTH: usize = 64 << 20;

/// The longest header line read (8 KiB); the only headers are two short ones.
pub(crate) const MAX_HEADER_LINE: usize = 8 << 10;

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

/// A connection over stdin and stdout.
pub(crate) fn connect() -> (Connection, IoThreads) {
    serve(|| io::stdin().lock(), || io::stdout().lock())
}

/// A connection reading frames from `input` and writing them to `output`, each on a thread
/// of its own (the constructors run there: stdin's and stdout's locks are per thread).
pub(crate) fn serve<R, W>(
    input: impl FnOnce() -> R + Send + 'static,
    output: impl FnOnce() -> W + Send + 'static,
) -> (Connection, IoThreads)
where
    R: BufRead,
    W: Write,
{
    let (to_server, from_client) = bounded::<Message>(0);
    let (to_client, from_server): (Sender<Message>, Receiver<Message>) = unbounded();
    let writer = thread::Builder::new()
        .name("lsp-writer".to_owned())
        .spawn(move || {
            let mut out = output();
            for msg in from_server {
                if let Err(e) = msg.write(&mut out) {
                    tracing::error!("cannot write to the client: {e}");
                    return;
                }
            }
        })
        .unwrap_or_else(|e| panic!("cannot spawn the writer thread: {e}"));
    let replies = to_client.clone();
    let reader = thread::Builder::new()
        .name("lsp-reader".to_owned())
        .spawn(move || read_loop(&mut FrameReader::new(input()), &to_server, &replies))
        .unwrap_or_else(|e| panic!("cannot spawn the reader thread: {e}"));
    (Connection { sender: to_client, receiver: from_client }, IoThreads { reader, writer })
}

/// Reads frames until the input ends, `exit` arrives or the server is gone; answers the bad
/// ones on `replies` itself.
fn read_loop(
    frames: &mut FrameReader<impl BufRead>,
    to_server: &Sender<Message>,
    replies: &Sender<Message>,
) {
    loop {
        let body = match frames.next() {
            Ok(Some(Frame::Body(body))) => body,
            Ok(Some(Frame::Bad(why))) => {
                tracing::warn!("bad frame: {why}");
                let _ =
                    replies.send(log_error(format!("bad frame: {why}; skipped to the next frame")));
                continue;
            }
            Ok(None) => return,
            Err(e) => {
                tracing::error!("cannot read from the client: {e}");
                return;
            }
        };
        match serde_json::from_slice::<Message>(&body) {
            Ok(msg) => {
                let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
                if to_server.send(msg).is_err() || is_exit {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!("malformed message: {e}");
                let _ = replies.send(malformed_reply(&body, &e));
            }
        }
    }
}

/// The answer to a body that is not a JSON-RPC message: an error response if its id can be
/// read, else an error in the client's log.
fn malformed_reply(body: &[u8], e: &serde_json::Error) -> Message {
    let value = serde_json::from_slice::<serde_json::Value>(body);
    let (code, what) = match &value {
        Ok(_) => (ErrorCode::InvalidRequest, "not a JSON-RPC message"),
        Err(_) => (ErrorCode::ParseError, "not JSON"),
    };
    let id = value.ok().and_then(|v| match v.get("id")? {
        serde_json::Value::Number(n) => {
            n.as_i64().and_then(|n| i32::try_from(n).ok()).map(RequestId::from)
        }
        serde_json::Value::String(s) => Some(RequestId::from(s.clone())),
        _ => None,
    });
    let message = format!("malformed message ({what}): {e}");
    match id {
        Some(id) => Response::new_err(id, code as i32, message).into(),
        None => log_error(message),
    }
}

fn log_error(message: String) -> Message {
    let params = lsp::LogMessageParams { typ: lsp::MessageType::ERROR, message };
    Notification::new("window/logMessage".to_owned(), params).into()
}

#[derive(Debug, PartialEq, Eq)]
enum Frame {
    /// A body whose header block was well formed.
    Body(Vec<u8>),
    /// A header block that was not, and why; the reader has resynchronised after it.
    Bad(String),
}

/// One header line, without its line end.
struct Line {
    bytes: Vec<u8>,
    /// Ended by CRLF (else by a lone LF).
    crlf: bool,
    /// Longer than [`MAX_HEADER_LINE`]: `bytes` holds its start only.
    too_long: bool,
}

const CONTENT_LENGTH: &[u8] = b"content-length:";

struct FrameReader<R> {
    input: R,
    /// The start of a header line found while resynchronising, to read first.
    pending: Option<Line>,
    /// A bad header block was reported: skip to the next `Content-Length:` first.
    resync: bool,
}

impl<R: BufRead> FrameReader<R> {
    fn new(input: R) -> FrameReader<R> {
        FrameReader { input, pending: None, resync: false }
    }

    /// The next frame, `None` at the end of the input.
    fn next(&mut self) -> io::Result<Option<Frame>> {
        if self.resync {
            self.resync = false;
            if !self.skip_to_content_length()? {
                return Ok(None);
            }
            // The line's rest (the value) follows the name the skip consumed.
            let Some(mut rest) = self.read_line()? else { return Ok(None) };
            let mut bytes = b"Content-Length:".to_vec();
            bytes.append(&mut rest.bytes);
            rest.bytes = bytes;
            self.pending = Some(rest);
        }
        let mut length: Option<usize> = None;
        let mut seen_header = false;
        loop {
            let line = match self.pending.take() {
                Some(line) => line,
                None => match self.read_line()? {
                    Some(line) => line,
                    None => return Ok(None),
                },
            };
            if line.bytes.is_empty() && !seen_header {
                // Blank lines between frames are tolerated, CRLF or not.
                continue;
            }
            if let Err(why) = check_line(&line) {
                return Ok(Some(self.bad(&line, why)));
            }
            if line.bytes.is_empty() {
                break;
            }
            seen_header = true;
            let text = String::from_utf8_lossy(&line.bytes);
            let Some((name, value)) = text.split_once(':') else {
                let why = format!("a header line without a colon: {:?}", shorten(&text));
                return Ok(Some(self.bad(&line, why)));
            };
            if name.eq_ignore_ascii_case("content-length") {
                if length.is_some() {
                    return Ok(Some(self.bad(&line, "a second Content-Length".to_owned())));
                }
                match value.trim().parse::<u64>() {
                    Ok(n) if n <= MAX_CONTENT_LENGTH as u64 => length = Some(n as usize),
                    Ok(n) => {
                        let why = format!(
                            "Content-Length {n} is over the limit of {MAX_CONTENT_LENGTH} bytes"
                        );
                        return Ok(Some(self.bad(&line, why)));
                    }
                    Err(_) => {
                        let why = format!("a bad Content-Length: {:?}", shorten(value.trim()));
                        return Ok(Some(self.bad(&line, why)));
                    }
                }
            } else if !name.eq_ignore_ascii_case("content-type") {
                let why = format!("an unknown header: {:?}", shorten(&text));
                return Ok(Some(self.bad(&line, why)));
            }
        }
        let Some(length) = length else {
            self.resync = true;
            return Ok(Some(Frame::Bad("a header block without Content-Length".to_owned())));
        };
        // Read as it arrives: a frame that claims more than it sends costs what it sent.
        let mut body = Vec::new();
        (&mut self.input).take(length as u64).read_to_end(&mut body)?;
        if body.len() < length {
            return Ok(None);
        }
        Ok(Some(Frame::Body(body)))
    }

    /// Reports a bad header block whose line `line` broke a rule: resynchronises at a
    /// `Content-Length:` later in that line, else later in the stream.
    fn bad(&mut self, line: &Line, why: String) -> Frame {
        match find_content_length(line.bytes.get(1..).unwrap_or_default()) {
            Some(at) if !line.too_long => {
                self.pending = Some(Line {
                    bytes: line.bytes[1 + at..].to_vec(),
                    crlf: line.crlf,
                    too_long: false,
                });
            }
            _ => self.resync = true,
        }
        Frame::Bad(why)
    }

    /// Reads one line of at most [`MAX_HEADER_LINE`] bytes kept (the rest of a longer one is
    /// consumed and dropped); `None` at the end of the input, also inside a line.
    fn read_line(&mut self) -> io::Result<Option<Line>> {
        let mut bytes = Vec::new();
        let mut too_long = false;
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(None);
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = MAX_HEADER_LINE.saturating_sub(bytes.len());
            too_long |= chunk.len() > room;
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = done.unwrap_or(buf.len());
            self.input.consume(used);
            if done.is_some() {
                let crlf = bytes.last() == Some(&b'\r') && !too_long;
                if crlf {
                    bytes.pop();
                }
                return Ok(Some(Line { bytes, crlf, too_long }));
            }
        }
    }

    /// Consumes the input up to and including the next `Content-Length:` (any case); false
    /// at the end of the input. Holds no more than the input's buffer: what it skips may be
    /// a body of any size without a line end.
    fn skip_to_content_length(&mut self) -> io::Result<bool> {
        // The pattern's first byte occurs in it only there, so a mismatch restarts the
        // match at this byte.
        let mut matched = 0;
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(false);
            }
            for (i, &b) in buf.iter().enumerate() {
                let b = b.to_ascii_lowercase();
                if b == CONTENT_LENGTH[matched] {
                    matched += 1;
                } else {
                    matched = usize::from(b == CONTENT_LENGTH[0]);
                }
                if matched == CONTENT_LENGTH.len() {
                    self.input.consume(i + 1);
                    return Ok(true);
                }
            }
            let n = buf.len();
            self.input.consume(n);
        }
    }
}

fn check_line(line: &Line) -> Result<(), String> {
    if line.too_long {
        return Err(format!("a header line longer than {MAX_HEADER_LINE} bytes"));
    }
    if !line.crlf {
        return Err(format!(
            "a header line ended by LF alone (headers end in CRLF): {:?}",
            shorten(&String::from_utf8_lossy(&line.bytes))
        ));
    }
    Ok(())
}

/// Where `Content-Length:` (any case) starts in `bytes`.
fn find_content_length(bytes: &[u8]) -> Option<usize> {
    bytes.windows(CONTENT_LENGTH.len()).position(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))
}

/// At most 80 characters of `s`, for a message.
fn shorten(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use expect_test::{Expect, expect};
    use serde_json::{Value, json};

    use super::*;
    use crate::ServerOptions;

    /// The output side of a session: what the writer wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().map_err(|_| io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn frame(body: &Value) -> Vec<u8> {
        let body = body.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    /// A whole session through the stdio transport and the real main loop: `initialize`,
    /// then `middle`, then `shutdown` (id 2) and `exit`. Returns what the server wrote after
    /// the `initialize` answer, one message a line (reading it back checks its framing).
    fn session(middle: &[u8]) -> String {
        let mut input = frame(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} },
        }));
        input.extend(frame(&json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} })));
        input.extend_from_slice(middle);
        input.extend(frame(&json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown" })));
        input.extend(frame(&json!({ "jsonrpc": "2.0", "method": "exit" })));
        let sink = Sink::default();
        let out = sink.clone();
        let (connection, io_threads) = serve(move || io::Cursor::new(input), move || out);
        let clean =
            crate::main_loop::run(connection, ServerOptions::default()).expect("the session runs");
        io_threads.join();
        assert!(clean, "shutdown was answered before exit");
        let written = sink.0.lock().expect("not poisoned").clone();
        let mut reader = io::Cursor::new(written);
        let mut lines = Vec::new();
        while let Some(msg) = Message::read(&mut reader).expect("the output is well framed") {
            let line = match msg {
                Message::Response(r) if r.id == RequestId::from(1) => continue,
                Message::Response(r) => match r.response_result {
                    Ok(v) => format!("response {}: {v}", r.id),
                    Err(e) => format!("response {}: error {}: {}", r.id, e.code, e.message),
                },
                Message::Notification(n) => {
                    format!("{}: {}", n.method, n.params["message"].as_str().unwrap_or_default())
                }
                Message::Request(r) => format!("request {}", r.method),
            };
            lines.push(line);
        }
        lines.sort();
        lines.join("\n")
    }

    #[track_caller]
    fn check(middle: &[u8], expect: Expect) {
        expect.assert_eq(&session(middle));
    }

    const BODY: &str = r#"{"jsonrpc":"2.0","id":9,"method":"shutdown"}"#;

    #[test]
    fn a_bad_content_length_is_reported_and_the_next_frame_is_read() {
        check(
            format!("Content-Length: 4x\r\n\r\n{BODY}").as_bytes(),
            expect![[r#"
                response 2: null
                window/logMessage: bad frame: a bad Content-Length: "4x"; skipped to the next frame"#]],
        );
    }

    #[test]
    fn a_second_content_length_is_reported_and_the_next_frame_is_read() {
        let n = BODY.len();
        check(
            format!("Content-Length: {n}\r\nContent-Length: {n}\r\n\r\n{BODY}").as_bytes(),
            expect![[r#"
                response 2: null
                window/logMessage: bad frame: a second Content-Length; skipped to the next frame"#]],
        );
    }

    #[test]
    fn headers_ended_by_lf_alone_are_reported_and_the_next_frame_is_read() {
        check(
            format!("Content-Length: {}\n\n{BODY}", BODY.len()).as_bytes(),
            expect![[r#"
                response 2: null
                window/logMessage: bad frame: a header line ended by LF alone (headers end in CRLF): "Content-Length: 44"; skipped to the next frame"#]],
        );
    }

    #[test]
    fn garbage_between_frames_is_reported_and_the_next_frame_is_read() {
        check(
            b"\x00\xffnot a header\r\n",
            expect![[r#"
                response 2: null
                window/logMessage: bad frame: a header line without a colon: "\0�not a header"; skipped to the next frame"#]],
        );
        // Garbage glued to the front of the next frame's header.
        check(
            b"garbage",
            expect![[r#"
                response 2: null
                window/logMessage: bad frame: an unknown header: "garbageContent-Length: 44"; skipped to the next frame"#]],
        );
    }

    #[test]
    fn a_huge_content_length_is_refused_without_reserving_it() {
        check(
            format!("Content-Length: 1000000000000\r\n\r\n{BODY}").as_bytes(),
            expect![[r#"
                response 2: null
                window/logMessage: bad frame: Content-Length 1000000000000 is over the limit of 67108864 bytes; skipped to the next frame"#]],
        );
    }

    #[test]
    fn a_body_that_is_not_a_message_is_answered_by_id_when_it_has_one() {
        let mut middle = frame(&json!({ "jsonrpc": "2.0", "id": 7, "method": 5 }));
        middle.extend(b"Content-Length: 5\r\n\r\n{oops");
        check(
            &middle,
            expect![[r#"
                response 2: null
                response 7: error -32600: malformed message (not a JSON-RPC message): data did not match any variant of untagged enum Message
                window/logMessage: malformed message (not JSON): key must be a string at line 1 column 2"#]],
        );
    }

    /// Reads every frame of `input`: bodies as text, bad frames as their reason.
    fn frames(input: &[u8]) -> Vec<String> {
        let mut reader = FrameReader::new(io::Cursor::new(input));
        let mut out = Vec::new();
        while let Some(f) = reader.next().expect("reads from memory") {
            out.push(match f {
                Frame::Body(b) => String::from_utf8_lossy(&b).into_owned(),
                Frame::Bad(why) => format!("bad: {why}"),
            });
        }
        out
    }

    #[test]
    fn resynchronising_skips_a_long_body_without_line_ends_to_the_next_header() {
        let long = "x".repeat(3 * MAX_HEADER_LINE);
        let input =
            format!("Content-Length: 2\r\nX: y\r\n\r\n{long}Content-Length: 2\r\n\r\n{{}}\r\n\r\n");
        expect![[r#"
            [
                "bad: an unknown header: \"X: y\"",
                "{}",
            ]
        "#]]
        .assert_debug_eq(&frames(input.as_bytes()));
    }

    #[test]
    fn a_header_line_over_the_limit_is_refused() {
        let input = format!("Content-Length: 2\r\n{}\r\n\r\n{{}}", "y".repeat(MAX_HEADER_LINE + 1));
        expect![[r#"
            [
                "bad: a header line longer than 8192 bytes",
            ]
        "#]]
        .assert_debug_eq(&frames(input.as_bytes()));
    }

    #[test]
    fn a_frame_cut_short_by_the_end_of_input_ends_reading() {
        expect![[r#"
            [
                "{}",
            ]
        "#]]
        .assert_debug_eq(&frames(
            b"Content-Length: 2\r\nContent-Type: x\r\n\r\n{}Content-Length: 9\r\n\r\n{",
        ));
    }
}
