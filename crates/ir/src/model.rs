//! The semantic model: functions, ops and values with no text positions in them.
//!
//! Positions (op ranges, `loc(...)`, alias names) live in [`FuncSourceMap`], read only by the
//! IDE layer. So a whitespace, comment or location edit produces an equal [`FuncBody`], salsa
//! backdates it, and nothing downstream re-runs.

use std::{fmt, sync::Arc};

use crate::Name;

use syntax::TextRange;
use ttnn_types::{
    BufferType, Conv2dConfig, Conv2dSliceConfig, CoreRangeSet, DataType, DeviceComputeKernelConfig,
    Grid, MatmulProgramConfig, TensorMemoryLayout, TensorType, TtnnLayout,
};

/// A semantic type: aliases resolved, layouts decoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ty {
    Tensor(TensorType),
    /// `!ttnn.device`.
    Device,
    /// Any other type, as normalized text (`i32`, `!ttnn.global_semaphore`, `tuple<...>`).
    Other(String),
    /// The type of a value whose definition could not be typed (an op in foreign syntax).
    Unknown,
}

impl Ty {
    #[must_use]
    pub fn as_tensor(&self) -> Option<&TensorType> {
        match self {
            Ty::Tensor(t) => Some(t),
            _ => None,
        }
    }

    #[must_use]
    pub fn layout(&self) -> Option<&TtnnLayout> {
        self.as_tensor().and_then(|t| t.layout.as_ref())
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Tensor(t) => t.fmt(f),
            Ty::Device => f.write_str("!ttnn.device"),
            Ty::Other(s) => f.write_str(s),
            Ty::Unknown => f.write_str("<unknown>"),
        }
    }
}

/// A semantic attribute value. Aliases are resolved; known dialect attributes are decoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AttrValue {
    /// An integer with its optional type (`i32`, `si32`, `ui32`, ...).
    Int {
        value: i128,
        ty: Option<String>,
    },
    /// A float as written (`1.250000e-01`, `0x7FC00000`), with its optional type.
    Float {
        text: String,
        ty: Option<String>,
    },
    Bool(bool),
    Str(String),
    Unit,
    Array(Vec<AttrValue>),
    /// `array<i32: 1, 2>`.
    DenseArray {
        elem: String,
        values: Vec<String>,
    },
    SymbolRef(Vec<String>),
    Type(Ty),
    /// A dialect attribute: its full name, normalized text, and the decoded value if known.
    Dialect {
        name: String,
        text: String,
        decoded: Option<Box<Decoded>>,
    },
    Keyword(String),
    Dict(Vec<(String, AttrValue)>),
    /// Anything else, as normalized text (`dense<...> : tensor<...>`, `affine_map<...>`).
    Other(String),
}

impl AttrValue {
    #[must_use]
    pub fn as_int(&self) -> Option<i128> {
        match self {
            AttrValue::Int { value, .. } => Some(*value),
            _ => None,
        }
    }

    #[must_use]
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttrValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Integers from `array<i32: ...>` or `[1 : i32, ...]`.
    #[must_use]
    pub fn as_ints(&self) -> Option<Vec<i64>> {
        match self {
            AttrValue::DenseArray { values, .. } => {
                values.iter().map(|v| v.parse::<i64>().ok()).collect()
            }
            AttrValue::Array(items) => {
                items.iter().map(|a| a.as_int().and_then(|v| i64::try_from(v).ok())).collect()
            }
            _ => None,
        }
    }

    #[must_use]
    pub fn decoded(&self) -> Option<&Decoded> {
        match self {
            AttrValue::Dialect { decoded, .. } => decoded.as_deref(),
            _ => None,
        }
    }
}

/// Known dialect attributes, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Decoded {
    Layout(TtnnLayout),
    BufferType(BufferType),
    MemoryConfig(MemoryConfig),
    ShardSpec(ShardSpec),
    Conv2dConfig(Conv2dConfig),
    Conv2dSliceConfig(Conv2dSliceConfig),
    ComputeConfig(DeviceComputeKernelConfig),
    MatmulProgramConfig(MatmulProgramConfig),
    Device(DeviceDesc),
    SystemDesc(SystemDesc),
    Shape(Vec<u64>),
    DataType(DataType),
}

