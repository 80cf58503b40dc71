//! The plan in chunks: consecutive runs of the schedule that downstream queries (the cost, the
//! final IR) read one at a time, so that an override re-derives only the chunks it changes.
//!
//! A function-wide value rebuilt after every override costs time in proportion to the
//! function even when one op changed (a salsa memo fetch and its clone alone cost about a
//! microsecond per op). Chunks keep that work in proportion to the change: each chunk is its
//! own memo, compared on re-execution, so an unchanged chunk stops the change there.
//!
//! Chunk boundaries never split an L1 chain (chains are contiguous in the schedule), so
//! everything decided about a chain lives in one chunk.

use std::sync::Arc;

use base_db::{Policy, TargetInput};
use ir::FuncId;

use opmodel::OpConfig;
use ttnn_types::TtnnLayout;

use crate::{
    Db,
    chain_graph::{ChainBlocks, ChainId},
    merge::{Carry, ChunkInputs, WalkSource, decline, decline_op, decline_reason, walk_chunk},
    planning::{
        ChainPlan, ChainState, MergeRecord, OpPlan, PartsChunk, SpillLocation, plan_parts_chunk,
    },
    problem::Reads,
    scheduling::{func_topology, schedule},
};

/// At most about this many chunks per function: chunk `k` reads the carry of chunk `k - 1`,
/// so re-validating the last chunk recurses through all of them, and the stack (2 MiB on a
/// test thread, 8 MiB on a language server worker) bounds how deep that may go. Asking for
/// the last chunk's plan after an edit at the first, 1,000 chunks needed 1-2 MiB in a
/// release build; 256 chunks fit in 1 MiB in a debug build, and the tests' functions stay
/// under that. 512 lets a 10k-op function have chunks of the default 32 ops.
const MAX_CHUNKS: usize = 512;

/// How a function's ops split into chunks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChunkLayout {
    /// Body indices in chunk order: the schedule, then the unscheduled ops in body order.
    pub order: Vec<u32>,
    /// Chunk `k` covers `order[bounds[k] .. bounds[k + 1]]`.
    pub bounds: Vec<u32>,
    /// Per op (body index): its chunk.
    pub chunk_of: Vec<u32>,
    /// Per op (body index): its index in `order`.
    pub at: Vec<u32>,
    /// How many of `order` are scheduled: the ops after them (device handles, `ttnn.empty`)
    /// form the last chunk, and every chunk reads their plans.
    pub scheduled: u32,
}

