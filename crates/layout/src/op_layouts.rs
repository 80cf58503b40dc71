//! `legal_op_layouts` and `legal_op_configs`: per-op candidate outputs.
//!
//! `legal_op_layouts(op)` selects from the tensor-type pool the way tt-mlir's
//! `LegalOpLayoutAnalysis` does (interleaved first, DRAM before L1, then sharded by grid
//! volume, bounded by `max-legal-layouts`, row-major only when enabled), applies the op's
//! output-layout override, and, going past tt-mlir (whose analysis at this stage does not
//! consult the op model), drops candidates the op model rejects for this op when fed the
//! chain-entry input (every tensor operand DRAM interleaved). Sharded candidates are checked
//! largest grid first and the bound counts only accepted ones.
//!
//! `legal_op_configs(op)` expands each layout with the op-specific knobs: conv2d's
//! `act_block_h_override` {0, 64, 32} and `deallocate_activation`, and a generated program
//! config for every L1-sharded matmul/linear output.

use std::sync::Arc;

use base_db::{OutputLayoutOverride, TargetInput};
use ir::OpId;
use opmodel::{MatmulShapes, OpConfig, OpError, OpKind, OpModel, OpQuery, OutputHint, TensorDesc};
use ttnn_types::{
    BufferType, Conv2dConfig, Conv2dSliceConfig, Conv2dSliceType, DataType, PageLayout,
    TensorMemoryLayout, TensorType, TtnnLayout,
};

use crate::{
    Db, MemoStyle, OpSignature,
    overrides::{OpOverrides, effective_options, op_overrides},
    signature::op_signature,
    tensor_layouts::{TensorKey, legal_tensor_layouts},
};

/// How an `override-output-layout` entry applied to an op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OverrideUse {
    /// A full override (grid, buffer, memory layout and page layout): exactly that layout.
    /// `rejection` is the op model's objection, if any (the layout is used anyway, as
    /// tt-mlir does).
    Full { layout: TtnnLayout, rejection: Option<String> },
    /// A partial override filtered the candidates down to `remaining`.
    Partial { remaining: usize },
    /// The override could not be built for this tensor (e.g. a grid with fewer tiles than
    /// cores); it was ignored.
    Invalid { reason: String },
    /// The op's output layout is fixed; the override has no effect.
    NoEffect,
}

/// The legal output layouts of one op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LegalOpLayouts {
    /// Interleaved first (DRAM, then L1), then sharded by grid volume, largest first.
    pub layouts: Vec<TtnnLayout>,
    /// The op keeps the layout it has (ops whose output the optimizer may not change, ops
    /// without a single tensor result, tensors without a layout).
    pub fixed: bool,
    /// The data type the candidates were built for.
    pub dtype: Option<DataType>,
    /// How many candidates the op model rejected, and the first rejection's reason.
    pub rejected: usize,
    pub first_rejection: Option<String>,
    pub override_use: Option<OverrideUse>,
    /// Set when the op model does not know the op: only DRAM interleaved is offered.
    pub unknown_op: Option<String>,
}

impl LegalOpLayouts {
    pub fn sharded(&self) -> impl Iterator<Item = &TtnnLayout> {
        self.layouts.iter().filter(|l| l.is_sharded())
    }
}

/// One candidate config: an output layout and the op-specific knobs.
pub type ConfigCandidate = opmodel::Candidate;

/// An op's legal (layout, config) candidates, in search order.
///
/// The L1-sharded ones (what a chain solves over) sit in their own shared list, so every
/// chain problem can hold that list instead of a copy: on a 100k-op graph the copies were
/// a third of the memory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LegalOpConfigs {
    /// The L1-sharded candidates, in search order.
    pub sharded: Arc<[ConfigCandidate]>,
    /// The others (DRAM, L1 interleaved), each with its position in the whole list.
    other: Vec<(u32, ConfigCandidate)>,
}

impl LegalOpConfigs {
    /// Splits `configs` into the sharded list and the rest, keeping the order.
    #[must_use]
    pub fn new(configs: Vec<ConfigCandidate>) -> LegalOpConfigs {
        let mut sharded = Vec::new();
        let mut other = Vec::new();
        for (i, c) in configs.into_iter().enumerate() {
            if c.layout.is_l1() && c.layout.is_sharded() {
                sharded.push(c);
            } else {
                other.push((i as u32, c));
            }
        }
        LegalOpConfigs { sharded: sharded.into(), other }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.sharded.len() + self.other.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every candidate in search order.
    pub fn iter(&self) -> impl Iterator<Item = &ConfigCandidate> + '_ {
        let mut sharded = self.sharded.iter();
        let mut other = self.other.iter().peekable();
        (0..self.len()).filter_map(move |i| match other.peek() {
            Some((at, _)) if *at as usize == i => other.next().map(|(_, c)| c),
            _ => sharded.next(),
        })
    }
}