/// `#ttnn.memory_config<#dram, <interleaved>, #ttnn.shard_spec<...>>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MemoryConfig {
    pub buffer: BufferType,
    pub memory_layout: Option<TensorMemoryLayout>,
    pub shard_spec: Option<ShardSpec>,
}

/// `#ttnn.shard_spec<<[core ranges]>, <HxW>, <row_major>>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSpec {
    pub core_ranges: CoreRangeSet,
    pub shape: Vec<u64>,
    pub row_major_orientation: bool,
}

/// The body of `ttcore.device` / `#ttcore.device`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceDesc {
    pub worker_grid: Option<Grid>,
    pub dram_grid: Option<Grid>,
    pub mesh_shape: Vec<u64>,
    pub chip_ids: Vec<i64>,
}

/// The chip descriptions of `#ttcore.system_desc`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SystemDesc {
    pub chips: Vec<ChipDesc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChipDesc {
    pub arch: Option<String>,
    pub grid: Option<Grid>,
    pub l1_size: Option<u64>,
    pub l1_unreserved_base: Option<u64>,
    pub num_dram_channels: Option<u64>,
    pub dram_channel_size: Option<u64>,
}

/// Where an operand comes from.
///
/// A result names its defining op by that op's key ([`OpData::key`]), never by its position
/// in [`FuncBody::ops`], so inserting or deleting an op leaves every other op's data equal.
/// [`FuncBody::result_of`] (and the same on `FuncFrame`) finds the op's body index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueRef {
    Arg(u32),
    Result {
        /// The key of the defining op.
        op: Name,
        /// The result's index among the op's results (flattened: `%a:2, %b` has three).
        index: u32,
    },
    /// Undefined, or defined somewhere the model does not track (a nested region).
    Unknown,
}

/// How an op was written; the rewriter uses it to print the op back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpForm {
    Generic,
    D2mSubgraph {
        ins: u32,
        outs: u32,
    },
    Call,
    LoadCached,
    TtLang,
    /// Custom syntax of another dialect, kept verbatim.
    Opaque,
    /// Structural ops inside a function body (nested module, device declaration).
    Other,
}

/// One op of a function body, position-free.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpData {
    /// The op's identity inside its function: its result names, or for ops without results
    /// the op name and an ordinal (see `op_key` in lowering).
    pub key: String,
    pub name: String,
    pub form: OpForm,
    pub operands: Vec<ValueRef>,
    pub operand_types: Vec<Ty>,
    pub results: Vec<Ty>,
    /// Inherent attributes (`<{...}>`), sorted by key.
    pub properties: Vec<(String, AttrValue)>,
    /// Discardable attributes (`{...}`), sorted by key.
    pub attrs: Vec<(String, AttrValue)>,
    pub callee: Option<String>,
    /// True if the op carries regions (whose ops are not part of `FuncBody::ops`).
    pub has_regions: bool,
}

impl OpData {
    /// True if names in this op cannot be resolved through the body's key index alone: it
    /// has regions (with their own values), or several results under one key (`%a, %b`).
    #[must_use]
    pub fn resolves_apart(&self) -> bool {
        self.has_regions || self.key.contains(',')
    }

    #[must_use]
    pub fn property(&self, key: &str) -> Option<&AttrValue> {
        self.properties
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| &self.properties[i].1)
            .or_else(|| {
                // Old files put inherent attributes in the discardable dictionary; MLIR
                // accepts both, so do we.
                self.attrs
                    .binary_search_by(|(k, _)| k.as_str().cmp(key))
                    .ok()
                    .map(|i| &self.attrs[i].1)
            })
    }
}

