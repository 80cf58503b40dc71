//! Request handlers: decode the params, ask a snapshot, encode the answer.
//!
//! Handlers run on worker threads and never touch the host. Params that do not decode are
//! `InvalidParams`; a document that is not open gets an empty answer, as clients expect
//! when they race a `didClose`.

use std::sync::Arc;

use ide::{ActionDocument, Cancelled, CodeActionConfig, CodeActionKind, NewOverrideTarget};
use lsp_types as lsp;
use serde::de::DeserializeOwned;
use serde_json::Value;
use syntax::{LineIndex, TextRange};

use crate::{
    convert::{self, Lines},
    main_loop::{ClientCaps, SnapFile, Snapshot},
    overrides,
};

pub(crate) enum HandlerError {
    Cancelled(Cancelled),
    InvalidParams(String),
    Failed(String),
}

impl From<Cancelled> for HandlerError {
    fn from(c: Cancelled) -> HandlerError {
        HandlerError::Cancelled(c)
    }
}

type Result<T> = std::result::Result<T, HandlerError>;

const METHODS: &[&str] = &[
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/references",
    "textDocument/documentSymbol",
    "textDocument/semanticTokens/full",
    "textDocument/inlayHint",
    "textDocument/codeAction",
    "textDocument/formatting",
    "textDocument/diagnostic",
];

const TEST_METHODS: &[&str] = &["ttnnAnalyzer/testPanic", "ttnnAnalyzer/testWaitForCancel"];

pub(crate) fn is_known(method: &str, test_hooks: bool) -> bool {
    METHODS.contains(&method) || (test_hooks && TEST_METHODS.contains(&method))
}

/// Requests whose answer is wanted for the text on screen; retried once when an edit
/// cancels them.
pub(crate) fn is_latency_sensitive(method: &str) -> bool {
    matches!(method, "textDocument/hover" | "textDocument/inlayHint")
}

pub(crate) fn server_capabilities(caps: &ClientCaps) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                ..lsp::TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        semantic_tokens_provider: Some(
            lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(
                lsp::SemanticTokensOptions {
                    legend: lsp::SemanticTokensLegend {
                        token_types: convert::TOKEN_TYPES.to_vec(),
                        token_modifiers: Vec::new(),
                    },
                    full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
                },
            ),
        ),
        inlay_hint_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Simple(true)),
        document_formatting_provider: Some(lsp::OneOf::Left(true)),
        diagnostic_provider: caps.pull_diagnostics.then(|| {
            lsp::DiagnosticServerCapabilities::Options(lsp::DiagnosticOptions {
                identifier: Some("ttnn-analyzer".to_owned()),
                inter_file_dependencies: true,
                workspace_diagnostics: false,
                work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
            })
        }),
        ..lsp::ServerCapabilities::default()
    }
}

pub(crate) fn handle(snap: &Snapshot, method: &str, params: Value) -> Result<Value> {
    match method {
        "textDocument/hover" => encode(hover(snap, decode(params)?)?),
        "textDocument/definition" => encode(definition(snap, decode(params)?)?),
        "textDocument/references" => encode(references(snap, decode(params)?)?),
        "textDocument/documentSymbol" => encode(document_symbols(snap, decode(params)?)?),
        "textDocument/semanticTokens/full" => encode(semantic_tokens(snap, decode(params)?)?),
        "textDocument/inlayHint" => encode(inlay_hints(snap, decode(params)?)?),
        "textDocument/codeAction" => encode(code_actions(snap, decode(params)?)?),
        "textDocument/formatting" => encode(formatting(snap, decode(params)?)?),
        "textDocument/diagnostic" => encode(pull_diagnostics(snap, decode(params)?)?),
        "ttnnAnalyzer/testPanic" => panic!("a test asked this handler to panic"),
        "ttnnAnalyzer/testWaitForCancel" => {
            let finished =
                snap.analysis.wait_until_cancelled(std::time::Duration::from_secs(10))?;
            encode(finished)
        }
        _ => Err(HandlerError::Failed(format!("no handler for `{method}`"))),
    }
}

