//! The analysis API, in the style of rust-analyzer's `ide` crate.
//!
//! [`AnalysisHost`] owns the database and is the only writer: it applies a [`Change`] (file
//! texts and edits, overrides, options, target), diffing first because a salsa setter always
//! starts a new revision. [`Analysis`] is a cheap snapshot that answers queries, possibly on
//! another thread; every answer is [`Cancellable`], since a pending write cancels readers.
//!
//! The API is plain data with public fields (ranges, strings), no LSP or JSON types.

mod cancel;
mod code_actions;
mod db;
mod diagnostics;
#[cfg(test)]
mod feature_tests;
mod file_index;
mod findings;
#[cfg(test)]
mod fixture;
mod hover;
mod inlay_hints;
mod navigation;
mod overrides_diag;
mod plan_hover;
mod plan_report;
mod semantic_tokens;
mod sites;
mod symbols;
mod tuning;

use std::{
    any::Any,
    panic::UnwindSafe,
    sync::{Arc, Mutex},
};

use base_db::{
    Durability, LastEdit, OpOverrideSlot, OptionsInput, OverrideSlots, OverridesInput, SourceFile,
    TargetInput, salsa::Setter,
};
use rustc_hash::FxHashMap;
use syntax::{LineCol, LineIndex, TextRange};

/// What one override slot holds, being built (see [`base_db::SlotValues`]).
type SlotMap = std::collections::BTreeMap<String, Arc<base_db::OpOverrides>>;

pub use crate::{
    cancel::CancelHandle,
    code_actions::{
        ActionDocument, CodeAction, CodeActionConfig, CodeActionKind, FileEdit, NewOverrideTarget,
    },
    db::RootDatabase,
    diagnostics::{Diagnostic, Severity},
    findings::{FindingRef, Findings},
    hover::HoverResult,
    inlay_hints::{InlayHint, InlayHintKind},
    navigation::{NavTarget, Reference},
    overrides_diag::OverrideDiagnostics,
    plan_report::{ChainSummary, OpDecision, PlanReport},
    semantic_tokens::TokenType,
    symbols::{Symbol, SymbolKind},
    tuning::{
        CostSummary, OpLayouts, OpRef, OverrideOption, full_layout_params, overrides_with,
        overrides_without, partial_layout_params,
    },
};
pub use base_db::{FileText, Options, Policy};
pub use salsa::Cancelled;

/// A result that is `Err(Cancelled)` when a write arrived while the query ran.
pub type Cancellable<T> = Result<T, Cancelled>;

/// One text edit: replace `range` (byte offsets in the current text) with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub range: TextRange,
    pub text: String,
}

/// One text edit by line and column (UTF-16 code units, as LSP counts them): replace the
/// text from `start` to `end` with `text`. For an editor's change of many edits, whose
/// positions each refer to the text the previous edits left: the host resolves them against
/// its own text as it patches it, so the caller keeps no copy of the file to do so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionEdit {
    pub start: LineCol,
    pub end: LineCol,
    pub text: String,
}

#[derive(Debug, Clone)]
enum FileChange {
    Set(FileText),
    Edit(Vec<AnyEdit>),
    Remove,
}

#[derive(Debug, Clone)]
enum AnyEdit {
    Bytes(TextEdit),
    Position(PositionEdit),
}

impl AnyEdit {
    /// The byte range in `text` (whose index is `index`) and the new text.
    fn resolve(self, text: &str, index: &LineIndex) -> (usize, usize, String) {
        let (start, end, new) = match self {
            AnyEdit::Bytes(e) => (e.range.start, e.range.end, e.text),
            AnyEdit::Position(e) => {
                let (a, b) = (index.offset(text, e.start), index.offset(text, e.end));
                (a.min(b), a.max(b), e.text)
            }
        };
        let start = clamp_to_char_boundary(text, start as usize);
        (start, clamp_to_char_boundary(text, (end as usize).max(start)), new)
    }
}

/// Above this many edits in one change the parse is made anew rather than patched edit by
/// edit: each patch moves the positions between it and the edit before, so a change that
/// renames a value read by thousands of ops moved most of the file thousands of times.
const MAX_PATCHED_EDITS: usize = 64;