/// A function's semantic body: no positions, no locations.
#[derive(Debug, Clone)]
pub struct FuncBody {
    pub name: String,
    pub is_private: bool,
    /// `tt.function_type` (`forward_device`, `const_eval`, ...), if set.
    pub function_type: Option<String>,
    /// Shared pointers, like `ops`: re-lowering one op copies the body, and a function may
    /// have thousands of arguments (weights).
    pub arg_names: Arc<[String]>,
    pub args: Arc<[Ty]>,
    pub results: Vec<Ty>,
    /// Top-level ops in program order (the terminator excluded). Shared pointers: a copy of
    /// the body, or of a group of it (`func_group`), costs a count per op, and comparing two
    /// bodies skips every op they share, which after an edit inside one op is all but one.
    pub ops: Vec<Arc<OpData>>,
    /// The terminator's operands.
    pub returns: Vec<ValueRef>,
    pub has_body: bool,
    /// Each op's key, by body index. Shared: an edit inside one op keeps every key, so the
    /// re-lowered body, and the frame made from it, share the list.
    pub keys: Arc<[Name]>,
    /// The body index of each op key, for resolving [`ValueRef::Result`] and for per-op
    /// queries, which look their op up by key (a linear search would make analyzing a
    /// function quadratic in its size).
    pub defs: DefIndex,
    /// How many ops have regions or define several results under one key
    /// ([`OpData::resolves_apart`]): re-lowering a window resolves names through
    /// [`FuncBody::defs`] only when there are none, and counting them per edit was a walk
    /// over every op.
    pub apart: u32,
}

/// Compared after every edit of the function (`func_body` is a firewall): the op count
/// and the cheap fields first, the shared lists by pointer first. Derived, it compared
/// every argument's name and type element by element first (19k arguments on the 100k-op
/// graph). Equal values compare as the derived equality would, so `Hash` agrees.
impl PartialEq for FuncBody {
    fn eq(&self, other: &FuncBody) -> bool {
        // Every field is compared: a field added later fails to compile here until it is.
        let FuncBody {
            name: _,
            is_private: _,
            function_type: _,
            arg_names: _,
            args: _,
            results: _,
            ops: _,
            returns: _,
            has_body: _,
            keys: _,
            defs: _,
            apart: _,
        } = self;
        self.ops.len() == other.ops.len()
            && self.apart == other.apart
            && self.has_body == other.has_body
            && self.is_private == other.is_private
            && self.name == other.name
            && self.function_type == other.function_type
            && self.results == other.results
            && self.returns == other.returns
            && same(&self.keys, &other.keys)
            && self.ops == other.ops
            && self.defs == other.defs
            && same(&self.arg_names, &other.arg_names)
            && same(&self.args, &other.args)
    }
}

impl Eq for FuncBody {}

/// Every field, as a derived `Hash` would (so equal bodies hash equally).
impl std::hash::Hash for FuncBody {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.is_private.hash(state);
        self.function_type.hash(state);
        self.arg_names.hash(state);
        self.args.hash(state);
        self.results.hash(state);
        self.ops.hash(state);
        self.returns.hash(state);
        self.has_body.hash(state);
        self.keys.hash(state);
        self.defs.hash(state);
        self.apart.hash(state);
    }
}