/// The op's tensor operands as the op model sees them at a chain entry: DRAM interleaved
/// tiled, keeping shapes and data types.
pub(crate) fn dram_inputs(sig: &OpSignature) -> Vec<TensorDesc> {
    sig.tensor_operands()
        .filter_map(|(_, t)| {
            let shape = t.static_shape()?;
            let dtype = t.data_type().unwrap_or(DataType::BF16);
            Some(TensorDesc::new(
                &shape,
                TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile),
            ))
        })
        .collect()
}

/// The op-model query for `sig` with these inputs, output and config.
pub fn query_for(
    sig: &OpSignature,
    inputs: Vec<TensorDesc>,
    output: OutputHint,
    config: OpConfig,
    l1_in_use: u64,
) -> Option<OpQuery> {
    let result = sig.tensor_result()?;
    let output_shape = result.static_shape()?;
    let output_dtype = match &output {
        OutputHint::Layout(l) | OutputHint::Partial(l) => l.data_type(),
        OutputHint::Null => None,
    }
    .or_else(|| result.data_type())
    .unwrap_or(DataType::BF16);
    Some(OpQuery {
        kind: sig.kind.clone(),
        inputs,
        output_shape,
        output_dtype,
        output,
        config,
        l1_in_use,
    })
}

/// An op's legal output layouts and its legal (layout, config) pairs, one memo per op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpLegality {
    pub layouts: Arc<LegalOpLayouts>,
    pub configs: Arc<LegalOpConfigs>,
}

/// The legal layouts and configs of an op: [`legal_op_layouts`] and [`legal_op_configs`]
/// together. An op without overrides reads [`base_legality`], which depends on the graph,
/// the options and the target alone; an overridden op reads [`overridden_legality`].
///
/// Two queries rather than one that reads the op's overrides: a tuning host gives the graph
/// a higher durability than the override slots, so the legality of every op nobody
/// overrides stays valid in O(1) when some op's slot changes; one query reading the slot
/// would take the slot's durability and be re-validated for every op.
pub fn op_legality(db: &dyn Db, op: OpId) -> Arc<OpLegality> {
    if op_overrides(db, op).is_some() { overridden_legality(db, op) } else { base_legality(db, op) }
}

/// The legality of an op as if it had no overrides: in the [`MemoStyle::Editor`] style,
/// `legality_of` its signature; in the tuning style, one memo per op.
#[must_use]
pub fn base_legality(db: &dyn Db, op: OpId) -> Arc<OpLegality> {
    match db.memo_style() {
        MemoStyle::Editor => {
            let Some((sig, pinned)) = signature_and_pin(db, op) else { return Arc::default() };
            legality_of(db, LegalityKey::new(db, LegalitySig(sig), pinned))
        }
        MemoStyle::Tuning => memo::base_legality(db, op),
    }
}

/// [`base_legality`] of an op whose signature the caller has (from its group's
/// [`crate::group_signatures`]): a per-group memo that asks this does not read where the op
/// sits in its function, so an op inserted elsewhere does not re-run it.
#[must_use]
pub fn base_legality_of(db: &dyn Db, op: OpId, sig: &Arc<OpSignature>) -> Arc<OpLegality> {
    match db.memo_style() {
        MemoStyle::Editor => {
            let pinned = crate::pinned_outputs(db, op.func(db)).contains(op.key(db));
            legality_of(db, LegalityKey::new(db, LegalitySig(Arc::clone(sig)), pinned))
        }
        MemoStyle::Tuning => memo::base_legality(db, op),
    }
}

/// The per-op query behind [`base_legality`], in a module of its own so that it keeps the
/// name execution logs show.
mod memo {
    use super::{Arc, Db, OpId, OpLegality, legality, signature_and_pin};

    #[salsa::tracked(returns(clone))]
    pub(super) fn base_legality(db: &dyn Db, op: OpId) -> Arc<OpLegality> {
        let Some((sig, pinned)) = signature_and_pin(db, op) else { return Arc::default() };
        legality(db, &sig, pinned, None)
    }
}

