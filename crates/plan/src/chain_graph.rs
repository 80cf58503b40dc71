//! `chains`: L1 chains along the schedule, with identities that survive unrelated edits.
//!
//! A chain is interned from its ops' ids (names), its kind, the memory layout a consuming
//! concat prefers, and whether a `d2m_subgraph` feeds it. Equal chains get equal ids in any
//! revision, so after an edit only chains that actually changed get new ids and everything
//! else keyed by a chain is a memo hit.

use std::sync::Arc;

use ir::{FuncId, OpId};
use layout::GroupRef;
use ttnn_types::TensorMemoryLayout;

use crate::{
    Db,
    problem::Reads,
    scheduling::{func_topology, schedule},
};

/// One L1 chain.
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct ChainId {
    #[returns(copy)]
    pub func: FuncId,
    #[returns(ref)]
    pub ops: Vec<OpId>,
    /// A concat isolated in its own chain; resolved by chain merging, not by ShardSolver.
    #[returns(copy)]
    pub concat: bool,
    /// The memory layout a consuming concat needs (`setConcatChainPreferences`).
    #[returns(copy)]
    pub preferred: Option<TensorMemoryLayout>,
    /// The first op's operand 0 comes from a `ttnn.d2m_subgraph`.
    #[returns(copy)]
    pub from_d2m: bool,
    /// The last op's result feeds a `ttnn.d2m_subgraph`: it stays in L1, no spill follows.
    #[returns(copy)]
    pub to_d2m: bool,
}

/// A `d2m_subgraph` op and the chains on each side of it (seed 003).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct D2mRelation {
    pub op: u32,
    /// The chain whose last op feeds the subgraph.
    pub producer: Option<usize>,
    /// The chain whose first op consumes the subgraph's result.
    pub consumer: Option<usize>,
}

/// The chains of a function.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChainGraph {
    pub chains: Vec<ChainId>,
    /// Per op (body index): its chain and position in it.
    pub op_chain: Vec<Option<(u32, u32)>>,
    /// Per chain: the body index of its last op.
    pub last_op: Vec<u32>,
    pub d2m: Vec<D2mRelation>,
    /// Chain indices in solving order: producers of a `d2m_subgraph` before its consumers.
    pub solve_order: Vec<usize>,
}

impl ChainGraph {
    /// The chain of op `i` (body index) if `i` is its last op.
    #[must_use]
    pub fn chain_ending_at(&self, i: u32) -> Option<u32> {
        let (c, _) = self.op_chain.get(i as usize).copied().flatten()?;
        (self.last_op.get(c as usize) == Some(&i)).then_some(c)
    }

    /// The chain of op `i` (body index).
    #[must_use]
    pub fn chain_of(&self, i: u32) -> Option<u32> {
        self.op_chain.get(i as usize).copied().flatten().map(|(c, _)| c)
    }
}

/// Whether an op can be part of an L1 chain: one of the op kinds tt-mlir's DFSharding
/// shards, with at least one L1-sharded legal config.
///
/// Not a query of its own: it reads three memoized per-op queries and decides in a few
/// instructions, and `chainable_block` asks it for a group of 32 ops at a time. As a query
/// it was 10k more memos for salsa to re-validate after every edit of a 10k-op function.
pub fn op_chainable(db: &dyn Db, op: OpId) -> bool {
    let sig = layout::op_signature(db, op);
    chainable_with(db, sig.as_deref(), || layout::op_legality(db, op))
}

/// Whether an op with signature `sig` can be part of an L1 chain, given its legality (asked
/// only of the kinds chains take).
fn chainable_with(
    db: &dyn Db,
    sig: Option<&layout::OpSignature>,
    legality: impl FnOnce() -> Arc<layout::OpLegality>,
) -> bool {
    let Some(sig) = sig else { return false };
    if !sig.kind.is_chain_shardable() {
        return false;
    }
    // Without the memory-layout analysis (tt-mlir's optimization level 1) no chain is built:
    // every op takes its first legal layout.
    if !layout::effective_options(db).memory_layout_analysis {
        return false;
    }
    let legal = legality();
    // An op whose layout is fixed keeps it: a chain could only fail on it or move it.
    if legal.layouts.fixed {
        return false;
    }
    !legal.configs.sharded.is_empty()
}