impl ChunkLayout {
    #[must_use]
    pub fn len(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body indices of chunk `k`'s ops, in order.
    #[must_use]
    pub fn ops(&self, k: usize) -> &[u32] {
        match (self.bounds.get(k), self.bounds.get(k + 1)) {
            (Some(&lo), Some(&hi)) => &self.order[lo as usize..hi as usize],
            _ => &[],
        }
    }

    /// Chunk `k`'s range in `order`.
    #[must_use]
    pub fn range(&self, k: usize) -> std::ops::Range<usize> {
        match (self.bounds.get(k), self.bounds.get(k + 1)) {
            (Some(&lo), Some(&hi)) => lo as usize..hi as usize,
            _ => 0..0,
        }
    }

    /// The chunk of the unscheduled ops, if there are any: the last.
    #[must_use]
    pub fn unscheduled_chunk(&self) -> Option<u32> {
        (self.order.len() > self.scheduled as usize).then(|| self.len().saturating_sub(1) as u32)
    }

    /// Op `i`'s (body index) chunk and its index inside that chunk.
    #[must_use]
    pub fn locate(&self, i: u32) -> Option<(u32, usize)> {
        let k = *self.chunk_of.get(i as usize)?;
        let at = *self.at.get(i as usize)?;
        Some((k, (at - self.bounds[k as usize]) as usize))
    }
}

/// The chunks of a function: about `plan_chunk_ops` (an option) scheduled ops each (more
/// in very large functions), cut only between
/// chains; the unscheduled ops (device handles, `ttnn.empty`) form the last chunk.
#[salsa::tracked(returns(clone))]
pub fn chunk_layout(db: &dyn Db, func: FuncId) -> Arc<ChunkLayout> {
    let sched = schedule(db, func);
    // The chains near each cut, not the function's gathered chains: a chain that changes
    // far from any cut leaves this value as it was. The chains of the graph alone, so
    // that the chunks are the same with and without overrides (the chains with overrides
    // end at these cuts, see `chain_block`) and a chunk's plan without overrides can stand
    // for its plan with them wherever the overrides do not reach.
    let chains = ChainBlocks::new(db, func, &sched, Reads::Base);
    let n = sched.position.len();
    let mut order: Vec<u32> = sched.order.clone();
    let scheduled = order.len();
    order.extend((0..n as u32).filter(|&i| sched.position[i as usize] == u32::MAX));
    let inside_chain = |p: usize| chains.inside_chain(p);
    let chunk_ops = layout::effective_options(db).plan_chunk_ops.max(1) as usize;
    let size = chunk_ops.max(scheduled.div_ceil(MAX_CHUNKS));
    // Cuts sit at the first position at or after each multiple of `size` that does not fall
    // inside a chain: anchored to the multiples rather than to the previous cut, so a chain
    // that grows or splits across one cut moves that cut alone, not every one after it
    // (each moved cut changes two chunks).
    // A cut is clean when no group of ops (`ir::func_groups`) has ops on both sides: an
    // edit changes one group, and a group split by a cut re-runs the walks of both chunks.
    // Schedules mostly follow body order, so clean cuts are common; one is looked for a
    // little past each anchor.
    let groups = ir::func_groups(db, func);
    let group = |i: u32| groups.group_of(i as usize) as usize;
    let mut suffix_min = vec![usize::MAX; scheduled + 1];
    for p in (0..scheduled).rev() {
        suffix_min[p] = suffix_min[p + 1].min(group(order[p]));
    }
    let mut prefix_max = vec![0usize; scheduled + 1];
    for p in 0..scheduled {
        prefix_max[p + 1] = prefix_max[p].max(group(order[p]));
    }
    let clean = |p: usize| p >= scheduled || prefix_max[p] < suffix_min[p];
    let look_ahead = (size / 2).max(1);
    let mut bounds = vec![0u32];
    let mut p = 0usize;
    let mut anchor = size;
    while p < scheduled {
        let mut next = anchor.max(p + 1).min(scheduled);
        while next < scheduled && inside_chain(next) {
            next += 1;
        }
        if let Some(c) = (next..(next + look_ahead).min(scheduled + 1))
            .find(|&c| clean(c) && (c >= scheduled || !inside_chain(c)))
        {
            next = c;
        }
        bounds.push(next as u32);
        p = next;
        anchor = (next / size + 1) * size;
    }
    if order.len() > scheduled {
        bounds.push(order.len() as u32);
    }
    let mut chunk_of = vec![0u32; n];
    for k in 0..bounds.len().saturating_sub(1) {
        for &i in &order[bounds[k] as usize..bounds[k + 1] as usize] {
            chunk_of[i as usize] = k as u32;
        }
    }
    let mut at = vec![0u32; n];
    for (p, &i) in order.iter().enumerate() {
        at[i as usize] = p as u32;
    }
    Arc::new(ChunkLayout { order, bounds, chunk_of, at, scheduled: scheduled as u32 })
}

/// The ops of chunk `k` (body indices, in chunk order).
///
/// A firewall over [`chunk_layout`], whose positions and indices change everywhere when one
/// cut moves: a query about one chunk reads this, so it re-runs only when its own chunk's
/// ops change.
#[salsa::tracked(returns(clone))]
pub fn chunk_ops(db: &dyn Db, func: FuncId, k: u32) -> Arc<[u32]> {
    chunk_layout(db, func).ops(k as usize).into()
}

/// The number of chunks of a function (the last holds the unscheduled ops, if any).
#[salsa::tracked(returns(copy))]
pub fn chunk_count(db: &dyn Db, func: FuncId) -> u32 {
    chunk_layout(db, func).len() as u32
}

/// The chains of one chunk (chunks never split a chain), named without their index in the
/// function, so that a chain splitting elsewhere leaves this value as it was.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChunkChains {
    /// Per op of the chunk (chunk order): the last op (body index) of its chain and its
    /// position in it.
    pub of_op: Vec<Option<(u32, u32)>>,
    /// The chains with ops here, in order.
    pub ids: Vec<ChainId>,
}

