//! The main loop: owns the `AnalysisHost`, applies document changes and settings, hands
//! requests to the worker pool with a snapshot, and publishes diagnostics once the messages
//! already waiting are handled (a burst of changes is analysed once).
//!
//! Only this thread writes. A write cancels the snapshots workers hold (salsa unwinds them);
//! their requests come back as `ContentModified`, or are retried once for hover and inlay
//! hints, whose answers the editor wants for the text it now shows.

use std::{
    collections::BTreeMap,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

use base_db::SourceFile;
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use ide::{
    AnalysisHost, CancelHandle, Cancelled, Change, HostConfig, HostMode, PositionEdit, TextEdit,
};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use rustc_hash::{FxHashMap, FxHashSet};
use syntax::{LineCol, LineIndex};

use crate::{
    config::Config,
    convert::{self, Lines},
    handlers::{self, HandlerError},
    overrides::{self, OverrideSources, Segments},
};

/// Knobs for embedding the server (tests); `run_stdio` uses the defaults.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Accept the `ttnnAnalyzer/testPanic` and `ttnnAnalyzer/testWaitForCancel` requests,
    /// which let tests exercise panic containment and cancellation deterministically.
    pub test_hooks: bool,
    /// How long after a change diagnostics are computed and published (none by default:
    /// a run is cancelled by the next change anyway, and messages already queued are
    /// handled first, so a burst of keystrokes is analysed once).
    pub diagnostics_delay: Duration,
    /// Worker threads answering requests.
    pub workers: usize,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            test_hooks: false,
            // An edit inside one op re-parses that op only, so there is no whole-file parse
            // to wait out, and a run the next change cancels costs little.
            diagnostics_delay: Duration::ZERO,
            workers: 2,
        }
    }
}

/// What the client can do, as far as the server cares.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientCaps {
    pub(crate) dynamic_watch: bool,
    pub(crate) pull_diagnostics: bool,
    pub(crate) diagnostic_refresh: bool,
    pub(crate) create_files: bool,
}

impl ClientCaps {
    fn new(caps: &lsp::ClientCapabilities) -> ClientCaps {
        let ws = caps.workspace.as_ref();
        ClientCaps {
            dynamic_watch: ws
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
            pull_diagnostics: caps.text_document.as_ref().is_some_and(|t| t.diagnostic.is_some()),
            diagnostic_refresh: ws
                .and_then(|w| w.diagnostic.as_ref())
                .and_then(|d| d.refresh_support)
                .unwrap_or(false),
            create_files: ws
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&lsp::ResourceOperationKind::Create)),
        }
    }
}

/// An open IR file as a snapshot sees it.
#[derive(Debug, Clone)]
pub(crate) struct SnapFile {
    pub(crate) file: SourceFile,
    pub(crate) uri: lsp::Uri,
    pub(crate) version: i32,
}

/// Everything a worker needs to answer a request: an analysis snapshot and the server's
/// view of documents at the time it was taken.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub(crate) analysis: ide::Analysis,
    /// Open IR files by path.
    pub(crate) files: Arc<BTreeMap<String, SnapFile>>,
    /// Open overrides documents by path, with their version.
    pub(crate) overrides_docs: Arc<BTreeMap<String, (lsp::Uri, i32)>>,
    pub(crate) segments: Arc<Segments>,
    pub(crate) caps: ClientCaps,
    /// The `diagnostics.planFindings` setting: publish the optimizer's findings too.
    pub(crate) plan_findings: bool,
}

impl Snapshot {
    pub(crate) fn uri_of(&self, path: &str) -> Option<lsp::Uri> {
        if let Some(f) = self.files.get(path) {
            return Some(f.uri.clone());
        }
        if let Some((uri, _)) = self.overrides_docs.get(path) {
            return Some(uri.clone());
        }
        convert::path_to_uri(path)
    }
}

enum Task {
    Response(Response),
    /// A latency-sensitive request was cancelled by an edit: answer it again on new text.
    Retry(Request),
    Diagnostics {
        generation: u64,
        items: Vec<lsp::PublishDiagnosticsParams>,
    },
}

struct Doc {
    uri: lsp::Uri,
    version: i32,
    is_overrides: bool,
}