/// What a per-group memo reads of each op of its group: the op's id and signature, and its
/// legality (with its overrides where `overrides` has some for it), from the group's own
/// memos rather than per-op lookups, which read where the op sits in its function.
pub(crate) fn group_ops_with<'a>(
    db: &'a dyn Db,
    func: FuncId,
    group: GroupRef,
    overrides: Option<&'a [Option<Arc<layout::OpOverrides>>]>,
) -> impl Iterator<Item = GroupOp<'a>> + 'a {
    let ops = group.ops(db, func);
    let sigs = layout::signatures_of_group(db, func, group);
    (0..ops.len()).map(move |at| {
        let data = Arc::clone(&ops[at]);
        let op = OpId::new(db, func, data.key.clone());
        let sig = sigs.get(at).cloned().flatten();
        let overrides = overrides.and_then(|o| o.get(at)).cloned().flatten();
        GroupOp { db, op, data, sig, overrides }
    })
}

/// One op of a group, as [`group_ops_with`] gives it.
pub(crate) struct GroupOp<'a> {
    db: &'a dyn Db,
    pub op: OpId,
    pub data: Arc<ir::OpData>,
    pub sig: Option<Arc<layout::OpSignature>>,
    pub overrides: Option<Arc<layout::OpOverrides>>,
}

impl GroupOp<'_> {
    /// The op's legality: under its overrides if it has some, else without.
    pub(crate) fn legality(&self) -> Arc<layout::OpLegality> {
        match (&self.overrides, &self.sig) {
            (Some(_), _) => layout::overridden_legality(self.db, self.op),
            (None, Some(sig)) => layout::base_legality_of(self.db, self.op, sig),
            (None, None) => Arc::default(),
        }
    }

    /// Whether the op can be part of an L1 chain ([`op_chainable`]).
    pub(crate) fn chainable(&self) -> bool {
        chainable_with(self.db, self.sig.as_deref(), || self.legality())
    }
}

/// Schedule positions per block of [`chain_block`]: a plan chunk's worth, since an override
/// builds the chains with overrides of the block holding its op for its chunk (a segment's
/// 256 positions took an eighth of a first override's time on the 10k-op graphs).
const BLOCK: usize = base_db::granularity::PLAN_CHUNK_OPS;

/// [`op_chainable`] for the ops of the group of a function that starts with the op keyed
/// `start` (`ir::func_group_at`).
///
/// A firewall: `chains` reads these groups instead of every op's answer, so after an
/// override only one group is re-checked (and backdated when its answers stay the same).
/// Reads the group's ops and signatures, not where they sit in the function, and is keyed by
/// the group's first op's name, so an op inserted or pasted elsewhere does not re-run it. A
/// group without overrides is [`base_chainable_block`]'s answer: this memo then depends on
/// its group's overrides and that memo alone, so on a tuning host salsa walks two edges per
/// group after an override, not the legality of each of its ops.
#[salsa::tracked(returns(clone))]
pub fn chainable_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<Vec<bool>> {
    chainable_computed(db, func, GroupRef::Named(start))
}

/// [`chainable_block`] of a group: the memo where the group has a name, else computed; on a
/// tuning host, [`base_chainable_block`] where no slot of the group holds an override
/// (`layout::group_has_no_override_slots`), so the reader does not walk the group's override
/// memos after every override.
pub(crate) fn chainable_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<Vec<bool>> {
    match group {
        GroupRef::Named(start) if layout::group_has_no_override_slots(db, func, start) => {
            base_chainable_block(db, func, start)
        }
        GroupRef::Named(start) => chainable_block(db, func, start),
        GroupRef::Unnamed(_) => chainable_computed(db, func, group),
    }
}

