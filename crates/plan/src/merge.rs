//! Chain merging, DFSharding 2.0 (seed 000 §4.1), run on top of the `df-sharding` plan one
//! chunk at a time.
//!
//! The decisions are tt-mlir's: resolve concat chains (N-way merges), reserve L1 for reshape
//! outputs, keep fork outputs in L1 (sharded, else L1 interleaved), merge chains A→B on any
//! operand and 3-way into a two-input join. Every decision is validated with the op model
//! against an L1 reservation timeline: each value kept in L1 reserves its per-core bytes from
//! its producer's schedule position to its last use, and every scheduled op in that window
//! (in a chain or not) must still fit with the reservations active at its position added.
//!
//! Unlike tt-mlir, which runs each kind of decision over the whole function in turn, the
//! passes run over one chunk of the schedule at a time, and every decision is made at its
//! *source*: at the last op of a chain (its reshape spill, fork, A->B or 3-way merge), at a
//! reshape for its own output, at the earliest producer of a concat. A decision then only
//! changes ops at or after its source, so a chunk is final when its decisions are made, and
//! what crosses into the next chunk is a small [`Carry`]: the open reservations, the plans of
//! later ops already changed, the outputs later ops read. A chunk whose carry in and own
//! inputs did not change is not re-run. Deviations from tt-mlir, documented in
//! `docs/optimizer.md`: the passes run chunk by chunk; concat N-way validation counts the
//! other active reservations (tt-mlir ignores them); a reshape with a `return` user is
//! skipped instead of stopping the whole pass; the timeline is summed directly per position.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use rustc_hash::{FxHashMap, FxHashSet};

use ir::ValueRef;
use opmodel::{OpConfig, OpKind, OpModel as _, OutputHint, TensorDesc};
use ttnn_types::{DataType, PageLayout, TensorMemoryLayout, TtnnLayout};

use self::facts::{OpFacts, PerChunk, PerOp, Producer, Scratch};
use crate::{
    chunks::{ChunkChains, ChunkLayout, ForeignChain, PlanSlice},
    planning::{ChainPlan, ChainState, Conversion, MergeRecord, OpPlan, PartsChunk, SpillLocation},
    problem::ChainCost,
    scheduling::Topology,
};

mod facts;
mod l1_fallback;
#[cfg(test)]
mod tests;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MergeKind {
    /// Chain A's output stays in L1 for chain B (any operand).
    Simple,
    /// Two chains' outputs stay in L1 for a two-input join.
    ThreeWay,
    /// Every input of a concat stays in L1.
    Concat,
    /// A fork's output stays in L1 (sharded or interleaved) for all its users.
    Fork,
    /// A reshape's output goes to L1 interleaved.
    Reshape,
}

impl MergeKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            MergeKind::Simple => "A->B merge",
            MergeKind::ThreeWay => "3-way merge",
            MergeKind::Concat => "concat N-way merge",
            MergeKind::Fork => "fork kept in L1",
            MergeKind::Reshape => "reshape output in L1",
        }
    }
}

/// An L1 reservation: `bytes` per core held by op `op`'s output from schedule position
/// `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reservation {
    pub op: u32,
    pub start: u32,
    pub end: u32,
    pub bytes: u64,
}

/// Why a chain's op gets a spill, for its reason text (built only when the spill is placed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpillWhy {
    /// The chain spills its output to DRAM, and the output is returned.
    ChainReturned,
    /// The chain spills its output to DRAM.
    Chain,
    /// The chain's output goes to L1 interleaved.
    L1Interleaved,
    /// A value returned while still in L1.
    Returned,
}

/// What one chunk's walk hands to the next: everything decided so far that later ops see.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Carry {
    /// Reservations still held after the chunk.
    pub open: Vec<Reservation>,
    /// The L1 layouts of the values those reservations keep.
    pub residents: BTreeMap<u32, TtnnLayout>,
    /// Plans of later ops that decisions so far changed (body index → plan).
    pub plans: BTreeMap<u32, OpPlan>,
    /// Plans of later chains that decisions so far changed. Chains are named by their last
    /// op here (body index), not by their index in the function, which shifts whenever a
    /// chain earlier on splits or joins.
    pub chains: BTreeMap<u32, ChainPlan>,
    /// Later chains (by last op) that already received a merge (tt-mlir allows one per
    /// target chain).
    pub merged_target: BTreeSet<u32>,
    /// Later chains (by last op) a decision involves (they are never declined afterwards).
    pub touched: BTreeSet<u32>,
    /// The final layout and spill of every op so far that a later op reads.
    pub outputs: BTreeMap<u32, (Option<TtnnLayout>, Option<TtnnLayout>)>,
}

/// A chunk's base plan, with its chains by last op (body index): decisions look chains up
/// by their last op for every operand they validate.
struct BaseChunk {
    parts: Arc<PartsChunk>,
    by_last: FxHashMap<u32, usize>,
}

/// A plan with nothing in it, for lookups that miss.
static NO_PLAN: std::sync::LazyLock<OpPlan> = std::sync::LazyLock::new(OpPlan::empty);

/// What validating an op without a tensor result answers (it holds no L1 of its own).
static NO_RESULT: std::sync::LazyLock<TtnnLayout> = std::sync::LazyLock::new(|| {
    TtnnLayout::dram_interleaved(&[1], DataType::BF16, PageLayout::Tile)
});

/// What a chunk's walk reads of its function beyond the carry, asked for when a decision
/// first needs it (a window reads few ops outside its chunk). The database answers each read
/// from a memo of its own, so that a walk re-runs only when something it read changed
/// (`chunks::DbWalkSource`); the unit tests answer from plain data.
pub(crate) trait WalkSource {
    /// Op `i` of the body (body index).
    fn op(&self, i: u32) -> Option<&ir::OpData>;
    /// The op (body index) and result index that define a value.
    fn result_of(&self, v: ValueRef) -> Option<(u32, u32)>;
    /// The type of the function's argument `a`.
    fn arg(&self, a: u32) -> Option<&ir::Ty>;
    /// Op `i`'s signature.
    fn sig(&self, i: u32) -> Option<Arc<layout::OpSignature>>;
    /// Chunk `k`'s base plan: `merge_base_chunk` when merging, else its parts.
    fn base(&self, k: u32) -> Arc<PartsChunk>;
    /// Op `i`'s plan in its own chunk's base, read from a walk of another chunk.
    fn foreign_plan(&self, i: u32) -> Option<Arc<OpPlan>>;
    /// The base plan and outcome of the chain ending at op `last`, read from another chunk.
    fn foreign_chain(&self, last: u32) -> Option<Arc<crate::chunks::ForeignChain>>;
    /// The chains of chunk `k`.
    fn chunk_chains(&self, k: u32) -> Arc<ChunkChains>;
    /// Notes that the walk looked up the chain of op `i` of another chunk in
    /// [`WalkSource::chunk_chains`]: what it read of that chunk's chains.
    fn chain_read(&self, _i: u32) {}
    /// Op `i`'s legal output layouts (the L1-interleaved fallback picks among them).
    fn legal_layouts(&self, i: u32) -> Option<Arc<layout::LegalOpLayouts>>;
}

/// The inputs of one chunk's walk: plain values and services, and what it reads on demand.
pub(crate) struct ChunkInputs<'a> {
    pub src: &'a dyn WalkSource,
    pub k: u32,
    /// Whether chain merging runs (`df-sharding-merge`) or only the spills and conversions.
    pub merging: bool,
    /// tt-mlir's `l1-interleaved-fallback-analysis-enabled`.
    pub l1_interleaved_fallback: bool,
    pub layout: &'a ChunkLayout,
    pub topo: &'a Topology,
    pub sched: &'a crate::scheduling::Schedule,
    pub carry: &'a Carry,
    pub target: &'a target::Target,
    pub model: &'a layout::SharedOpModel,
    pub costs: &'a cost::CostCache,
}

