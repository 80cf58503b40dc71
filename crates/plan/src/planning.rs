//! `plan_for(func, policy)`: the chosen layout and config of every op, the conversions the
//! rewrite must insert, and the reason for each decision.

use std::sync::Arc;

use base_db::Policy;
use ir::{FuncId, OpId, ValueRef};
use opmodel::OpConfig;
use ttnn_types::{PageLayout, TtnnLayout};

use crate::{
    Db,
    chain_graph::{ChainId, chains},
    merge::{MergeKind, merge_decisions},
    problem::{fallback_layout, solve_chain},
    scheduling::{Schedule, func_topology, schedule},
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
    pub id: ChainId,
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
    pub reason: String,
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
    /// Why the op got its layout, in words.
    pub reason: String,
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

/// Every op's and chain's plan from the solved chains alone, before any policy's merging,
/// spills and conversions: what both policies start from, built once for both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PlanParts {
    pub ops: Vec<OpPlan>,
    pub chains: Vec<ChainPlan>,
}

/// Ops per chunk of [`plan_parts`]: small enough that re-deriving one chunk is cheap, large
/// enough that gathering the chunks is a short loop.
const PARTS_CHUNK: usize = 512;

/// The solved chains laid out over the function (see [`PlanParts`]), gathered from chunks
/// of [`PARTS_CHUNK`] ops so that one chain's change re-derives only its chunks.
#[salsa::tracked(returns(clone))]
pub fn plan_parts(db: &dyn Db, func: FuncId) -> Arc<PlanParts> {
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let _p = tracing::debug_span!("plan_parts", func = %func.name(db)).entered();
    let n = body.ops.len();
    let mut ops = Vec::with_capacity(n);
    let mut chains: Vec<(usize, ChainPlan)> = Vec::new();
    for k in 0..n.div_ceil(PARTS_CHUNK) {
        let part = plan_parts_chunk(db, func, k as u32);
        ops.extend(part.ops.iter().cloned());
        chains.extend(part.chains.iter().cloned());
    }
    chains.sort_by_key(|(c, _)| *c);
    Arc::new(PlanParts { ops, chains: chains.into_iter().map(|(_, c)| c).collect() })
}

/// One chunk of [`plan_parts`]: the plans of ops `k * PARTS_CHUNK ..` and the chain plans of
/// the chains whose first op lies there (chunk 0 also takes chains with no op).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PartsChunk {
    pub ops: Vec<OpPlan>,
    pub chains: Vec<(usize, ChainPlan)>,
}

/// Op plans of one chunk, indexed by body index; writes to ops of other chunks (a chain
/// that crosses the boundary) land in a scratch plan and are dropped.
struct ChunkPlans {
    lo: usize,
    plans: Vec<OpPlan>,
    scratch: OpPlan,
}

impl std::ops::Index<usize> for ChunkPlans {
    type Output = OpPlan;
    fn index(&self, i: usize) -> &OpPlan {
        i.checked_sub(self.lo).and_then(|k| self.plans.get(k)).unwrap_or(&self.scratch)
    }
}

impl std::ops::IndexMut<usize> for ChunkPlans {
    fn index_mut(&mut self, i: usize) -> &mut OpPlan {
        match i.checked_sub(self.lo) {
            Some(k) if k < self.plans.len() => &mut self.plans[k],
            _ => &mut self.scratch,
        }
    }
}

