//! `plan_for(func, policy)`: the chosen layout and config of every op, the conversions the
//! rewrite must insert, and the reason for each decision.

use std::sync::Arc;

use base_db::Policy;
use ir::{FuncId, OpId};
use layout::GroupRef;
use opmodel::OpConfig;
use ttnn_types::{PageLayout, TtnnLayout};

use crate::{
    Db,
    chain_graph::{ChainId, chains},
    merge::MergeKind,
    problem::Reads,
    scheduling::{Schedule, schedule},
};

/// tt-mlir's `L1ChainConfig` states. `InBuild` only exists while chains are being built;
/// results show `Built` (not solved: a concat chain without merging), `Failed`, or
/// `Completed` (solved and configs picked). `Resolved` is the solver's success before
/// picking and shows in `solve_chain` results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChainState {
    InBuild,
    Built,
    Resolved,
    Failed,
    Completed,
    /// Solved, but the cost model expects it to be slower in L1 than out of it; its ops
    /// keep their fallback layouts (`df-sharding-merge` only, going past tt-mlir).
    Declined,
}

impl ChainState {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ChainState::InBuild => "in-build",
            ChainState::Built => "built",
            ChainState::Resolved => "resolved",
            ChainState::Failed => "failed",
            ChainState::Completed => "completed",
            ChainState::Declined => "declined",
        }
    }
}

/// Where a chain's output goes after its last op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpillLocation {
    /// Stays in its sharded L1 layout for its consumers.
    None,
    L1Interleaved,
    Dram,
}

impl SpillLocation {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SpillLocation::None => "none (stays in L1)",
            SpillLocation::L1Interleaved => "L1 interleaved",
            SpillLocation::Dram => "DRAM",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChainPlan {
    /// Body indices of the chain's ops, in chain order.
    pub ops: Vec<u32>,
    pub concat: bool,
    pub state: ChainState,
    /// Why solving failed, naming the failing edge.
    pub failure: Option<String>,
    pub spill: SpillLocation,
    pub spill_reason: String,
    /// Accumulated core usage of the picked configs (the solver's objective).
    pub core_usage: Vec<u64>,
}

/// A conversion the rewrite inserts: before op `consumer`'s operand `operand` (a reshard),
/// or after op `producer` for all its uses (a spill).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conversion {
    pub layout: TtnnLayout,
    /// Shared: a chunk's walk copies each op's plan, with its reasons, and a copy of a
    /// shared string is a count, not an allocation.
    pub reason: Arc<str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpPlan {
    /// The op's result layout in the optimized IR (`None`: no single tensor result).
    pub layout: Option<TtnnLayout>,
    pub config: OpConfig,
    /// The op's chain and position in it.
    pub chain: Option<(u32, u32)>,
    /// Per operand: the layout the op was validated with, when it must be exactly that;
    /// the rewrite inserts a reshard when the incoming value differs.
    pub expected_operands: Vec<Option<Conversion>>,
    /// The conversion applied to the result right after the op (a spill), seen by all uses.
    pub spill: Option<Conversion>,
    /// Why the op got its layout, in words (shared, as [`Conversion::reason`]).
    pub reason: Arc<str>,
    /// Extra L1 per core reserved for this op's output across later ops (merges, forks).
    pub reserved: u64,
}

/// A merge the policy made, for explanations.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MergeRecord {
    pub kind: MergeKind,
    /// Body indices of the source ops whose outputs stay in L1.
    pub sources: Vec<u32>,
    /// The op that consumes them.
    pub join: u32,
    pub description: String,
}

/// The optimizer's decisions for one function under one policy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Plan {
    pub policy: Policy,
    pub schedule: Arc<Schedule>,
    pub ops: Vec<OpPlan>,
    pub chains: Vec<ChainPlan>,
    pub merges: Vec<MergeRecord>,
}

impl OpPlan {
    /// A plan with nothing decided (no layout, no config).
    #[must_use]
    pub fn empty() -> OpPlan {
        OpPlan {
            layout: None,
            config: OpConfig::None,
            chain: None,
            expected_operands: Vec::new(),
            spill: None,
            reason: Arc::from(""),
            reserved: 0,
        }
    }
}

impl Plan {
    /// Number of ops whose result is planned in L1.
    #[must_use]
    pub fn ops_in_l1(&self) -> usize {
        self.ops.iter().filter(|o| o.layout.as_ref().is_some_and(TtnnLayout::is_l1)).count()
    }

    #[must_use]
    pub fn reshards(&self) -> usize {
        self.ops.iter().flat_map(|o| &o.expected_operands).filter(|e| e.is_some()).count()
    }

    #[must_use]
    pub fn spills(&self) -> usize {
        self.ops.iter().filter(|o| o.spill.as_ref().is_some_and(|s| !s.layout.is_l1())).count()
    }
}