/// Walks chunk `k` of the schedule: makes the decisions whose source lies there, finishes
/// the chunk's plans (spills, returned values, conversions) and hands the rest on.
pub(crate) fn walk_chunk(input: &ChunkInputs<'_>) -> (PlanSlice, Carry) {
    let k = input.k;
    let target = input.target;
    let n_chunks = input.layout.len();
    let mut m = Merger {
        src: input.src,
        merging: input.merging,
        k,
        layout: input.layout,
        topo: input.topo,
        sched: &input.sched.order,
        pos: &input.sched.position,
        base: PerChunk::new(n_chunks),
        foreign_plans: PerOp::new(input.layout),
        foreign_chains: PerOp::new(input.layout),
        facts: PerOp::new(input.layout),
        no_facts: OpFacts::default(),
        scratch: std::cell::RefCell::new(Scratch::new()),
        own: Vec::new(),
        others: FxHashMap::default(),
        chains: FxHashMap::default(),
        residents: input.carry.residents.clone(),
        reservations: input.carry.open.clone(),
        live: Live::new(input.sched.order.len()),
        merged_target: input.carry.merged_target.iter().copied().collect(),
        touched: input.carry.touched.iter().copied().collect(),
        chain_info: PerChunk::new(n_chunks),
        outputs: &input.carry.outputs,
        records: Vec::new(),
        model: input.model,
        costs: input.costs,
        target,
        cost: cost::CostModel::for_target(target),
        spill_layouts: std::cell::RefCell::default(),
    };
    for r in &m.reservations {
        m.live.add(r.start, r.end, r.bytes);
    }
    // This chunk's plans and chains: the base, then what earlier chunks changed.
    let here: &[u32] = input.layout.ops(k as usize);
    let base = m.base_chunk(k);
    m.own = here
        .iter()
        .enumerate()
        .map(|(at, i)| input.carry.plans.get(i).or(base.ops.get(at)).cloned())
        .collect();
    for plan in &base.chains {
        let Some(&last) = plan.ops.last() else { continue };
        let plan = input.carry.chains.get(&last).unwrap_or(plan);
        m.chains.insert(last, plan.clone());
    }
    for (&i, p) in &input.carry.plans {
        if m.layout.locate(i).is_none_or(|(c, _)| c != k) {
            m.others.insert(i, p.clone());
        }
    }
    for (&last, p) in &input.carry.chains {
        m.chains.entry(last).or_insert_with(|| p.clone());
    }
    if m.merging {
        m.decide(here);
    }
    for &x in here {
        if let Some(c) = m.chain_ending_at(x) {
            m.finish_chain(c as usize);
        }
    }
    if input.l1_interleaved_fallback {
        m.l1_interleaved_fallback(here);
    }
    m.prune_conversions(here);
    m.hand_on(here)
}

/// The bytes the reservations hold at each schedule position, kept only over the positions
/// some reservation covers: a walk's reservations span a few chunks, and zeroing a vector
/// as long as the schedule cost as much as a small walk's decisions.
struct Live {
    /// The schedule's length: reservations end at its last position at the latest.
    len: u32,
    /// The position `bytes[0]` stands for.
    base: u32,
    bytes: Vec<u64>,
}

impl Live {
    fn new(len: usize) -> Live {
        Live { len: len as u32, base: 0, bytes: Vec::new() }
    }

    /// Adds `bytes` at positions `start..=end` (those in the schedule).
    fn add(&mut self, start: u32, end: u32, bytes: u64) {
        let Some(last) = self.len.checked_sub(1) else { return };
        let end = end.min(last);
        if start > end {
            return;
        }
        if self.bytes.is_empty() {
            self.base = start;
        } else if start < self.base {
            let grow = (self.base - start) as usize;
            self.bytes.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = start;
        }
        let to = (end - self.base) as usize;
        if self.bytes.len() <= to {
            self.bytes.resize(to + 1, 0);
        }
        for slot in &mut self.bytes[(start - self.base) as usize..=to] {
            *slot = slot.saturating_add(bytes);
        }
    }

    /// The bytes held at position `pos`.
    fn at(&self, pos: u32) -> u64 {
        pos.checked_sub(self.base).and_then(|at| self.bytes.get(at as usize)).copied().unwrap_or(0)
    }
}

struct Merger<'a> {
    src: &'a dyn WalkSource,
    merging: bool,
    k: u32,
    layout: &'a ChunkLayout,
    /// Each chunk's chains, fetched on first use.
    chain_info: PerChunk<Arc<ChunkChains>>,
    topo: &'a Topology,
    sched: &'a [u32],
    pos: &'a [u32],
    /// The base plan of each chunk this walk reads, fetched on first use.
    base: PerChunk<BaseChunk>,
    /// Base plans of ops in other chunks, by body index, fetched on first use.
    foreign_plans: PerOp<Option<Arc<OpPlan>>>,
    /// Base plans and outcomes of chains in other chunks, by last op, fetched on first use.
    foreign_chains: PerOp<Option<Arc<ForeignChain>>>,
    /// What the walk reads of each op that does not change while it runs.
    facts: PerOp<OpFacts<'a>>,
    /// What is known of an op past the body: nothing.
    no_facts: OpFacts<'a>,
    /// The query and cost arguments validations fill in.
    scratch: std::cell::RefCell<Scratch>,
    /// Plans of this chunk's ops (by place in the chunk; `None` for an op without a base
    /// plan until a decision changes it), and of other ops decisions changed: a vector for
    /// the chunk's own, which the walk reads most.
    own: Vec<Option<OpPlan>>,
    others: FxHashMap<u32, OpPlan>,
    chains: FxHashMap<u32, ChainPlan>,
    /// Values kept in L1 by merges so far: producer op → its L1 layout.
    residents: BTreeMap<u32, TtnnLayout>,
    reservations: Vec<Reservation>,
    /// Per schedule position: the bytes the reservations so far hold there. Every op of
    /// every window checked asks for it; summing the reservations each time made merging
    /// quadratic in the number of merges.
    live: Live,
    /// Chains that already received a merge (tt-mlir allows one per target chain).
    merged_target: FxHashSet<u32>,
    /// Chains a decision involves.
    touched: FxHashSet<u32>,
    /// Final outputs of earlier chunks' ops.
    outputs: &'a BTreeMap<u32, (Option<TtnnLayout>, Option<TtnnLayout>)>,
    records: Vec<MergeRecord>,
    model: &'a layout::SharedOpModel,
    costs: &'a cost::CostCache,
    target: &'a target::Target,
    /// Every merge must also pay off in estimated time (going past tt-mlir, which merges
    /// whenever L1 allows).
    cost: cost::CostModel,
    /// The interleaved layouts op outputs spill to, by op, L1 or DRAM, data type and page
    /// layout: decisions ask for them for every operand they validate.
    spill_layouts: std::cell::RefCell<FxHashMap<(u32, bool, DataType, PageLayout), TtnnLayout>>,
}

impl<'a> Merger<'a> {
    fn sig(&self, i: u32) -> Option<Arc<layout::OpSignature>> {
        self.facts(i).sig.clone()
    }