/// What an op's legality without overrides depends on besides the options and the target:
/// its signature without where its operands come from, and whether its output is pinned
/// where it is written.
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct LegalityKey {
    #[returns(ref)]
    pub sig: LegalitySig,
    #[returns(copy)]
    pub pinned: bool,
}

/// An op's signature as its legality reads it: compared and hashed without its operands'
/// sources, which name the producing ops and so differ between any two ops, while legality
/// reads the operands' types alone. Ops of the same kind, types and config then share one
/// `legality_of` memo: a 10k-op graph repeats a few hundred of them, so the memos salsa
/// walks after a change at their durability (and the legality computed when a file opens)
/// are that many rather than one per op.
#[derive(Debug, Clone)]
pub struct LegalitySig(pub Arc<OpSignature>);

impl PartialEq for LegalitySig {
    fn eq(&self, other: &LegalitySig) -> bool {
        let (a, b) = (&*self.0, &*other.0);
        Arc::ptr_eq(&self.0, &other.0)
            || (a.kind == b.kind
                && a.results == b.results
                && a.config == b.config
                && a.operands.len() == b.operands.len()
                && a.operands.iter().zip(&b.operands).all(|(x, y)| x.ty == y.ty))
    }
}

impl Eq for LegalitySig {}

impl std::hash::Hash for LegalitySig {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let s = &*self.0;
        s.kind.hash(state);
        s.results.hash(state);
        s.config.hash(state);
        s.operands.len().hash(state);
        for o in &s.operands {
            o.ty.hash(state);
        }
    }
}

/// The legality of an op with this signature and no overrides.
///
/// Keyed by content rather than by op: the memo reads no file, so an editor (files `LOW`,
/// options `MEDIUM`) re-validates it in O(1) after a keystroke instead of walking its
/// dependencies, which for one memo per op of a 10k-op file was about 10M instructions per
/// keystroke. Ops with equal signatures (operand sources aside) share it. The keys are
/// never collected (reading a collectable one would make the memo `LOW` again): an edit
/// that changes an op's signature leaves the old one's memo behind.
#[salsa::tracked(returns(clone))]
pub fn legality_of(db: &dyn Db, key: LegalityKey) -> Arc<OpLegality> {
    legality(db, &key.sig(db).0, key.pinned(db), None)
}

/// The legality of an op under its overrides.
#[salsa::tracked(returns(clone))]
pub fn overridden_legality(db: &dyn Db, op: OpId) -> Arc<OpLegality> {
    let Some((sig, pinned)) = signature_and_pin(db, op) else { return Arc::default() };
    legality(db, &sig, pinned, op_overrides(db, op).as_deref())
}

/// An op's signature, and whether its output is pinned where it is written: what its
/// legality reads of the graph.
fn signature_and_pin(db: &dyn Db, op: OpId) -> Option<(Arc<OpSignature>, bool)> {
    let sig = op_signature(db, op)?;
    Some((sig, crate::pinned_outputs(db, op.func(db)).contains(op.key(db))))
}

fn legality(
    db: &dyn Db,
    sig: &OpSignature,
    pinned: bool,
    overrides: Option<&OpOverrides>,
) -> Arc<OpLegality> {
    let layouts = compute_layouts(db, sig, pinned, overrides);
    let configs = compute_configs(db, sig, &layouts, overrides);
    Arc::new(OpLegality { layouts, configs })
}

/// The legal output layouts of an op (from [`op_legality`]).
#[must_use]
pub fn legal_op_layouts(db: &dyn Db, op: OpId) -> Arc<LegalOpLayouts> {
    Arc::clone(&op_legality(db, op).layouts)
}

/// The legal (layout, op config) pairs of an op (from [`op_legality`]).
#[must_use]
pub fn legal_op_configs(db: &dyn Db, op: OpId) -> Arc<LegalOpConfigs> {
    Arc::clone(&op_legality(db, op).configs)
}