#[salsa::tracked(returns(clone))]
pub fn plan_parts_chunk(db: &dyn Db, func: FuncId, k: u32) -> Arc<PartsChunk> {
    let graph = chains(db, func);
    let ops = ir::func_ops(db, func);
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let n = body.ops.len();
    let lo = (k as usize * PARTS_CHUNK).min(n);
    let hi = (lo + PARTS_CHUNK).min(n);
    let pinned = layout::pinned_outputs(db, func);
    let plans: Vec<OpPlan> = (lo..hi)
        .map(|i| {
            let op = ops[i];
            let layout = fallback_layout(db, op);
            let config = config_for(db, op, layout.as_ref());
            let legal = layout::legal_op_layouts(db, op);
            let reason = match &layout {
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
            OpPlan {
                layout,
                config,
                chain: None,
                expected_operands: vec![None; body.ops[i].operands.len()],
                spill: None,
                reason,
                reserved: 0,
            }
        })
        .collect();
    let mut op_plans = ChunkPlans {
        lo,
        plans,
        scratch: OpPlan {
            layout: None,
            config: OpConfig::None,
            chain: None,
            expected_operands: Vec::new(),
            spill: None,
            reason: String::new(),
            reserved: 0,
        },
    };
    // The chains with an op here, in index order; a chain's plan belongs to the chunk of its
    // first op (every chain has one: `chains` records each member's position).
    let mut touching: Vec<usize> = Vec::new();
    let mut owned: Vec<usize> = Vec::new();
    for (c, pos) in (lo..hi).filter_map(|i| graph.op_chain.get(i).copied().flatten()) {
        touching.push(c as usize);
        if pos == 0 {
            owned.push(c as usize);
        }
    }
    touching.sort_unstable();
    touching.dedup();
    owned.sort_unstable();
    let mut chain_plans: Vec<(usize, ChainPlan)> = Vec::new();
    for ci in touching {
        let Some(&chain) = graph.chains.get(ci) else { continue };
        let owns = owned.binary_search(&ci).is_ok();
        let members: Vec<u32> = chain
            .ops(db)
            .iter()
            .filter_map(|o| body.op_index(o.key(db)).map(|i| i as u32))
            .collect();
        for (pos, &i) in members.iter().enumerate() {
            op_plans[i as usize].chain = Some((ci as u32, pos as u32));
        }
        if chain.concat(db) {
            if owns {
                chain_plans.push((
                    ci,
                    ChainPlan {
                        id: chain,
                        ops: members,
                        concat: true,
                        state: ChainState::Built,
                        failure: None,
                        spill: SpillLocation::Dram,
                        spill_reason: "concat chains are resolved only by chain merging".to_owned(),
                        core_usage: Vec::new(),
                    },
                ));
            }
            continue;
        }
        let sol = solve_chain(db, chain);
        match &sol.result {
            Err(f) => {
                for &i in &members {
                    op_plans[i as usize].reason = format!(
                        "its chain #{ci} failed, so the whole chain falls back to DRAM: {}",
                        f.reason
                    );
                }
                if owns {
                    chain_plans.push((
                        ci,
                        ChainPlan {
                            id: chain,
                            ops: members,
                            concat: false,
                            state: ChainState::Failed,
                            failure: Some(f.reason.clone()),
                            spill: SpillLocation::Dram,
                            spill_reason: String::new(),
                            core_usage: Vec::new(),
                        },
                    ));
                }
            }
            Ok(selected) => {
                let problem = crate::problem::chain_problem(db, chain);
                for (pos, (&i, &k)) in members.iter().zip(selected).enumerate() {
                    let cand = &problem.ops[pos].candidates[k];
                    let p = &mut op_plans[i as usize];
                    p.layout = Some(cand.layout.clone());
                    p.config = cand.config.clone();
                    p.reason = format!(
                        "L1 chain #{ci}, op {} of {}: the config with the highest accumulated core usage ({})",
                        pos + 1,
                        members.len(),
                        sol.core_usage.get(pos).copied().unwrap_or(0)
                    );
                }
                // Expected operands: in-chain edges carry the producer's layout or the
                // reshard target; the chain entry was validated with a DRAM-interleaved
                // input (or the d2m-chosen input).
                for e in &problem.edges {
                    let consumer = members[e.consumer] as usize;
                    let producer_layout =
                        problem.ops[e.producer].candidates[selected[e.producer]].layout.clone();
                    if let Some(slot) =
                        op_plans[consumer].expected_operands.get_mut(e.operand as usize)
                    {
                        *slot = Some(Conversion { layout: producer_layout, reason: String::new() });
                    }
                }
                if let Some(first) = members.first()
                    && let Some(Some(input)) = problem.ops.first().and_then(|o| o.operands.first())
                {
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
                    if let Some(slot) = op_plans[*first as usize].expected_operands.get_mut(0) {
                        *slot = Some(Conversion { layout, reason });
                    }
                }
                for r in &sol.reshards {
                    let consumer = members[r.consumer] as usize;
                    let why = if r.user {
                        "requested by insert-memreconfig".to_owned()
                    } else {
                        r.reason.clone()
                    };
                    if let Some(slot) =
                        op_plans[consumer].expected_operands.get_mut(r.operand as usize)
                    {
                        *slot = Some(Conversion {
                            layout: r.layout.clone(),
                            reason: format!("reshard: {why}"),
                        });
                    }
                }
                // The last op's layout is its picked candidate's (it may lie in another chunk).
                let feeds_d2m = chain.to_d2m(db);
                let out_l1 = members
                    .len()
                    .checked_sub(1)
                    .and_then(|p| {
                        Some(&problem.ops.get(p)?.candidates.get(*selected.get(p)?)?.layout)
                    })
                    .is_some_and(TtnnLayout::is_l1);
                let (spill, spill_reason) = if feeds_d2m {
                    (SpillLocation::None, "feeds a d2m subgraph: kept in L1".to_owned())
                } else if out_l1 {
                    (SpillLocation::Dram, "chain output spills to DRAM".to_owned())
                } else {
                    (SpillLocation::None, String::new())
                };
                if owns {
                    chain_plans.push((
                        ci,
                        ChainPlan {
                            id: chain,
                            ops: members,
                            concat: false,
                            state: ChainState::Completed,
                            failure: None,
                            spill,
                            spill_reason,
                            core_usage: sol.core_usage.clone(),
                        },
                    ));
                }
            }
        }
    }
    Arc::new(PartsChunk { ops: op_plans.plans, chains: chain_plans })
}

/// The plan of a function under a given policy (policies can be compared side by side).
#[salsa::tracked(returns(clone))]
pub fn plan_for(db: &dyn Db, func: FuncId, policy: Policy) -> Arc<Plan> {
    let sched = schedule(db, func);
    let topo = func_topology(db, func);
    let parts = plan_parts(db, func);
    let Some(body) = ir::func_body(db, func) else {
        return Arc::new(Plan {
            policy,
            schedule: sched,
            ops: Vec::new(),
            chains: Vec::new(),
            merges: Vec::new(),
        });
    };
    let _p =
        tracing::debug_span!("plan_for", func = %func.name(db), policy = policy.name()).entered();
    let n = body.ops.len();
    let mut op_plans = parts.ops.clone();
    let mut chain_plans = parts.chains.clone();
    let mut merges = Vec::new();
    if policy == Policy::DfShardingMerge {
        let decisions = merge_decisions(db, func);
        decisions.apply(&mut op_plans, &mut chain_plans, &mut merges);
    }
    // Spills: a completed chain's L1 output goes where its spill location says, for every use.
    for c in &chain_plans {
        let Some(&last) = c.ops.last() else { continue };
        let p = &mut op_plans[last as usize];
        let Some(layout) = p.layout.clone() else { continue };
        if !layout.is_l1() || p.spill.is_some() {
            continue;
        }
        let shape = body.ops[last as usize]
            .results
            .first()
            .and_then(|t| t.as_tensor())
            .and_then(|t| t.static_shape());
        let Some(shape) = shape else { continue };
        let dtype = layout.data_type().unwrap_or(ttnn_types::DataType::BF16);
        match c.spill {
            SpillLocation::Dram => {
                p.spill = Some(Conversion {
                    layout: TtnnLayout::dram_interleaved(&shape, dtype, layout.page_layout()),
                    reason: if topo.ops[last as usize].returned {
                        "spill to DRAM: the chain's output is returned".to_owned()
                    } else {
                        format!("spill to DRAM: {}", c.spill_reason)
                    },
                });
            }
            SpillLocation::L1Interleaved => {
                let worker = base_db::TargetInput::get(db).target(db).worker_grid();
                p.spill = Some(Conversion {
                    layout: TtnnLayout::l1_interleaved(&shape, dtype, layout.page_layout(), worker),
                    reason: format!("to L1 interleaved: {}", c.spill_reason),
                });
            }
            SpillLocation::None => {}
        }
    }
    // A value returned while still in L1 (a merged output) must reach DRAM at the return.
    for (i, t) in topo.ops.iter().enumerate() {
        let p = &mut op_plans[i];
        if t.returned
            && p.spill.is_none()
            && p.chain.is_some()
            && let Some(layout) = &p.layout
            && layout.is_l1()
            && let Some(shape) = body.ops[i]
                .results
                .first()
                .and_then(|r| r.as_tensor())
                .and_then(|r| r.static_shape())
        {
            let dtype = layout.data_type().unwrap_or(ttnn_types::DataType::BF16);
            p.spill = Some(Conversion {
                layout: TtnnLayout::dram_interleaved(&shape, dtype, layout.page_layout()),
                reason: "spill to DRAM: the value is returned".to_owned(),
            });
        }
    }
    // Drop expected operands that the incoming value already satisfies, so only real
    // conversions remain.
    for i in 0..n {
        for k in 0..op_plans[i].expected_operands.len() {
            let Some(expected) = op_plans[i].expected_operands[k].clone() else { continue };
            let incoming = incoming_layout(&body, &op_plans, i, k);
            if incoming.as_ref() == Some(&expected.layout) {
                op_plans[i].expected_operands[k] = None;
            } else if expected.reason.is_empty() {
                op_plans[i].expected_operands[k] = Some(Conversion {
                    reason: "reshard to the layout the op was validated with".to_owned(),
                    ..expected
                });
            }
        }
    }
    Arc::new(Plan { policy, schedule: sched, ops: op_plans, chains: chain_plans, merges })
}

/// The layout of the value feeding operand `k` of op `i` after spills.
pub(crate) fn incoming_layout(
    body: &ir::FuncBody,
    plans: &[OpPlan],
    i: usize,
    k: usize,
) -> Option<TtnnLayout> {
    match body.ops[i].operands.get(k)? {
        ValueRef::Result { op, .. } => {
            let p = plans.get(*op as usize)?;
            p.spill.as_ref().map(|s| s.layout.clone()).or_else(|| p.layout.clone())
        }
        ValueRef::Arg(a) => body.args.get(*a as usize).and_then(|t| t.layout().cloned()),
        ValueRef::Unknown => None,
    }
}

/// The op config for a layout outside a chain: the first legal config with that layout
/// (for conv2d, act_block_h 0 with deallocate_activation), else the op's own.
pub(crate) fn config_for(db: &dyn Db, op: OpId, layout: Option<&TtnnLayout>) -> OpConfig {
    let configs = layout::legal_op_configs(db, op);
    if let Some(l) = layout
        && let Some(c) = configs.iter().find(|c| &c.layout == l)
    {
        return c.config.clone();
    }
    layout::op_signature(db, op).map(|s| s.config.clone()).unwrap_or_default()
}
