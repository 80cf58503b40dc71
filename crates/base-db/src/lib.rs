//! The salsa inputs of the analysis and the `Db` trait every analysis crate extends.
//!
//! All inputs live here, each with the durability of how often it changes:
//! source files are edited constantly (`LOW`), overrides and options change in tuning loops
//! and settings (`MEDIUM`), the target device almost never (`HIGH`). A query that read only
//! `MEDIUM` and `HIGH` inputs is re-validated in O(1) after a file edit.
//!
//! A host that runs a tuning loop over a fixed graph shifts that by one step, as
//! rust-analyzer gives library files a higher durability than workspace files: there the
//! graph is what never changes (`MEDIUM`) and the per-op overrides are what changes
//! constantly (`LOW`), so after one op's override changes only the queries that read that
//! op's override slot are re-validated deeply. See `HostMode` in the `ide` crate.
//!
//! The overrides text is read only for its diagnostics: the host parses it and writes what
//! it says into the `OpOverrideSlot` of each op name (one per name in an editor, one per
//! group of ops on a tuning host) and into `OverrideSlots::settings`, so per-op queries
//! depend on their own op's slot and not on the text.
//!
//! Inputs are written only through `Change::apply` in the `ide` crate, which diffs before
//! setting: a salsa setter always starts a new revision, even for an equal value.

pub mod granularity;
mod overrides;

use std::sync::Arc;

use rustc_hash::FxHashMap;
pub use salsa::{self, Durability};

pub use crate::overrides::{
    Conv2dOverride, MAX_OVERRIDE_ERRORS, OpOverrides, OptionSetting, OutputLayoutOverride,
    OverrideEntry, OverrideError, OverrideFile, OverrideKind, OverrideSettings, parse_overrides,
};

/// One IR file. `path` is a display name (a path or URI) used only in diagnostics; analysis
/// never reads the file system.
///
/// `parse` is the parse of `text`, set with it by the host rather than computed by a query:
/// an editor's one-op edit then patches the parse in place (`syntax::Parse::reparse_edit`),
/// which a memoized query could not do, since its old value is shared. It is always exactly
/// `syntax::parse(text)`; the `ide` crate's differential tests check that after each edit.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub text: FileText,
    #[returns(ref)]
    pub parse: Arc<syntax::Parse>,
    /// How `text` came from the previous text, when it was one edit inside one op (the host
    /// patched `parse` for it), so lowering can redo that op alone. `None` otherwise.
    #[returns(ref)]
    pub last_edit: Option<LastEdit>,
    /// Line starts, for positions in the editor's terms. Always `LineIndex::new(text)`; the
    /// host patches it for each edit (a rebuild scans the whole text on every keystroke).
    #[returns(ref)]
    pub line_index: Arc<syntax::LineIndex>,
    /// Which of the file's texts `text` is: the host numbers each text it sets, so a cache
    /// of what was computed from a text ([`LastEdit::before`]) names it without keeping it.
    /// Holding the old text kept the host from patching the new one in place, and copying a
    /// 100k-op file (28 MB) was the largest part of a keystroke there.
    #[returns(copy)]
    pub text_id: u64,
}

/// A file's text: a `String` behind the pointer rather than a `str`, because the host
/// builds each edit's new text in a `String`, and turning that into an `Arc<str>` copied the
/// whole file a second time on every keystroke.
pub type FileText = Arc<String>;

/// One edit inside one op: the text it was made to (by [`SourceFile::text_id`]) and the op
/// it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastEdit {
    pub before: u64,
    pub op: syntax::OpEdit,
}

/// The device the analysis targets. One per database, created at startup.
#[salsa::input(singleton, debug)]
pub struct TargetInput {
    #[returns(ref)]
    pub target: target::Target,
}

/// The user's optimizer overrides, in tt-mlir's option syntax (one option per line). One per
/// database, created at startup (possibly empty).
#[salsa::input(singleton, debug)]
pub struct OverridesInput {
    /// Where the text came from (`model.overrides`, `<command line>`), for diagnostics.
    #[returns(ref)]
    pub origin: String,
    #[returns(ref)]
    pub text: Arc<str>,
}

/// The overrides of the op names one slot serves, position-free: a name with none is absent.
/// The host sets a slot only when one of its names' overrides changes.
///
/// An editor host gives each name the overrides mention a slot of its own. A tuning host
/// also creates slots for every op of its graph ahead of time, one per group of ops
/// (`ir::func_groups`): what reads a group's overrides then depends on one slot, not one
/// per op, and salsa walks one edge per group rather than per op after every override.
#[salsa::input(debug)]
pub struct OpOverrideSlot {
    #[returns(ref)]
    pub values: SlotValues,
}