fn compute_layouts(
    db: &dyn Db,
    sig: &OpSignature,
    pinned: bool,
    overrides: Option<&OpOverrides>,
) -> Arc<LegalOpLayouts> {
    let options = effective_options(db);
    let _p = tracing::trace_span!("legal_op_layouts", kind = sig.kind.name()).entered();
    let layout_override = overrides.and_then(|o| o.output_layout);
    let Some(result) =
        sig.tensor_result().filter(|t| t.layout.is_some() && t.static_shape().is_some())
    else {
        return Arc::new(fixed(sig, layout_override));
    };
    if sig.kind.has_fixed_output_layout() || pinned {
        return Arc::new(fixed(sig, layout_override));
    }
    let target = TargetInput::get(db).target(db);
    let model = db.op_model();
    let shape = result.static_shape().unwrap_or_default();
    let dtype = layout_override
        .and_then(|o| o.dtype)
        .or_else(|| result.data_type())
        .unwrap_or(DataType::BF16);
    let mut out = LegalOpLayouts { dtype: Some(dtype), ..LegalOpLayouts::default() };
    let inputs = dram_inputs(sig);
    // A candidate stays if the op accepts it fed DRAM-interleaved inputs (the chain entry),
    // or, for a sharded candidate, fed inputs sharded the same way: some ops (concat,
    // sharded-only kernels) produce a sharded output only from sharded inputs, and would
    // otherwise never enter a chain.
    let validate = |layout: &TtnnLayout| -> Result<(), OpError> {
        let hint = OutputHint::Layout(layout.clone());
        let Some(q) = query_for(sig, inputs.clone(), hint.clone(), sig.config.clone(), 0) else {
            return Ok(());
        };
        let first = model.query(target, &q).map(|_| ());
        if matches!(first, Err(OpError::OutOfMemory { .. }))
            && dram_sliced(model, target, &q).is_some()
        {
            return Ok(());
        }
        if first.is_ok() || !layout.is_sharded() {
            return first;
        }
        let Some(matched) = matched_inputs(sig, layout, target.worker_grid()) else {
            return first;
        };
        let Some(q) = query_for(sig, matched, hint, sig.config.clone(), 0) else { return first };
        model.query(target, &q).map(|_| ()).or(first)
    };
    if !sig.kind.is_known() {
        out.unknown_op = Some(sig.kind.name().to_owned());
        out.layouts.push(TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile));
        return Arc::new(out);
    }
    if let Some(o) = layout_override.filter(OutputLayoutOverride::is_full) {
        match full_override_layout(&o, &shape, dtype, target.worker_grid()) {
            Ok(layout) => {
                let rejection = validate(&layout).err().map(|e| e.to_string());
                out.layouts.push(layout.clone());
                out.override_use = Some(OverrideUse::Full { layout, rejection });
                return Arc::new(out);
            }
            Err(reason) => out.override_use = Some(OverrideUse::Invalid { reason }),
        }
    }
    let pool = legal_tensor_layouts(db, TensorKey::new(db, shape.clone(), dtype));
    let partial = layout_override.filter(|o| !o.is_full());
    let row_major =
        options.row_major_enabled || partial.and_then(|o| o.page) == Some(PageLayout::RowMajor);
    let matches = |l: &TtnnLayout| partial.is_none_or(|o| compatible(&o, l));
    let mut interleaved: Vec<&TtnnLayout> = Vec::new();
    interleaved.push(&pool.interleaved_tile[0]);
    if row_major {
        interleaved.extend(pool.interleaved_row_major.iter());
    }
    // Matmul and linear never get an L1-interleaved output: there is no program config for
    // it and tt-metal falls back to a slow path (tt-mlir #7682).
    if !sig.kind.is_matmul_like() {
        interleaved.extend(pool.interleaved_tile.get(1));
    }
    for l in interleaved.into_iter().filter(|l| matches(l)) {
        match validate(l) {
            Ok(()) => out.layouts.push(l.clone()),
            Err(e) => reject(&mut out, &e),
        }
    }
    // Ops the rule book only queries with a null hint keep interleaved outputs.
    let budget = if sig.kind.null_hint_only() { 0 } else { options.max_legal_layouts as usize };
    let mut sharded: Vec<TtnnLayout> = Vec::new();
    let pages: &[(PageLayout, usize)] = if row_major {
        &[(PageLayout::Tile, budget - budget / 2), (PageLayout::RowMajor, budget / 2)]
    } else {
        &[(PageLayout::Tile, budget)]
    };
    for &(page, quota) in pages {
        let mut taken = 0;
        for l in pool.sharded(page) {
            if taken >= quota {
                break;
            }
            if !matches(l) {
                continue;
            }
            match validate(l) {
                Ok(()) => {
                    sharded.push(l.clone());
                    taken += 1;
                }
                Err(e) => reject(&mut out, &e),
            }
        }
    }
    sharded.sort_by_key(|l| std::cmp::Reverse(l.grid2d().volume()));
    out.layouts.extend(sharded);
    if partial.is_some() {
        out.override_use = Some(OverrideUse::Partial { remaining: out.layouts.len() });
    }
    if out.layouts.is_empty() {
        if out.rejected > 0 && partial.is_none() {
            // The op model rejects the op whatever its output (an operand in host memory, an
            // unsupported attribute): no layout is better than another, so the op keeps the
            // one it is written with rather than a guess, and its diagnostic stays the same.
            out.layouts.extend(result.layout.clone());
            out.fixed = true;
        } else {
            // Never leave an op without a layout: DRAM interleaved is the universal fallback.
            out.layouts.push(TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile));
        }
    }
    Arc::new(out)
}

