//! An in-memory LSP client for the server's tests: the server runs on a thread over
//! `Connection::memory()`, and the client sends requests and collects what comes back.

#![allow(dead_code, unreachable_pub, reason = "each test binary uses a different subset")]

use std::{
    thread,
    time::{Duration, Instant},
};

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use serde_json::{Value, json};
use server::ServerOptions;

pub struct Client {
    conn: Connection,
    server: Option<thread::JoinHandle<anyhow::Result<bool>>>,
    next_id: i32,
    /// Notifications and server requests received while waiting for something else.
    pub inbox: Vec<Message>,
    /// The `initialize` result.
    pub init_result: Option<Value>,
}

/// How long any wait may take before the test fails instead of hanging.
const TIMEOUT: Duration = Duration::from_secs(30);

impl Client {
    /// Starts a server and initializes it with these client capabilities and options.
    pub fn start(capabilities: Value, initialization_options: Value) -> Client {
        let (server_conn, client_conn) = Connection::memory();
        let options = ServerOptions {
            test_hooks: true,
            diagnostics_delay: Duration::from_millis(5),
            workers: 2,
        };
        let server = thread::spawn(move || server::run(server_conn, options));
        let mut client = Client {
            conn: client_conn,
            server: Some(server),
            next_id: 0,
            inbox: Vec::new(),
            init_result: None,
        };
        let resp = client.request(
            "initialize",
            json!({ "capabilities": capabilities, "initializationOptions": initialization_options }),
        );
        client.init_result = resp.response_result.clone().ok();
        client.notify("initialized", json!({}));
        client
    }

    pub fn send_request(&mut self, method: &str, params: Value) -> RequestId {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        let req = Request { id: id.clone(), method: method.to_owned(), params };
        self.conn.sender.send(req.into()).expect("server is alive");
        id
    }

    pub fn request(&mut self, method: &str, params: Value) -> Response {
        let id = self.send_request(method, params);
        self.wait_response(&id)
    }

    /// The result of a request that must succeed.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        match self.request(method, params).response_result {
            Ok(v) => v,
            Err(e) => panic!("`{method}` failed: {} {}", e.code, e.message),
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        let n = Notification { method: method.to_owned(), params };
        self.conn.sender.send(n.into()).expect("server is alive");
    }

    pub fn recv(&mut self) -> Message {
        self.conn.receiver.recv_timeout(TIMEOUT).expect("the server answers in time")
    }

    pub fn wait_response(&mut self, id: &RequestId) -> Response {
        if let Some(i) =
            self.inbox.iter().position(|m| matches!(m, Message::Response(r) if &r.id == id))
            && let Message::Response(r) = self.inbox.remove(i)
        {
            return r;
        }
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            match self.recv() {
                Message::Response(r) if &r.id == id => return r,
                other => self.inbox.push(other),
            }
        }
        panic!("no response to {id}");
    }

    /// Waits for `publishDiagnostics` for `uri` whose params satisfy `pred`; returns them.
    pub fn wait_diagnostics(&mut self, uri: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let matches = |m: &Message| match m {
            Message::Notification(n) if n.method == "textDocument/publishDiagnostics" => {
                n.params["uri"] == uri && pred(&n.params)
            }
            _ => false,
        };
        if let Some(i) = self.inbox.iter().rposition(matches)
            && let Message::Notification(n) = self.inbox.remove(i)
        {
            // Older diagnostics for the same document are superseded.
            self.inbox.retain(|m| {
                !matches!(m, Message::Notification(x) if x.method == "textDocument/publishDiagnostics" && x.params["uri"] == uri)
            });
            return n.params;
        }
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            let m = self.recv();
            if matches(&m)
                && let Message::Notification(n) = m
            {
                return n.params;
            }
            self.inbox.push(m);
        }
        panic!("no diagnostics for {uri}");
    }

    /// Diagnostics of `uri` for document `version`.
    pub fn diagnostics_at(&mut self, uri: &str, version: i64) -> Value {
        self.wait_diagnostics(uri, |p| p["version"] == version)
    }

    pub fn open(&self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "mlir", "version": 1, "text": text } }),
        );
    }

    /// Sends `shutdown` twice (as Neovim 0.7 does) and `exit`; returns both answers and the
    /// server's verdict on the session.
    pub fn shutdown(mut self) -> (Response, Response, bool) {
        let a = self.request("shutdown", Value::Null);
        let b = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let clean = self
            .server
            .take()
            .expect("server thread")
            .join()
            .expect("server thread did not panic")
            .expect("server returned Ok");
        (a, b, clean)
    }
}

/// `(line, character)` of the `nth` occurrence of `needle` in `text`, in UTF-16 units.
pub fn pos(text: &str, needle: &str, nth: usize) -> Value {
    let (i, _) = text.match_indices(needle).nth(nth).expect("needle occurs in the text");
    let line = text[..i].matches('\n').count();
    let line_start = text[..i].rfind('\n').map_or(0, |j| j + 1);
    let character: usize = text[line_start..i].encode_utf16().count();
    json!({ "line": line, "character": character })
}

/// Pretty JSON for snapshots, object keys sorted. Sorting here rather than relying on
/// serde_json's default map: a workspace build unifies features, and another crate's
/// `preserve_order` would otherwise reorder every snapshot.
pub fn show(v: &Value) -> String {
    serde_json::to_string_pretty(&sorted(v)).expect("json encodes")
}

/// One-line JSON with object keys sorted, for values inside a line of a snapshot.
pub fn compact(v: &Value) -> String {
    serde_json::to_string(&sorted(v)).expect("json encodes")
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

pub fn error_code(r: &Response) -> Option<i32> {
    r.response_result.as_ref().err().map(|e| e.code)
}