/// The text after `edits`, spliced in one pass, when each edit lies wholly before the one
/// applied before it (an editor's rename, last occurrence first): then every edit's range
/// means the same in the text as given, and so do its line and column. `None` otherwise.
fn splice_descending(text: &str, index: &LineIndex, edits: &[AnyEdit]) -> Option<String> {
    let mut parts: Vec<(usize, usize, String)> = Vec::with_capacity(edits.len());
    let mut bound = text.len();
    for e in edits {
        let (start, end, new) = e.clone().resolve(text, index);
        if end > bound {
            return None;
        }
        bound = start;
        parts.push((start, end, new));
    }
    let grown: usize = parts.iter().map(|(_, _, new)| new.len()).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut at = 0;
    for (start, end, new) in parts.iter().rev() {
        out.push_str(&text[at..*start]);
        out.push_str(new);
        at = *end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// A batch of input changes, applied at once by [`AnalysisHost::apply_change`].
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Change {
    files: Vec<(String, FileChange)>,
    overrides: Option<(String, Arc<str>)>,
    options: Option<Options>,
    target: Option<target::Target>,
}

impl Change {
    pub fn new() -> Change {
        Change::default()
    }

    /// Sets (or creates) a file's whole text.
    pub fn set_file(mut self, path: impl Into<String>, text: impl Into<String>) -> Change {
        self.files.push((path.into(), FileChange::Set(Arc::new(text.into()))));
        self
    }

    /// Applies edits to a file's current text, in order; each edit's range refers to the text
    /// as left by the previous edits (LSP's convention).
    pub fn edit_file(mut self, path: impl Into<String>, edits: Vec<TextEdit>) -> Change {
        let edits = edits.into_iter().map(AnyEdit::Bytes).collect();
        self.files.push((path.into(), FileChange::Edit(edits)));
        self
    }

    /// [`Change::edit_file`] with positions by line and column.
    pub fn edit_file_at(mut self, path: impl Into<String>, edits: Vec<PositionEdit>) -> Change {
        let edits = edits.into_iter().map(AnyEdit::Position).collect();
        self.files.push((path.into(), FileChange::Edit(edits)));
        self
    }

    pub fn remove_file(mut self, path: impl Into<String>) -> Change {
        self.files.push((path.into(), FileChange::Remove));
        self
    }

    /// Replaces the overrides text (tt-mlir option syntax); `origin` names it in diagnostics.
    pub fn set_overrides(mut self, origin: impl Into<String>, text: impl Into<Arc<str>>) -> Change {
        self.overrides = Some((origin.into(), text.into()));
        self
    }

    pub fn set_options(mut self, options: Options) -> Change {
        self.options = Some(options);
        self
    }

    pub fn set_target(mut self, target: target::Target) -> Change {
        self.target = Some(target);
        self
    }
}

/// Large per-file values that snapshots read, kept alive a little longer than salsa keeps
/// them, so that freeing them is not the writer's work.
///
/// Salsa frees a memo replaced in revision R when revision R + 1 starts, inside the setter
/// that [`AnalysisHost::apply_change`] calls on the main loop. After a one-op edit of a 10k-op
/// file that setter took 90 to 185 ms (on a loaded 2-core machine), three quarters of it
/// freeing the old parse and lowering, and every message waits for it.
/// Holding one more reference makes salsa's release a count decrement. Values read a revision
/// earlier, which salsa has released by then, wait in `AnalysisHost::unused` until the host's
/// owner calls [`AnalysisHost::free_unused`] at a quiet moment (the server: after publishing
/// diagnostics), and are dropped on a helper thread. Freed at once, they would compete with
/// the re-parse for the allocator and the CPU.
///
/// The parse is not among these values: it is an input the host patches in place after an
/// edit inside one op, and a parse it replaces whole goes straight to `unused`.
#[derive(Default)]
struct Retained {
    /// Read in the current revision.
    current: Vec<Arc<dyn Any + Send + Sync>>,
    /// Read in the previous revision: salsa releases these when the next one starts.
    previous: Vec<Arc<dyn Any + Send + Sync>>,
}

/// What a host is for, which decides how durable each kind of input is.
///
/// salsa re-validates a memo in O(1) after a change to inputs less durable than every input
/// the memo read, and walks the memo's dependencies otherwise; on a 10k-op graph that walk
/// costs tens of milliseconds. So the inputs that change constantly get the lowest
/// durability, and what changes constantly depends on the host, as rust-analyzer gives
/// library files a higher durability than the files a user edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostMode {
    /// An editor: file texts change on every keystroke (`LOW`), overrides and options now and
    /// then (`MEDIUM`), the target almost never (`HIGH`). Everything derived from a file is
    /// `LOW` with it; what an edit leaves equal is backdated at the projections of the
    /// lowering (`ir::func_group`), so what reads only unchanged groups is not re-run.
    #[default]
    Editor,
    /// A tuning loop over a graph that does not change: an op's override changes on every
    /// candidate that touches the op (`LOW`); the graph, the options and the set of op names
    /// almost never (`HIGH`), like the target.
    ///
    /// The host creates an override slot for every named op of a file when the file is set,
    /// at `LOW` like every later write of it: a slot's durability is that of its kind. Were
    /// it created higher, an op's first override would lower the durability of everything
    /// downstream of its slot, and salsa does not backdate a value that comes out equal but
    /// less durable: each chunk's carry would then re-run the next chunk's walk, to the end
    /// of the function. Its queries memoize in `layout::MemoStyle::Tuning`.
    Tuning,
}

impl HostMode {
    fn file_durability(self) -> Durability {
        match self {
            HostMode::Editor => Durability::LOW,
            HostMode::Tuning => Durability::HIGH,
        }
    }

    /// The options, the override settings and the map from op names to slots.
    fn config_durability(self) -> Durability {
        match self {
            HostMode::Editor => Durability::MEDIUM,
            HostMode::Tuning => Durability::HIGH,
        }
    }

    /// A slot (and the overrides text) when an override changes.
    fn slot_durability(self) -> Durability {
        match self {
            HostMode::Editor => Durability::MEDIUM,
            HostMode::Tuning => Durability::LOW,
        }
    }
}

/// How a host is set up: its [`HostMode`] and whether it keeps an execution log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostConfig {
    pub mode: HostMode,
    /// Record which queries execute, for [`AnalysisHost::take_executed_queries`]. A host
    /// without a log cannot turn one on later, and validates memos faster.
    pub query_log: bool,
}