/// The plan of a function under the policy in the options.
#[salsa::tracked(returns(clone))]
pub fn plan(db: &dyn Db, func: FuncId) -> Arc<Plan> {
    let policy = layout::effective_options(db).policy;
    plan_for(db, func, policy)
}

/// One chunk of the plan as the solved chains alone make it, before any policy's merging,
/// spills and conversions: what both policies start from, built once for both. `ops` is
/// parallel to the chunk's ops in [`ChunkLayout`](crate::ChunkLayout) order; `chains` holds
/// the chains whose ops lie here (chunks never split a chain), by chain index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PartsChunk {
    pub ops: Vec<OpPlan>,
    pub chains: Vec<ChainPlan>,
    /// Parallel to `chains`: each chain's cost in L1 and out of it, and where its ops go if
    /// it is declined (the `cost` and `fallback` of [`ChainPart::outcome`]). Carried here so that
    /// merging reads them from the chunk instead of one memo per chain.
    pub outcomes: Vec<ChainOutcome>,
}

/// A solved chain's cost in L1 and out of it, and where its ops go if it is declined: `None`
/// for a chain that did not solve (or a concat chain), and a `None` fallback for one that has
/// nowhere better to go.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChainOutcome {
    pub cost: Option<crate::problem::ChainCost>,
    pub fallback: Option<Arc<crate::chunks::ChainFallback>>,
}

/// A chunk's op plans, indexed by body index.
/// Chunks never split a chain, so every write lands in the chunk; were that broken, writes
/// outside would land in `scratch` rather than panic.
struct ChunkPlans {
    /// Body index → place in `plans`.
    index: rustc_hash::FxHashMap<u32, usize>,
    plans: Vec<OpPlan>,
    scratch: OpPlan,
}

impl ChunkPlans {
    fn slot(&self, i: usize) -> Option<usize> {
        self.index.get(&(i as u32)).copied()
    }
}

impl std::ops::Index<usize> for ChunkPlans {
    type Output = OpPlan;
    fn index(&self, i: usize) -> &OpPlan {
        self.slot(i).map_or(&self.scratch, |k| &self.plans[k])
    }
}

impl std::ops::IndexMut<usize> for ChunkPlans {
    fn index_mut(&mut self, i: usize) -> &mut OpPlan {
        match self.slot(i) {
            Some(k) => &mut self.plans[k],
            None => &mut self.scratch,
        }
    }
}

/// The plans the ops of the group of a function that starts with the op keyed `start`
/// (`ir::func_group_at`) take outside any chain.
///
/// A firewall between the per-op layout queries and the per-chunk plan: a chunk's plan reads
/// one memo per block its ops fall in instead of three per op, so after an override salsa
/// re-validates a few blocks per chunk rather than every op's layout queries (on a tuning
/// host, a block with no overridden op is validated by durability alone). Reads the group's
/// ops and signatures, not where they sit in the function, so an op inserted or pasted
/// elsewhere does not re-run it.
#[salsa::tracked(returns(clone))]
pub fn base_plans_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<[OpPlan]> {
    base_plans_computed(db, func, GroupRef::Named(start))
}

/// [`base_plans_block`] of a group: the memo where the group has a name, else computed.
pub(crate) fn base_plans_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[OpPlan]> {
    match group {
        GroupRef::Named(start) => base_plans_block(db, func, start),
        GroupRef::Unnamed(_) => base_plans_computed(db, func, group),
    }
}