/// What one [`OpOverrideSlot`] holds: the overrides of each of its names that has some.
pub type SlotValues = Arc<std::collections::BTreeMap<String, Arc<OpOverrides>>>;

/// The override slots by op name, and the options the overrides text sets. One per
/// database. `by_name` changes only when a name gets its first slot, which re-validates
/// every op's lookup; changing a slot's value re-validates only the queries of its ops.
#[salsa::input(singleton, debug)]
pub struct OverrideSlots {
    #[returns(ref)]
    pub by_name: Arc<FxHashMap<String, OpOverrideSlot>>,
    pub settings: OverrideSettings,
}

/// Analysis options that are not per-op overrides. One per database, created at startup.
#[salsa::input(singleton, debug)]
pub struct OptionsInput {
    #[returns(ref)]
    pub options: Options,
}

/// The memory-layout policy, as in tt-mlir's pluggable `MemoryLayoutAnalysis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
    /// The seeds' chain-based DFShardingPolicy + ShardSolver, no chain merging.
    DfSharding,
    /// The seeds' section 4.1: chain merging, fork/concat L1 reservations, L1 timeline.
    DfShardingMerge,
    /// tt-mlir HEAD's optimizer: greedy layout propagation with a beam, backward
    /// consolidation, L1 spill management.
    Greedy,
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::DfSharding, Policy::DfShardingMerge, Policy::Greedy];

    #[must_use]
    pub fn from_name(s: &str) -> Option<Policy> {
        match s {
            "df-sharding" => Some(Policy::DfSharding),
            "df-sharding-merge" => Some(Policy::DfShardingMerge),
            "greedy" => Some(Policy::Greedy),
            _ => None,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Policy::DfSharding => "df-sharding",
            Policy::DfShardingMerge => "df-sharding-merge",
            Policy::Greedy => "greedy",
        }
    }
}

/// Options set by the CLI, the LSP settings or a tuning client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Options {
    pub policy: Policy,
    /// Cap on sharded candidate layouts per op (`max-legal-layouts`; tt-mlir's default 64).
    pub max_legal_layouts: u32,
    /// Also generate row-major candidate layouts (`row-major-enabled`).
    pub row_major_enabled: bool,
    /// Run the memory-layout analysis (`memory-layout-analysis-enabled`, on at tt-mlir's
    /// optimization level 2): build and solve L1 chains. Off, as at level 1, no chain is
    /// built and every op takes its first legal layout (tt-mlir's `OpConfigAnalysis`).
    pub memory_layout_analysis: bool,
    /// After the layouts are chosen, move single-use DRAM outputs whose user runs right
    /// after them to L1 interleaved where both fit (`l1-interleaved-fallback-analysis-enabled`,
    /// tt-mlir's `L1InterleavedFallbackAnalysis`; off by default, as in tt-mlir).
    pub l1_interleaved_fallback: bool,
    /// Scheduled ops per chunk of the plan (see `plan::chunk_layout`): how much an override
    /// re-derives; [`granularity::PLAN_CHUNK_OPS`] unless set. Not a tt-mlir option; tests set
    /// it small to cover chunk boundaries.
    pub plan_chunk_ops: u32,
}

impl Options {
    /// tt-mlir's defaults at optimization level 2, with the chain-merging policy.
    #[must_use]
    pub fn tt_mlir_defaults() -> Options {
        Options {
            policy: Policy::DfShardingMerge,
            max_legal_layouts: 64,
            row_major_enabled: false,
            memory_layout_analysis: true,
            l1_interleaved_fallback: false,
            plan_chunk_ops: granularity::PLAN_CHUNK_OPS as u32,
        }
    }
}

/// The database every analysis crate's `Db` trait extends.
#[salsa::db]
pub trait Db: salsa::Database {}

/// Creates the singleton inputs. The target is `HIGH`; the options, the overrides text and
/// the slot map get `config`, which the host picks for what it is used for. Must run before
/// any query: a singleton created after a query ran is invisible to it.
pub fn init_inputs(
    db: &dyn Db,
    target: target::Target,
    options: Options,
    overrides_origin: String,
    overrides_text: Arc<str>,
    config: Durability,
) {
    let _ = TargetInput::builder(target).durability(Durability::HIGH).new(db);
    let _ = OptionsInput::builder(options).durability(config).new(db);
    let _ = OverridesInput::builder(overrides_origin, overrides_text).durability(config).new(db);
    let _ = OverrideSlots::builder(Arc::default(), OverrideSettings::default())
        .durability(config)
        .new(db);
}