/// Owns the database and applies changes to it.
pub struct AnalysisHost {
    db: RootDatabase,
    mode: HostMode,
    retained: Arc<Mutex<Retained>>,
    /// Retained values no revision needs any more, to free in [`AnalysisHost::free_unused`].
    unused: Vec<Arc<dyn Any + Send + Sync>>,
    files: FxHashMap<String, SourceFile>,
    /// Removed files keep their input (salsa inputs cannot be deleted); they are emptied and
    /// forgotten here, and reused if the path comes back.
    removed: FxHashMap<String, SourceFile>,
    /// The op names whose override slot holds a value: only these and the names a new
    /// overrides text mentions can change, so a sync need not read every op's slot.
    overridden: rustc_hash::FxHashSet<String>,
    /// The target as set, before the overrides' `tensor-l1-usage-cap` replaces its cap.
    base_target: target::Target,
    /// The last number given to a file's text (`SourceFile::text_id`).
    last_text_id: u64,
}

impl AnalysisHost {
    /// An editor host with an execution log.
    #[must_use]
    pub fn new(target: target::Target, options: Options) -> AnalysisHost {
        AnalysisHost::with_config(
            target,
            options,
            HostConfig { mode: HostMode::Editor, query_log: true },
        )
    }

    #[must_use]
    pub fn with_config(
        target: target::Target,
        options: Options,
        config: HostConfig,
    ) -> AnalysisHost {
        let db = RootDatabase::new(config.query_log);
        let db = db.with_memo_style(match config.mode {
            HostMode::Editor => layout::MemoStyle::Editor,
            HostMode::Tuning => layout::MemoStyle::Tuning,
        });
        base_db::init_inputs(
            &db,
            target.clone(),
            options,
            String::new(),
            Arc::from(""),
            config.mode.config_durability(),
        );
        AnalysisHost {
            db,
            mode: config.mode,
            retained: Arc::default(),
            unused: Vec::new(),
            files: FxHashMap::default(),
            removed: FxHashMap::default(),
            overridden: rustc_hash::FxHashSet::default(),
            base_target: target,
            last_text_id: 0,
        }
    }

    /// A host for a tuning loop over graphs that do not change (see [`HostMode::Tuning`]),
    /// without an execution log.
    #[must_use]
    pub fn for_tuning(target: target::Target, options: Options) -> AnalysisHost {
        AnalysisHost::with_config(
            target,
            options,
            HostConfig { mode: HostMode::Tuning, query_log: false },
        )
    }