fn decode<T: DeserializeOwned>(params: Value) -> Result<T> {
    serde_json::from_value(params)
        .map_err(|e| HandlerError::InvalidParams(format!("invalid params: {e}")))
}

fn encode<T: serde::Serialize>(value: T) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| HandlerError::Failed(format!("cannot encode the answer: {e}")))
}

/// An open IR file with its text and line index.
struct Doc<'a> {
    file: &'a SnapFile,
    text: base_db::FileText,
    index: std::sync::Arc<LineIndex>,
}

impl Doc<'_> {
    fn lines(&self) -> Lines<'_> {
        Lines { text: &self.text, index: &self.index }
    }
}

fn doc<'a>(snap: &'a Snapshot, uri: &lsp::Uri) -> Result<Option<Doc<'a>>> {
    let path = convert::uri_to_path(uri);
    let Some(file) = snap.files.get(&path) else { return Ok(None) };
    let text = snap.analysis.file_text(file.file)?;
    let index = snap.analysis.line_index(file.file)?;
    Ok(Some(Doc { file, text, index }))
}

fn hover(snap: &Snapshot, p: lsp::HoverParams) -> Result<Option<lsp::Hover>> {
    let pos = p.text_document_position_params;
    let Some(doc) = doc(snap, &pos.text_document.uri)? else { return Ok(None) };
    let offset = doc.lines().offset(pos.position);
    let Some(h) = snap.analysis.hover(doc.file.file, offset)? else { return Ok(None) };
    Ok(Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: h.markdown,
        }),
        range: Some(doc.lines().lsp_range(h.range)),
    }))
}

fn definition(snap: &Snapshot, p: lsp::GotoDefinitionParams) -> Result<Vec<lsp::Location>> {
    let pos = p.text_document_position_params;
    let Some(doc) = doc(snap, &pos.text_document.uri)? else { return Ok(Vec::new()) };
    let offset = doc.lines().offset(pos.position);
    let targets = snap.analysis.goto_definition(doc.file.file, offset)?;
    // Definitions are in the same file today; other files would need their own index.
    Ok(targets
        .into_iter()
        .filter_map(|t| {
            let uri = snap.uri_of(&t.file_path)?;
            Some(lsp::Location { uri, range: doc.lines().lsp_range(t.focus_range) })
        })
        .collect())
}

fn references(snap: &Snapshot, p: lsp::ReferenceParams) -> Result<Vec<lsp::Location>> {
    let pos = p.text_document_position;
    let Some(doc) = doc(snap, &pos.text_document.uri)? else { return Ok(Vec::new()) };
    let offset = doc.lines().offset(pos.position);
    let refs = snap.analysis.references(doc.file.file, offset, p.context.include_declaration)?;
    Ok(refs
        .into_iter()
        .filter_map(|r| {
            let uri = snap.uri_of(&r.file_path)?;
            Some(lsp::Location { uri, range: doc.lines().lsp_range(r.range) })
        })
        .collect())
}

fn document_symbols(
    snap: &Snapshot,
    p: lsp::DocumentSymbolParams,
) -> Result<Option<lsp::DocumentSymbolResponse>> {
    let Some(doc) = doc(snap, &p.text_document.uri)? else { return Ok(None) };
    let symbols = snap.analysis.document_symbols(doc.file.file)?;
    #[expect(deprecated, reason = "`DocumentSymbol::deprecated` must still be written")]
    fn conv(lines: &Lines<'_>, s: ide::Symbol) -> lsp::DocumentSymbol {
        lsp::DocumentSymbol {
            name: s.name,
            detail: None,
            kind: convert::symbol_kind(s.kind),
            tags: None,
            deprecated: None,
            range: lines.lsp_range(s.range),
            selection_range: lines.lsp_range(s.selection_range),
            children: (!s.children.is_empty())
                .then(|| s.children.into_iter().map(|c| conv(lines, c)).collect()),
        }
    }
    let lines = doc.lines();
    Ok(Some(lsp::DocumentSymbolResponse::Nested(
        symbols.into_iter().map(|s| conv(&lines, s)).collect(),
    )))
}

