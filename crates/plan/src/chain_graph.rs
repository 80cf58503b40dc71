//! `chains`: L1 chains along the schedule, with identities that survive unrelated edits.
//!
//! A chain is interned from its ops' ids (names), its kind, the memory layout a consuming
//! concat prefers, and whether a `d2m_subgraph` feeds it. Equal chains get equal ids in any
//! revision, so after an edit only chains that actually changed get new ids and everything
//! else keyed by a chain is a memo hit.

use std::sync::Arc;

use ir::{FuncId, OpId};
use ttnn_types::TensorMemoryLayout;

use crate::{
    Db,
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
#[salsa::tracked(returns(copy))]
pub fn op_chainable(db: &dyn Db, op: OpId) -> bool {
    let Some(sig) = layout::op_signature(db, op) else { return false };
    if !sig.kind.is_chain_shardable() {
        return false;
    }
    let _p = tracing::trace_span!("op_chainable", op = %op.key(db)).entered();
    // An op whose layout is fixed keeps it: a chain could only fail on it or move it.
    if layout::legal_op_layouts(db, op).fixed {
        return false;
    }
    !layout::legal_op_configs(db, op).sharded.is_empty()
}

/// Ops per block of [`chainable_block`].
const BLOCK: usize = ir::BODY_BLOCK;

/// [`op_chainable`] for the ops of one block of [`BLOCK`] body indices.
///
/// A firewall: `chains` reads these blocks instead of every op's answer, so after an
/// override only one block is re-checked (and backdated when its answers stay the same)
/// instead of every op's memo being validated.
#[salsa::tracked(returns(clone))]
pub fn chainable_block(db: &dyn Db, func: FuncId, j: u32) -> Arc<Vec<bool>> {
    let ops = ir::func_ops(db, func);
    let lo = (j as usize * BLOCK).min(ops.len());
    let hi = (lo + BLOCK).min(ops.len());
    Arc::new(ops[lo..hi].iter().map(|&op| op_chainable(db, op)).collect())
}

/// What chain building reads of one op besides its chainability: whether it is a
/// `d2m_subgraph` or a concat (with the input layout a concat wants), and for those two the
/// values they read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChainFacts {
    pub d2m: bool,
    /// `Some` for a concat: the memory layout it needs its inputs in, if any.
    pub concat: Option<Option<TensorMemoryLayout>>,
    /// The operands of a d2m subgraph or a concat (empty for other ops).
    pub operands: Vec<ir::ValueRef>,
}

/// [`ChainFacts`] of the ops of one block of body indices.
///
/// A firewall between the body and `chains`: an edit to an op's attributes or types changes
/// its body block but not these facts, so the chains are not rebuilt.
#[salsa::tracked(returns(clone))]
pub fn chain_facts_block(db: &dyn Db, func: FuncId, j: u32) -> Arc<[ChainFacts]> {
    ir::func_block(db, func, j)
        .iter()
        .map(|op| {
            let d2m = op.name == "ttnn.d2m_subgraph";
            let concat = (op.name == "ttnn.concat").then(|| concat_input_layout(op));
            let operands = if d2m || concat.is_some() { op.operands.clone() } else { Vec::new() };
            ChainFacts { d2m, concat, operands }
        })
        .collect()
}