/// Chunk `k`'s part of [`chains`](crate::chains) (with `reads` overrides, or of the graph
/// alone), read from the chain blocks its ops lie in (chunks never split a chain): a chain
/// that changes in another chunk does not re-run it.
#[salsa::tracked(returns(clone))]
pub fn chunk_chains(db: &dyn Db, func: FuncId, k: u32, reads: Reads) -> Arc<ChunkChains> {
    let ops = chunk_ops(db, func, k);
    let sched = schedule(db, func);
    let chains = ChainBlocks::new(db, func, &sched, reads);
    let mut out = ChunkChains::default();
    for &i in ops.iter() {
        let entry = sched
            .position
            .get(i as usize)
            .filter(|&&p| p != u32::MAX)
            .and_then(|&p| chains.at(p as usize));
        out.of_op.push(entry.and_then(|((members, _), at)| Some((*members.last()?, at as u32))));
        if let Some(((_, id), _)) = entry
            && out.ids.last() != Some(&id)
        {
            out.ids.push(id);
        }
    }
    Arc::new(out)
}

/// One chunk of a plan: the plans of its ops and the chains and merges decided there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PlanSlice {
    /// Body indices of the chunk's ops, in chunk order.
    pub ops: Vec<u32>,
    /// The plan of each op, parallel to `ops`.
    pub plans: Vec<OpPlan>,
    /// The plans of the chains whose ops lie here, in chain order. An op's plan names its
    /// chain by its index in this list.
    pub chains: Vec<ChainPlan>,
    /// Merges decided here (at their source).
    pub merges: Vec<MergeRecord>,
}

/// Chunk `k` of the plan under a policy, and what its walk hands to chunk `k + 1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PlanChunk {
    pub slice: Arc<PlanSlice>,
    pub carry: Arc<Carry>,
    /// What the walk read beyond its carry and the graph: where the overrides change none
    /// of it, the walk is as without them ([`crate::override_reach`]).
    pub reads: Arc<WalkReads>,
}

/// What a walk read that overrides can change, each list sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct WalkReads {
    /// Chunks whose whole base plan it read (its own).
    pub chunks: Vec<u32>,
    /// Ops (body indices) of other chunks whose chain it looked up.
    pub chain_of: Vec<u32>,
    /// Ops (body indices) of other chunks whose base plan it read ([`foreign_op_plan`]).
    pub plans: Vec<u32>,
    /// Last ops of chains of other chunks whose base plan it read ([`foreign_chain`]).
    pub chains: Vec<u32>,
    /// Ops whose legal layouts it read.
    pub legal: Vec<u32>,
}

impl WalkReads {
    fn tidy(mut self) -> WalkReads {
        for v in [
            &mut self.chunks,
            &mut self.chain_of,
            &mut self.plans,
            &mut self.chains,
            &mut self.legal,
        ] {
            v.sort_unstable();
            v.dedup();
        }
        self
    }

    /// Every chunk the walk read something of, with repeats.
    pub fn chunks_read<'a>(&'a self, layout: &'a ChunkLayout) -> impl Iterator<Item = u32> + 'a {
        let of = |&i: &u32| layout.locate(i).map(|(k, _)| k);
        self.chunks.iter().copied().chain(
            self.chain_of
                .iter()
                .chain(&self.plans)
                .chain(&self.chains)
                .chain(&self.legal)
                .filter_map(of),
        )
    }
}