fn base_plans_computed(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[OpPlan]> {
    let pinned = layout::pinned_outputs(db, func);
    crate::chain_graph::group_ops_with(db, func, group, None)
        .map(|o| {
            let legal = o.legality();
            base_plan_with(db, o.op, &o.data, o.sig.as_deref(), &legal, &pinned, None)
        })
        .collect()
}

/// The plan of op `op` (with data `data`) outside any chain, from the legality `reads` asks
/// for.
pub(crate) fn base_plan(
    db: &dyn Db,
    op: OpId,
    data: &ir::OpData,
    pinned: &std::collections::BTreeSet<String>,
    reads: Reads,
) -> OpPlan {
    let sig = layout::op_signature(db, op);
    let (legal, overrides) = match reads {
        Reads::Overrides => (layout::op_legality(db, op), layout::op_overrides(db, op)),
        Reads::Base => (layout::base_legality(db, op), None),
    };
    base_plan_with(db, op, data, sig.as_deref(), &legal, pinned, overrides.as_deref())
}

/// [`base_plan`] of an op with signature `sig`, legality `legal` and `overrides`.
fn base_plan_with(
    db: &dyn Db,
    op: OpId,
    data: &ir::OpData,
    sig: Option<&layout::OpSignature>,
    legality: &layout::OpLegality,
    pinned: &std::collections::BTreeSet<String>,
    overrides: Option<&layout::OpOverrides>,
) -> OpPlan {
    let legal = &legality.layouts;
    let mut layout = sig.and_then(|sig| crate::problem::fallback_of(sig, legal));
    let config = config_of(sig, &legality.configs, layout.as_ref());
    let spill = sig.and_then(|sig| produced_instead(db, sig, data, layout.as_ref(), legal));
    if let Some((produced, _)) = &spill {
        layout = Some(produced.clone());
    }
    let reason = match &layout {
        _ if spill.is_some() => {
            "the op model produces this rather than the layout chosen for the op, which it is \
             converted to right after the op, as tt-mlir's operation validation and fallback \
             does"
                .to_owned()
        }
        _ if !legal.fixed
            && matches!(legal.override_use, Some(layout::OverrideUse::Full { .. })) =>
        {
            "the layout its output-layout override gives (in no L1 chain)".to_owned()
        }
        _ if !legal.fixed
            && matches!(legal.override_use, Some(layout::OverrideUse::Partial { .. })) =>
        {
            "the first legal layout the output-layout override leaves, as tt-mlir's \
             OpConfigAnalysis picks it"
                .to_owned()
        }
        _ if legal.fixed && pinned.contains(op.key(db)) => {
            "kept as written: a consumer with fixed operand types (a d2m subgraph, a \
             call, or an op kept as written) declares this layout, which no op \
             produces, so a conversion to it would be invalid too"
                .to_owned()
        }
        _ if legal.fixed && legal.rejected > 0 => format!(
            "kept as written: the op model rejects every output layout ({})",
            legal.first_rejection.as_deref().unwrap_or("no reason given")
        ),
        Some(l) if l.is_l1() => "its layout is fixed (as written)".to_owned(),
        Some(_) => match &config {
            OpConfig::Conv2d { slice: Some(s), .. } if s.slice_type.is_dram() => format!(
                "not in an L1 chain: DRAM interleaved, run in {} {} slices because \
                 the whole conv does not fit L1",
                s.num_slices, s.slice_type
            ),
            _ => "not in an L1 chain: DRAM interleaved".to_owned(),
        },
        None => String::new(),
    };
    let expected_operands = reconfigs_of(overrides, data, layout.as_ref());
    let spill = spill.map(|(_, chosen)| Conversion {
        layout: chosen,
        reason: "the layout chosen for the op, which the op model does not produce".into(),
    });
    OpPlan {
        layout,
        config,
        chain: None,
        expected_operands,
        spill,
        reason: reason.into(),
        reserved: 0,
    }
}

/// For an op outside any chain whose chosen layout `layout` the op model would not produce:
/// (what it produces, the chosen layout). Asked only where that can happen, so not of every
/// op: when the tiledness of the op's written result could not be kept, or an output-layout
/// override chose the layout.
fn produced_instead(
    db: &dyn Db,
    sig: &layout::OpSignature,
    data: &ir::OpData,
    layout: Option<&TtnnLayout>,
    legal: &layout::LegalOpLayouts,
) -> Option<(TtnnLayout, TtnnLayout)> {
    let chosen = layout?;
    if legal.fixed {
        return None;
    }
    let written_page = data.results.first().and_then(|t| t.layout()).map(TtnnLayout::page_layout);
    if legal.override_use.is_none() && written_page.is_none_or(|p| p == chosen.page_layout()) {
        return None;
    }
    let produced = layout::produced_layout_of(db, sig, chosen)?;
    Some((produced, chosen.clone()))
}

/// Per operand of an op outside an L1 chain (never in one, or its chain declined): the
/// conversion its `insert-memreconfig` override asks for, to [`reconfig_target`].
pub(crate) fn user_reconfigs(
    db: &dyn Db,
    op: OpId,
    data: &ir::OpData,
    layout: Option<&TtnnLayout>,
    reads: Reads,
) -> Vec<Option<Conversion>> {
    let overrides = (reads == Reads::Overrides).then(|| layout::op_overrides(db, op)).flatten();
    reconfigs_of(overrides.as_deref(), data, layout)
}

/// [`user_reconfigs`] of an op with `overrides`.
fn reconfigs_of(
    overrides: Option<&layout::OpOverrides>,
    data: &ir::OpData,
    layout: Option<&TtnnLayout>,
) -> Vec<Option<Conversion>> {
    let mut out = vec![None; data.operands.len()];
    if let Some(o) = overrides
        && let Some(layout) = layout
    {
        for &k in &o.reshard_operands {
            let target =
                data.operand_types.get(k as usize).and_then(|t| reconfig_target(t, layout));
            if let (Some(slot), Some(target)) = (out.get_mut(k as usize), target) {
                *slot = Some(Conversion { layout: target, reason: USER_RECONFIG.into() });
            }
        }
    }
    out
}

/// The reason of a conversion `insert-memreconfig` asks for on an op outside an L1 chain.
pub(crate) const USER_RECONFIG: &str =
    "requested by insert-memreconfig: converted to the op's own output layout, as tt-mlir does";

/// Where `insert-memreconfig` converts an operand of type `operand` of an op outside an L1
/// chain: tt-mlir's target is the op's own result layout (`processMemReconfigEdges`); for an
/// operand of another shape, the same buffer, memory layout and page layout over its shape.
/// `None` for an operand that is not a static tensor, or a sharded result of another shape.
pub(crate) fn reconfig_target(operand: &ir::Ty, result: &TtnnLayout) -> Option<TtnnLayout> {
    let t = operand.as_tensor()?;
    let shape = t.static_shape()?;
    let dtype = t.data_type().or_else(|| result.data_type())?;
    let page = result.page_layout();
    match result.memory_layout {
        Some(ttnn_types::TensorMemoryLayout::Interleaved) if result.is_l1() => {
            Some(TtnnLayout::l1_interleaved(&shape, dtype, page, result.grid2d()))
        }
        Some(ttnn_types::TensorMemoryLayout::Interleaved) => {
            Some(TtnnLayout::dram_interleaved(&shape, dtype, page))
        }
        _ => {
            let written = t.layout.as_ref()?;
            (written.memref_shape == result.memref_shape).then(|| result.clone())
        }
    }
}

/// Per-group memos (`ir::func_groups`) fetched on first use.
pub(crate) struct Blocks<T> {
    groups: layout::Groups,
    blocks: Vec<std::cell::OnceCell<Arc<[T]>>>,
}

impl<T> Blocks<T> {
    pub(crate) fn new(db: &dyn Db, func: FuncId) -> Self {
        let groups = layout::Groups::new(db, func);
        let blocks = (0..groups.len()).map(|_| std::cell::OnceCell::new()).collect();
        Blocks { groups, blocks }
    }

    /// Op `i`'s entry, fetching its group with `fetch(group)` the first time.
    pub(crate) fn get(&self, i: usize, fetch: impl FnOnce(GroupRef) -> Arc<[T]>) -> Option<&T> {
        let (g, group, at) = self.groups.locate(i)?;
        let block = self.blocks.get(g as usize)?.get_or_init(|| fetch(group));
        block.get(at)
    }
}

/// The signatures of a function's ops, read a group at a time (`layout::group_signatures`)
/// by the queries that read many ops' signatures.
pub(crate) type Signatures = Blocks<Option<Arc<layout::OpSignature>>>;

impl Signatures {
    /// Op `i`'s signature.
    pub(crate) fn sig(
        &self,
        db: &dyn Db,
        func: FuncId,
        i: usize,
    ) -> Option<Arc<layout::OpSignature>> {
        self.get(i, |g| layout::signatures_of_group(db, func, g)).cloned().flatten()
    }
}

/// What one member op of a chain takes from the chain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MemberPlan {
    /// The picked candidate's layout and config; `None` when the chain did not solve.
    pub picked: Option<(TtnnLayout, OpConfig)>,
    /// Why the op is planned so; empty to keep the op's own reason.
    pub reason: Arc<str>,
    /// Conversions the op expects on its operands: in-chain edges, the chain entry,
    /// reshards.
    pub expected: Vec<(u32, Conversion)>,
}