    #[must_use]
    pub fn mode(&self) -> HostMode {
        self.mode
    }

    pub(crate) fn db(&self) -> &RootDatabase {
        &self.db
    }

    /// The current snapshot.
    #[must_use]
    pub fn analysis(&self) -> Analysis {
        Analysis { db: self.db.clone(), retained: Arc::clone(&self.retained) }
    }

    #[must_use]
    pub fn file(&self, path: &str) -> Option<SourceFile> {
        self.files.get(path).copied()
    }

    /// The paths of all open files, sorted.
    #[must_use]
    pub fn paths(&self) -> Vec<String> {
        let mut p: Vec<String> = self.files.keys().cloned().collect();
        p.sort();
        p
    }

    /// The current text of a file.
    #[must_use]
    pub fn text(&self, path: &str) -> Option<FileText> {
        self.files.get(path).map(|f| f.text(&self.db).clone())
    }

    /// The names of the queries executed since the last call (from salsa's execution events).
    /// Empty while the log is off.
    pub fn take_executed_queries(&self) -> Vec<String> {
        self.db.take_executed()
    }

    /// Drains the execution log as per-query counts plus the first `detail_limit`
    /// executions described (see [`AnalysisHost::take_executed_queries`]).
    pub fn take_executed_counts(
        &self,
        detail_limit: usize,
    ) -> (std::collections::BTreeMap<String, u64>, Vec<String>) {
        self.db.take_executed_counts(detail_limit)
    }

    /// Pauses (`false`) or resumes the execution log behind
    /// [`AnalysisHost::take_executed_queries`], on a host created with one. A host that never
    /// drains it should be created without one ([`HostConfig::query_log`]): it grows by every
    /// query executed, some twenty thousand entries per edit of a 10k-op function.
    pub fn set_query_log(&mut self, on: bool) {
        self.db.set_log_executed(on);
    }

    /// Turns on (or off, emptying it) a log of the memos salsa re-validates without running
    /// them, on a host created with a query log: what an edit costs beyond what it re-runs.
    pub fn set_validation_log(&mut self, on: bool) {
        self.db.set_log_validated(on);
    }