/// The layout the op model says `op` produces when asked for `layout`, fed DRAM-interleaved
/// tiled inputs as at its legality check, when that is not `layout` (binary ops, asked for
/// row-major pages, produce tiles): another page layout, data type, buffer or memory layout.
/// `None` when it is, or when the op model rejects the request or cannot be asked.
///
/// tt-mlir's `TTNNOperationValidationAndFallback` pass, after the optimizer, validates each
/// op and, when the backend's output differs from the one chosen, gives the op the backend's
/// output and converts it to the chosen layout right after it.
#[must_use]
pub fn produced_layout(db: &dyn Db, op: OpId, layout: &TtnnLayout) -> Option<TtnnLayout> {
    let sig = op_signature(db, op)?;
    produced_layout_of(db, &sig, layout)
}

/// [`produced_layout`] of an op with signature `sig`.
#[must_use]
pub fn produced_layout_of(
    db: &dyn Db,
    sig: &OpSignature,
    layout: &TtnnLayout,
) -> Option<TtnnLayout> {
    if !sig.kind.is_known() {
        return None;
    }
    let target = TargetInput::get(db).target(db);
    let q = query_for(
        sig,
        dram_inputs(sig),
        OutputHint::Layout(layout.clone()),
        sig.config.clone(),
        0,
    )?;
    let produced = db.op_model().query(target, &q).ok()?.output_layout;
    // Like tt-mlir, a grid alone does not count: an interleaved layout's grid is tt-mlir's
    // notion (tt-metal spreads its pages over every core), and no fallback is sharded.
    let differs = produced.page_layout() != layout.page_layout()
        || produced.data_type() != layout.data_type()
        || produced.buffer != layout.buffer
        || produced.memory_layout != layout.memory_layout;
    differs.then_some(produced)
}

/// The op's tensor inputs re-laid with the candidate's memory layout and grid, where a
/// sharded layout of that kind exists for the input's shape.
fn matched_inputs(
    sig: &OpSignature,
    layout: &TtnnLayout,
    worker: ttnn_types::Grid,
) -> Option<Vec<TensorDesc>> {
    let ml = layout.memory_layout?;
    sig.tensor_operands()
        .map(|(_, t)| {
            let shape = t.static_shape()?;
            let dtype = t.data_type().unwrap_or(DataType::BF16);
            let l = TtnnLayout::sharded(
                &shape,
                dtype,
                layout.page_layout(),
                ml,
                layout.grid2d(),
                worker,
            )
            .unwrap_or_else(|_| TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile));
            Some(TensorDesc::new(&shape, l))
        })
        .collect()
}

fn reject(out: &mut LegalOpLayouts, e: &OpError) {
    out.rejected += 1;
    if out.first_rejection.is_none() {
        out.first_rejection = Some(e.to_string());
    }
}

fn fixed(sig: &OpSignature, layout_override: Option<OutputLayoutOverride>) -> LegalOpLayouts {
    let existing = sig.tensor_result().and_then(|t: &TensorType| t.layout.clone());
    LegalOpLayouts {
        dtype: existing.as_ref().and_then(TtnnLayout::data_type),
        layouts: existing.into_iter().collect(),
        fixed: true,
        override_use: layout_override.map(|_| OverrideUse::NoEffect),
        ..LegalOpLayouts::default()
    }
}