/// Whether two shared values are equal, by pointer first (`Arc`'s own equality checks the
/// pointers only for sized values, not for slices).
pub(crate) fn same<T: ?Sized + PartialEq>(a: &Arc<T>, b: &Arc<T>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// Op keys as [`Name`]s with the body index of the op each names, for resolving a
/// [`ValueRef::Result`] in a binary search over integers (the optimizer does this in its
/// inner loops). Where keys repeat (a `duplicate-value` error) the last op wins, as it does
/// for the uses lowering resolves.
///
/// Sorted by the names' ids, which depend on the process's interning order: only ever
/// searched, never iterated into output.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DefIndex(Arc<[(Name, u32)]>);

impl DefIndex {
    /// The index of `keys` (op keys by body index).
    #[must_use]
    pub fn of_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> DefIndex {
        let names: Vec<Name> = keys.into_iter().map(Name::new).collect();
        DefIndex::of_names(&names)
    }

    /// The index of op keys already interned (by body index).
    #[must_use]
    pub fn of_names(keys: &[Name]) -> DefIndex {
        let mut v: Vec<(Name, u32)> =
            keys.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
        // Stable, by id: among equal keys body order stays, and the last is kept.
        v.sort_by_key(|(n, _)| n.id());
        let mut out: Vec<(Name, u32)> = Vec::with_capacity(v.len());
        for e in v {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => out.push(e),
            }
        }
        DefIndex(out.into())
    }

    /// The index after the ops `at..at + removed` of the body were replaced by ops with the
    /// keys `added`: the entries of the removed ops go, those after them move by the
    /// difference, and the added ones are merged in. A pass over integers, where building
    /// the index again interns and sorts every key.
    ///
    /// `None` where that would not be [`DefIndex::of_keys`] of the new keys: an added key is
    /// also defined outside the window or twice in it, or a removed op's key is defined
    /// elsewhere too (the index held only the last of those).
    #[must_use]
    pub fn spliced(&self, at: usize, removed: usize, added: &[Name]) -> Option<DefIndex> {
        let (at, end) = (at as u32, (at + removed) as u32);
        let delta = added.len() as i64 - i64::from(end - at);
        let mut kept: Vec<(Name, u32)> = Vec::with_capacity(self.0.len() + added.len());
        let mut dropped = 0usize;
        for &(n, j) in self.0.iter() {
            if (at..end).contains(&j) {
                dropped += 1;
            } else if j >= end {
                kept.push((n, u32::try_from(i64::from(j) + delta).ok()?));
            } else {
                kept.push((n, j));
            }
        }
        if dropped != removed {
            return None;
        }
        let mut new: Vec<(Name, u32)> =
            added.iter().enumerate().map(|(k, &n)| (n, at + k as u32)).collect();
        new.sort_unstable_by_key(|(n, _)| n.id());
        let mut out: Vec<(Name, u32)> = Vec::with_capacity(kept.len() + new.len());
        let (mut a, mut b) = (kept.into_iter().peekable(), new.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0.id() < y.0.id() => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            let Some(e) = next else { break };
            if out.last().is_some_and(|l: &(Name, u32)| l.0 == e.0) {
                return None;
            }
            out.push(e);
        }
        Some(DefIndex(out.into()))
    }

    /// The body index of the op whose key is `name`.
    #[must_use]
    pub fn get(&self, name: Name) -> Option<u32> {
        let i = self.0.binary_search_by_key(&name.id(), |(n, _)| n.id()).ok()?;
        Some(self.0[i].1)
    }

    /// The number of distinct keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `(op index, result index)` of a result; `None` for arguments, unknown values and keys
    /// no op has.
    #[must_use]
    pub fn result_of(&self, v: ValueRef) -> Option<(u32, u32)> {
        match v {
            ValueRef::Result { op, index } => Some((self.get(op)?, index)),
            ValueRef::Arg(_) | ValueRef::Unknown => None,
        }
    }
}

impl FuncBody {
    /// The type of a value.
    #[must_use]
    pub fn value_type(&self, v: ValueRef) -> Option<&Ty> {
        match v {
            ValueRef::Arg(i) => self.args.get(i as usize),
            ValueRef::Result { .. } => {
                let (op, index) = self.result_of(v)?;
                self.ops.get(op as usize).and_then(|o| o.results.get(index as usize))
            }
            ValueRef::Unknown => None,
        }
    }

    /// The body index of the op whose key is `name` (the last, where keys repeat).
    #[must_use]
    pub fn index_of(&self, name: Name) -> Option<u32> {
        self.defs.get(name)
    }

    /// `(op index, result index)` of a result value; `None` for arguments and unknown values.
    #[must_use]
    pub fn result_of(&self, v: ValueRef) -> Option<(u32, u32)> {
        self.defs.result_of(v)
    }

    /// The index of the op with `key` (the last, where keys repeat).
    #[must_use]
    pub fn op_index(&self, key: &str) -> Option<usize> {
        if self.defs.is_empty() && !self.ops.is_empty() {
            return self.ops.iter().rposition(|o| o.key == key);
        }
        Some(self.defs.get(Name::lookup(key)?)? as usize)
    }

    /// Builds `keys`, `defs` and `apart` from the ops.
    pub fn index_keys(&mut self) {
        self.keys = self.ops.iter().map(|o| Name::new(&o.key)).collect();
        self.defs = DefIndex::of_names(&self.keys);
        self.apart = self.ops.iter().filter(|o| o.resolves_apart()).count() as u32;
    }
}