    /// Drains the validation log (see [`AnalysisHost::set_validation_log`]) as counts per
    /// query name.
    pub fn take_validated_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.db.take_validated_counts()
    }

    /// Applies a change. Returns the paths whose text changed.
    pub fn apply_change(&mut self, change: Change) -> Vec<String> {
        let _p = tracing::info_span!("apply_change").entered();
        let file_durability = self.mode.file_durability();
        let mut changed = Vec::new();
        for (path, fc) in change.files {
            let new_text: Option<NewText> = match fc {
                FileChange::Set(t) => {
                    if self.files.get(&path).is_some_and(|f| **f.text(&self.db) == *t) {
                        continue;
                    }
                    Some((t, None, None, None))
                }
                FileChange::Edit(edits) => {
                    let Some(file) = self.files.get(&path).copied() else { continue };
                    if edits.iter().all(|e| match e {
                        AnyEdit::Bytes(e) => e.range.is_empty() && e.text.is_empty(),
                        AnyEdit::Position(e) => e.start == e.end && e.text.is_empty(),
                    }) {
                        continue;
                    }
                    // The parse is patched edit by edit while each edit stays inside one op;
                    // after the first that does not, the new text is parsed from scratch.
                    // An edit that writes what is already there changes nothing.
                    let current = file.text(&self.db);
                    if edits.iter().all(|e| {
                        matches!(e, AnyEdit::Bytes(e) if current
                            .get(e.range.start as usize..e.range.end as usize)
                            == Some(e.text.as_str()))
                    }) {
                        continue;
                    }
                    let before = file.text_id(&self.db);
                    if edits.len() > MAX_PATCHED_EDITS {
                        // Edits all over the file (a rename of a value every op reads): one
                        // parse of the new text costs less than patching the parse thousands
                        // of times, and the text is spliced once when the edits come last
                        // first, as an editor sends them.
                        let text = self.take_text(file);
                        let index = file.line_index(&self.db);
                        let text = splice_descending(&text, index, &edits).unwrap_or_else(|| {
                            let mut text = text;
                            let mut index = LineIndex::clone(index);
                            for e in edits {
                                let (start, end, new) = e.resolve(&text, &index);
                                text.replace_range(start..end, &new);
                                index = LineIndex::new(&text);
                            }
                            text
                        });
                        let index = LineIndex::new(&text);
                        Some((Arc::new(text), None, None, Some(index)))
                    } else {
                        let mut parse = self.take_parse(file);
                        // The edits as one (see `OpEdit::then`): a rename at every use is one
                        // change of many edits, re-lowered as the window from the first to the
                        // last op it touched.
                        let mut op_edit: Option<syntax::OpEdit> = None;
                        // Patched in place: nothing keeps the old text (see `take_text`).
                        let mut text = self.take_text(file);
                        let mut index = LineIndex::clone(file.line_index(&self.db));
                        for (k, e) in edits.into_iter().enumerate() {
                            let (start, end, new) = e.resolve(&text, &index);
                            text.replace_range(start..end, &new);
                            let range = TextRange::new(start as u32, end as u32);
                            index.apply_edit(&text, range, &new);
                            if let Some(mut p) = parse.take() {
                                let len = u32::try_from(new.len());
                                match len.ok().and_then(|len| p.reparse_edit(&text, range, len)) {
                                    Some(op) => {
                                        op_edit = if k == 0 {
                                            Some(op)
                                        } else {
                                            op_edit.and_then(|before| before.then(op))
                                        };
                                        parse = Some(p);
                                    }
                                    // Freed later, off this path (see `Retained`).
                                    None => self.unused.push(Arc::new(p)),
                                }
                            }
                        }
                        // Lowering can redo the ops the edits replaced.
                        let last_edit =
                            op_edit.filter(|_| parse.is_some()).map(|op| LastEdit { before, op });
                        Some((Arc::new(text), parse, last_edit, Some(index)))
                    }
                }
                FileChange::Remove => None,
            };
            match new_text {
                Some((text, parse, last_edit, index)) => {
                    if let Some(file) = self.files.get(&path).copied() {
                        if **file.text(&self.db) != *text || parse.is_none() {
                            self.set_file(file, text, parse, last_edit, index);
                            changed.push(path);
                        } else if let Some(parse) = parse {
                            // The edits cancelled out: put the (patched) parse back.
                            self.set_file(file, text, Some(parse), None, index);
                        }
                    } else if let Some(file) = self.removed.remove(&path) {
                        self.set_file(file, text, None, None, None);
                        self.files.insert(path.clone(), file);
                        changed.push(path);
                    } else {
                        let parse = Arc::new(syntax::parse(&text));
                        let index = Arc::new(LineIndex::new(&text));
                        self.last_text_id += 1;
                        let id = self.last_text_id;
                        let file = SourceFile::builder(path.clone(), text, parse, None, index, id)
                            .durability(file_durability)
                            .new(&self.db);
                        self.files.insert(path.clone(), file);
                        changed.push(path);
                    }
                }
                None => {
                    if let Some(file) = self.files.remove(&path) {
                        self.set_file(file, Arc::default(), None, None, None);
                        self.removed.insert(path.clone(), file);
                        changed.push(path);
                    }
                }
            }
        }
        if let Some((origin, text)) = change.overrides {
            let input = OverridesInput::get(&self.db);
            if *input.origin(&self.db) != origin {
                let durability = self.mode.slot_durability();
                input.set_origin(&mut self.db).with_durability(durability).to(origin);
            }
            if **input.text(&self.db) != *text {
                self.sync_override_slots(&text);
                // Only diagnostics read the text itself; it changes as often as the slots.
                let durability = self.mode.slot_durability();
                input.set_text(&mut self.db).with_durability(durability).to(text);
            }
        }
        if let Some(options) = change.options {
            let input = OptionsInput::get(&self.db);
            if *input.options(&self.db) != options {
                let durability = self.mode.config_durability();
                input.set_options(&mut self.db).with_durability(durability).to(options);
            }
        }
        if let Some(target) = change.target {
            self.base_target = target;
        }
        // The overrides' `tensor-l1-usage-cap` replaces the target's cap: every L1 check
        // reads the target.
        let cap = OverrideSlots::get(&self.db).settings(&self.db).tensor_l1_usage_cap;
        let target = match cap {
            Some(cap) => self.base_target.with_l1_usage_cap(cap),
            None => self.base_target.clone(),
        };
        let input = TargetInput::get(&self.db);
        if *input.target(&self.db) != target {
            input.set_target(&mut self.db).with_durability(Durability::HIGH).to(target);
        }
        if self.mode == HostMode::Tuning && !changed.is_empty() {
            self.create_slots_for_ops(&changed);
        }
        self.rotate_retained();
        changed
    }

    /// Takes a file's parse out of its input to patch it in place, or `None` if something
    /// else still holds it (then the new text is parsed from scratch).
    fn take_parse(&mut self, file: SourceFile) -> Option<syntax::Parse> {
        let durability = self.mode.file_durability();
        let placeholder = Arc::new(syntax::parse(""));
        let old = file.set_parse(&mut self.db).with_durability(durability).to(placeholder);
        match Arc::try_unwrap(old) {
            Ok(parse) => Some(parse),
            Err(shared) => {
                self.unused.push(shared);
                None
            }
        }
    }

    /// Takes a file's text out of its input to patch it in place (the input holds an empty
    /// text until [`AnalysisHost::set_file`]), or a copy of it if something else still holds
    /// it (a request's answer being written, a caller of [`AnalysisHost::text`]).
    fn take_text(&mut self, file: SourceFile) -> String {
        let durability = self.mode.file_durability();
        let old = file.set_text(&mut self.db).with_durability(durability).to(FileText::default());
        Arc::try_unwrap(old).unwrap_or_else(|shared| {
            // Some room, so that the next edits that add text patch it without a regrowth.
            let mut copy = String::with_capacity(shared.len() + shared.len() / 64);
            copy.push_str(&shared);
            copy
        })
    }

    /// Sets a file's text, its parse (`None`: parse the text from scratch) and how it came
    /// from the previous text. The replaced parse is freed later, off the caller's path (see
    /// [`Retained`]).
    fn set_file(
        &mut self,
        file: SourceFile,
        text: FileText,
        parse: Option<syntax::Parse>,
        last_edit: Option<LastEdit>,
        index: Option<LineIndex>,
    ) {
        let durability = self.mode.file_durability();
        let parse = Arc::new(parse.unwrap_or_else(|| syntax::parse(&text)));
        let index = Arc::new(index.unwrap_or_else(|| LineIndex::new(&text)));
        if **file.line_index(&self.db) != *index {
            let old = file.set_line_index(&mut self.db).with_durability(durability).to(index);
            self.unused.push(old);
        }
        if **file.text(&self.db) != *text {
            file.set_text(&mut self.db).with_durability(durability).to(text);
        }
        // A new number even where the text reads the same: an edit's text was taken out of
        // the input (`take_text`), and `last_edit` names the number it was made to.
        self.last_text_id += 1;
        file.set_text_id(&mut self.db).with_durability(durability).to(self.last_text_id);
        if *file.last_edit(&self.db) != last_edit {
            file.set_last_edit(&mut self.db).with_durability(durability).to(last_edit);
        }
        let old = file.set_parse(&mut self.db).with_durability(durability).to(parse);
        self.unused.push(old);
    }

    /// Writes what an overrides text says about each op name into the names' slots, setting
    /// only the slots whose values change (once each, where one slot serves several names).
    fn sync_override_slots(&mut self, text: &str) {
        let parsed = base_db::parse_overrides(text);
        let slots = OverrideSlots::get(&self.db);
        let settings = parsed.option_settings();
        if *slots.settings(&self.db) != settings {
            let durability = self.mode.config_durability();
            slots.set_settings(&mut self.db).with_durability(durability).to(settings);
        }
        let mut table = parsed.table();
        let by_name = Arc::clone(slots.by_name(&self.db));
        let durability = self.mode.slot_durability();
        let previous = std::mem::take(&mut self.overridden);
        self.overridden = table.keys().cloned().collect();
        // The new values of the slots that change, by slot.
        let mut changed: FxHashMap<OpOverrideSlot, SlotMap> = FxHashMap::default();
        for name in previous.iter().chain(table.keys()) {
            let Some(&slot) = by_name.get(name) else { continue };
            let value = table.get(name).cloned().map(Arc::new);
            let values = match changed.get_mut(&slot) {
                Some(values) => values,
                None if slot.values(&self.db).get(name) == value.as_ref() => continue,
                None => changed.entry(slot).or_insert_with(|| (**slot.values(&self.db)).clone()),
            };
            match value {
                Some(value) => values.insert(name.clone(), value),
                None => values.remove(name),
            };
        }
        for (slot, values) in changed {
            if **slot.values(&self.db) != values {
                slot.set_values(&mut self.db).with_durability(durability).to(Arc::new(values));
            }
        }
        table.retain(|name, _| !by_name.contains_key(name));
        // Names seen for the first time get a slot each.
        self.add_slots(
            table.into_iter().map(|(name, value)| vec![(name, Some(Arc::new(value)))]),
            durability,
        );
    }

    /// Gives every named op of the `changed` files an (empty) override slot, so that
    /// overriding an op for the first time changes its slot and not the map every op reads.
    /// The ops of one group (`ir::func_groups`) share a slot: what reads a group's overrides
    /// depends on one slot, so salsa walks one edge per group after an override, not one per
    /// op.
    fn create_slots_for_ops(&mut self, changed: &[String]) {
        let mut buckets: Vec<Vec<(String, Option<Arc<base_db::OpOverrides>>)>> = Vec::new();
        for file in changed.iter().filter_map(|p| self.files.get(p)) {
            for &func in ir::file_funcs(&self.db, *file).iter() {
                let loc = ir::func_loc_names(&self.db, func);
                let frame = ir::func_frame(&self.db, func);
                let groups = ir::func_groups(&self.db, func);
                let first = buckets.len();
                buckets.resize_with(first + groups.len(), Vec::new);
                for (key, l) in loc.locs() {
                    // The names ops were written with too: an override may name those
                    // (`layout::op_overrides`).
                    let names = std::iter::once(l.name)
                        .chain(l.written_as)
                        .map(|n| (n.as_str().to_owned(), None));
                    let group =
                        frame.as_ref().and_then(|f| groups.locate(f.op_index(key.as_str())?));
                    match group {
                        Some((g, _)) => buckets[first + g as usize].extend(names),
                        None => buckets.extend(names.map(|n| vec![n])),
                    }
                }
            }
        }
        let durability = self.mode.slot_durability();
        self.add_slots(buckets, durability);
    }

    /// Creates a slot for each bucket of names, shared by the bucket's names that have none
    /// yet, with their values, and sets the map (a new revision for every op's lookup) only
    /// if a name was added.
    fn add_slots(
        &mut self,
        buckets: impl IntoIterator<Item = Vec<(String, Option<Arc<base_db::OpOverrides>>)>>,
        durability: Durability,
    ) {
        let slots = OverrideSlots::get(&self.db);
        let by_name = Arc::clone(slots.by_name(&self.db));
        let mut grown: Option<FxHashMap<String, OpOverrideSlot>> = None;
        for bucket in buckets {
            let mut names = Vec::new();
            let mut values = SlotMap::new();
            for (name, value) in bucket {
                if by_name.contains_key(&name)
                    || grown.as_ref().is_some_and(|g| g.contains_key(&name))
                    || names.contains(&name)
                {
                    continue;
                }
                if let Some(value) = value {
                    values.insert(name.clone(), value);
                }
                names.push(name);
            }
            if names.is_empty() {
                continue;
            }
            let slot =
                OpOverrideSlot::builder(Arc::new(values)).durability(durability).new(&self.db);
            let grown = grown.get_or_insert_with(|| (*by_name).clone());
            for name in names {
                grown.insert(name, slot);
            }
        }
        if let Some(grown) = grown {
            let durability = self.mode.config_durability();
            slots.set_by_name(&mut self.db).with_durability(durability).to(Arc::new(grown));
        }
    }

    /// Starts a new generation of [`Retained`] values; the oldest become unused.
    fn rotate_retained(&mut self) {
        let old = match self.retained.lock() {
            Ok(mut r) => {
                let current = std::mem::take(&mut r.current);
                std::mem::replace(&mut r.previous, current)
            }
            Err(_) => return,
        };
        if old.is_empty() {
            return;
        }
        // Changes came faster than quiet moments: free what waits now rather than pile it up.
        if !self.unused.is_empty() {
            self.free_values();
        }
        self.unused = old;
    }

    /// Frees, on a helper thread, the large values of older revisions that the host kept so
    /// that `apply_change` need not free them (see `Retained`). Call it when the analysis is
    /// idle (an editor's diagnostics are out): done beside the analysis of an edit, this work
    /// competed with it for the processor. `apply_change` also frees when the values of two
    /// revisions wait.
    ///
    /// The positions an incremental re-parse left to move (see `syntax::Parse`) are not moved
    /// here: the next re-parse moves only those between its edit and the last one, and a
    /// reader of the whole tree moves the rest on its first read.
    pub fn free_unused(&mut self) {
        self.free_values();
    }

    /// Frees the retained values no revision needs any more, on a helper thread.
    fn free_values(&mut self) {
        if self.unused.is_empty() {
            return;
        }
        let unused = std::mem::take(&mut self.unused);
        // Should the thread not start, the closure and `unused` are dropped here instead.
        let _ = std::thread::Builder::new().name("ide-free".to_owned()).spawn(move || drop(unused));
    }
}