/// True when `l` agrees with every field the partial override gives.
fn compatible(o: &OutputLayoutOverride, l: &TtnnLayout) -> bool {
    o.grid.is_none_or(|g| l.grid2d() == g)
        && o.buffer.is_none_or(|b| l.buffer == b)
        && o.memory_layout.is_none_or(|m| l.memory_layout == Some(m))
        && o.page.is_none_or(|p| l.page_layout() == p)
}

/// The exact layout of a full override, placed canonically on the worker grid.
pub fn full_override_layout(
    o: &OutputLayoutOverride,
    shape: &[u64],
    dtype: DataType,
    worker: ttnn_types::Grid,
) -> Result<TtnnLayout, String> {
    let (Some(grid), Some(buffer), Some(ml), Some(page)) =
        (o.grid, o.buffer, o.memory_layout, o.page)
    else {
        return Err("not a full override".to_owned());
    };
    match (buffer, ml) {
        (BufferType::SystemMemory, _) => {
            let scalar = dtype.scalar_type().ok_or("block floats cannot live in host memory")?;
            Ok(TtnnLayout::system_memory(shape, scalar))
        }
        (BufferType::Dram, TensorMemoryLayout::Interleaved) => {
            Ok(TtnnLayout::dram_interleaved(shape, dtype, page))
        }
        (BufferType::L1, TensorMemoryLayout::Interleaved) => {
            Ok(TtnnLayout::l1_interleaved(shape, dtype, page, grid))
        }
        (BufferType::L1, ml) if ml.is_sharded() => {
            TtnnLayout::sharded(shape, dtype, page, ml, grid, worker).map_err(|e| e.to_string())
        }
        (b, ml) => Err(format!("{b} {ml} layouts are not supported")),
    }
}

fn compute_configs(
    db: &dyn Db,
    sig: &OpSignature,
    layouts: &LegalOpLayouts,
    overrides: Option<&OpOverrides>,
) -> Arc<LegalOpConfigs> {
    let _p = tracing::trace_span!("legal_op_configs", kind = sig.kind.name()).entered();
    let target = TargetInput::get(db).target(db);
    let model = db.op_model();
    let mut configs = Vec::new();
    match &sig.kind {
        OpKind::Conv2d(_) | OpKind::ConvTranspose2d(_) if !layouts.fixed => {
            // A DRAM slice config written on the op is an earlier decision, not a request:
            // the search starts from the whole conv in L1, as tt-mlir's does, and slices only
            // what does not fit.
            let (base, compute, slice) = match &sig.config {
                OpConfig::Conv2d { conv, compute, slice } => {
                    ((**conv).clone(), *compute, slice.filter(|s| !s.slice_type.is_dram()))
                }
                _ => (Conv2dConfig::default(), None, None),
            };
            let mut base = overlay(base, overrides.and_then(|o| o.conv2d.as_ref()));
            if base.weights_dtype.is_none() {
                base.weights_dtype = sig.tensor_operands().nth(1).and_then(|(_, t)| t.data_type());
            }
            let inputs = dram_inputs(sig);
            // A DRAM-sliced conv reads its input from DRAM interleaved; an input written in
            // L1 (a function argument, say) stays there, as nothing converts it, so slicing
            // is no fallback for it.
            let input_in_l1 = sig
                .tensor_operands()
                .next()
                .and_then(|(_, t)| t.layout.as_ref())
                .is_some_and(TtnnLayout::is_l1);
            for conv in conv_search(&base) {
                for (i, layout) in layouts.layouts.iter().enumerate() {
                    let mut conv = conv.clone();
                    // HEAD's ConvRules embed the output sharding in the config so tt-metal
                    // does not pick a different one.
                    if layout.is_sharded() && base.shard_layout.is_none() {
                        conv.shard_layout = layout.memory_layout;
                    }
                    let config = OpConfig::Conv2d { conv: Box::new(conv), compute, slice };
                    let q = query_for(
                        sig,
                        inputs.clone(),
                        OutputHint::Layout(layout.clone()),
                        config.clone(),
                        0,
                    );
                    let verdict = q.as_ref().map(|q| model.query(target, q).map(|_| ()));
                    // Out of L1 with a DRAM output, the conv runs in DRAM slices instead
                    // (tt-mlir's config fallback); the candidate carries the slice count the
                    // op model settled on.
                    if let (Some(Err(OpError::OutOfMemory { .. })), Some(q)) = (&verdict, &q)
                        && !input_in_l1
                        && let Some(sliced) = dram_sliced(model, target, q)
                    {
                        configs.push(ConfigCandidate { layout: layout.clone(), config: sliced });
                        continue;
                    }
                    // The first layout (DRAM interleaved) stays as the fallback.
                    if verdict.is_none_or(|v| v.is_ok()) || i == 0 {
                        configs.push(ConfigCandidate { layout: layout.clone(), config });
                    }
                }
            }
        }
        OpKind::Matmul(attrs) | OpKind::Linear(attrs) if !layouts.fixed => {
            let compute = match &sig.config {
                OpConfig::Matmul { compute, .. } => *compute,
                _ => None,
            };
            let shapes: Vec<Vec<u64>> =
                sig.tensor_operands().filter_map(|(_, t)| t.static_shape()).take(2).collect();
            let out_shape =
                sig.tensor_result().and_then(TensorType::static_shape).unwrap_or_default();
            for layout in &layouts.layouts {
                if layout.is_sharded() {
                    let [a, b] = shapes.as_slice() else { continue };
                    let mm = MatmulShapes {
                        a,
                        b,
                        out: &out_shape,
                        transpose_a: attrs.transpose_a,
                        transpose_b: attrs.transpose_b,
                    };
                    // A sharded output comes only with a generated program config: tt-metal's
                    // own picker depends on allocator state and is not idempotent.
                    let Some(program) = opmodel::generate_matmul_program_config(
                        &mm,
                        layout,
                        compute.as_ref(),
                        attrs.activation.as_deref(),
                    ) else {
                        continue;
                    };
                    configs.push(ConfigCandidate {
                        layout: layout.clone(),
                        config: OpConfig::Matmul { program: Some(Box::new(program)), compute },
                    });
                } else {
                    configs.push(ConfigCandidate {
                        layout: layout.clone(),
                        config: OpConfig::Matmul { program: None, compute },
                    });
                }
            }
        }
        _ => {
            configs = layouts
                .layouts
                .iter()
                .map(|l| ConfigCandidate { layout: l.clone(), config: sig.config.clone() })
                .collect();
        }
    }
    Arc::new(LegalOpConfigs::new(configs))
}