fn semantic_tokens(
    snap: &Snapshot,
    p: lsp::SemanticTokensParams,
) -> Result<Option<lsp::SemanticTokensResult>> {
    let Some(doc) = doc(snap, &p.text_document.uri)? else { return Ok(None) };
    let tokens = snap.analysis.semantic_tokens(doc.file.file)?;
    let data = convert::semantic_tokens(&doc.lines(), &tokens);
    Ok(Some(lsp::SemanticTokensResult::Tokens(lsp::SemanticTokens { result_id: None, data })))
}

fn inlay_hints(snap: &Snapshot, p: lsp::InlayHintParams) -> Result<Vec<lsp::InlayHint>> {
    let Some(doc) = doc(snap, &p.text_document.uri)? else { return Ok(Vec::new()) };
    let range = doc.lines().range(p.range);
    let hints = snap.analysis.inlay_hints(doc.file.file, range)?;
    Ok(hints
        .into_iter()
        .map(|h| lsp::InlayHint {
            position: doc.lines().position(h.offset),
            label: lsp::InlayHintLabel::String(h.label),
            kind: match h.kind {
                ide::InlayHintKind::Layout => Some(lsp::InlayHintKind::TYPE),
                ide::InlayHintKind::Finding => None,
            },
            text_edits: None,
            tooltip: h.tooltip.map(lsp::InlayHintTooltip::String),
            padding_left: Some(true),
            padding_right: None,
            data: None,
        })
        .collect())
}

fn formatting(
    snap: &Snapshot,
    p: lsp::DocumentFormattingParams,
) -> Result<Option<Vec<lsp::TextEdit>>> {
    let Some(doc) = doc(snap, &p.text_document.uri)? else { return Ok(None) };
    let Some(formatted) = snap.analysis.format(doc.file.file)? else {
        return Err(HandlerError::Failed(
            "the file has syntax errors; fix them before formatting".to_owned(),
        ));
    };
    if *formatted == *doc.text {
        return Ok(Some(Vec::new()));
    }
    let whole = TextRange::new(0, doc.text.len() as u32);
    Ok(Some(vec![lsp::TextEdit { range: doc.lines().lsp_range(whole), new_text: formatted }]))
}

fn code_actions(
    snap: &Snapshot,
    p: lsp::CodeActionParams,
) -> Result<Vec<lsp::CodeActionOrCommand>> {
    let path = convert::uri_to_path(&p.text_document.uri);
    let segments = &snap.segments;
    let (document, range, sidecar) = if let Some(doc) = doc(snap, &p.text_document.uri)? {
        let range = doc.lines().range(p.range);
        (ActionDocument::Ir(doc.file.file), range, overrides::sidecar_of(&path))
    } else if let Some(seg) = segments.segment(&path) {
        let index = LineIndex::new(&seg.text);
        let local = Lines { text: &seg.text, index: &index }.range(p.range);
        let range = TextRange::new(local.start + seg.start, local.end + seg.start);
        (ActionDocument::Overrides, range, Some(path.clone()))
    } else {
        return Ok(Vec::new());
    };
    let new_override = match sidecar.as_deref().and_then(|s| segments.segment(s)) {
        Some(seg) => NewOverrideTarget::InOverrides { offset: seg.start + seg.text.len() as u32 },
        None => NewOverrideTarget::NewFile {
            path: sidecar.unwrap_or_else(|| format!("{path}.overrides")),
        },
    };
    let actions =
        snap.analysis.code_actions(document, range, &CodeActionConfig { new_override })?;
    let mut out = Vec::new();
    for a in actions {
        let Some(edit) = workspace_edit(snap, &a.edits)? else { continue };
        out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: a.title,
            kind: Some(match a.kind {
                CodeActionKind::QuickFix => lsp::CodeActionKind::QUICKFIX,
                CodeActionKind::Refactor => lsp::CodeActionKind::REFACTOR,
            }),
            edit: Some(edit),
            ..lsp::CodeAction::default()
        }));
    }
    Ok(out)
}