fn chainable_computed(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<Vec<bool>> {
    let overrides = group_overrides(db, func, group);
    if !overrides.iter().any(Option::is_some) {
        return match group {
            GroupRef::Named(start) => base_chainable_block(db, func, start),
            GroupRef::Unnamed(_) => base_chainable_computed(db, func, group),
        };
    }
    Arc::new(group_ops_with(db, func, group, Some(&overrides)).map(|o| o.chainable()).collect())
}

/// The overrides of a group's ops: `layout::overrides_block` where the group has a name.
pub(crate) fn group_overrides(
    db: &dyn Db,
    func: FuncId,
    group: GroupRef,
) -> Arc<[Option<Arc<layout::OpOverrides>>]> {
    match group {
        GroupRef::Named(start) => layout::overrides_block(db, func, start),
        GroupRef::Unnamed(_) => group
            .ops(db, func)
            .iter()
            .map(|o| layout::op_overrides(db, OpId::new(db, func, o.key.clone())))
            .collect(),
    }
}

/// [`chainable_block`] as if no op of the group had overrides: it reads the graph alone
/// (the legality without overrides), so a tuning host keeps it valid in O(1).
#[salsa::tracked(returns(clone))]
pub fn base_chainable_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<Vec<bool>> {
    base_chainable_computed(db, func, GroupRef::Named(start))
}

/// [`base_chainable_block`] of a group: the memo where the group has a name, else computed.
fn base_chainable_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<Vec<bool>> {
    match group {
        GroupRef::Named(start) => base_chainable_block(db, func, start),
        GroupRef::Unnamed(_) => base_chainable_computed(db, func, group),
    }
}

fn base_chainable_computed(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<Vec<bool>> {
    Arc::new(group_ops_with(db, func, group, None).map(|o| o.chainable()).collect())
}

/// What chain building reads of one op besides its chainability and the data flow (the
/// topology's): whether it is a `d2m_subgraph` or a concat (with the input layout a concat
/// wants).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChainFacts {
    pub d2m: bool,
    /// `Some` for a concat: the memory layout it needs its inputs in, if any.
    pub concat: Option<Option<TensorMemoryLayout>>,
}

/// [`ChainFacts`] of the ops of the group of a function that starts with the op keyed
/// `start` (`ir::func_group_at`).
///
/// A firewall between the body and `chains`: an edit to an op's attributes or types changes
/// its body block but not these facts, so the chains are not rebuilt.
#[salsa::tracked(returns(clone))]
pub fn chain_facts_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<[ChainFacts]> {
    chain_facts_of(&ir::func_group_at(db, func, start))
}

/// [`chain_facts_block`] of a group: the memo where the group has a name, else computed.
pub fn chain_facts_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[ChainFacts]> {
    match group {
        GroupRef::Named(start) => chain_facts_block(db, func, start),
        GroupRef::Unnamed(_) => chain_facts_of(&group.ops(db, func)),
    }
}

fn chain_facts_of(ops: &[Arc<ir::OpData>]) -> Arc<[ChainFacts]> {
    ops.iter()
        .map(|op| {
            let d2m = op.name == "ttnn.d2m_subgraph";
            let concat = (op.name == "ttnn.concat").then(|| concat_input_layout(op));
            ChainFacts { d2m, concat }
        })
        .collect()
}

/// What chain building reads, fetched a block at a time when first needed.
struct Scan<'a> {
    db: &'a dyn Db,
    func: FuncId,
    topo: &'a crate::scheduling::Topology,
    sched: &'a crate::scheduling::Schedule,
    reads: Reads,
    /// With overrides: the chunk cuts (schedule positions), which no chain crosses.
    cuts: Option<Arc<crate::chunks::ChunkLayout>>,
    groups: layout::Groups,
    chainable: Vec<std::cell::OnceCell<Arc<Vec<bool>>>>,
    facts: Vec<std::cell::OnceCell<Arc<[ChainFacts]>>>,
}

static NO_FACTS: ChainFacts = ChainFacts { d2m: false, concat: None };