/// The DRAM-sliced config of a conv2d that is out of L1 on a DRAM-interleaved output, as the
/// op model reports it (with its slice count), or `None` when slicing does not apply or does
/// not help.
///
/// The slice types go in tt-mlir's fallback order (`OperationValidationAndFallback`: width,
/// then height), each with `num_slices = 0` so the op model picks the fewest slices that fit,
/// as tt-metal's `determine_slice_config` does.
fn dram_sliced(model: &impl OpModel, target: &target::Target, q: &OpQuery) -> Option<OpConfig> {
    if !matches!(q.kind, OpKind::Conv2d(_)) {
        return None;
    }
    let out = match &q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) => l,
        OutputHint::Null => return None,
    };
    if out.buffer != BufferType::Dram || out.memory_layout != Some(TensorMemoryLayout::Interleaved)
    {
        return None;
    }
    let OpConfig::Conv2d { conv, compute, .. } = &q.config else { return None };
    [Conv2dSliceType::DramWidth, Conv2dSliceType::DramHeight].into_iter().find_map(|slice_type| {
        let config = OpConfig::Conv2d {
            conv: conv.clone(),
            compute: *compute,
            slice: Some(Conv2dSliceConfig { slice_type, num_slices: 0 }),
        };
        let q = OpQuery { config, ..q.clone() };
        model.query(target, &q).ok().map(|r| r.config)
    })
}

/// Pins the override's fields over the op's own config.
fn overlay(mut base: Conv2dConfig, o: Option<&Conv2dConfig>) -> Conv2dConfig {
    let Some(o) = o else { return base };
    macro_rules! pin {
        ($($f:ident),*) => { $( if o.$f.is_some() { base.$f = o.$f.clone(); } )* };
    }
    pin!(
        weights_dtype,
        activation,
        deallocate_activation,
        reallocate_halo_output,
        act_block_h_override,
        act_block_w_div,
        reshard_if_not_optimal,
        override_sharding_config,
        shard_layout,
        core_grid,
        transpose_shards,
        output_layout,
        enable_act_double_buffer,
        enable_weights_double_buffer
    );
    base
}