    /// Op `i`'s signature, shapes and operand producers, looked up once per walk.
    fn facts(&self, i: u32) -> &OpFacts<'a> {
        self.facts
            .get_or_init(self.layout, i, || OpFacts::new(self.src, i))
            .unwrap_or(&self.no_facts)
    }

    /// Op `i` of the body (an empty op past the end).
    fn op(&self, i: u32) -> &'a ir::OpData {
        self.facts(i).op.unwrap_or(&ir::NO_OP)
    }

    /// The base plan of chunk `k`: the solved chains, and under merging the chains the cost
    /// model declines up front; with its chains indexed by their last op.
    fn base(&self, k: u32) -> Option<&BaseChunk> {
        self.base.get_or_init(k, || {
            let parts = self.src.base(k);
            let by_last = parts
                .chains
                .iter()
                .enumerate()
                .filter_map(|(c, ch)| Some((*ch.ops.last()?, c)))
                .collect();
            BaseChunk { parts, by_last }
        })
    }

    /// The cost and fallback of the chain whose last op is `last`, from its base chunk.
    fn outcome(&self, last: u32) -> Option<&crate::planning::ChainOutcome> {
        let (k, _) = self.layout.locate(last)?;
        if k != self.k {
            return self.foreign_chain(last).map(|(_, o)| o);
        }
        let base = self.base(k)?;
        base.parts.outcomes.get(*base.by_last.get(&last)?)
    }

    fn base_chunk(&self, k: u32) -> Arc<PartsChunk> {
        self.base(k).map(|b| Arc::clone(&b.parts)).unwrap_or_default()
    }

    fn plan(&self, i: u32) -> &OpPlan {
        let Some((k, at)) = self.layout.locate(i) else {
            return self.others.get(&i).unwrap_or(&NO_PLAN);
        };
        if k == self.k {
            return self.own.get(at).and_then(Option::as_ref).unwrap_or(&NO_PLAN);
        }
        if let Some(p) = self.others.get(&i) {
            return p;
        }
        self.foreign_plan(i).unwrap_or(&NO_PLAN)
    }

    /// Op `i`'s base plan when it lies in another chunk: one memo per op read across
    /// chunks ([`crate::chunks::foreign_op_plan`]), fetched once per walk.
    fn foreign_plan(&self, i: u32) -> Option<&OpPlan> {
        self.foreign_plans.get_or_init(self.layout, i, || self.src.foreign_plan(i))?.as_deref()
    }

    /// The base plan and outcome of the chain ending at `last` when it lies in another
    /// chunk (see [`Merger::foreign_plan`]).
    fn foreign_chain(&self, last: u32) -> Option<&(ChainPlan, crate::planning::ChainOutcome)> {
        self.foreign_chains
            .get_or_init(self.layout, last, || self.src.foreign_chain(last))?
            .as_deref()
    }

    fn plan_mut(&mut self, i: u32) -> &mut OpPlan {
        if let Some((k, at)) = self.layout.locate(i)
            && k == self.k
            && at < self.own.len()
        {
            return self.own[at].get_or_insert_with(|| NO_PLAN.clone());
        }
        if !self.others.contains_key(&i) {
            let p = self.plan(i).clone();
            self.others.insert(i, p);
        }
        self.others.entry(i).or_insert_with(|| NO_PLAN.clone())
    }

    fn chain(&self, c: usize) -> Option<&ChainPlan> {
        if let Some(p) = self.chains.get(&(c as u32)) {
            return Some(p);
        }
        let last = c as u32;
        let (k, _) = self.layout.locate(last)?;
        if k != self.k {
            return self.foreign_chain(last).map(|(p, _)| p);
        }
        let base = self.base(k)?;
        base.parts.chains.get(*base.by_last.get(&last)?)
    }

    /// Whether chain `c` exists and `f` holds for it.
    fn chain_is(&self, c: usize, f: impl Fn(&ChainPlan) -> bool) -> bool {
        self.chain(c).is_some_and(f)
    }

    fn chain_ops(&self, c: usize) -> Vec<u32> {
        self.chain(c).map(|ch| ch.ops.clone()).unwrap_or_default()
    }

    /// Chain `c`'s plan to change; `None` only if the chain does not exist.
    fn chain_mut(&mut self, c: usize) -> Option<&mut ChainPlan> {
        if !self.chains.contains_key(&(c as u32)) {
            let p = self.chain(c)?.clone();
            self.chains.insert(c as u32, p);
        }
        self.chains.get_mut(&(c as u32))
    }

    /// The layout reaching operand `k` of op `i` from its producer (after its spill).
    fn incoming(&self, i: u32, k: usize) -> Option<TtnnLayout> {
        self.incoming_from(*self.facts(i).operands.get(k)?)
    }

    /// The layout reaching an operand from its producer (after its spill).
    fn incoming_from(&self, producer: Producer) -> Option<TtnnLayout> {
        match producer {
            Producer::Op(op) => {
                if let Some((l, s)) = self.outputs.get(&op) {
                    return s.clone().or_else(|| l.clone());
                }
                self.planned_spill(op).or_else(|| self.plan(op).layout.clone())
            }
            Producer::Arg(a) => self.src.arg(a).and_then(|t| t.layout().cloned()),
            Producer::Unknown => None,
        }
    }

    /// The chain of op `i`, named by its last op (body index): chunk results never name a
    /// chain by its index in the function, which shifts whenever a chain earlier on splits
    /// or joins.
    fn chain_of(&self, i: u32) -> Option<u32> {
        let (k, at) = self.layout.locate(i)?;
        if k != self.k {
            self.src.chain_read(i);
        }
        let info = self.chain_info.get_or_init(k, || self.src.chunk_chains(k))?;
        info.of_op.get(at).copied().flatten().map(|(last, _)| last)
    }

    /// The chain whose last op is `i`, if any.
    fn chain_ending_at(&self, i: u32) -> Option<u32> {
        self.chain_of(i).filter(|&c| c == i)
    }

    fn touch_op(&mut self, i: u32) {
        if let Some(c) = self.chain_of(i) {
            self.touched.insert(c);
        }
    }

    fn set_input(&mut self, i: u32, k: u32, layout: TtnnLayout) {
        self.touch_op(i);
        if let Some(slot) = self.plan_mut(i).expected_operands.get_mut(k as usize) {
            *slot = Some(Conversion { layout, reason: "merged input kept in L1".into() });
        }
    }

    fn record(&mut self, r: MergeRecord) {
        self.touch_op(r.join);
        for &s in &r.sources {
            self.touch_op(s);
        }
        self.records.push(r);
    }

    /// The decisions whose source lies in this chunk (`here`, in walk order), in tt-mlir's
    /// order of passes: concats, reshapes, forks, chain merges (by target chain, a 3-way
    /// before A->B, larger sources first), then the declines of chains no decision touched.
    fn decide(&mut self, here: &[u32]) {
        let scheduled: Vec<u32> = here
            .iter()
            .copied()
            .filter(|&x| self.pos.get(x as usize).is_some_and(|&p| p != u32::MAX))
            .collect();
        for &x in &scheduled {
            self.concats_at(x);
        }
        // The chains ending at each op: which op ends which chain does not change while the
        // passes run (only the chains' states do).
        let ends: Vec<(u32, Option<usize>)> =
            scheduled.iter().map(|&x| (x, self.own_chain_end(x))).collect();
        for &(x, end) in &ends {
            if let Some(c) = end
                && self.completed_dram_chain(c)
            {
                self.reshape_spill(x);
            }
            self.reshape_output(x);
        }
        for &(_, end) in &ends {
            if let Some(c) = end {
                self.fork(c);
            }
        }
        let mut attempts: Vec<(u32, bool, std::cmp::Reverse<u64>, u32, usize, u32)> = Vec::new();
        for &(x, end) in &ends {
            if let Some(c) = end
                && let Some((target, three_way)) = self.merge_target(c, x)
            {
                let bytes = std::cmp::Reverse(self.out_bytes(x));
                if three_way {
                    attempts.push((target, false, bytes, self.pos[x as usize], c, x));
                }
                attempts.push((target, true, bytes, self.pos[x as usize], c, x));
            }
        }
        attempts.sort_unstable();
        for (_, simple, _, _, c, x) in attempts {
            if self.completed_dram_chain(c) {
                self.merge_as_source(c, x, simple);
            }
        }
        for &(_, end) in &ends {
            if let Some(c) = end {
                // A chain no decision touched still spills its output to DRAM; decline it
                // if that makes it lose.
                self.decline_if_losing(c);
            }
        }
    }

    /// The non-concat chain whose last op is `x`.
    fn own_chain_end(&self, x: u32) -> Option<usize> {
        let c = self.chain_ending_at(x)? as usize;
        self.chain_is(c, |ch| !ch.concat).then_some(c)
    }

    /// Concat chains resolved at `x`: a concat is resolved at the earliest of its
    /// producers, so that every source is still ahead or here.
    fn concats_at(&mut self, x: u32) {
        // The topology outlives the walk's state: its users are read in place, a user that
        // repeats (two operands of one op) once.
        let topo = self.topo;
        let mut before = None;
        for y in topo.ops[x as usize].users.iter().map(|u| u.user) {
            if before.replace(y) == Some(y) {
                continue;
            }
            if let Some(cy) = self.chain_of(y).map(|c| c as usize)
                && self.chain_is(cy, |ch| ch.concat && ch.state == ChainState::Built)
                && self.earliest_producer(y) == Some(x)
                && let Err(why) = self.try_concat(cy, y)
                && let Some(ch) = self.chain_mut(cy)
            {
                ch.spill_reason = format!("concat not merged: {why}");
            }
        }
        if let Some(cy) = self.chain_of(x).map(|c| c as usize)
            && self.chain_is(cy, |ch| ch.concat)
            && self.earliest_producer(x).is_none()
            && let Some(ch) = self.chain_mut(cy)
        {
            ch.spill_reason = "concat not merged: an input is not produced by a chain".to_owned();
        }
    }

    /// The scheduled producer of op `y`'s operands that runs first.
    fn earliest_producer(&self, y: u32) -> Option<u32> {
        self.op(y)
            .operands
            .iter()
            .filter_map(|v| {
                let (op, _) = self.src.result_of(*v)?;
                (self.pos[op as usize] != u32::MAX).then_some(op)
            })
            .min_by_key(|&op| self.pos[op as usize])
    }

    fn decline_if_losing(&mut self, c: usize) {
        let Some(chain) = self.chain(c) else { return };
        if chain.state != ChainState::Completed
            || chain.concat
            || self.touched.contains(&(c as u32))
        {
            return;
        }
        // The chain's cost and fallback come with its chunk's base plan.
        let Some(outcome) = self.outcome(c as u32) else { return };
        let Some(cost) = outcome.cost else { return };
        if !cost.loses() {
            return;
        }
        let spill = if chain.spill == SpillLocation::Dram { cost.spill_ns } else { 0 };
        let reason = decline_reason(&cost, spill);
        let Some(fallback) = outcome.fallback.clone() else { return };
        let members = chain.ops.clone();
        if let Some(ch) = self.chain_mut(c) {
            decline(ch, &reason);
        }
        for (&i, (layout, config, user)) in members.iter().zip(fallback.iter()) {
            let p = self.plan_mut(i);
            decline_op(p, &reason, layout.clone(), config.clone(), user);
        }
    }

    /// A chain's spill after its last op, and a DRAM spill for any of its values returned
    /// while still in L1: the chain is final once the walk leaves its last op.
    fn finish_chain(&mut self, c: usize) {
        // Each op's spill reads only its own plan and the chain, which placing the spills
        // does not change: they are worked out first, without copying the chain.
        let Some(chain) = self.chain(c) else { return };
        let spills: Vec<(u32, Conversion)> = chain
            .ops
            .iter()
            .filter_map(|&i| {
                let (layout, why) = self.chain_spill(i, chain)?;
                let reason = match why {
                    SpillWhy::ChainReturned => {
                        "spill to DRAM: the chain's output is returned".to_owned()
                    }
                    SpillWhy::Chain => format!("spill to DRAM: {}", chain.spill_reason),
                    SpillWhy::L1Interleaved => format!("to L1 interleaved: {}", chain.spill_reason),
                    SpillWhy::Returned => "spill to DRAM: the value is returned".to_owned(),
                };
                Some((i, Conversion { layout, reason: reason.into() }))
            })
            .collect();
        for (i, spill) in spills {
            self.plan_mut(i).spill = Some(spill);
        }
    }

    /// The spill [`Self::finish_chain`] gives op `i` of `chain` as the plan stands, and why.
    fn chain_spill(&self, i: u32, chain: &ChainPlan) -> Option<(TtnnLayout, SpillWhy)> {
        self.chain_spill_of(i, self.plan(i), chain)
    }

    /// [`Merger::chain_spill`] of op `i` whose plan is `p`.
    fn chain_spill_of(
        &self,
        i: u32,
        p: &OpPlan,
        chain: &ChainPlan,
    ) -> Option<(TtnnLayout, SpillWhy)> {
        let layout = p.layout.as_ref().filter(|l| l.is_l1())?;
        if p.spill.is_some() {
            return None;
        }
        let returned = self.topo.ops[i as usize].returned;
        let last = chain.ops.last() == Some(&i);
        let why = match chain.spill {
            SpillLocation::Dram if last && returned => SpillWhy::ChainReturned,
            SpillLocation::Dram if last => SpillWhy::Chain,
            SpillLocation::L1Interleaved if last => SpillWhy::L1Interleaved,
            // A value returned while still in L1 (a merged output) must reach DRAM.
            _ if returned && p.chain.is_some() => SpillWhy::Returned,
            _ => return None,
        };
        Some((self.interleaved(i, why == SpillWhy::L1Interleaved, layout)?, why))
    }

    /// The conversion that will run right after op `i`: its spill, or for an op whose chain
    /// the walk has not finished yet, the spill that chain will get as the plan stands.
    /// Decisions validate ops ahead of the walk, which must see those spills as tt-mlir's
    /// merge pass sees them on the finished `df-sharding` plan.
    fn planned_spill(&self, i: u32) -> Option<TtnnLayout> {
        let p = self.plan(i);
        if let Some(s) = &p.spill {
            return Some(s.layout.clone());
        }
        // An output outside L1 gets no spill whatever its chain (`chain_spill`): the chain
        // is not looked up, which for an op of another chunk is a memo fetch or two.
        if !p.layout.as_ref().is_some_and(TtnnLayout::is_l1) {
            return None;
        }
        let chain = self.chain(self.chain_of(i)? as usize)?;
        self.chain_spill_of(i, p, chain).map(|(layout, _)| layout)
    }

    /// Drops expected operands that the incoming value already satisfies, so only real
    /// conversions remain.
    fn prune_conversions(&mut self, here: &[u32]) {
        for &i in here {
            let n = self.plan(i).expected_operands.len();
            for k in 0..n {
                let Some(expected) = self.plan(i).expected_operands[k].clone() else { continue };
                let incoming = self.incoming(i, k);
                let slot = &mut self.plan_mut(i).expected_operands[k];
                if incoming.as_ref() == Some(&expected.layout) {
                    *slot = None;
                } else if expected.reason.is_empty() {
                    *slot = Some(Conversion {
                        reason: "reshard to the layout the op was validated with".into(),
                        ..expected
                    });
                }
            }
        }
    }

    /// The chunk's final plans, and what the next chunk needs.
    fn hand_on(mut self, here: &[u32]) -> (PlanSlice, Carry) {
        let k = self.k;
        let layout = self.layout;
        let chunk_of = |i: u32| layout.chunk_of.get(i as usize).copied();
        let later = |i: u32| chunk_of(i).is_some_and(|c| c > k);
        let last_of = |c: u32| Some(c);
        let hi = layout.bounds.get(k as usize + 1).copied().unwrap_or(0);
        let mut own = std::mem::take(&mut self.own).into_iter();
        let plans: Vec<OpPlan> =
            here.iter().map(|_| own.next().flatten().unwrap_or_else(|| NO_PLAN.clone())).collect();
        let mut chains: Vec<(u32, ChainPlan)> = Vec::new();
        let mut carry = Carry::default();
        for (c, p) in self.chains.drain() {
            let Some(last) = last_of(c) else { continue };
            if later(last) {
                carry.chains.insert(last, p);
            } else if chunk_of(last) == Some(k) {
                chains.push((c, p));
            }
        }
        // In chunk order, as `chunk_chains` lists them: op plans name chains by that index.
        chains.sort_by_key(|(c, _)| layout.at.get(*c as usize).copied());
        carry.plans = self.others.into_iter().filter(|(i, _)| later(*i)).collect();
        carry.open = self.reservations.into_iter().filter(|r| r.end >= hi).collect();
        carry.residents = self
            .residents
            .into_iter()
            .filter(|(op, _)| carry.open.iter().any(|r| r.op == *op))
            .collect();
        let ahead = |c: u32| last_of(c).filter(|&l| later(l));
        carry.merged_target = self.merged_target.into_iter().filter_map(ahead).collect();
        carry.touched = self.touched.into_iter().filter_map(ahead).collect();
        let read_later = |i: u32| self.topo.ops[i as usize].users.iter().any(|u| later(u.user));
        carry.outputs = self
            .outputs
            .iter()
            .filter(|(i, _)| read_later(**i))
            .map(|(i, v)| (*i, v.clone()))
            .collect();
        for (&i, p) in here.iter().zip(&plans) {
            if read_later(i) {
                let spill = p.spill.as_ref().map(|s| s.layout.clone());
                carry.outputs.insert(i, (p.layout.clone(), spill));
            }
        }
        let slice = PlanSlice {
            ops: here.to_vec(),
            plans,
            chains: chains.into_iter().map(|(_, p)| p).collect(),
            merges: self.records,
        };
        (slice, carry)
    }
}