/// Where a function's pieces are in the text. Read only by the IDE layer and the CLI.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuncSourceMap {
    /// The whole `func.func`.
    pub range: TextRange,
    pub name_range: TextRange,
    pub arg_ranges: Vec<TextRange>,
    /// Per op (parallel to `FuncBody::ops`): the whole op.
    pub op_ranges: Vec<TextRange>,
    /// Per op: its name token.
    pub op_name_ranges: Vec<TextRange>,
    /// Per op: the ranges of its result definitions.
    pub result_ranges: RangeLists,
    /// Per op: the ranges of its operand uses.
    pub operand_ranges: RangeLists,
    /// Per op: its result type ranges.
    pub result_type_ranges: RangeLists,
    /// The terminator, if any.
    pub return_range: Option<TextRange>,
    pub return_operand_ranges: Vec<TextRange>,
    /// The chunk the function is in (for alias lookups).
    pub chunk: u32,
}

/// A list of ranges per op, stored in one vector.
///
/// An edit moves every range after it; flat, moving them is one pass over contiguous memory
/// and copying a source map is a few allocations, where a vector per op made re-lowering one
/// op of a 10k-op function allocate (and later free) tens of thousands of vectors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RangeLists {
    ranges: Vec<TextRange>,
    /// Where each list ends in `ranges`.
    ends: Vec<u32>,
}

impl RangeLists {
    /// Appends the next op's list.
    pub fn push(&mut self, list: impl IntoIterator<Item = TextRange>) {
        self.ranges.extend(list);
        self.ends.push(self.ranges.len() as u32);
    }

    /// List `i`, if there are that many.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&[TextRange]> {
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.ranges.get(start..end)
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Replaces list `i` (which must exist) by `list`.
    pub fn replace(&mut self, i: usize, list: &[TextRange]) {
        let Some(&end) = self.ends.get(i) else { return };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.ranges.splice(start as usize..end as usize, list.iter().copied());
        let delta = list.len() as i64 - i64::from(end - start);
        for e in &mut self.ends[i..] {
            // Within the vector's length, which fits the u32 ends.
            *e = (i64::from(*e) + delta) as u32;
        }
    }

    /// Replaces lists `at..at + removed` (which must exist) by `lists`.
    pub fn splice(&mut self, at: usize, removed: usize, lists: &RangeLists) {
        if at + removed > self.ends.len() {
            return;
        }
        let start = if at == 0 { 0 } else { self.ends[at - 1] };
        let end = if removed == 0 { start } else { self.ends[at + removed - 1] };
        self.ranges.splice(start as usize..end as usize, lists.ranges.iter().copied());
        let delta = lists.ranges.len() as i64 - i64::from(end - start);
        let new_ends = lists.ends.iter().map(|&e| e + start);
        let tail: Vec<u32> = self
            .ends
            .get(at + removed..)
            .unwrap_or_default()
            .iter()
            // Within the vector's length, which fits the u32 ends.
            .map(|&e| (i64::from(e) + delta) as u32)
            .collect();
        self.ends.truncate(at);
        self.ends.extend(new_ends);
        self.ends.extend(tail);
    }

    /// Every range of lists `i` and after.
    pub fn tail_mut(&mut self, i: usize) -> impl Iterator<Item = &mut TextRange> {
        let start = match i.checked_sub(1) {
            None => 0,
            Some(before) => self.ends.get(before).map_or(self.ranges.len(), |&e| e as usize),
        };
        self.ranges.get_mut(start..).unwrap_or_default().iter_mut()
    }
}

impl std::ops::Index<usize> for RangeLists {
    type Output = [TextRange];

    fn index(&self, i: usize) -> &[TextRange] {
        self.get(i).unwrap_or(&[])
    }
}

/// An op's location name: its top-level `loc("name")` and, when that name location wraps
/// another name (`loc("op_1"("op"))`, which the TTIR importer writes for an op it renamed to
/// keep names unique), the wrapped one: the name the op had as written in its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpLoc {
    pub name: Name,
    pub written_as: Option<Name>,
}

impl OpLoc {
    /// A location that is a name alone.
    #[must_use]
    pub fn named(name: Name) -> OpLoc {
        OpLoc { name, written_as: None }
    }
}