/// The conv2d search space over the fields the base config leaves unset, odometer style
/// (the last field varies fastest): `act_block_h_override` in {0, 64, 32} (0 lets tt-metal
/// pick the largest), `deallocate_activation` in {true}. `reshard_if_not_optimal` without a
/// `shard_layout` is filtered out, as tt-mlir does.
fn conv_search(base: &Conv2dConfig) -> Vec<Conv2dConfig> {
    let abh: Vec<Option<u64>> = match base.act_block_h_override {
        Some(v) => vec![Some(v)],
        None => vec![Some(0), Some(64), Some(32)],
    };
    let dealloc: Vec<Option<bool>> = match base.deallocate_activation {
        Some(v) => vec![Some(v)],
        None => vec![Some(true)],
    };
    let mut out = Vec::new();
    for a in &abh {
        for d in &dealloc {
            let c = Conv2dConfig {
                act_block_h_override: *a,
                deallocate_activation: *d,
                ..base.clone()
            };
            if c.reshard_if_not_optimal == Some(true) && c.shard_layout.is_none() {
                continue;
            }
            out.push(c);
        }
    }
    out
}

/// What the op model says about an op with the layouts written in the IR.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WrittenCheck {
    /// The op model's objection, if it rejects the op as written, as a message naming
    /// the op.
    pub error: Option<String>,
    /// Per-core peak (cb + tensors) when it accepts it, for live-L1 accounting.
    pub peak: u64,
    /// Per-core L1 of the op's result as written.
    pub output_l1: u64,
}

/// The op model's verdict on each op of one segment of a function's body
/// (`ir::func_segment_at`: about [`ir::SEGMENT_GROUPS`] groups), as written (no resident L1
/// counted; the caller adds the live L1 of the function), in body order. `None` for ops it
/// does not evaluate: unknown kinds, ops without a single tensor result, tensors without
/// layouts.
///
/// Per segment: after an edit salsa verifies a memo's dependencies before reusing it, and
/// one memo per group of 32 ops was 3,100 memos to verify (each through its group's
/// projection) after every keystroke on a 100k-op function, most of the problems' time. Per
/// segment it is about 400, each reading its segment and the target alone. The edited
/// segment runs again over its ops (about 256), whose verdicts the op model's cache
/// answers. (Each op's verdict from a memo keyed by its signature, tried, made every
/// segment's memo depend on some twenty of them, and verifying those cost more than the
/// segment's re-run saved.)
///
/// Keyed by the segment's first op's name: ops pasted before it leave its memo as it was.
/// [`written_checks`] reads ops where no name stands for their segment.
#[salsa::tracked(returns(clone))]
pub fn written_checks_segment(
    db: &dyn Db,
    func: ir::FuncId,
    start: ir::Name,
) -> Arc<[Option<WrittenCheck>]> {
    let segment = ir::func_segment_at(db, func, start);
    let _p = tracing::trace_span!("written_checks_segment").entered();
    written_checks(db, &segment.ops)
}

/// [`written_checks_segment`] of any run of ops, without a memo of the run.
pub fn written_checks(db: &dyn Db, ops: &[Arc<ir::OpData>]) -> Arc<[Option<WrittenCheck>]> {
    ops.iter()
        .map(|data| {
            let mut check = check_as_written(db, &crate::signature::signature_of(data))?;
            if let Some(e) = &mut check.error {
                *e = format!("the op model rejects `{}` as written: {e}", data.name);
            }
            Some(check)
        })
        .collect()
}

fn check_as_written(db: &dyn Db, sig: &OpSignature) -> Option<WrittenCheck> {
    if !sig.kind.is_known() {
        return None;
    }
    let result = sig.tensor_result()?;
    let out = result.layout.clone()?;
    let mut inputs = Vec::new();
    for (_, t) in sig.tensor_operands() {
        inputs.push(TensorDesc::new(&t.static_shape()?, t.layout.clone()?));
    }
    let hint = if out.ignore_physical_layout {
        OutputHint::Partial(out.clone())
    } else {
        OutputHint::Layout(out.clone())
    };
    let q = query_for(sig, inputs, hint, sig.config.clone(), 0)?;
    let target = TargetInput::get(db).target(db);
    Some(match db.op_model().query(target, &q) {
        Ok(r) => WrittenCheck { error: None, peak: r.peak, output_l1: out.l1_bytes_per_core() },
        Err(e) => {
            WrittenCheck { error: Some(e.to_string()), peak: 0, output_l1: out.l1_bytes_per_core() }
        }
    })
}