/// The chains of a function, built along the schedule as DFShardingPolicy builds them:
///
/// - an op joins the current chain when it is chainable, it is scheduled right after the
///   chain's last op, that op has exactly one use, and the op consumes it as operand 0;
/// - a non-chainable op closes the chain; a `d2m_subgraph` is a boundary, in no chain;
/// - a concat closes the chain and sits alone in a concat chain.
#[salsa::tracked(returns(clone))]
pub fn chains(db: &dyn Db, func: FuncId) -> Arc<ChainGraph> {
    let topo = func_topology(db, func);
    let sched = schedule(db, func);
    let ops = ir::func_ops(db, func);
    let _p = tracing::debug_span!("chains", func = %func.name(db)).entered();
    let n = ops.len();
    let blocks: Vec<Arc<Vec<bool>>> =
        (0..n.div_ceil(BLOCK)).map(|j| chainable_block(db, func, j as u32)).collect();
    let chainable =
        |i: usize| blocks.get(i / BLOCK).and_then(|b| b.get(i % BLOCK)).copied().unwrap_or(false);
    // The body's facts, not the body: chains are rebuilt only when something they depend on
    // changes.
    let fact_blocks: Vec<Arc<[ChainFacts]>> =
        (0..n.div_ceil(BLOCK)).map(|j| chain_facts_block(db, func, j as u32)).collect();
    let no_facts = ChainFacts::default();
    let facts =
        |i: usize| fact_blocks.get(i / BLOCK).and_then(|b| b.get(i % BLOCK)).unwrap_or(&no_facts);
    let is_d2m = |i: usize| facts(i).d2m;
    let is_concat = |i: usize| facts(i).concat.is_some();
    let mut raw: Vec<(Vec<u32>, bool)> = Vec::new();
    let mut current: Vec<u32> = Vec::new();
    let close = |current: &mut Vec<u32>, raw: &mut Vec<(Vec<u32>, bool)>| {
        if !current.is_empty() {
            raw.push((std::mem::take(current), false));
        }
    };
    for (pos, &i) in sched.order.iter().enumerate() {
        let iu = i as usize;
        if is_d2m(iu) {
            close(&mut current, &mut raw);
            continue;
        }
        if is_concat(iu) {
            close(&mut current, &mut raw);
            if chainable(iu) {
                raw.push((vec![i], true));
            }
            continue;
        }
        if !chainable(iu) {
            close(&mut current, &mut raw);
            continue;
        }
        let extends = current.last().is_some_and(|&last| {
            let l = &topo.ops[last as usize];
            pos > 0
                && sched.order[pos - 1] == last
                && l.num_uses == 1
                && l.users.first().is_some_and(|u| u.user == i && u.operand == 0)
        });
        if !extends {
            close(&mut current, &mut raw);
        }
        current.push(i);
    }
    close(&mut current, &mut raw);

    let mut op_chain = vec![None; n];
    for (c, (members, _)) in raw.iter().enumerate() {
        for (p, &i) in members.iter().enumerate() {
            op_chain[i as usize] = Some((c as u32, p as u32));
        }
    }
    // Concat preferences: width concat wants height-sharded inputs, height concat
    // width-sharded ones, never block sharded.
    let mut preferred: Vec<Option<TensorMemoryLayout>> = vec![None; raw.len()];
    for (members, concat) in &raw {
        if !*concat {
            continue;
        }
        let ci = members[0] as usize;
        let Some(Some(pref)) = facts(ci).concat else { continue };
        for v in &facts(ci).operands {
            if let ir::ValueRef::Result { op, .. } = *v
                && let Some((c, p)) = op_chain[op as usize]
                && raw[c as usize].0.len() == p as usize + 1
            {
                preferred[c as usize] = Some(pref);
            }
        }
        let t = &topo.ops[ci];
        if let [only] = t.users.as_slice()
            && t.num_uses == 1
            && let Some((c, 0)) = op_chain[only.user as usize]
        {
            preferred[c as usize] = Some(pref);
        }
    }
    // d2m relationships and the solving order.
    let mut d2m = Vec::new();
    for i in 0..n {
        if !is_d2m(i) {
            continue;
        }
        let producer = facts(i).operands.iter().find_map(|v| match *v {
            ir::ValueRef::Result { op, .. } => op_chain[op as usize]
                .filter(|(c, p)| raw[*c as usize].0.len() == *p as usize + 1)
                .map(|(c, _)| c as usize),
            _ => None,
        });
        let consumer = topo.ops[i].users.iter().find_map(|u| {
            op_chain[u.user as usize]
                .filter(|(_, p)| *p == 0 && u.operand == 0)
                .map(|(c, _)| c as usize)
        });
        d2m.push(D2mRelation { op: i as u32, producer, consumer });
    }
    let from_d2m: Vec<bool> =
        (0..raw.len()).map(|c| d2m.iter().any(|r| r.consumer == Some(c))).collect();
    let to_d2m: Vec<bool> = raw
        .iter()
        .map(|(members, _)| {
            members.last().is_some_and(|&l| {
                topo.ops[l as usize].users.iter().any(|u| is_d2m(u.user as usize))
            })
        })
        .collect();
    let solve_order = solving_order(raw.len(), &d2m);
    let last_op = raw.iter().map(|(members, _)| members.last().copied().unwrap_or(0)).collect();
    let chains = raw
        .iter()
        .enumerate()
        .map(|(c, (members, concat))| {
            let ids: Vec<OpId> = members.iter().map(|&i| ops[i as usize]).collect();
            ChainId::new(db, func, ids, *concat, preferred[c], from_d2m[c], to_d2m[c])
        })
        .collect();
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