/// Chunk `k` of the plan under a policy: the walk of [`base_chunk`] where the overrides do
/// not reach (the chunk, its carry in and what its walk reads are as without them), else
/// [`overridden_chunk`] from the first chunk of the run the overrides change
/// ([`crate::override_reach`]). `greedy` plans each chunk with its own walk.
#[salsa::tracked(returns(clone))]
pub fn plan_chunk(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<PlanChunk> {
    if policy == Policy::Greedy {
        return Arc::new(crate::greedy::greedy_chunk(db, func, k));
    }
    match crate::reach::override_reach(db, func, policy).start_of(k) {
        Some(start) => overridden_chunk(db, func, policy, k, start),
        None => base_chunk(db, func, policy, k),
    }
}

/// Chunk `k`'s walk as if no op had overrides (see [`crate::merge`]): reads only the carry
/// out of chunk `k - 1`'s, this chunk's base plan, and the base plans of other ops its
/// decisions validate, all from the graph alone, so a tuning host keeps it valid in O(1)
/// after an override.
#[salsa::tracked(returns(clone))]
pub fn base_chunk(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<PlanChunk> {
    let carry = if k == 0 { Arc::default() } else { base_carry(db, func, policy, k - 1) };
    walk(db, func, policy, k, Reads::Base, &carry)
}

/// What [`base_chunk`] hands on: a firewall, so that a change inside chunk `k` that leaves
/// the carry as it was does not re-run chunk `k + 1`.
#[salsa::tracked(returns(clone))]
pub fn base_carry(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<Carry> {
    Arc::clone(&base_chunk(db, func, policy, k).carry)
}

/// Chunk `k` of the plan without overrides.
#[salsa::tracked(returns(clone))]
pub fn base_slice(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<PlanSlice> {
    Arc::clone(&base_chunk(db, func, policy, k).slice)
}

/// Chunk `k`'s walk with the overrides, in a run of chunks the overrides change that starts
/// at chunk `start`: the carry in is [`base_carry`]'s at the start of the run and the walk
/// before's inside it.
#[salsa::tracked(returns(clone))]
pub fn overridden_chunk(
    db: &dyn Db,
    func: FuncId,
    policy: Policy,
    k: u32,
    start: u32,
) -> Arc<PlanChunk> {
    let carry = match k.checked_sub(1) {
        None => Arc::default(),
        Some(before) if k <= start => base_carry(db, func, policy, before),
        Some(before) => overridden_carry(db, func, policy, before, start),
    };
    walk(db, func, policy, k, Reads::Overrides, &carry)
}

/// What [`overridden_chunk`] hands on (a firewall, as [`base_carry`]).
#[salsa::tracked(returns(clone))]
pub fn overridden_carry(
    db: &dyn Db,
    func: FuncId,
    policy: Policy,
    k: u32,
    start: u32,
) -> Arc<Carry> {
    Arc::clone(&overridden_chunk(db, func, policy, k, start).carry)
}

/// Walks chunk `k` from `carry`, reading the base plans, chains and legality `reads` asks
/// for.
fn walk(
    db: &dyn Db,
    func: FuncId,
    policy: Policy,
    k: u32,
    reads: Reads,
    carry: &Carry,
) -> Arc<PlanChunk> {
    let layout = chunk_layout(db, func);
    let topo = func_topology(db, func);
    let sched = schedule(db, func);
    let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
    let _p =
        tracing::debug_span!("walk", func = %func.name(db), policy = policy.name(), k).entered();
    let merging = policy == Policy::DfShardingMerge;
    let src = DbWalkSource {
        db,
        func,
        merging,
        reads,
        sigs: crate::planning::Signatures::new(db, func),
        body: &body,
        layout: &layout,
        read: std::cell::RefCell::new(WalkReads::default()),
        reads_of: std::cell::RefCell::default(),
    };
    let (slice, carry) = walk_chunk(&ChunkInputs {
        src: &src,
        k,
        merging,
        l1_interleaved_fallback: layout::effective_options(db).l1_interleaved_fallback,
        layout: &layout,
        topo: &topo,
        sched: &sched,
        carry,
        target: TargetInput::get(db).target(db),
        model: db.op_model(),
        costs: db.cost_cache(),
    });
    Arc::new(PlanChunk {
        slice: Arc::new(slice),
        carry: Arc::new(carry),
        reads: Arc::new(src.read.into_inner().tidy()),
    })
}

/// Every chunk of the plan walked with the overrides, one after another, each from the
/// carry of the walk before: what [`plan_chunk`] gives without [`crate::override_reach`]
/// choosing which chunks to walk again. A reference for tests, memoized nowhere.
#[must_use]
pub fn plan_walking_every_chunk(db: &dyn Db, func: FuncId, policy: Policy) -> Vec<Arc<PlanChunk>> {
    let mut out: Vec<Arc<PlanChunk>> = Vec::new();
    for k in 0..chunk_count(db, func) {
        let chunk = if policy == Policy::Greedy {
            Arc::new(crate::greedy::greedy_chunk(db, func, k))
        } else {
            let carry = out.last().map(|c| Arc::clone(&c.carry)).unwrap_or_default();
            walk(db, func, policy, k, Reads::Overrides, &carry)
        };
        out.push(chunk);
    }
    out
}

/// A walk's reads answered from the database, each from a memo of its own: the signatures a
/// group at a time, the other chunks' base plans one op or chain at a time
/// ([`foreign_op_plan`], [`foreign_chain`]), so that a walk depends only on what its
/// decisions looked at. Notes the chunks it reads from.
struct DbWalkSource<'a> {
    db: &'a dyn Db,
    func: FuncId,
    merging: bool,
    reads: Reads,
    sigs: crate::planning::Signatures,
    body: &'a ir::BodyView<'a>,
    layout: &'a ChunkLayout,
    /// What the walk read so far.
    read: std::cell::RefCell<WalkReads>,
    /// Per chunk read, what to read of it (see [`DbWalkSource::reads_of`]).
    reads_of: std::cell::RefCell<rustc_hash::FxHashMap<u32, Reads>>,
}

impl DbWalkSource<'_> {
    fn note(&self, list: impl FnOnce(&mut WalkReads) -> &mut Vec<u32>, x: u32) {
        list(&mut self.read.borrow_mut()).push(x);
    }

    /// What a walk with overrides reads of chunk `k`: the plan without overrides where the
    /// overrides change nothing of the chunk's parts, chains and legality
    /// ([`crate::chunk_overridden`]), the same values from memos that are valid already.
    fn reads_of(&self, k: u32) -> Reads {
        if self.reads == Reads::Base {
            return Reads::Base;
        }
        *self.reads_of.borrow_mut().entry(k).or_insert_with(|| {
            if crate::reach::chunk_overridden(self.db, self.func, k) {
                Reads::Overrides
            } else {
                Reads::Base
            }
        })
    }

    /// [`DbWalkSource::reads_of`] the chunk holding op `i`.
    fn reads_at(&self, i: u32) -> Reads {
        match self.layout.locate(i) {
            Some((k, _)) => self.reads_of(k),
            None => self.reads,
        }
    }
}

impl WalkSource for DbWalkSource<'_> {
    fn op(&self, i: u32) -> Option<&ir::OpData> {
        self.body.ops.get(i as usize)
    }

    fn result_of(&self, v: ir::ValueRef) -> Option<(u32, u32)> {
        self.body.result_of(v)
    }

    fn arg(&self, a: u32) -> Option<&ir::Ty> {
        self.body.args.get(a as usize)
    }

    fn sig(&self, i: u32) -> Option<Arc<layout::OpSignature>> {
        self.sigs.sig(self.db, self.func, i as usize)
    }

    fn base(&self, k: u32) -> Arc<PartsChunk> {
        self.note(|r| &mut r.chunks, k);
        base_parts(self.db, self.func, self.merging, k, self.reads_of(k))
    }

    fn foreign_plan(&self, i: u32) -> Option<Arc<OpPlan>> {
        self.note(|r| &mut r.plans, i);
        foreign_op_plan(self.db, self.func, self.merging, i, self.reads_at(i))
    }

    fn foreign_chain(&self, last: u32) -> Option<Arc<ForeignChain>> {
        self.note(|r| &mut r.chains, last);
        foreign_chain(self.db, self.func, self.merging, last, self.reads_at(last))
    }

    fn chunk_chains(&self, k: u32) -> Arc<ChunkChains> {
        chunk_chains(self.db, self.func, k, self.reads_of(k))
    }

    fn chain_read(&self, i: u32) {
        self.note(|r| &mut r.chain_of, i);
    }

    fn legal_layouts(&self, i: u32) -> Option<Arc<layout::LegalOpLayouts>> {
        self.note(|r| &mut r.legal, i);
        let key = self.body.ops.get(i as usize)?.key.clone();
        let op = ir::OpId::new(self.db, self.func, key);
        Some(crate::problem::legal_layouts(self.db, op, self.reads_at(i)))
    }
}

/// What chunk `k`'s walk hands on; a firewall, so that a change inside chunk `k` that
/// leaves the carry as it was does not re-run chunk `k + 1`.
#[salsa::tracked(returns(clone))]
pub fn plan_carry(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<Carry> {
    Arc::clone(&plan_chunk(db, func, policy, k).carry)
}

/// Chunk `k` of the plan of `func` under `policy`.
#[salsa::tracked(returns(clone))]
pub fn plan_slice(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<PlanSlice> {
    Arc::clone(&plan_chunk(db, func, policy, k).slice)
}

/// The final layout and spill of each value made before chunk `k` that chunk `k` reads
/// (its ops', and the unscheduled ops' printed with them), by producer.
pub type Incoming = std::collections::BTreeMap<u32, (Option<TtnnLayout>, Option<TtnnLayout>)>;

/// [`Incoming`] for chunk `k`: the part of the carry into it that its ops read.
///
/// A firewall for the per-chunk readers (cost, rewritten text): the carry also holds what
/// later chunks read, so it changes more often than what this chunk reads.
///
/// With [`Reads::Base`], the plan without overrides ([`base_carry`]), else the plan.
#[salsa::tracked(returns(clone))]
pub fn chunk_incoming(
    db: &dyn Db,
    func: FuncId,
    policy: Policy,
    k: u32,
    reads: Reads,
) -> Arc<Incoming> {
    if k == 0 {
        return Arc::default();
    }
    let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
    let carry = match reads {
        Reads::Base => base_carry(db, func, policy, k - 1),
        Reads::Overrides => plan_carry(db, func, policy, k - 1),
    };
    let sched = schedule(db, func);
    let here = chunk_ops(db, func, k);
    let mut out = Incoming::new();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack: Vec<u32> = here.to_vec();
    while let Some(i) = stack.pop() {
        let Some(data) = body.ops.get(i as usize) else { continue };
        for v in &data.operands {
            let Some((op, _)) = body.result_of(*v) else { continue };
            if let Some(value) = carry.outputs.get(&op) {
                out.insert(op, value.clone());
            } else if sched.position.get(op as usize) == Some(&u32::MAX) && seen.insert(op) {
                // An unscheduled producer is printed with its first user; what it reads
                // counts as read here.
                stack.push(op);
            }
        }
    }
    Arc::new(out)
}

/// Op `op`'s plan in its chunk's base ([`base_parts`]: with `reads` overrides or without
/// any), for a walk of another chunk that reads it.
///
/// A firewall per op read across chunks: a walk whose merge windows reach into the next
/// chunk read that chunk's whole base memo, so an override anywhere in it re-walked the
/// chunk before as well, with the same result.
#[salsa::tracked(returns(clone))]
pub fn foreign_op_plan(
    db: &dyn Db,
    func: FuncId,
    merging: bool,
    op: u32,
    reads: Reads,
) -> Option<Arc<crate::planning::OpPlan>> {
    let (k, at) = chunk_layout(db, func).locate(op)?;
    let parts = base_parts(db, func, merging, k, reads);
    parts.ops.get(at).cloned().map(Arc::new)
}

/// A chain's base plan and outcome, as [`foreign_chain`] gives them.
pub type ForeignChain = (crate::planning::ChainPlan, crate::planning::ChainOutcome);

/// The base plan and outcome of the chain ending at op `last`, for a walk of another chunk
/// (see [`foreign_op_plan`]).
#[salsa::tracked(returns(clone))]
pub fn foreign_chain(
    db: &dyn Db,
    func: FuncId,
    merging: bool,
    last: u32,
    reads: Reads,
) -> Option<Arc<ForeignChain>> {
    let (k, _) = chunk_layout(db, func).locate(last)?;
    let parts = base_parts(db, func, merging, k, reads);
    let c = parts.chains.iter().position(|ch| ch.ops.last() == Some(&last))?;
    let outcome = parts.outcomes.get(c).cloned().unwrap_or_default();
    Some(Arc::new((parts.chains[c].clone(), outcome)))
}

/// A chunk's base parts under a policy: `merge_base_chunk` when merging.
pub(crate) fn base_parts(
    db: &dyn Db,
    func: FuncId,
    merging: bool,
    k: u32,
    reads: Reads,
) -> Arc<PartsChunk> {
    if merging { merge_base_chunk(db, func, k, reads) } else { parts_chunk(db, func, k, reads) }
}

/// Chunk `k`'s parts with its overrides ([`plan_parts_chunk`]) or without any
/// ([`crate::planning::parts_without_overrides`] of its ops and chains of the graph alone).
pub(crate) fn parts_chunk(db: &dyn Db, func: FuncId, k: u32, reads: Reads) -> Arc<PartsChunk> {
    match reads {
        Reads::Overrides => plan_parts_chunk(db, func, k),
        Reads::Base => {
            let members = chunk_ops(db, func, k);
            let chains = chunk_chains(db, func, k, Reads::Base);
            crate::planning::parts_of_graph(db, func, &members, &chains.ids)
        }
    }
}

/// The base plan chunk under merging: the solved chains, with every chain the cost model
/// expects to lose in L1 even without its spill declined before any merge (going past
/// tt-mlir), so no merge builds on it.
#[salsa::tracked(returns(clone))]
pub fn merge_base_chunk(db: &dyn Db, func: FuncId, k: u32, reads: Reads) -> Arc<PartsChunk> {
    let parts = parts_chunk(db, func, k, reads);
    let layout = chunk_layout(db, func);
    let mut out: Option<PartsChunk> = None;
    for (idx, chain) in parts.chains.iter().enumerate() {
        if chain.state != ChainState::Completed || chain.concat {
            continue;
        }
        let Some(outcome) = parts.outcomes.get(idx) else { continue };
        let Some(cost) = outcome.cost else { continue };
        if !cost.loses_without_spill() {
            continue;
        }
        let Some(fallback) = outcome.fallback.clone() else { continue };
        let spill = if chain.spill == SpillLocation::Dram { cost.spill_ns } else { 0 };
        let reason = decline_reason(&cost, spill);
        let out = out.get_or_insert_with(|| (*parts).clone());
        decline(&mut out.chains[idx], &reason);
        for (&i, (l, config, user)) in chain.ops.iter().zip(fallback.iter()) {
            if let Some((_, at)) = layout.locate(i)
                && let Some(p) = out.ops.get_mut(at)
            {
                decline_op(p, &reason, l.clone(), config.clone(), user);
            }
        }
    }
    out.map_or(parts, Arc::new)
}

/// Per op of a chain: the layout and config it takes outside L1.
pub type ChainFallback =
    Vec<(Option<TtnnLayout>, OpConfig, Vec<Option<crate::planning::Conversion>>)>;

/// Where each op of a chain goes when the chain is declined: its fallback layout and the
/// config for it; `None` when some op's only legal layouts are sharded (the op model
/// rejects it in DRAM), so the chain has nowhere better to go. Computed within the chain's
/// part (in `solve_chain`, its only reader), not memoized apart.
pub(crate) fn chain_fallback(
    db: &dyn Db,
    chain: ChainId,
    reads: crate::problem::Reads,
) -> Option<Arc<ChainFallback>> {
    let mut out = Vec::new();
    for &op in chain.ops(db) {
        let layout = crate::problem::fallback_layout(db, op, reads);
        if layout.as_ref().is_some_and(TtnnLayout::is_sharded) {
            return None;
        }
        let config = crate::planning::config_for_in(db, op, layout.as_ref(), reads);
        // Only an op with an `insert-memreconfig` reads its group's op data for this.
        let asks = reads == crate::problem::Reads::Overrides
            && layout::op_overrides(db, op).is_some_and(|o| !o.reshard_operands.is_empty());
        let func = op.func(db);
        let user = asks
            .then(|| ir::func_frame(db, func)?.op_index(op.key(db)))
            .flatten()
            .and_then(|i| {
                let (g, at) = ir::func_groups(db, func).locate(i)?;
                let group = ir::func_group(db, func, g);
                let data = group.get(at)?;
                Some(crate::planning::user_reconfigs(db, op, data, layout.as_ref(), reads))
            })
            .unwrap_or_default();
        out.push((layout, config, user));
    }
    Some(Arc::new(out))
}

/// The plans a per-chunk reader of chunk `k` sees: its own ops' (from its slice), the
/// unscheduled ops' (device handles, `ttnn.empty`: the last chunk, printed and read wherever
/// their users are), and the final layout and spill of values from earlier chunks (the carry's
/// part that the chunk reads, [`chunk_incoming`]). Shared by the chunk's cost and rewritten
/// text, so that both read exactly the same values.
pub struct ChunkValues<'db> {
    db: &'db dyn Db,
    func: FuncId,
    policy: Policy,
    reads: Reads,
    /// Body index → place in `slice`.
    at: rustc_hash::FxHashMap<u32, usize>,
    pub slice: Arc<PlanSlice>,
    incoming: Arc<Incoming>,
    unscheduled: std::cell::OnceCell<(rustc_hash::FxHashMap<u32, usize>, Arc<PlanSlice>)>,
}

impl<'db> ChunkValues<'db> {
    /// The values of chunk `k` of the plan ([`Reads::Overrides`]), or of the plan without
    /// overrides ([`Reads::Base`]).
    #[must_use]
    pub fn new(
        db: &'db dyn Db,
        func: FuncId,
        policy: Policy,
        k: u32,
        reads: Reads,
    ) -> ChunkValues<'db> {
        let at = chunk_ops(db, func, k).iter().enumerate().map(|(at, &i)| (i, at)).collect();
        ChunkValues {
            db,
            func,
            policy,
            reads,
            at,
            slice: slice_of(db, func, policy, k, reads),
            incoming: chunk_incoming(db, func, policy, k, reads),
            unscheduled: std::cell::OnceCell::new(),
        }
    }

    /// Op `i`'s plan if the chunk prints or costs it: one of its own ops, or an unscheduled
    /// op (fetched from the last chunk on first use).
    #[must_use]
    pub fn plan(&self, i: u32) -> Option<&OpPlan> {
        if let Some(&a) = self.at.get(&i) {
            return self.slice.plans.get(a);
        }
        let (index, slice) = self.unscheduled.get_or_init(|| {
            let last = chunk_count(self.db, self.func).saturating_sub(1);
            let ops = chunk_ops(self.db, self.func, last);
            let index = ops.iter().enumerate().map(|(at, &i)| (i, at)).collect();
            (index, slice_of(self.db, self.func, self.policy, last, self.reads))
        });
        slice.plans.get(*index.get(&i)?)
    }

    /// The planned layout and spill of op `i`'s output as the chunk reads it.
    #[must_use]
    pub fn output(&self, i: u32) -> Option<(Option<TtnnLayout>, Option<TtnnLayout>)> {
        if !self.at.contains_key(&i)
            && let Some(value) = self.incoming.get(&i)
        {
            return Some(value.clone());
        }
        let p = self.plan(i)?;
        Some((p.layout.clone(), p.spill.as_ref().map(|c| c.layout.clone())))
    }
}

/// Chunk `k` of the plan, or of the plan without overrides.
fn slice_of(db: &dyn Db, func: FuncId, policy: Policy, k: u32, reads: Reads) -> Arc<PlanSlice> {
    match reads {
        Reads::Base if policy != Policy::Greedy => base_slice(db, func, policy, k),
        _ => plan_slice(db, func, policy, k),
    }
}

/// A function's plan read chunk by chunk: what [`plan_for`](crate::plan_for) gathers, without
/// copying it, each chunk fetched when first read. Editor features that look at one op, or
/// walk every op once, read this after an edit instead of re-gathering every op's plan.
pub struct PlanView<'db> {
    db: &'db dyn Db,
    func: FuncId,
    pub policy: Policy,
    pub schedule: Arc<crate::scheduling::Schedule>,
    layout: Arc<ChunkLayout>,
    slices: Vec<std::cell::OnceCell<Arc<PlanSlice>>>,
    graph: std::cell::OnceCell<Arc<crate::chain_graph::ChainGraph>>,
}