fn clamp_to_char_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A file's new text with what the host could keep of the old one: the patched parse, the
/// one op edit lowering can redo, the patched line index (`None`s: made from the text).
type NewText = (FileText, Option<syntax::Parse>, Option<LastEdit>, Option<LineIndex>);

/// A snapshot of the database that answers queries.
#[derive(Clone)]
pub struct Analysis {
    db: RootDatabase,
    retained: Arc<Mutex<Retained>>,
}

impl Analysis {
    /// Runs `f` against the snapshot, turning a salsa cancellation into `Err(Cancelled)`.
    pub fn with_db<T>(&self, f: impl FnOnce(&RootDatabase) -> T + UnwindSafe) -> Cancellable<T> {
        let db = &self.db;
        Cancelled::catch(std::panic::AssertUnwindSafe(|| f(db)))
    }

    /// Raw database access for crates that add their own queries on top (layout, plan).
    #[must_use]
    pub fn db(&self) -> &RootDatabase {
        &self.db
    }

    pub fn file_text(&self, file: SourceFile) -> Cancellable<FileText> {
        self.with_db(|db| file.text(db).clone())
    }

    /// The file's syntax tree and tokens, as the host keeps them (always equal to
    /// `syntax::parse` of the text).
    pub fn parse(&self, file: SourceFile) -> Cancellable<Arc<syntax::Parse>> {
        self.with_db(|db| ir::parse_file(db, file))
    }