/// The name of each op's top-level `loc("name")` (aliases resolved), which overrides key
/// on, by op key: position-free, so an op inserted or deleted elsewhere, or an edit that
/// keeps every op's location, leaves it equal and what reads it is not re-run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LocNames {
    /// `(op key, location)` for the ops that have a name, sorted by the key's id (the first
    /// op of a duplicated key wins). Ids depend on interning order: only searched, and
    /// [`LocNames::iter`] gives entries in no meaningful order.
    by_key: Arc<[(Name, OpLoc)]>,
}

impl LocNames {
    /// The names of ops given as `(key, location)` in body order.
    #[must_use]
    pub fn of_ops(ops: impl IntoIterator<Item = (Name, Option<OpLoc>)>) -> LocNames {
        let mut v: Vec<(Name, OpLoc)> =
            ops.into_iter().filter_map(|(k, n)| Some((k, n?))).collect();
        // Stable: among ops sharing a key the first stays first, and dedup keeps it.
        v.sort_by_key(|(k, _)| k.id());
        v.dedup_by(|b, a| a.0 == b.0);
        LocNames { by_key: v.into() }
    }

    /// These names after the ops with keys `removed` went and ops `added` came, all with keys
    /// no other op has: a merge over the sorted entries, where building them again sorts
    /// every op's.
    #[must_use]
    pub fn spliced(&self, removed: &[Name], added: &[(Name, Option<OpLoc>)]) -> LocNames {
        let mut new: Vec<(Name, OpLoc)> =
            added.iter().filter_map(|&(k, n)| Some((k, n?))).collect();
        new.sort_by_key(|(k, _)| k.id());
        // Searched, not scanned per entry: a rename at every use removes as many ops as
        // the span it touches, and the entries are one per named op of the function.
        let mut gone: Vec<u32> = removed.iter().map(|k| k.id()).collect();
        gone.sort_unstable();
        let kept =
            self.by_key.iter().copied().filter(|(k, _)| gone.binary_search(&k.id()).is_err());
        let mut out = Vec::with_capacity(self.by_key.len() + new.len());
        let (mut a, mut b) = (kept.peekable(), new.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0.id() <= y.0.id() => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            out.extend(next);
        }
        out.dedup_by(|b, a| a.0 == b.0);
        LocNames { by_key: out.into() }
    }

    /// The `loc("name")` of the op with this key.
    #[must_use]
    pub fn of_key(&self, key: &str) -> Option<&'static str> {
        self.of_name(Name::lookup(key)?).map(Name::as_str)
    }

    /// The `loc("name")` of the op with this key, as a name.
    #[must_use]
    pub fn of_name(&self, key: Name) -> Option<Name> {
        self.loc_of(key).map(|l| l.name)
    }

    /// The whole location of the op with this key: its name and the name it was written
    /// with, if it wraps one.
    #[must_use]
    pub fn loc_of(&self, key: Name) -> Option<OpLoc> {
        let i = self.by_key.binary_search_by_key(&key.id(), |(k, _)| k.id()).ok()?;
        Some(self.by_key[i].1)
    }

    /// `(op key, loc name)` of every op that has one, in no meaningful order: a caller that
    /// shows them sorts them.
    pub fn iter(&self) -> impl Iterator<Item = (Name, Name)> + '_ {
        self.by_key.iter().map(|&(k, l)| (k, l.name))
    }

    /// `(op key, location)` of every op that has a name, in no meaningful order.
    pub fn locs(&self) -> impl Iterator<Item = (Name, OpLoc)> + '_ {
        self.by_key.iter().copied()
    }

    /// The number of ops with a name.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Severity {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// A diagnostic from parsing or lowering, with a range in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub range: TextRange,
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
}

/// One function as lowering produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredFunc {
    pub chunk: u32,
    pub name: String,
    /// Index among same-named functions of the chunk (0 unless a name repeats).
    pub dup: u32,
    pub body: Arc<FuncBody>,
    pub source_map: Arc<FuncSourceMap>,
    pub loc_names: Arc<LocNames>,
}

/// A whole file lowered: its functions and every parse and lowering diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoweredFile {
    pub funcs: Vec<LoweredFunc>,
    pub diagnostics: Vec<Diagnostic>,
    /// The device the file declares (`ttcore.device`), if any.
    pub device: Option<DeviceDesc>,
    /// The system description the file carries (`#ttcore.system_desc`), if any.
    pub system_desc: Option<SystemDesc>,
}