/// Why a chain that loses in L1 is declined, in numbers.
pub(crate) fn decline_reason(cost: &ChainCost, spill_ns: u64) -> String {
    format!(
        "the cost model estimates {:.1} µs in L1 (reshards and spill included) against {:.1} µs out of it",
        (cost.l1_ns + spill_ns) as f64 / 1000.0,
        cost.dram_ns as f64 / 1000.0
    )
}

/// Marks chain `c` declined.
pub(crate) fn decline(chain: &mut ChainPlan, reason: &str) {
    chain.state = ChainState::Declined;
    chain.failure = Some(reason.to_owned());
    chain.spill = SpillLocation::None;
    chain.spill_reason = String::new();
}

/// Puts an op of a declined chain back where it would be outside any chain.
pub(crate) fn decline_op(
    p: &mut OpPlan,
    reason: &str,
    layout: Option<TtnnLayout>,
    config: OpConfig,
    user: &[Option<crate::planning::Conversion>],
) {
    p.layout = layout;
    p.config = config;
    // A user's `insert-memreconfig` outlives the chain: it converts as outside any chain.
    for (k, e) in p.expected_operands.iter_mut().enumerate() {
        *e = user.get(k).cloned().flatten();
    }
    p.reason = format!("its chain was declined: {reason}").into();
}