/// Translates `ide` file edits: edits of the joined overrides text go to the file each
/// range falls in; a file to create becomes a `CreateFile` operation when the client can.
fn workspace_edit(snap: &Snapshot, edits: &[ide::FileEdit]) -> Result<Option<lsp::WorkspaceEdit>> {
    let segments = &snap.segments;
    let mut ops: Vec<lsp::DocumentChangeOperation> = Vec::new();
    let push_edit =
        |ops: &mut Vec<lsp::DocumentChangeOperation>, uri: lsp::Uri, edit: lsp::TextEdit| {
            ops.push(lsp::DocumentChangeOperation::Edit(lsp::TextDocumentEdit {
                text_document: lsp::OptionalVersionedTextDocumentIdentifier { uri, version: None },
                edits: vec![lsp::OneOf::Left(edit)],
            }));
        };
    for fe in edits {
        if !segments.origin.is_empty() && fe.path == segments.origin {
            for e in &fe.edits {
                let Some((seg, local_start)) = segments.locate(e.range.start) else { continue };
                let local_end = e.range.end.saturating_sub(seg.start).min(seg.text.len() as u32);
                let index = LineIndex::new(&seg.text);
                let lines = Lines { text: &seg.text, index: &index };
                let Some(uri) = snap.uri_of(&seg.path) else { continue };
                let range =
                    lines.lsp_range(TextRange::new(local_start, local_end.max(local_start)));
                push_edit(&mut ops, uri, lsp::TextEdit { range, new_text: e.text.clone() });
            }
        } else if let Some(file) = snap.files.get(&fe.path) {
            let text = snap.analysis.file_text(file.file)?;
            let index = snap.analysis.line_index(file.file)?;
            let lines = Lines { text: &text, index: &index };
            for e in &fe.edits {
                let edit =
                    lsp::TextEdit { range: lines.lsp_range(e.range), new_text: e.text.clone() };
                push_edit(&mut ops, file.uri.clone(), edit);
            }
        } else {
            let Some(uri) = convert::path_to_uri(&fe.path) else { continue };
            if fe.create {
                if !snap.caps.create_files {
                    // The client cannot create the file; offering the action would fail.
                    return Ok(None);
                }
                ops.push(lsp::DocumentChangeOperation::Op(lsp::ResourceOp::Create(
                    lsp::CreateFile {
                        uri: uri.clone(),
                        options: Some(lsp::CreateFileOptions {
                            overwrite: Some(false),
                            ignore_if_exists: Some(true),
                        }),
                        annotation_id: None,
                    },
                )));
            }
            for e in &fe.edits {
                let pos = |_: u32| lsp::Position { line: 0, character: 0 };
                let range = lsp::Range { start: pos(e.range.start), end: pos(e.range.end) };
                push_edit(&mut ops, uri.clone(), lsp::TextEdit { range, new_text: e.text.clone() });
            }
        }
    }
    if ops.is_empty() {
        return Ok(None);
    }
    Ok(Some(lsp::WorkspaceEdit {
        document_changes: Some(lsp::DocumentChanges::Operations(ops)),
        ..lsp::WorkspaceEdit::default()
    }))
}

/// The diagnostics of one document, with the version they were computed for and the text
/// their ranges are in.
pub(crate) struct DocDiagnostics {
    pub(crate) uri: lsp::Uri,
    pub(crate) version: Option<i32>,
    pub(crate) text: base_db::FileText,
    pub(crate) index: Arc<LineIndex>,
    /// Syntax and lowering diagnostics, problems in the IR as written, the optimizer's
    /// findings if the settings ask for them, notes from the overrides files.
    pub(crate) diagnostics: Vec<ide::Diagnostic>,
}