impl<'a> Scan<'a> {
    fn new(
        db: &'a dyn Db,
        func: FuncId,
        topo: &'a crate::scheduling::Topology,
        sched: &'a crate::scheduling::Schedule,
        reads: Reads,
    ) -> Scan<'a> {
        let groups = layout::Groups::new(db, func);
        let blocks = groups.len();
        let cuts = (reads == Reads::Overrides).then(|| crate::chunks::chunk_layout(db, func));
        Scan {
            db,
            func,
            topo,
            sched,
            reads,
            cuts,
            groups,
            chainable: (0..blocks).map(|_| std::cell::OnceCell::new()).collect(),
            facts: (0..blocks).map(|_| std::cell::OnceCell::new()).collect(),
        }
    }

    fn chainable(&self, i: u32) -> bool {
        // A chain names its ops by key (its id is interned from their `OpId`s), so an op whose
        // key names another (a repeated definition, an error) is in no chain: as a member it
        // would give its chain the id of the other op's chain and its plan to the other op.
        if !self.groups.key_names(i as usize) {
            return false;
        }
        let Some((g, group, at)) = self.groups.locate(i as usize) else { return false };
        let Some(cell) = self.chainable.get(g as usize) else { return false };
        let block = cell.get_or_init(|| match self.reads {
            Reads::Overrides => chainable_of_group(self.db, self.func, group),
            Reads::Base => base_chainable_of_group(self.db, self.func, group),
        });
        block.get(at).copied().unwrap_or(false)
    }

    fn facts(&self, i: u32) -> &ChainFacts {
        let Some((g, group, at)) = self.groups.locate(i as usize) else { return &NO_FACTS };
        let Some(cell) = self.facts.get(g as usize) else { return &NO_FACTS };
        let block = cell.get_or_init(|| chain_facts_of_group(self.db, self.func, group));
        block.get(at).unwrap_or(&NO_FACTS)
    }

    /// A chainable op that is neither a concat nor a d2m subgraph: one a plain chain takes.
    fn plain(&self, i: u32) -> bool {
        let f = self.facts(i);
        !f.d2m && f.concat.is_none() && self.chainable(i)
    }

    /// Whether the op at schedule position `pos` continues the chain of the one before it:
    /// both are plain, and the one before has this op as its only use, through operand 0.
    fn continues(&self, pos: usize) -> bool {
        let order = &self.sched.order;
        let (Some(&prev), Some(&cur)) =
            (pos.checked_sub(1).and_then(|p| order.get(p)), order.get(pos))
        else {
            return false;
        };
        // The chunks are cut where the chains without overrides end; a chain that overrides
        // make longer ends at a cut too, so the chunks hold the same ops either way.
        if self.cuts.as_ref().is_some_and(|c| c.bounds.binary_search(&(pos as u32)).is_ok()) {
            return false;
        }
        let l = &self.topo.ops[prev as usize];
        self.plain(prev)
            && self.plain(cur)
            && l.num_uses == 1
            && l.users.first().is_some_and(|u| u.user == cur && u.operand == 0)
    }

    /// Whether op `i` is the first op of a chain (a concat's chain is that concat alone).
    fn starts_chain(&self, i: u32) -> bool {
        let Some(&pos) = self.sched.position.get(i as usize) else { return false };
        if pos == u32::MAX {
            return false;
        }
        if self.facts(i).concat.is_some() {
            return self.chainable(i);
        }
        self.plain(i) && !self.continues(pos as usize)
    }

    /// The concat preference of the chain `members`: of the chainable concats with a
    /// preference that read its last op, or whose only use is its first op, the one scheduled
    /// last (as a pass over the concats in schedule order would leave it).
    fn preferred(&self, members: &[u32]) -> Option<TensorMemoryLayout> {
        let (&first, &last) = (members.first()?, members.last()?);
        let mut best: Option<(u32, TensorMemoryLayout)> = None;
        let mut consider = |ci: u32| {
            if let Some(Some(pref)) = self.facts(ci).concat
                && self.chainable(ci)
            {
                let pos = self.sched.position[ci as usize];
                if pos != u32::MAX && best.is_none_or(|(p, _)| pos > p) {
                    best = Some((pos, pref));
                }
            }
        };
        // The users are the ops that read a result of `last`.
        for u in &self.topo.ops[last as usize].users {
            if self.facts(u.user).concat.is_some() {
                consider(u.user);
            }
        }
        for &ci in &self.topo.ops[first as usize].deps {
            let t = &self.topo.ops[ci as usize];
            if let [only] = t.users.as_slice()
                && t.num_uses == 1
                && only.user == first
            {
                consider(ci);
            }
        }
        best.map(|(_, pref)| pref)
    }

    /// Whether the chain starting at `first` is fed by a `d2m_subgraph`: `first` reads the
    /// subgraph's result as operand 0 and is the first such chain start among its users.
    fn fed_by_d2m(&self, first: u32) -> bool {
        self.topo.ops[first as usize].deps.iter().any(|&i| {
            self.facts(i).d2m
                && self.topo.ops[i as usize]
                    .users
                    .iter()
                    .find(|u| u.operand == 0 && self.starts_chain(u.user))
                    .is_some_and(|u| u.user == first)
        })
    }
}