/// Everything the plan reads of one chain, in one memo: its solution applied to its ops
/// (in chain order), its state and spill, its cost in L1 and out of it, and where its ops go
/// if it is declined.
///
/// Made within `solve_chain`, one memo per chain for the solution and what the plan reads
/// rather than three (with `chain_cost` and `chain_fallback`): after an override, every
/// chunk's plan re-validates each of its chains, and on a tuning host a chain with no
/// overridden op validates by durability alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChainPart {
    /// The chain's plan as ShardSolver leaves it, its `ops` left empty: the part reads no
    /// function body, and the chunk that places the chain fills in their body indices.
    pub plan: ChainPlan,
    /// Per member op, in chain order.
    pub members: Vec<MemberPlan>,
    pub outcome: ChainOutcome,
}

/// The solved chains of a chunk (`chains`, with their ops' body indices `members`), each
/// from the variant of its per-chain query it needs ([`crate::problem::chain_reads`] of its
/// ops, with the function's op `keys`, topology and override lookups): a single-op chain
/// without overrides from its group's [`crate::problem::solve_single_chains`], any other
/// from its own `solve_chain` or `overridden_solve_chain`.
fn solved_chains(
    db: &dyn Db,
    (chains, members): (&[ChainId], &[Vec<u32>]),
    grouping: Option<(&[ChainId], &[Vec<u32>])>,
    (keys, topo, probe): (&[ir::Name], &crate::Topology, Option<&layout::OverrideProbe<'_>>),
    layout: &ir::GroupLayout,
) -> Vec<Arc<ChainPart>> {
    let reads: Vec<Reads> = members
        .iter()
        .map(|m| probe.map_or(Reads::Base, |p| crate::problem::chain_reads(m, keys, topo, p)))
        .collect();
    // Single-op chains by the group of their op, in chunk order, as `grouping` (the chunk's
    // chains without overrides) has them, else as `chains` has. Whether a chain has
    // overrides does not decide its group's key, and neither do the chains an override
    // splits or joins (a single chain it makes is solved on its own), so that an override
    // re-runs no group.
    let (grouped, grouped_members) = grouping.unwrap_or((chains, members));
    let mut groups: Vec<(u32, Vec<ChainId>)> = Vec::new();
    let mut place: rustc_hash::FxHashMap<ChainId, (usize, usize)> = Default::default();
    for (&chain, m) in grouped.iter().zip(grouped_members) {
        let Some(&op) = m.first().filter(|_| crate::problem::is_single(db, chain)) else {
            continue;
        };
        let g = layout.group_of(op as usize);
        let at = match groups.iter().position(|(h, _)| *h == g) {
            Some(at) => at,
            None => {
                groups.push((g, Vec::new()));
                groups.len() - 1
            }
        };
        place.insert(chain, (at, groups[at].1.len()));
        groups[at].1.push(chain);
    }
    let mut solved: Vec<Option<Arc<[Arc<ChainPart>]>>> = vec![None; groups.len()];
    chains
        .iter()
        .enumerate()
        .map(|(c, &chain)| match (reads[c], place.get(&chain).copied()) {
            (Reads::Base, Some((at, k))) => {
                let group = solved[at].get_or_insert_with(|| {
                    let key = crate::problem::SingleChains::new(db, groups[at].1.clone());
                    crate::problem::solve_single_chains(db, key)
                });
                match group.get(k) {
                    Some(s) => Arc::clone(s),
                    None => crate::problem::solved(db, chain, Reads::Base),
                }
            }
            (r, _) => crate::problem::solved(db, chain, r),
        })
        .collect()
}

/// A chain's part from its problem and solution (`None` for a concat chain, which has
/// none).
pub(crate) fn part_of(
    db: &dyn Db,
    chain: ChainId,
    reads: Reads,
    solved: Option<(&solver::ChainProblem, &solver::ChainSolution)>,
) -> ChainPart {
    let n = chain.ops(db).len();
    let template = |state, failure, spill, spill_reason, core_usage| ChainPlan {
        ops: Vec::new(),
        concat: chain.concat(db),
        state,
        failure,
        spill,
        spill_reason,
        core_usage,
    };
    // A concat chain is resolved by chain merging only, and has nothing solved.
    let Some((problem, sol)) = solved.filter(|_| !chain.concat(db)) else {
        return ChainPart {
            plan: template(
                ChainState::Built,
                None,
                SpillLocation::Dram,
                "concat chains are resolved only by chain merging".to_owned(),
                Vec::new(),
            ),
            members: vec![MemberPlan::default(); n],
            outcome: ChainOutcome::default(),
        };
    };
    let selected = match &sol.result {
        Err(f) => {
            let reason =
                format!("its chain failed, so the whole chain falls back to DRAM: {}", f.reason);
            let member = MemberPlan { reason: reason.into(), ..MemberPlan::default() };
            return ChainPart {
                plan: template(
                    ChainState::Failed,
                    Some(f.reason.clone()),
                    SpillLocation::Dram,
                    String::new(),
                    Vec::new(),
                ),
                members: vec![member; n],
                outcome: ChainOutcome::default(),
            };
        }
        Ok(selected) => selected,
    };
    let mut members: Vec<MemberPlan> = Vec::with_capacity(n);
    for (pos, &k) in selected.iter().enumerate() {
        let Some(cand) = problem.ops.get(pos).and_then(|o| o.candidates.get(k)) else {
            members.push(MemberPlan::default());
            continue;
        };
        members.push(MemberPlan {
            picked: Some((cand.layout.clone(), cand.config.clone())),
            reason: format!(
                "L1 chain, op {} of {}: the config with the highest accumulated core usage ({})",
                pos + 1,
                n,
                sol.core_usage.get(pos).copied().unwrap_or(0)
            )
            .into(),
            expected: Vec::new(),
        });
    }
    members.resize(n, MemberPlan::default());
    // Expected operands: in-chain edges carry the producer's layout or the reshard target;
    // the chain entry was validated with a DRAM-interleaved input (or the d2m-chosen input).
    let mut set_expected = |pos: usize, operand: u32, conversion: Conversion| {
        if let Some(m) = members.get_mut(pos) {
            match m.expected.iter_mut().find(|(o, _)| *o == operand) {
                Some(slot) => slot.1 = conversion,
                None => m.expected.push((operand, conversion)),
            }
        }
    };
    for e in &problem.edges {
        let Some(producer_layout) = selected
            .get(e.producer)
            .and_then(|&k| problem.ops.get(e.producer)?.candidates.get(k))
            .map(|c| c.layout.clone())
        else {
            continue;
        };
        set_expected(
            e.consumer,
            e.operand,
            Conversion { layout: producer_layout, reason: Arc::from("") },
        );
    }
    if let Some(Some(input)) = problem.ops.first().and_then(|o| o.operands.first()) {
        let layout = sol.first_input_layout.clone().unwrap_or_else(|| {
            TtnnLayout::dram_interleaved(
                &input.shape,
                input.layout.data_type().unwrap_or(ttnn_types::DataType::BF16),
                PageLayout::Tile,
            )
        });
        let reason = if sol.first_input_layout.is_some() {
            "the input layout chosen for a chain fed by a d2m subgraph".to_owned()
        } else {
            "the chain entry is validated with a DRAM-interleaved input".to_owned()
        };
        set_expected(0, 0, Conversion { layout, reason: reason.into() });
    }
    for r in &sol.reshards {
        let why =
            if r.user { "requested by insert-memreconfig".to_owned() } else { r.reason.clone() };
        set_expected(
            r.consumer,
            r.operand,
            Conversion { layout: r.layout.clone(), reason: format!("reshard: {why}").into() },
        );
    }
    // The last op's layout is its picked candidate's.
    let out_l1 = members.last().and_then(|m| m.picked.as_ref()).is_some_and(|(l, _)| l.is_l1());
    let (spill, spill_reason) = if chain.to_d2m(db) {
        (SpillLocation::None, "feeds a d2m subgraph: kept in L1".to_owned())
    } else if out_l1 {
        (SpillLocation::Dram, "chain output spills to DRAM".to_owned())
    } else {
        (SpillLocation::None, String::new())
    };
    ChainPart {
        plan: template(ChainState::Completed, None, spill, spill_reason, sol.core_usage.clone()),
        members,
        outcome: ChainOutcome {
            cost: crate::problem::chain_cost(db, chain, reads, (problem, sol)),
            fallback: crate::chunks::chain_fallback(db, chain, reads),
        },
    }
}

/// Chunk `k`'s base plan: each op's plan and each chain's solution, with the overrides of
/// its ops and their producers.
///
/// On a tuning host, a chunk none of whose ops or their producers has overrides is
/// [`parts_without_overrides`] of its content, a memo that reads the graph alone: this memo
/// then depends on the chunk's ops and chains, the slots of its groups (inputs) and that one
/// memo, so after an override salsa walks a few edges per chunk instead of every chain's
/// solution and every group's plans.
#[salsa::tracked(returns(clone))]
pub fn plan_parts_chunk(db: &dyn Db, func: FuncId, k: u32) -> Arc<PartsChunk> {
    let chunk_chains = crate::chunks::chunk_chains(db, func, k, Reads::Overrides);
    let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
    let members_here = crate::chunks::chunk_ops(db, func, k);
    let probe = layout::OverrideProbe::new(db, func);
    let topo = crate::scheduling::func_topology(db, func);
    let all_members = chain_members(db, &body, &chunk_chains.ids);
    let mut grouping = None;
    if db.memo_style() == layout::MemoStyle::Tuning {
        let ops = ir::func_ops(db, func);
        let overridden = members_here
            .iter()
            .any(|&i| ops.get(i as usize).is_some_and(|op| probe.has_overrides(op.key(db))))
            || all_members.iter().any(|m| {
                crate::problem::chain_reads(m, &body.keys, &topo, &probe) == Reads::Overrides
            });
        if !overridden {
            return parts_of_graph(db, func, &members_here, &chunk_chains.ids);
        }
        // Single-op chains solved in the groups the chunk's chains without overrides make,
        // whose memos the plan without overrides made.
        let base = crate::chunks::chunk_chains(db, func, k, Reads::Base);
        let members = chain_members(db, &body, &base.ids);
        grouping = Some((base, members));
    }
    let grouping = grouping.as_ref().map(|(base, members)| (&base.ids[..], &members[..]));
    parts_of(
        db,
        func,
        (&body, &members_here),
        (&chunk_chains.ids, all_members),
        grouping,
        Some(&probe),
    )
}

/// [`parts_without_overrides`] of a chunk's ops (`members_here`, body indices) and chains.
///
/// The memo names the ops by id, which cannot tell apart two ops of one key (a repeated
/// definition, an error: the key names the last): where keys repeat, the parts are made here
/// from the body indices, without a memo.
pub(crate) fn parts_of_graph(
    db: &dyn Db,
    func: FuncId,
    members_here: &[u32],
    chains: &[ChainId],
) -> Arc<PartsChunk> {
    let Some(frame) = ir::func_frame(db, func) else { return Arc::default() };
    if frame.keys_repeat() {
        let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
        let all_members = chain_members(db, &body, chains);
        return parts_of(db, func, (&body, members_here), (chains, all_members), None, None);
    }
    let ops = ir::func_ops(db, func);
    let members: Vec<OpId> =
        members_here.iter().filter_map(|&i| ops.get(i as usize).copied()).collect();
    parts_without_overrides(db, ChunkContent::new(db, func, members, chains.to_vec()))
}

/// What a chunk holds, by ids from names: the key of [`parts_without_overrides`].
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct ChunkContent {
    #[returns(copy)]
    pub func: FuncId,
    /// The chunk's ops, in chunk order.
    #[returns(ref)]
    pub ops: Vec<OpId>,
    /// The chains with ops in the chunk, in order.
    #[returns(ref)]
    pub chains: Vec<ChainId>,
}

/// [`plan_parts_chunk`] of a chunk as if no op had overrides: the graph alone (each op's
/// plan without overrides, each chain solved without them), so a tuning host keeps it
/// valid in O(1) after an override.
#[salsa::tracked(returns(clone))]
pub fn parts_without_overrides(db: &dyn Db, content: ChunkContent) -> Arc<PartsChunk> {
    let func = content.func(db);
    let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
    let members_here: Vec<u32> =
        content.ops(db).iter().filter_map(|o| body.op_index(o.key(db)).map(|i| i as u32)).collect();
    let chains = content.chains(db);
    let all_members = chain_members(db, &body, chains);
    parts_of(db, func, (&body, &members_here), (chains, all_members), None, None)
}

/// The ops (body indices) of each chain.
fn chain_members(db: &dyn Db, body: &ir::BodyView<'_>, chains: &[ChainId]) -> Vec<Vec<u32>> {
    chains
        .iter()
        .map(|&chain| {
            chain
                .ops(db)
                .iter()
                .filter_map(|o| body.op_index(o.key(db)).map(|i| i as u32))
                .collect()
        })
        .collect()
}

/// A chunk's parts: its ops' plans (`members_here`, body indices) and its chains' solutions
/// (`chains`, with their ops). Reads the overrides through `probe`; with `None`, none.
/// `grouping` (chains with their ops) decides which single-op chains are solved together
/// (see [`solved_chains`]); with `None`, `chains` does.
fn parts_of(
    db: &dyn Db,
    func: FuncId,
    (body, members_here): (&ir::BodyView<'_>, &[u32]),
    (chains, all_members): (&[ChainId], Vec<Vec<u32>>),
    grouping: Option<(&[ChainId], &[Vec<u32>])>,
    probe: Option<&layout::OverrideProbe<'_>>,
) -> Arc<PartsChunk> {
    let blocks = Blocks::new(db, func);
    let topo = crate::scheduling::func_topology(db, func);
    let ops = ir::func_ops(db, func);
    let plans: Vec<OpPlan> = members_here
        .iter()
        .map(|&i| {
            let i = i as usize;
            // The blocks hold every op's plan without overrides (on a tuning host they
            // read only the graph); an overridden op's is made here.
            match ops.get(i) {
                Some(&op) if probe.is_some_and(|p| p.has_overrides(op.key(db))) => {
                    let pinned = layout::pinned_outputs(db, func);
                    match body.ops.get(i) {
                        Some(data) => base_plan(db, op, data, &pinned, Reads::Overrides),
                        None => OpPlan::empty(),
                    }
                }
                _ => blocks
                    .get(i, |g| base_plans_of_group(db, func, g))
                    .cloned()
                    .unwrap_or_else(OpPlan::empty),
            }
        })
        .collect();
    let index = members_here.iter().enumerate().map(|(at, &i)| (i, at)).collect();
    let mut op_plans = ChunkPlans { index, plans, scratch: OpPlan::empty() };
    // The chains with an op here (all their ops are here), in index order. Nothing in the
    // chunk names a chain by its index in the function, which shifts whenever a chain
    // earlier on splits or joins: ops name their chain by its place among this chunk's.
    let mut chain_plans: Vec<ChainPlan> = Vec::new();
    let mut outcomes: Vec<ChainOutcome> = Vec::new();
    let groups = ir::func_groups(db, func);
    let solved =
        solved_chains(db, (chains, &all_members), grouping, (&body.keys, &topo, probe), &groups);
    for (local, (members, part)) in all_members.into_iter().zip(solved).enumerate() {
        outcomes.push(part.outcome.clone());
        for (pos, (&i, m)) in members.iter().zip(&part.members).enumerate() {
            let p = &mut op_plans[i as usize];
            p.chain = Some((local as u32, pos as u32));
            if let Some((layout, config)) = &m.picked {
                p.layout = Some(layout.clone());
                p.config = config.clone();
            }
            if !m.reason.is_empty() {
                p.reason.clone_from(&m.reason);
            }
            for (operand, conversion) in &m.expected {
                if let Some(slot) = p.expected_operands.get_mut(*operand as usize) {
                    *slot = Some(conversion.clone());
                }
            }
        }
        chain_plans.push(ChainPlan { ops: members, ..part.plan.clone() });
    }
    Arc::new(PartsChunk { ops: op_plans.plans, chains: chain_plans, outcomes })
}

/// The plan of a function under a given policy (policies can be compared side by side),
/// gathered from its chunks for reports and the editor; the cost and the final IR read the
/// chunks themselves.
#[salsa::tracked(returns(clone))]
pub fn plan_for(db: &dyn Db, func: FuncId, policy: Policy) -> Arc<Plan> {
    let sched = schedule(db, func);
    let Some(body) = ir::func_body(db, func) else {
        return Arc::new(Plan {
            policy,
            schedule: sched,
            ops: Vec::new(),
            chains: Vec::new(),
            merges: Vec::new(),
        });
    };
    let layout = crate::chunks::chunk_layout(db, func);
    let _p =
        tracing::debug_span!("plan_for", func = %func.name(db), policy = policy.name()).entered();
    let graph = chains(db, func);
    let mut ops = vec![OpPlan::empty(); body.ops.len()];
    let mut chain_plans: Vec<(u32, ChainPlan)> = Vec::new();
    let mut merges = Vec::new();
    // In chunk order: each chunk reads the one before, so asking in order keeps the
    // recursion shallow.
    for k in 0..layout.len() {
        let slice = crate::chunks::plan_slice(db, func, policy, k as u32);
        // Chunks name an op's chain by its place among the chunk's chains; the plan names
        // it by its index in the function.
        let global: Vec<u32> = slice
            .chains
            .iter()
            .map(|c| c.ops.last().and_then(|&last| graph.chain_of(last)).unwrap_or(u32::MAX))
            .collect();
        for (&i, p) in slice.ops.iter().zip(&slice.plans) {
            if let Some(slot) = ops.get_mut(i as usize) {
                slot.clone_from(p);
                slot.chain = p.chain.and_then(|(local, pos)| {
                    global.get(local as usize).filter(|&&g| g != u32::MAX).map(|&g| (g, pos))
                });
            }
        }
        chain_plans.extend(global.iter().copied().zip(slice.chains.iter().cloned()));
        merges.extend(slice.merges.iter().cloned());
    }
    chain_plans.sort_by_key(|(c, _)| *c);
    // Each chain gathered once, a chain's index in the function is its place in the list.
    // Where not (a chain gathered twice or not at all, a bug), ops name their chain by its
    // place, so the plan never names a chain past its list for a reader to index.
    if chain_plans.iter().enumerate().any(|(at, (c, _))| *c != at as u32) {
        for p in &mut ops {
            p.chain = p.chain.and_then(|(c, pos)| {
                let at = chain_plans.binary_search_by_key(&c, |(g, _)| *g).ok()?;
                Some((at as u32, pos))
            });
        }
    }
    Arc::new(Plan {
        policy,
        schedule: sched,
        ops,
        chains: chain_plans.into_iter().map(|(_, c)| c).collect(),
        merges,
    })
}

/// The op config for a layout outside a chain: the first legal config with that layout
/// (for conv2d, act_block_h 0 with deallocate_activation), else the op's own; from the
/// legality `reads` asks for.
pub(crate) fn config_for_in(
    db: &dyn Db,
    op: OpId,
    layout: Option<&TtnnLayout>,
    reads: crate::problem::Reads,
) -> OpConfig {
    let configs = crate::problem::legal_configs(db, op, reads);
    if let Some(l) = layout
        && let Some(c) = configs.iter().find(|c| &c.layout == l)
    {
        return c.config.clone();
    }
    layout::op_signature(db, op).map(|s| s.config.clone()).unwrap_or_default()
}

/// [`config_for_in`] of an op with signature `sig` and legal configs `configs`.
fn config_of(
    sig: Option<&layout::OpSignature>,
    configs: &layout::LegalOpConfigs,
    layout: Option<&TtnnLayout>,
) -> OpConfig {
    if let Some(l) = layout
        && let Some(c) = configs.iter().find(|c| &c.layout == l)
    {
        return c.config.clone();
    }
    sig.map(|s| s.config.clone()).unwrap_or_default()
}