struct GlobalState {
    sender: Sender<Message>,
    host: AnalysisHost,
    config: Config,
    caps: ClientCaps,
    options: ServerOptions,
    docs: BTreeMap<String, Doc>,
    overrides: OverrideSources,
    segments: Arc<Segments>,
    jobs: Sender<Box<dyn FnOnce() + Send>>,
    tasks: (Sender<Task>, Receiver<Task>),
    in_flight: FxHashMap<RequestId, CancelHandle>,
    shutdown_requested: bool,
    /// When the first change since the last diagnostics run happened.
    dirty_since: Option<Instant>,
    /// `textDocument/diagnostic` requests in flight: for a client that pulls diagnostics,
    /// answering the last one of the latest change is the quiet moment.
    pulls: FxHashSet<RequestId>,
    /// Bumped on every change; diagnostics computed for an older generation than the last
    /// published are dropped.
    generation: u64,
    published_generation: u64,
    next_request_id: i32,
}

pub(crate) fn run(connection: Connection, options: ServerOptions) -> anyhow::Result<bool> {
    let (id, params) = connection
        .initialize_start()
        .map_err(|e| anyhow::format_err!("waiting for `initialize`: {e}"))?;
    let params: lsp::InitializeParams = serde_json::from_value(params).unwrap_or_else(|e| {
        tracing::warn!("unreadable initialize params, using defaults: {e}");
        lsp::InitializeParams::default()
    });
    let caps = ClientCaps::new(&params.capabilities);
    let mut config = Config::new();
    let setting_errors =
        params.initialization_options.as_ref().map(|o| config.update(o)).unwrap_or_default();
    let result = lsp::InitializeResult {
        capabilities: handlers::server_capabilities(&caps),
        server_info: Some(lsp::ServerInfo {
            name: "ttnn-analyzer".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
    };
    connection
        .initialize_finish(id, serde_json::to_value(result)?)
        .map_err(|e| anyhow::format_err!("finishing initialization: {e}"))?;
    tracing::info!(target = %config.target_name, "initialized");

    let (job_tx, job_rx) = unbounded::<Box<dyn FnOnce() + Send>>();
    for i in 0..options.workers.max(1) {
        let rx = job_rx.clone();
        // Queries recurse through the plan's chunks when they re-validate them (see
        // `plan::chunks`): more stack than a thread's default 2 MiB, for headroom.
        thread::Builder::new()
            .name(format!("lsp-worker-{i}"))
            .stack_size(8 << 20)
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map_err(|e| anyhow::format_err!("cannot spawn a worker: {e}"))?;
    }
    // Nothing here drains an execution log, which would grow with every edit and slow down
    // every re-validation.
    let host = AnalysisHost::with_config(
        config.target.clone(),
        config.options.clone(),
        HostConfig { mode: HostMode::Editor, query_log: false },
    );
    let mut state = GlobalState {
        sender: connection.sender.clone(),
        host,
        config,
        caps,
        options,
        docs: BTreeMap::new(),
        overrides: OverrideSources::default(),
        segments: Arc::default(),
        jobs: job_tx,
        tasks: unbounded(),
        in_flight: FxHashMap::default(),
        shutdown_requested: false,
        dirty_since: None,
        pulls: FxHashSet::default(),
        generation: 0,
        published_generation: 0,
        next_request_id: 0,
    };
    for e in setting_errors {
        state.show_message(lsp::MessageType::ERROR, e);
    }
    state.register_watcher();
    state.run(&connection.receiver)
}

impl GlobalState {
    fn run(&mut self, inbox: &Receiver<Message>) -> anyhow::Result<bool> {
        loop {
            let wait = match self.dirty_since {
                Some(t) => {
                    (t + self.options.diagnostics_delay).saturating_duration_since(Instant::now())
                }
                None => Duration::from_secs(3600),
            };
            select! {
                recv(inbox) -> msg => match msg {
                    Ok(msg) => {
                        if self.handle_message(msg) {
                            return Ok(self.shutdown_requested);
                        }
                    }
                    Err(_) => {
                        tracing::info!("the client hung up");
                        return Ok(false);
                    }
                },
                recv(self.tasks.1) -> task => {
                    if let Ok(task) = task {
                        self.handle_task(task);
                    }
                },
                default(wait) => {}
            }
            if inbox.is_empty()
                && self.dirty_since.is_some_and(|t| t.elapsed() >= self.options.diagnostics_delay)
            {
                self.dirty_since = None;
                self.spawn_diagnostics();
            }
        }
    }

    /// Handles one message; true when the session is over (`exit`).
    fn handle_message(&mut self, msg: Message) -> bool {
        match msg {
            Message::Request(req) => self.on_request(req),
            Message::Notification(n) => {
                if n.method == "exit" {
                    return true;
                }
                self.on_notification(n);
            }
            // Replies to our `client/registerCapability` and refresh requests.
            Message::Response(r) => {
                if let Err(e) = r.response_result {
                    tracing::warn!("client answered request {} with an error: {}", r.id, e.message);
                }
            }
        }
        false
    }

    fn respond(&self, resp: Response) {
        let _ = self.sender.send(resp.into());
    }

    fn respond_err(&self, id: RequestId, code: ErrorCode, message: String) {
        self.respond(Response::new_err(id, code as i32, message));
    }

    fn on_request(&mut self, req: Request) {
        let _p = tracing::debug_span!("request", method = %req.method).entered();
        if req.method == "shutdown" {
            // Neovim 0.7 sends `shutdown` twice; both get a plain answer.
            self.shutdown_requested = true;
            self.respond(Response::new_ok(req.id, ()));
            return;
        }
        if self.shutdown_requested {
            self.respond_err(
                req.id,
                ErrorCode::InvalidRequest,
                "the server is shutting down".to_owned(),
            );
            return;
        }
        if req.method == "initialize" {
            self.respond_err(
                req.id,
                ErrorCode::InvalidRequest,
                "the server is already initialized".to_owned(),
            );
            return;
        }
        if !handlers::is_known(&req.method, self.options.test_hooks) {
            let message = format!("unknown method `{}`", req.method);
            self.respond_err(req.id, ErrorCode::MethodNotFound, message);
            return;
        }
        self.spawn_request(req, true);
    }

    fn snapshot(&self) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut overrides_docs = BTreeMap::new();
        for (path, doc) in &self.docs {
            if doc.is_overrides {
                overrides_docs.insert(path.clone(), (doc.uri.clone(), doc.version));
            } else if let Some(file) = self.host.file(path) {
                files.insert(
                    path.clone(),
                    SnapFile { file, uri: doc.uri.clone(), version: doc.version },
                );
            }
        }
        Snapshot {
            analysis: self.host.analysis(),
            files: Arc::new(files),
            overrides_docs: Arc::new(overrides_docs),
            segments: self.segments.clone(),
            caps: self.caps.clone(),
            plan_findings: self.config.plan_findings,
        }
    }

    fn spawn_request(&mut self, req: Request, may_retry: bool) {
        let snap = self.snapshot();
        self.in_flight.insert(req.id.clone(), snap.analysis.cancel_handle());
        if req.method == "textDocument/diagnostic" {
            self.pulls.insert(req.id.clone());
        }
        let tx = self.tasks.0.clone();
        let job = move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                handlers::handle(&snap, &req.method, req.params.clone())
            }));
            // Release the snapshot before reporting: a pending write waits for it.
            drop(snap);
            let err = |code: ErrorCode, message: String| {
                Task::Response(Response::new_err(req.id.clone(), code as i32, message))
            };
            let cancelled = |c: &Cancelled| match c {
                Cancelled::Local => {
                    err(ErrorCode::RequestCanceled, "the request was cancelled".to_owned())
                }
                _ if may_retry && handlers::is_latency_sensitive(&req.method) => {
                    Task::Retry(req.clone())
                }
                _ => err(
                    ErrorCode::ContentModified,
                    "the document changed while answering".to_owned(),
                ),
            };
            let task = match outcome {
                Ok(Ok(value)) => {
                    Task::Response(Response { id: req.id.clone(), response_result: Ok(value) })
                }
                Ok(Err(HandlerError::Cancelled(c))) => cancelled(&c),
                Ok(Err(HandlerError::InvalidParams(m))) => err(ErrorCode::InvalidParams, m),
                Ok(Err(HandlerError::Failed(m))) => err(ErrorCode::RequestFailed, m),
                Err(payload) => match payload.downcast_ref::<Cancelled>() {
                    Some(c) => cancelled(c),
                    None => {
                        let what = payload
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| payload.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a panic".to_owned());
                        tracing::error!(method = %req.method, "request handler panicked: {what}");
                        err(
                            ErrorCode::InternalError,
                            format!("internal error in `{}`: {what}", req.method),
                        )
                    }
                },
            };
            let _ = tx.send(task);
        };
        if self.jobs.send(Box::new(job)).is_err() {
            tracing::error!("the worker pool is gone");
        }
    }

    fn handle_task(&mut self, task: Task) {
        match task {
            Task::Response(resp) => {
                // A request the client cancelled may still be answered; LSP allows it.
                self.in_flight.remove(&resp.id);
                let pulled = self.pulls.remove(&resp.id) && resp.response_result.is_ok();
                self.respond(resp);
                if pulled && self.pulls.is_empty() && self.dirty_since.is_none() {
                    // A pulling client has its diagnostics of the latest change: there is
                    // no publication to wait for.
                    self.quiet_work();
                }
            }
            Task::Retry(req) => {
                tracing::debug!(method = %req.method, "retrying a cancelled request");
                self.spawn_request(req, false);
            }
            Task::Diagnostics { generation, items } => {
                if generation < self.published_generation {
                    return;
                }
                self.published_generation = generation;
                for p in items {
                    self.publish(p.uri, p.version, p.diagnostics);
                }
                // Nothing newer to analyse: a quiet moment for the host's upkeep, which
                // would otherwise slow the next change down.
                if generation == self.generation {
                    self.quiet_work();
                }
            }
        }
    }

    /// The host's upkeep when the analysis is idle, and the only place the server calls it
    /// (`AnalysisHost::free_unused`): free older revisions' values on a helper thread.
    fn quiet_work(&mut self) {
        self.host.free_unused();
    }

    fn publish(&self, uri: lsp::Uri, version: Option<i32>, diagnostics: Vec<lsp::Diagnostic>) {
        let params = lsp::PublishDiagnosticsParams { uri, diagnostics, version };
        let n = Notification::new("textDocument/publishDiagnostics".to_owned(), params);
        let _ = self.sender.send(n.into());
    }

    fn spawn_diagnostics(&mut self) {
        if self.caps.pull_diagnostics {
            if self.caps.diagnostic_refresh {
                self.send_request("workspace/diagnostic/refresh", serde_json::Value::Null);
            }
            return;
        }
        let snap = self.snapshot();
        let generation = self.generation;
        let tx = self.tasks.0.clone();
        let job = move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| handlers::all_diagnostics(&snap)));
            drop(snap);
            match outcome {
                Ok(Ok(items)) => {
                    let items = items
                        .iter()
                        .map(|doc| lsp::PublishDiagnosticsParams {
                            uri: doc.uri.clone(),
                            diagnostics: doc.to_lsp(),
                            version: doc.version,
                        })
                        .collect();
                    let _ = tx.send(Task::Diagnostics { generation, items });
                }
                // A newer change cancelled this run and scheduled the next one.
                Ok(Err(_)) => {}
                Err(payload) if payload.downcast_ref::<Cancelled>().is_some() => {}
                Err(_) => tracing::error!("computing diagnostics panicked"),
            }
        };
        let _ = self.jobs.send(Box::new(job));
    }

    fn send_request(&mut self, method: &str, params: serde_json::Value) {
        self.next_request_id += 1;
        let id = RequestId::from(format!("ttnn-analyzer-{}", self.next_request_id));
        let _ = self.sender.send(Request { id, method: method.to_owned(), params }.into());
    }

    fn show_message(&self, typ: lsp::MessageType, message: String) {
        tracing::warn!("{message}");
        let params = lsp::ShowMessageParams { typ, message };
        let _ = self.sender.send(Notification::new("window/showMessage".to_owned(), params).into());
    }

    fn register_watcher(&mut self) {
        if !self.caps.dynamic_watch {
            return;
        }
        let options = lsp::DidChangeWatchedFilesRegistrationOptions {
            watchers: vec![lsp::FileSystemWatcher {
                glob_pattern: lsp::GlobPattern::String("**/*.overrides".to_owned()),
                kind: None,
            }],
        };
        let params = lsp::RegistrationParams {
            registrations: vec![lsp::Registration {
                id: "ttnn-analyzer-overrides".to_owned(),
                method: "workspace/didChangeWatchedFiles".to_owned(),
                register_options: serde_json::to_value(options).ok(),
            }],
        };
        match serde_json::to_value(params) {
            Ok(v) => self.send_request("client/registerCapability", v),
            Err(e) => tracing::error!("cannot encode the watcher registration: {e}"),
        }
    }

    fn mark_dirty(&mut self) {
        self.generation += 1;
        self.dirty_since.get_or_insert_with(Instant::now);
    }

    fn apply(&mut self, change: Change) {
        self.host.apply_change(change);
        // The quiet moment is after this change's diagnostics now.
        self.mark_dirty();
    }

    fn on_notification(&mut self, n: Notification) {
        let _p = tracing::debug_span!("notification", method = %n.method).entered();
        let method = n.method.clone();
        let outcome = match method.as_str() {
            "textDocument/didOpen" => parse(n).map(|p| self.did_open(p)),
            "textDocument/didChange" => parse(n).map(|p| self.did_change(p)),
            "textDocument/didClose" => parse(n).map(|p| self.did_close(p)),
            "workspace/didChangeConfiguration" => {
                parse(n).map(|p| self.did_change_configuration(p))
            }
            "workspace/didChangeWatchedFiles" => parse(n).map(|p| self.did_change_watched_files(p)),
            "$/cancelRequest" => parse(n).map(|p: lsp::CancelParams| {
                let id = match p.id {
                    lsp::NumberOrString::Number(i) => RequestId::from(i),
                    lsp::NumberOrString::String(s) => RequestId::from(s),
                };
                if let Some(handle) = self.in_flight.get(&id) {
                    handle.cancel();
                }
            }),
            "initialized"
            | "textDocument/didSave"
            | "$/setTrace"
            | "workspace/didChangeWorkspaceFolders" => Ok(()),
            _ => {
                tracing::debug!("ignoring notification `{method}`");
                Ok(())
            }
        };
        if let Err(e) = outcome {
            tracing::warn!("ignoring malformed `{method}`: {e}");
        }
    }

    fn did_open(&mut self, p: lsp::DidOpenTextDocumentParams) {
        let uri = p.text_document.uri;
        let path = convert::uri_to_path(&uri);
        let text = p.text_document.text;
        let is_overrides = overrides::is_overrides_path(&path);
        self.docs.insert(path.clone(), Doc { uri, version: p.text_document.version, is_overrides });
        if is_overrides {
            self.overrides.set_open(&path, Arc::new(text));
            self.sync_overrides();
        } else {
            self.apply(Change::new().set_file(path.clone(), text));
            if self.overrides.add_sidecar(&path) {
                self.sync_overrides();
            }
        }
    }

    fn did_change(&mut self, p: lsp::DidChangeTextDocumentParams) {
        let path = convert::uri_to_path(&p.text_document.uri);
        let Some(doc) = self.docs.get_mut(&path) else {
            tracing::warn!(path = %path, "change to a document that is not open");
            return;
        };
        doc.version = p.text_document.version;
        let is_overrides = doc.is_overrides;
        // Ranged changes to an IR file, as an editor sends per keystroke and for a rename at
        // every use: the host resolves each position against its own text as it patches it
        // in place, so nothing here copies the file (28 MB for a 100k-op graph) or builds a
        // line index of it.
        if !is_overrides && p.content_changes.iter().all(|c| c.range.is_some()) {
            if self.host.file(&path).is_none() {
                return;
            }
            let edits = p
                .content_changes
                .into_iter()
                .filter_map(|c| {
                    let r = c.range?;
                    Some(PositionEdit {
                        start: LineCol { line: r.start.line, col_utf16: r.start.character },
                        end: LineCol { line: r.end.line, col_utf16: r.end.character },
                        text: c.text,
                    })
                })
                .collect();
            self.apply(Change::new().edit_file_at(path, edits));
            return;
        }
        let current = if is_overrides { self.overrides.text(&path) } else { self.host.text(&path) };
        let Some(current) = current else { return };
        // A whole-text change among them, or an overrides file: each change's range refers
        // to the text left by the previous one (LSP's rule), so positions are converted
        // against a running copy, and its index patched with each change.
        let mut text = current.to_string();
        drop(current);
        let mut index: Option<LineIndex> = None;
        let mut edits = Vec::new();
        let mut full = false;
        for c in p.content_changes {
            match c.range {
                None => {
                    text = c.text;
                    full = true;
                    edits.clear();
                    index = None;
                }
                Some(range) => {
                    let index = index.get_or_insert_with(|| LineIndex::new(&text));
                    let r = Lines { text: &text, index }.range(range);
                    text.replace_range(r.start as usize..r.end as usize, &c.text);
                    index.apply_edit(&text, r, &c.text);
                    edits.push(TextEdit { range: r, text: c.text });
                }
            }
        }
        if is_overrides {
            self.overrides.set_open(&path, Arc::from(text));
            self.sync_overrides();
        } else if full {
            self.apply(Change::new().set_file(path, text));
        } else {
            self.apply(Change::new().edit_file(path, edits));
        }
    }

    fn did_close(&mut self, p: lsp::DidCloseTextDocumentParams) {
        let uri = p.text_document.uri;
        let path = convert::uri_to_path(&uri);
        let Some(doc) = self.docs.remove(&path) else { return };
        if doc.is_overrides {
            let wanted = self.sidecar_wanted(&path);
            self.overrides.close(&path, wanted);
            self.sync_overrides();
            if !self.overrides.contains(&path) {
                self.publish(uri, None, Vec::new());
            }
            return;
        }
        self.apply(Change::new().remove_file(path));
        let before = self.overrides.paths();
        let wanted: Vec<String> =
            before.iter().filter(|p| self.sidecar_wanted(p)).cloned().collect();
        self.overrides.retain(|p| wanted.iter().any(|w| w == p));
        if self.overrides.paths() != before {
            self.sync_overrides();
        }
        self.publish(uri, None, Vec::new());
    }

    /// True when an open IR file has `path` as its sidecar.
    fn sidecar_wanted(&self, path: &str) -> bool {
        self.docs
            .iter()
            .any(|(p, d)| !d.is_overrides && overrides::sidecar_of(p).as_deref() == Some(path))
    }

    fn did_change_configuration(&mut self, p: lsp::DidChangeConfigurationParams) {
        let errors = self.config.update(&p.settings);
        for e in errors {
            self.show_message(lsp::MessageType::ERROR, e);
        }
        let change = Change::new()
            .set_target(self.config.target.clone())
            .set_options(self.config.options.clone());
        self.apply(change);
    }

    fn did_change_watched_files(&mut self, p: lsp::DidChangeWatchedFilesParams) {
        let mut changed = false;
        for c in p.changes {
            let path = convert::uri_to_path(&c.uri);
            if self.overrides.contains(&path) {
                changed |= self.overrides.reload(&path);
            } else if overrides::is_overrides_path(&path) && self.sidecar_wanted(&path) {
                let ir = self
                    .docs
                    .keys()
                    .find(|p| overrides::sidecar_of(p).as_deref() == Some(path.as_str()))
                    .cloned();
                if let Some(ir) = ir {
                    changed |= self.overrides.add_sidecar(&ir);
                }
            }
        }
        if changed {
            self.sync_overrides();
        }
    }

    /// Pushes the joined overrides text into the host.
    fn sync_overrides(&mut self) {
        let segments = self.overrides.segments();
        self.apply(Change::new().set_overrides(segments.origin.clone(), segments.text.clone()));
        self.segments = Arc::new(segments);
    }
}

fn parse<T: serde::de::DeserializeOwned>(n: Notification) -> Result<T, serde_json::Error> {
    serde_json::from_value(n.params)
}