/// The chains whose first op lies at schedule positions `[BLOCK j, BLOCK (j + 1))`, with their
/// ops (body indices) and ids, as [`chains`] builds them.
///
/// Chain building looks at each op, the one scheduled before it, and the ops next to a
/// chain's ends (a concat it feeds or is fed by, a d2m subgraph), so a block reads the blocks
/// of those ops only: an override that changes one op's chainability rebuilds the chains
/// around it, not all of them.
///
/// `reads` says whether the chains are those the overrides give ([`Reads::Overrides`]:
/// the plan's) or those of the graph alone ([`Reads::Base`]: where the chunks are cut, and
/// what the plan without overrides is made of).
#[salsa::tracked(returns(clone))]
pub fn chain_block(db: &dyn Db, func: FuncId, j: u32, reads: Reads) -> BlockChains {
    let topo = func_topology(db, func);
    let sched = schedule(db, func);
    let ops = ir::func_ops(db, func);
    let scan = Scan::new(db, func, &topo, &sched, reads);
    let order = &sched.order;
    let lo = (j as usize * BLOCK).min(order.len());
    let hi = (lo + BLOCK).min(order.len());
    let mut out = Vec::new();
    for pos in lo..hi {
        let i = order[pos];
        let members = if scan.facts(i).concat.is_some() {
            if !scan.chainable(i) {
                continue;
            }
            vec![i]
        } else {
            if !scan.plain(i) || scan.continues(pos) {
                continue;
            }
            let mut members = vec![i];
            let mut q = pos + 1;
            while q < order.len() && scan.continues(q) {
                members.push(order[q]);
                q += 1;
            }
            members
        };
        let concat = members.len() == 1 && scan.facts(i).concat.is_some();
        let preferred = scan.preferred(&members);
        let first = members[0];
        let from_d2m = scan.fed_by_d2m(first);
        let last = *members.last().unwrap_or(&first);
        let to_d2m = topo.ops[last as usize].users.iter().any(|u| scan.facts(u.user).d2m);
        let ids: Vec<OpId> = members.iter().map(|&m| ops[m as usize]).collect();
        let id = ChainId::new(db, func, ids, concat, preferred, from_d2m, to_d2m);
        out.push((members, id));
    }
    out.into()
}

/// The chains around given schedule positions, read from the [`chain_block`]s that hold
/// them (fetched on first use) rather than from [`chains`].
///
/// What the chunks read of the chains: a chunk's chains and where a cut may fall depend on
/// the chains near them only, so after an override that changes one op's chainability the
/// chunks re-read the block that changed and not a function-wide gather of every block.
pub(crate) struct ChainBlocks<'a> {
    db: &'a dyn Db,
    func: FuncId,
    sched: &'a crate::scheduling::Schedule,
    reads: Reads,
    blocks: Vec<std::cell::OnceCell<BlockChains>>,
}

/// One [`chain_block`]: the chains starting in it, with their ops and ids.
type BlockChains = Arc<[(Vec<u32>, ChainId)]>;

/// A chain as [`ChainBlocks::at`] finds it: its ops (body indices, in schedule order, at
/// consecutive positions) and its id.
pub(crate) type BlockChain<'b> = (&'b [u32], ChainId);

impl<'a> ChainBlocks<'a> {
    pub(crate) fn new(
        db: &'a dyn Db,
        func: FuncId,
        sched: &'a crate::scheduling::Schedule,
        reads: Reads,
    ) -> ChainBlocks<'a> {
        let blocks = (0..sched.order.len().div_ceil(BLOCK)).map(|_| Default::default()).collect();
        ChainBlocks { db, func, sched, reads, blocks }
    }

    fn block(&self, j: usize) -> &[(Vec<u32>, ChainId)] {
        match self.blocks.get(j) {
            Some(cell) => {
                cell.get_or_init(|| chain_block(self.db, self.func, j as u32, self.reads))
            }
            None => &[],
        }
    }

    /// The schedule position of a chain's first op.
    fn start(&self, members: &[u32]) -> usize {
        members
            .first()
            .and_then(|&i| self.sched.position.get(i as usize))
            .map_or(usize::MAX, |&p| p as usize)
    }

    /// The chain holding schedule position `pos`, and `pos`'s index in it.
    ///
    /// Chains do not overlap and take consecutive positions, so it is the chain starting
    /// last at or before `pos`: in `pos`'s block, or the last chain of the nearest block
    /// before it that has one.
    pub(crate) fn at(&self, pos: usize) -> Option<(BlockChain<'_>, usize)> {
        let mut j = pos / BLOCK;
        loop {
            // A block's chains are in schedule order of their first ops.
            let block = self.block(j);
            let after = block.partition_point(|(members, _)| self.start(members) <= pos);
            let found = after.checked_sub(1).and_then(|c| block.get(c));
            if let Some((members, id)) = found {
                let at = pos - self.start(members);
                return (at < members.len()).then_some(((members.as_slice(), *id), at));
            }
            j = j.checked_sub(1)?;
        }
    }

    /// Whether the op at schedule position `pos` is in a chain and not its first op: a
    /// place no chunk cut may fall.
    pub(crate) fn inside_chain(&self, pos: usize) -> bool {
        self.at(pos).is_some_and(|(_, at)| at > 0)
    }
}