impl<'a> Merger<'a> {
    fn active(&self, pos: u32) -> u64 {
        self.live.at(pos)
    }

    fn shape(&self, i: u32) -> Option<&[u64]> {
        self.facts(i).shape.as_deref()
    }

    /// Op `i`'s output interleaved in L1 (`l1`) or DRAM, with `from`'s data type and page
    /// layout; `None` when the output has no static shape.
    fn interleaved(&self, i: u32, l1: bool, from: &TtnnLayout) -> Option<TtnnLayout> {
        let dtype = from.data_type().unwrap_or(DataType::BF16);
        let page = from.page_layout();
        let key = (i, l1, dtype, page);
        if let Some(l) = self.spill_layouts.borrow().get(&key) {
            return Some(l.clone());
        }
        let shape = self.shape(i)?;
        let l = if l1 {
            TtnnLayout::l1_interleaved(shape, dtype, page, self.target.worker_grid())
        } else {
            TtnnLayout::dram_interleaved(shape, dtype, page)
        };
        self.spill_layouts.borrow_mut().insert(key, l.clone());
        Some(l)
    }

    /// The layout of operand `k`, as the plan stands (residents included), of the op with
    /// `facts` and plan `plan`: a validation reads every operand of the op and looks the op
    /// up once.
    fn input_layout(&self, facts: &OpFacts<'a>, plan: &OpPlan, k: usize) -> Option<TtnnLayout> {
        let producer = facts.operands.get(k).copied();
        if let Some(Producer::Op(op)) = producer
            && let Some(l) = self.residents.get(&op)
        {
            return Some(l.clone());
        }
        if let Some(exp) = plan.expected_operands.get(k).and_then(Option::as_ref) {
            return Some(exp.layout.clone());
        }
        self.incoming_from(producer?)
    }