impl<'db> PlanView<'db> {
    #[must_use]
    pub fn new(db: &'db dyn Db, func: FuncId, policy: Policy) -> PlanView<'db> {
        let layout = chunk_layout(db, func);
        let slices = (0..layout.len()).map(|_| std::cell::OnceCell::new()).collect();
        PlanView {
            db,
            func,
            policy,
            schedule: schedule(db, func),
            layout,
            slices,
            graph: std::cell::OnceCell::new(),
        }
    }

    fn slice(&self, k: usize) -> Option<&Arc<PlanSlice>> {
        let cell = self.slices.get(k)?;
        Some(cell.get_or_init(|| plan_slice(self.db, self.func, self.policy, k as u32)))
    }

    /// Op `i`'s plan (body index). Its `chain` names the chain by its place in the op's
    /// chunk; [`PlanView::chain_of`] gives the chain itself.
    #[must_use]
    pub fn op(&self, i: usize) -> Option<&OpPlan> {
        let (k, at) = self.layout.locate(i as u32)?;
        self.slice(k as usize)?.plans.get(at)
    }

    /// Op `i`'s chain: its index in the function (as `plan_for` numbers chains), the op's
    /// position in it, and the chain's plan.
    #[must_use]
    pub fn chain_of(&self, i: usize) -> Option<(u32, u32, &ChainPlan)> {
        let (k, at) = self.layout.locate(i as u32)?;
        let slice = self.slice(k as usize)?;
        let (local, pos) = slice.plans.get(at)?.chain?;
        let chain = slice.chains.get(local as usize)?;
        let graph = self.graph.get_or_init(|| crate::chains(self.db, self.func));
        Some((graph.chain_of(i as u32)?, pos, chain))
    }

    /// Every op's plan with its body index, chunk by chunk.
    pub fn ops(&self) -> impl Iterator<Item = (usize, &OpPlan)> {
        (0..self.slices.len())
            .filter_map(|k| self.slice(k))
            .flat_map(|s| s.ops.iter().zip(&s.plans).map(|(&i, p)| (i as usize, p)))
    }

    /// Every chain's plan, chunk by chunk.
    pub fn chains(&self) -> impl Iterator<Item = &ChainPlan> {
        (0..self.slices.len()).filter_map(|k| self.slice(k)).flat_map(|s| s.chains.iter())
    }
}