/// The chains of a function, built along the schedule as DFShardingPolicy builds them:
///
/// - an op joins the current chain when it is chainable, it is scheduled right after the
///   chain's last op, that op has exactly one use, and the op consumes it as operand 0;
/// - a non-chainable op closes the chain; a `d2m_subgraph` is a boundary, in no chain;
/// - a concat closes the chain and sits alone in a concat chain.
///
/// Gathered from [`chain_block`]s.
#[salsa::tracked(returns(clone))]
pub fn chains(db: &dyn Db, func: FuncId) -> Arc<ChainGraph> {
    let topo = func_topology(db, func);
    let sched = schedule(db, func);
    let _p = tracing::debug_span!("chains", func = %func.name(db)).entered();
    let n = topo.ops.len();
    let mut chains: Vec<ChainId> = Vec::new();
    let mut op_chain = vec![None; n];
    let mut last_op = Vec::new();
    for j in 0..sched.order.len().div_ceil(BLOCK) {
        for (members, id) in chain_block(db, func, j as u32, Reads::Overrides).iter() {
            let c = chains.len() as u32;
            for (p, &i) in members.iter().enumerate() {
                if let Some(slot) = op_chain.get_mut(i as usize) {
                    *slot = Some((c, p as u32));
                }
            }
            last_op.push(members.last().copied().unwrap_or(0));
            chains.push(*id);
        }
    }
    // d2m relationships and the solving order.
    let scan = Scan::new(db, func, &topo, &sched, Reads::Overrides);
    let mut d2m = Vec::new();
    for i in 0..n as u32 {
        let facts = scan.facts(i);
        if !facts.d2m {
            continue;
        }
        // The producers of its operands in operand order (each once, which finds the same
        // first one).
        let producer = topo.ops[i as usize].deps.iter().find_map(|&op| {
            op_chain[op as usize]
                .filter(|(c, _)| last_op.get(*c as usize) == Some(&op))
                .map(|(c, _)| c as usize)
        });
        let consumer = topo.ops[i as usize].users.iter().find_map(|u| {
            op_chain[u.user as usize]
                .filter(|(_, p)| *p == 0 && u.operand == 0)
                .map(|(c, _)| c as usize)
        });
        d2m.push(D2mRelation { op: i, producer, consumer });
    }
    let solve_order = solving_order(chains.len(), &d2m);
    Arc::new(ChainGraph { chains, op_chain, last_op, d2m, solve_order })
}

/// The memory layout a concat needs its inputs in, from its dimension and rank.
fn concat_input_layout(op: &ir::OpData) -> Option<TensorMemoryLayout> {
    let dim = op.property("dim").and_then(ir::AttrValue::as_int)?;
    let rank = op.results.first().and_then(|t| t.as_tensor()).map(|t| t.shape.len() as i128)?;
    let dim = if dim < 0 { dim + rank } else { dim };
    if dim == rank - 1 {
        Some(TensorMemoryLayout::HeightSharded)
    } else if dim == rank - 2 {
        Some(TensorMemoryLayout::WidthSharded)
    } else {
        None
    }
}

/// Chains in index order, except that a chain fed through a `d2m_subgraph` comes after the
/// chain producing the subgraph's input (a topological order over those edges).
fn solving_order(n: usize, d2m: &[D2mRelation]) -> Vec<usize> {
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
    for r in d2m {
        if let (Some(p), Some(c)) = (r.producer, r.consumer)
            && p != c
        {
            deps[c].push(p);
        }
    }
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    fn visit(
        c: usize,
        deps: &[Vec<usize>],
        done: &mut [bool],
        order: &mut Vec<usize>,
        depth: usize,
    ) {
        if done[c] || depth > deps.len() {
            return;
        }
        done[c] = true;
        for &d in &deps[c] {
            visit(d, deps, done, order, depth + 1);
        }
        order.push(c);
    }
    for c in 0..n {
        visit(c, &deps, &mut done, &mut order, 0);
    }
    order
}