    /// Validates op `i` with its planned output, optional operand substitutions, and
    /// `extra` bytes of other L1 resident while it runs. Returns the output the model
    /// produces, or an error text.
    fn validate(
        &self,
        i: u32,
        subst: &[(usize, TtnnLayout)],
        output: Option<&TtnnLayout>,
        config: Option<&OpConfig>,
        extra: u64,
    ) -> Result<TtnnLayout, String> {
        let facts = self.facts(i);
        let Some(sig) = &facts.sig else { return Err("no signature".to_owned()) };
        // An op with several results is not placed, but it runs, with the layouts it was
        // written with, and needs L1 next to what is resident: it is validated with its
        // first result as the output, as the verifier reads it.
        let op = facts.op.unwrap_or(&ir::NO_OP);
        let tensor_result = sig.tensor_result();
        let several = tensor_result.is_none() && op.results.len() > 1;
        let first = op.results.first().and_then(ir::Ty::as_tensor).filter(|_| several);
        let Some(result) = tensor_result.or(first) else {
            // Ops without a tensor result hold no L1 of their own; they pass.
            return Ok(NO_RESULT.clone());
        };
        let written = first.and_then(|t| t.layout.as_ref());
        let plan = self.plan(i);
        // Filled in place: nothing below validates another op while it is borrowed.
        let mut scratch = self.scratch.borrow_mut();
        scratch.query_inputs(sig.tensor_operands().count());
        let q = &mut scratch.query;
        let mut l1_inputs = 0u64;
        for (slot, (k, t)) in q.inputs.iter_mut().zip(sig.tensor_operands()) {
            facts::static_shape_into(t, &mut slot.shape);
            slot.layout = self.operand_layout(facts, plan, k, subst).unwrap_or_else(|| {
                let dtype = t.data_type().unwrap_or(DataType::BF16);
                TtnnLayout::dram_interleaved(&slot.shape, dtype, PageLayout::Tile)
            });
            l1_inputs += slot.layout.l1_bytes_per_core();
        }
        let out = output.or(plan.layout.as_ref()).or(written);
        q.output = match (out, &sig.kind) {
            (Some(l), OpKind::Matmul(_) | OpKind::Linear(_)) if l.is_sharded() => {
                OutputHint::Partial(l.partial())
            }
            (Some(l), _) => OutputHint::Layout(l.clone()),
            (None, _) => OutputHint::Null,
        };
        // The kind and config are often the last query's (a window validates ops of a few
        // kinds): a config with a matmul program or a conv's knobs allocates to clone.
        if q.kind != sig.kind {
            q.kind.clone_from(&sig.kind);
        }
        facts::static_shape_into(result, &mut q.output_shape);
        q.output_dtype = out
            .and_then(TtnnLayout::data_type)
            .or_else(|| result.data_type())
            .unwrap_or(DataType::BF16);
        let config = config.unwrap_or(&plan.config);
        if q.config != *config {
            q.config.clone_from(config);
        }
        q.l1_in_use = extra.saturating_add(l1_inputs);
        match self.model.query(self.target, q) {
            Ok(r) => Ok(r.output_layout),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Every scheduled op in positions `[from, to]`, and every spill right after one, still
    /// fits with `extra` more L1.
    fn window_fits(&self, from: u32, to: u32, extra: u64, skip: &[u32]) -> Result<(), String> {
        for p in from..=to.min(self.sched.len().saturating_sub(1) as u32) {
            let Some(&i) = self.sched.get(p as usize) else { break };
            if let Some(spill) = self.planned_spill(i) {
                self.spill_fits(i, &spill, extra)?;
            }
            if skip.contains(&i) {
                continue;
            }
            self.validate(i, &[], None, None, extra + self.active(p)).map_err(|e| {
                format!("`{}` at schedule position {p} would not fit: {e}", self.op(i).key)
            })?;
        }
        Ok(())
    }

    /// The `to_memory_config` from op `i`'s planned output to `to` fits next to what is
    /// resident at that point (the source itself, reservations, and `extra`).
    fn spill_fits(&self, i: u32, to: &TtnnLayout, extra: u64) -> Result<(), String> {
        let Some(from) = &self.plan(i).layout else { return Ok(()) };
        let Some(shape) = self.shape(i) else { return Ok(()) };
        // Filled in place, as in `validate`.
        let mut scratch = self.scratch.borrow_mut();
        scratch.query_inputs(1);
        let q = &mut scratch.query;
        q.kind = OpKind::ToMemoryConfig;
        for input in &mut q.inputs {
            input.shape.clear();
            input.shape.extend_from_slice(shape);
            input.layout.clone_from(from);
        }
        q.output_shape.clear();
        q.output_shape.extend_from_slice(shape);
        q.output_dtype = to.data_type().unwrap_or(DataType::BF16);
        q.output = OutputHint::Layout(to.clone());
        q.config = OpConfig::None;
        q.l1_in_use = from
            .l1_bytes_per_core()
            .saturating_add(extra)
            .saturating_add(self.active(self.pos[i as usize]));
        self.model.query(self.target, q).map(|_| ()).map_err(|e| {
            format!("the copy of `{}` out of its shard would not fit: {e}", self.op(i).key)
        })
    }

    /// Operand `k` of op `i` as merging sees it: a substitution being tried, else what the
    /// plan so far feeds it.
    fn operand_layout(
        &self,
        facts: &OpFacts<'a>,
        plan: &OpPlan,
        k: usize,
        subst: &[(usize, TtnnLayout)],
    ) -> Option<TtnnLayout> {
        subst
            .iter()
            .find(|(sk, _)| *sk == k)
            .map(|(_, l)| l.clone())
            .or_else(|| self.input_layout(facts, plan, k))
    }

    /// The estimated time of op `i` with operand substitutions and an optional output.
    fn op_time(&self, i: u32, subst: &[(usize, TtnnLayout)], output: Option<&TtnnLayout>) -> u64 {
        let facts = self.facts(i);
        let Some(sig) = &facts.sig else { return 0 };
        let Some(result) = sig.tensor_result() else { return 0 };
        let plan = self.plan(i);
        let Some(out) = output.or(plan.layout.as_ref()) else { return 0 };
        // Filled in place, as in `validate`.
        let mut scratch = self.scratch.borrow_mut();
        let mut n = 0;
        for (k, t) in sig.tensor_operands() {
            // An operand with no layout at all is left out.
            let Some(layout) =
                self.operand_layout(facts, plan, k, subst).or_else(|| t.layout.clone())
            else {
                continue;
            };
            let slot = scratch.cost_input(n);
            facts::static_shape_into(t, &mut slot.shape);
            slot.layout = layout;
            n += 1;
        }
        let s = &mut *scratch;
        facts::static_shape_into(result, &mut s.cost_output.shape);
        s.cost_output.layout = out.clone();
        self.costs
            .op_cost(
                self.target,
                &self.cost,
                &sig.kind,
                &s.cost_inputs[..n],
                &s.cost_output,
                &plan.config,
            )
            .total_ns
    }

    /// The estimated time of copying op `i`'s planned output into `to` (free if unchanged).
    fn copy_time(&self, i: u32, to: &TtnnLayout) -> u64 {
        let (Some(from), Some(shape)) = (self.plan(i).layout.clone(), self.shape(i)) else {
            return 0;
        };
        let from = TensorDesc::new(shape, from);
        self.costs.reshard_cost(self.target, &self.cost, &from, to).total_ns
    }

    /// The layout op `i`'s output spills to after a completed DRAM chain, if it is one.
    fn dram_spill(&self, i: u32) -> Option<TtnnLayout> {
        let layout = self.plan(i).layout.as_ref().filter(|l| l.is_l1())?;
        self.interleaved(i, false, layout)
    }

    /// `Err` unless a merge's estimated time (`after`) beats what it replaces (`before`).
    fn pays_off(before: u64, after: u64) -> Result<(), String> {
        if after < before {
            Ok(())
        } else {
            Err(format!(
                "not faster: the cost model estimates {:.1} µs against {:.1} µs without it",
                after as f64 / 1000.0,
                before as f64 / 1000.0
            ))
        }
    }

    fn last_use_pos(&self, i: u32) -> u32 {
        self.topo.ops[i as usize]
            .users
            .iter()
            .map(|u| self.pos[u.user as usize])
            .filter(|&p| p != u32::MAX)
            .max()
            .unwrap_or(self.pos[i as usize])
    }

    fn out_bytes(&self, i: u32) -> u64 {
        self.residents
            .get(&i)
            .or(self.plan(i).layout.as_ref())
            .map_or(0, TtnnLayout::l1_bytes_per_core)
    }

    fn completed_dram_chain(&self, c: usize) -> bool {
        self.chain_is(c, |ch| {
            ch.state == ChainState::Completed && ch.spill == SpillLocation::Dram && !ch.concat
        })
    }

    fn chain_of_last(&self, i: u32) -> Option<usize> {
        self.chain_ending_at(i).map(|c| c as usize)
    }

    fn keep(&mut self, c: usize, spill: SpillLocation, reason: String) {
        if let Some(chain) = self.chain_mut(c) {
            chain.spill = spill;
            chain.spill_reason = reason;
        }
        self.touched.insert(c as u32);
    }

    fn reserve(&mut self, op: u32, layout: TtnnLayout, end: u32) {
        let bytes = layout.l1_bytes_per_core();
        self.residents.insert(op, layout);
        let start = self.pos[op as usize];
        self.live.add(start, end, bytes);
        self.plan_mut(op).reserved += bytes;
        self.touch_op(op);
        self.reservations.push(Reservation { op, start, end, bytes });
    }

    fn try_concat(&mut self, c: usize, x: u32) -> Result<(), String> {
        let Some(sig) = self.sig(x) else {
            return Err("no signature".to_owned());
        };
        let Some(dim) = sig.kind.is_concat() else { return Err("not a concat".to_owned()) };
        let mut sources = Vec::new();
        for v in &self.op(x).operands {
            let Some((op, _)) = self.src.result_of(*v) else {
                return Err("an input is not produced by a chain".to_owned());
            };
            let sc = self.chain_of_last(op).ok_or("an input is not the last op of a chain")?;
            if !self.completed_dram_chain(sc) {
                return Err("an input chain is not completed".to_owned());
            }
            if self.topo.ops[op as usize].num_uses != 1 {
                return Err("an input chain's output is also used elsewhere (a fork)".to_owned());
            }
            sources.push((sc, op));
        }
        let layouts: Vec<TtnnLayout> = sources
            .iter()
            .map(|(_, op)| {
                self.plan(*op).layout.clone().unwrap_or_else(|| {
                    TtnnLayout::dram_interleaved(&[1], DataType::BF16, PageLayout::Tile)
                })
            })
            .collect();
        let first = layouts.first().ok_or("a concat without inputs")?.clone();
        let rank = sig.tensor_result().map_or(0, |t| t.shape.len() as i64);
        let d = if dim < 0 { dim + rank } else { dim };
        let needed = if d == rank - 1 {
            TensorMemoryLayout::HeightSharded
        } else if d == rank - 2 {
            TensorMemoryLayout::WidthSharded
        } else {
            return Err("concat along an outer dim has no sharding rule".to_owned());
        };
        if layouts.iter().any(|l| l.memory_layout != Some(needed) || l.grid2d() != first.grid2d()) {
            return Err(format!(
                "inputs must all be {needed} on one grid for a concat along dim {d}"
            ));
        }
        let shape = self.shape(x).ok_or("dynamic shape")?;
        let out = TtnnLayout::sharded(
            shape,
            first.data_type().unwrap_or(DataType::BF16),
            first.page_layout(),
            needed,
            first.grid2d(),
            self.target.worker_grid(),
        )
        .map_err(|e| e.to_string())?;
        let subst: Vec<(usize, TtnnLayout)> = layouts.iter().cloned().enumerate().collect();
        let actual = self.validate(
            x,
            &subst,
            Some(&out),
            Some(&OpConfig::None),
            self.active(self.pos[x as usize]),
        )?;
        // Cumulative pressure: every op between the first input and the concat runs with the
        // inputs produced so far held in L1.
        let mut order: Vec<(usize, u32)> = sources.clone();
        order.sort_by_key(|(_, op)| self.pos[*op as usize]);
        let concat_pos = self.pos[x as usize];
        for (n, (_, op)) in order.iter().enumerate() {
            let held: u64 = order[..=n].iter().map(|(_, o)| self.out_bytes(*o)).sum();
            let from = self.pos[*op as usize] + 1;
            let to = order
                .get(n + 1)
                .map_or(concat_pos, |(_, o)| self.pos[*o as usize])
                .saturating_sub(1);
            if from <= to {
                self.window_fits(from, to, held, &[])?;
            }
        }
        let spilled: Vec<(usize, TtnnLayout)> = sources
            .iter()
            .enumerate()
            .filter_map(|(k, (_, op))| self.dram_spill(*op).map(|d| (k, d)))
            .collect();
        let before = sources
            .iter()
            .zip(&spilled)
            .map(|((_, op), (_, d))| self.copy_time(*op, d))
            .sum::<u64>()
            + self.op_time(x, &spilled, None);
        let after = self.op_time(x, &subst, Some(&actual));
        Self::pays_off(before, after)?;
        for (sc, op) in &sources {
            let l = self.plan(*op).layout.clone().unwrap_or_else(|| actual.clone());
            self.keep(*sc, SpillLocation::None, "kept in L1 for a concat (N-way merge)".to_owned());
            self.reserve(*op, l, concat_pos);
        }
        self.plan_mut(x).layout = Some(actual.clone());
        if let Some(chain) = self.chain_mut(c) {
            chain.state = ChainState::Completed;
            chain.spill_reason = "concat output spills to DRAM".to_owned();
        }
        let concat = self.plan_mut(x);
        concat.config = OpConfig::None;
        concat.reason = "concat chain: all inputs stay in L1 (N-way merge)".into();
        for (k, (_, op)) in sources.iter().enumerate() {
            if let Some(l) = self.plan(*op).layout.clone() {
                self.set_input(x, k as u32, l);
            }
        }
        self.record(MergeRecord {
            kind: MergeKind::Concat,
            sources: sources.iter().map(|(_, o)| *o).collect(),
            join: x,
            description: format!("{} inputs of `{}` stay in L1", sources.len(), self.op(x).key),
        });
        Ok(())
    }

    /// (a) A completed chain's last op `src` spills to L1 interleaved instead of DRAM when
    /// its only user is a reshape scheduled right after it.
    fn reshape_spill(&mut self, src: u32) {
        let p = self.pos[src as usize] + 1;
        let Some(&x) = self.sched.get(p as usize) else { return };
        if self.op(x).name != "ttnn.reshape" {
            return;
        }
        // (a) The reshape's producer spills to L1 interleaved instead of DRAM when the
        // reshape is its only user and runs right after it.
        if let Some(&v) = self.op(x).operands.first()
            && let Some((op, _)) = self.src.result_of(v)
            && op == src
            && let Some(sc) = self.chain_of_last(src)
            && self.completed_dram_chain(sc)
            && self.topo.ops[src as usize].num_uses == 1
            && self.pos[src as usize] + 1 == p
            && let Some(shape) = self.shape(src)
            && let Some(layout) = self.plan(src).layout.clone()
        {
            let l1 = TtnnLayout::l1_interleaved(
                shape,
                layout.data_type().unwrap_or(DataType::BF16),
                layout.page_layout(),
                self.target.worker_grid(),
            );
            // The checks are pure: the fit checks (one op-model answer each) go before the
            // costs (two op costs and two reshards).
            let pays = || {
                self.dram_spill(src).is_some_and(|dram| {
                    let before = self.copy_time(src, &dram) + self.op_time(x, &[(0, dram)], None);
                    let after =
                        self.copy_time(src, &l1) + self.op_time(x, &[(0, l1.clone())], None);
                    after < before
                })
            };
            if self.validate(x, &[(0, l1.clone())], None, None, self.active(p)).is_ok()
                && self.spill_fits(src, &l1, 0).is_ok()
                && pays()
            {
                self.keep(
                    sc,
                    SpillLocation::L1Interleaved,
                    "feeds a reshape right after it".to_owned(),
                );
                self.plan_mut(src).spill = Some(Conversion {
                    layout: l1,
                    reason: "to L1 interleaved: feeds a reshape right after it".into(),
                });
            }
        }
    }

    /// (b) A reshape's own output in L1 interleaved, reserved until its last use.
    fn reshape_output(&mut self, x: u32) {
        if self.op(x).name != "ttnn.reshape" {
            return;
        }
        let p = self.pos[x as usize];
        if self.topo.ops[x as usize].returned || self.plan(x).chain.is_some() {
            return;
        }
        let Some(shape) = self.shape(x) else { return };
        let Some(cur) = self.plan(x).layout.clone() else { return };
        if cur.is_l1() {
            return;
        }
        let l1 = TtnnLayout::l1_interleaved(
            shape,
            cur.data_type().unwrap_or(DataType::BF16),
            cur.page_layout(),
            self.target.worker_grid(),
        );
        if self.validate(x, &[], Some(&l1), None, self.active(p)).is_err() {
            return;
        }
        let end = self.last_use_pos(x);
        let bytes = l1.l1_bytes_per_core();
        let users: Vec<(u32, usize)> =
            self.topo.ops[x as usize].users.iter().map(|u| (u.user, u.operand as usize)).collect();
        let users_ok = || {
            users.iter().all(|(u, k)| {
                let at = self.active(self.pos[*u as usize]);
                self.validate(*u, &[(*k, l1.clone())], None, None, at).is_ok()
            })
        };
        let skip: Vec<u32> = users.iter().map(|(u, _)| *u).collect();
        // In order, each check only if the ones before it pass.
        let pays = || {
            let before: u64 = self.op_time(x, &[], None)
                + users.iter().map(|&(u, _)| self.op_time(u, &[], None)).sum::<u64>();
            let after: u64 = self.op_time(x, &[], Some(&l1))
                + users
                    .iter()
                    .map(|&(u, k)| self.op_time(u, &[(k, l1.clone())], None))
                    .sum::<u64>();
            after < before
        };
        if users_ok() && pays() && self.window_fits(p + 1, end, bytes, &skip).is_ok() {
            let plan = self.plan_mut(x);
            plan.layout = Some(l1.clone());
            plan.reason = "reshape output kept in L1 interleaved for its consumers".into();
            self.reserve(x, l1, end);
            self.record(MergeRecord {
                kind: MergeKind::Reshape,
                sources: vec![x],
                join: x,
                description: format!("`{}` output in L1 interleaved", self.op(x).key),
            });
        }
    }

    /// A completed chain whose last op is a fork keeps its output in L1 (sharded, else L1
    /// interleaved) for all its users.
    fn fork(&mut self, c: usize) {
        if !self.completed_dram_chain(c) {
            return;
        }
        let Some(&last) = self.chain(c).and_then(|ch| ch.ops.last()) else { return };
        let t = &self.topo.ops[last as usize];
        if t.num_uses < 2 || t.returned {
            return;
        }
        let Some(sharded) = self.plan(last).layout.clone() else { return };
        if self.shape(last).is_none() {
            return;
        }
        let users: Vec<(u32, usize)> =
            t.users.iter().map(|u| (u.user, u.operand as usize)).collect();
        let end = self.last_use_pos(last);
        let fork_pos = self.pos[last as usize];
        for spill in [SpillLocation::None, SpillLocation::L1Interleaved] {
            // The L1-interleaved layout is built only when the sharded output did not stay.
            let layout = match (spill, self.shape(last)) {
                (SpillLocation::None, _) => sharded.clone(),
                (_, Some(shape)) => TtnnLayout::l1_interleaved(
                    shape,
                    sharded.data_type().unwrap_or(DataType::BF16),
                    sharded.page_layout(),
                    self.target.worker_grid(),
                ),
                (_, None) => break,
            };
            let mut keep_activation = Vec::new();
            let users_ok = users.iter().all(|&(u, k)| {
                let sig = &self.sig(u);
                if layout.is_sharded() && sig.as_ref().is_some_and(|s| s.kind.is_reduction()) {
                    return false; // tt-metal#34951
                }
                let at = self.active(self.pos[u as usize]);
                if self.validate(u, &[(k, layout.clone())], None, None, at).is_ok() {
                    return true;
                }
                // A conv2d that deallocates its activation cannot read a forked input.
                if let OpConfig::Conv2d { conv, compute, slice } = &self.plan(u).config
                    && conv.deallocate_activation == Some(true)
                {
                    let mut c2 = conv.clone();
                    c2.deallocate_activation = Some(false);
                    let cfg = OpConfig::Conv2d { conv: c2, compute: *compute, slice: *slice };
                    if self.validate(u, &[(k, layout.clone())], None, Some(&cfg), at).is_ok() {
                        keep_activation.push(u);
                        return true;
                    }
                }
                false
            });
            let skip: Vec<u32> = users.iter().map(|(u, _)| *u).collect();
            // In order, each check only if the ones before it pass.
            let copy_fits =
                || spill == SpillLocation::None || self.spill_fits(last, &layout, 0).is_ok();
            let pays = || {
                self.dram_spill(last).is_some_and(|dram| {
                    let before = self.copy_time(last, &dram)
                        + users
                            .iter()
                            .map(|&(u, k)| self.op_time(u, &[(k, dram.clone())], None))
                            .sum::<u64>();
                    let after = self.copy_time(last, &layout)
                        + users
                            .iter()
                            .map(|&(u, k)| self.op_time(u, &[(k, layout.clone())], None))
                            .sum::<u64>();
                    after < before
                })
            };
            if users_ok
                && copy_fits()
                && pays()
                && self.window_fits(fork_pos + 1, end, layout.l1_bytes_per_core(), &skip).is_ok()
            {
                let reason = if spill == SpillLocation::None {
                    "fork: the sharded output stays in L1 for all users".to_owned()
                } else {
                    "fork: the output goes to L1 interleaved for all users".to_owned()
                };
                self.keep(c, spill, reason.clone());
                if spill == SpillLocation::L1Interleaved {
                    self.plan_mut(last).spill = Some(Conversion {
                        layout: layout.clone(),
                        reason: format!("to L1 interleaved: {reason}").into(),
                    });
                }
                for &(u, k) in &users {
                    self.set_input(u, k as u32, layout.clone());
                }
                for u in keep_activation {
                    if let OpConfig::Conv2d { conv, .. } = &mut self.plan_mut(u).config {
                        conv.deallocate_activation = Some(false);
                    }
                }
                self.reserve(last, layout, end);
                self.record(MergeRecord {
                    kind: MergeKind::Fork,
                    sources: vec![last],
                    join: users[0].0,
                    description: format!("`{}`: {reason}", self.op(last).key),
                });
                break;
            }
        }
    }

    /// A candidate source for operand `k` of op `j`: the last op of another completed chain
    /// spilling to DRAM, single use, scheduled before.
    fn source_for(&self, b: usize, j: u32, k: usize) -> Option<(usize, u32)> {
        let (op, _) = self.src.result_of(*self.op(j).operands.get(k)?)?;
        let sc = self.chain_of_last(op)?;
        (sc != b
            && self.completed_dram_chain(sc)
            && self.topo.ops[op as usize].num_uses == 1
            && self.pos[op as usize] < self.pos[j as usize])
            .then_some((sc, op))
    }

    /// The chain `x` (the last op of chain `c`) would merge into: the schedule position of
    /// that chain's first op, and whether `x` is the earlier input of a possible 3-way merge.
    fn merge_target(&self, c: usize, x: u32) -> Option<(u32, bool)> {
        let t = &self.topo.ops[x as usize];
        if t.num_uses != 1 {
            return None;
        }
        let j = t.users.first()?.user;
        let b = self.chain_of(j)? as usize;
        if b == c {
            return None;
        }
        let &first = self.chain(b)?.ops.first()?;
        let n_tensor_operands = self.sig(first).as_ref().map_or(0, |s| s.tensor_operands().count());
        let three_way = j == first
            && n_tensor_operands == 2
            && match (self.source_for(b, first, 0), self.source_for(b, first, 1)) {
                (Some(a), Some(other)) => {
                    a.0 != other.0
                        && self.pos[a.1 as usize].min(self.pos[other.1 as usize])
                            == self.pos[x as usize]
                }
                _ => false,
            };
        Some((self.pos[first as usize], three_way))
    }

    /// Chain merging with `x`, the last op of chain `c`, as the source: a 3-way merge into a
    /// two-input join when `x` is the join's earlier input (`simple` false), else A->B into
    /// the chain of its user. Decided here, at the source, so that every effect lies ahead.
    fn merge_as_source(&mut self, c: usize, x: u32, simple: bool) {
        let t = &self.topo.ops[x as usize];
        if t.num_uses != 1 {
            return;
        }
        let Some(u) = t.users.first().copied() else { return };
        let (j, k) = (u.user, u.operand as usize);
        let Some(b) = self.chain_of(j).map(|b| b as usize) else { return };
        if b == c
            || self.merged_target.contains(&(b as u32))
            || !self.chain_is(b, |ch| ch.state == ChainState::Completed && !ch.concat)
        {
            return;
        }
        let Some(&first) = self.chain(b).and_then(|ch| ch.ops.first()) else { return };
        let n_tensor_operands = self.sig(first).as_ref().map_or(0, |s| s.tensor_operands().count());
        if !simple {
            // 3-way: both inputs of a two-input first op come from chains.
            if j == first
                && n_tensor_operands == 2
                && let (Some(a), Some(other)) =
                    (self.source_for(b, first, 0), self.source_for(b, first, 1))
                && a.0 != other.0
                && self.pos[a.1 as usize].min(self.pos[other.1 as usize]) == self.pos[x as usize]
                && self.try_three_way(b, first, a, other).is_ok()
            {
                self.merged_target.insert(b as u32);
            }
            return;
        }
        // A->B on any operand but the chain edge (operand 0 of a later op).
        if k == 0 && j != first {
            return;
        }
        if k == 0 && !(n_tensor_operands == 1 || self.chain_is(c, |ch| ch.concat)) {
            return;
        }
        if self.source_for(b, j, k).is_some() && self.try_simple(b, j, k, (c, x)).is_ok() {
            self.merged_target.insert(b as u32);
        }
    }

    fn try_simple(
        &mut self,
        b: usize,
        join: u32,
        k: usize,
        (sc, src): (usize, u32),
    ) -> Result<(), String> {
        let layout = self.plan(src).layout.clone().ok_or("no layout")?;
        let bytes = layout.l1_bytes_per_core();
        let join_pos = self.pos[join as usize];
        // Ops between the source's end and the join hold the source's output.
        self.window_fits(
            self.pos[src as usize] + 1,
            join_pos.saturating_sub(1),
            bytes,
            &self.chain_ops(b),
        )?;
        // B's ops up to the join, the join with the source's layout substituted.
        for j in self.chain_ops(b) {
            let at = self.active(self.pos[j as usize]);
            if j == join {
                let produced = self.validate(j, &[(k, layout.clone())], None, None, at)?;
                if Some(&produced) != self.plan(j).layout.as_ref() {
                    return Err("the join would produce a different layout".to_owned());
                }
                self.check_shrink(j, &layout)?;
                break;
            }
            self.validate(j, &[], None, None, at + bytes)?;
        }
        // Fragmentation check on the op after the join (tt-mlir's extra check).
        if let Some(&after) = self.sched.get(join_pos as usize + 1) {
            self.validate(after, &[], None, None, bytes + self.active(join_pos + 1))
                .map_err(|e| format!("fragmentation check failed: {e}"))?;
        }
        if let Some(dram) = self.dram_spill(src) {
            let before = self.copy_time(src, &dram) + self.op_time(join, &[(k, dram)], None);
            let after = self.op_time(join, &[(k, layout.clone())], None);
            Self::pays_off(before, after)?;
        }
        let into = &self.op(join).key;
        self.keep(
            sc,
            SpillLocation::None,
            format!("merged into the chain of `{into}` (stays in L1)"),
        );
        self.reserve(src, layout.clone(), join_pos);
        self.set_input(join, k as u32, layout);
        self.record(MergeRecord {
            kind: MergeKind::Simple,
            sources: vec![src],
            join,
            description: format!(
                "`{}` stays in L1 for operand {k} of `{}`",
                self.op(src).key,
                self.op(join).key
            ),
        });
        Ok(())
    }

    fn try_three_way(
        &mut self,
        b: usize,
        join: u32,
        (ac, a): (usize, u32),
        (cc, c): (usize, u32),
    ) -> Result<(), String> {
        let _ = b;
        let (la, lc) = (
            self.plan(a).layout.clone().ok_or("no layout")?,
            self.plan(c).layout.clone().ok_or("no layout")?,
        );
        let (ba, bc) = (la.l1_bytes_per_core(), lc.l1_bytes_per_core());
        let (pa, pc) = (self.pos[a as usize], self.pos[c as usize]);
        let (first, second, lfirst, bfirst) =
            if pa < pc { (a, c, &la, ba) } else { (c, a, &lc, bc) };
        let _ = lfirst;
        let second_chain = if pa < pc { cc } else { ac };
        let start = self
            .chain_ops(second_chain)
            .first()
            .map_or(self.pos[second as usize], |&s| self.pos[s as usize]);
        // (i) ops between the first source's end and the second chain's start.
        self.window_fits(self.pos[first as usize] + 1, start.saturating_sub(1), bfirst, &[])?;
        // (ii) every op of the second chain with the first source held.
        for o in self.chain_ops(second_chain) {
            self.validate(o, &[], None, None, bfirst + self.active(self.pos[o as usize]))?;
        }
        // (iii) the join with both sharded inputs.
        let produced = self.validate(
            join,
            &[(0, la.clone()), (1, lc.clone())],
            None,
            None,
            self.active(self.pos[join as usize]),
        )?;
        if Some(&produced) != self.plan(join).layout.as_ref() {
            return Err("the join would produce a different layout".to_owned());
        }
        self.check_shrink(join, &la)?;
        self.check_shrink(join, &lc)?;
        // (iv) fragmentation check.
        let jp = self.pos[join as usize];
        if let Some(&after) = self.sched.get(jp as usize + 1) {
            self.validate(after, &[], None, None, ba + bc + self.active(jp + 1))
                .map_err(|e| format!("fragmentation check failed: {e}"))?;
        }
        if let (Some(da), Some(dc)) = (self.dram_spill(a), self.dram_spill(c)) {
            let before = self.copy_time(a, &da)
                + self.copy_time(c, &dc)
                + self.op_time(join, &[(0, da), (1, dc)], None);
            let after = self.op_time(join, &[(0, la.clone()), (1, lc.clone())], None);
            Self::pays_off(before, after)?;
        }
        self.keep(ac, SpillLocation::None, "3-way merge: stays in L1 for the join".to_owned());
        self.keep(cc, SpillLocation::None, "3-way merge: stays in L1 for the join".to_owned());
        self.reserve(a, la.clone(), jp);
        self.reserve(c, lc.clone(), jp);
        self.set_input(join, 0, la);
        self.set_input(join, 1, lc);
        self.record(MergeRecord {
            kind: MergeKind::ThreeWay,
            sources: vec![a, c],
            join,
            description: format!(
                "`{}` and `{}` stay in L1 for `{}`",
                self.op(a).key,
                self.op(c).key,
                self.op(join).key
            ),
        });
        Ok(())
    }

    /// tt-metal#34765: add/multiply/minimum must not shrink a sharded input onto fewer cores.
    fn check_shrink(&self, join: u32, input: &TtnnLayout) -> Result<(), String> {
        let Some(sig) = &self.sig(join) else { return Ok(()) };
        let out_cores = self.plan(join).layout.as_ref().map_or(0, TtnnLayout::num_cores);
        if sig.kind.rejects_eltwise_core_shrink()
            && input.is_sharded()
            && out_cores < input.num_cores()
        {
            return Err("eltwise core shrink (tt-metal#34765)".to_owned());
        }
        Ok(())
    }
}