impl DocDiagnostics {
    pub(crate) fn lines(&self) -> Lines<'_> {
        Lines { text: &self.text, index: &self.index }
    }

    /// Every diagnostic of the document, in order, borrowed.
    pub(crate) fn all(&self) -> impl Iterator<Item = ide::FindingRef<'_>> {
        self.diagnostics.iter().map(borrowed)
    }

    pub(crate) fn to_lsp(&self) -> Vec<lsp::Diagnostic> {
        let lines = self.lines();
        self.all().map(|d| convert::diagnostic(&lines, d)).collect()
    }
}

/// A diagnostic as the borrowed form findings have.
fn borrowed(d: &ide::Diagnostic) -> ide::FindingRef<'_> {
    ide::FindingRef { range: d.range, severity: d.severity, code: d.code, message: &d.message }
}

/// Diagnostics of every open IR file and every overrides file, for publishing: problems
/// only, unless the `diagnostics.planFindings` setting also asks for the optimizer's
/// findings (as information). Without it, nothing here computes the plan.
pub(crate) fn all_diagnostics(
    snap: &Snapshot,
) -> std::result::Result<Vec<DocDiagnostics>, Cancelled> {
    let files: Vec<_> = snap.files.values().map(|f| f.file).collect();
    let od = snap.analysis.override_diagnostics(&files)?;
    let mut out = Vec::new();
    for (path, f) in snap.files.iter() {
        let mut diagnostics = snap.analysis.diagnostics(f.file)?;
        diagnostics.extend(snap.analysis.problems(f.file)?.to_diagnostics());
        if snap.plan_findings {
            let plan = snap.analysis.plan_findings(f.file, None)?;
            diagnostics.extend(plan.iter().map(|d| ide::Diagnostic {
                range: d.range,
                // Outcomes of the optimizer, not problems in the IR.
                severity: ide::Severity::Info,
                code: d.code,
                message: d.message.to_owned(),
            }));
        }
        diagnostics.extend(od.on_files.iter().filter(|(p, _)| p == path).map(|(_, d)| d.clone()));
        out.push(DocDiagnostics {
            uri: f.uri.clone(),
            version: Some(f.version),
            text: snap.analysis.file_text(f.file)?,
            index: snap.analysis.line_index(f.file)?,
            diagnostics,
        });
    }
    for seg in &snap.segments.segments {
        let Some(uri) = snap.uri_of(&seg.path) else { continue };
        let version = snap.overrides_docs.get(&seg.path).map(|(_, v)| *v);
        out.push(DocDiagnostics {
            uri,
            version,
            text: Arc::clone(&seg.text),
            index: Arc::new(LineIndex::new(&seg.text)),
            diagnostics: segment_diagnostics(snap, seg, &od.on_overrides),
        });
    }
    Ok(out)
}

/// The overrides diagnostics that fall in one file, with ranges local to it.
fn segment_diagnostics(
    snap: &Snapshot,
    seg: &crate::overrides::Segment,
    diags: &[ide::Diagnostic],
) -> Vec<ide::Diagnostic> {
    diags
        .iter()
        .filter_map(|d| {
            let (s, start) = snap.segments.locate(d.range.start)?;
            if s.path != seg.path {
                return None;
            }
            let end = d.range.end.saturating_sub(seg.start).min(seg.text.len() as u32).max(start);
            Some(ide::Diagnostic { range: TextRange::new(start, end), ..d.clone() })
        })
        .collect()
}

fn pull_diagnostics(
    snap: &Snapshot,
    p: lsp::DocumentDiagnosticParams,
) -> Result<lsp::DocumentDiagnosticReportResult> {
    let path = convert::uri_to_path(&p.text_document.uri);
    let items = if snap.files.contains_key(&path) || snap.segments.segment(&path).is_some() {
        let uri_str = p.text_document.uri.as_str();
        all_diagnostics(snap)?
            .iter()
            .find(|d| d.uri.as_str() == uri_str || convert::uri_to_path(&d.uri) == path)
            .map(DocDiagnostics::to_lsp)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(
        lsp::RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: lsp::FullDocumentDiagnosticReport {
                result_id: None,
                items,
            },
        },
    )))
}