    pub fn line_index(&self, file: SourceFile) -> Cancellable<Arc<LineIndex>> {
        self.with_db(|db| line_index(db, file))
    }

    /// Syntax and semantic diagnostics of a file, sorted by position.
    pub fn diagnostics(&self, file: SourceFile) -> Cancellable<Vec<Diagnostic>> {
        // The parse is not retained: the host patches it in place on the next edit, which a
        // second reference would prevent.
        let (lowered, diagnostics) =
            self.with_db(|db| (ir::lower_file(db, file), diagnostics::file_diagnostics(db, file)))?;
        self.retain(lowered);
        Ok(diagnostics)
    }

    /// Keeps `value` for the host to free (see [`Retained`]); the editor asks for diagnostics
    /// after every change, so that is where the file's lowering is kept.
    fn retain(&self, value: Arc<dyn Any + Send + Sync>) {
        self.retain_all(vec![value]);
    }

    /// [`Analysis::retain`] for several values.
    fn retain_all(&self, values: Vec<Arc<dyn Any + Send + Sync>>) {
        let Ok(mut r) = self.retained.lock() else { return };
        // By address: a value kept already (asked for twice in a revision) is kept once.
        let mut seen: rustc_hash::FxHashSet<*const ()> =
            r.current.iter().map(|v| Arc::as_ptr(v).cast::<()>()).collect();
        for v in values {
            if seen.insert(Arc::as_ptr(&v).cast::<()>()) {
                r.current.push(v);
            }
        }
    }

    /// The file printed in tt-mlir's style, or `None` if it has syntax errors (formatting
    /// broken input would silently drop what could not be parsed).
    pub fn format(&self, file: SourceFile) -> Cancellable<Option<String>> {
        self.with_db(|db| {
            let parse = ir::parse_file(db, file);
            if !parse.errors.is_empty() {
                return None;
            }
            Some(syntax::print(file.text(db), &parse))
        })
    }

    /// Converts a byte offset to a 0-based line and UTF-16 column.
    pub fn line_col(&self, file: SourceFile, offset: u32) -> Cancellable<LineCol> {
        self.with_db(|db| line_index(db, file).line_col(file.text(db), offset))
    }
}

/// The line index of a file, as the host keeps it (patched for each edit).
fn line_index(db: &dyn ir::Db, file: SourceFile) -> Arc<LineIndex> {
    Arc::clone(file.line_index(db))
}
