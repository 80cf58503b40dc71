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

use base_db::Policy;
use ir::FuncId;

use crate::{
    Db, chain_graph::chains, planning::ChainPlan, planning::MergeRecord, planning::OpPlan,
    scheduling::schedule,
};

/// Ops per chunk, before the boundary moves forward to the end of a chain.
pub const CHUNK_OPS: usize = 256;

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

    /// Op `i`'s (body index) chunk and its index inside that chunk.
    #[must_use]
    pub fn locate(&self, i: u32) -> Option<(u32, usize)> {
        let k = *self.chunk_of.get(i as usize)?;
        let at = *self.at.get(i as usize)?;
        Some((k, (at - self.bounds[k as usize]) as usize))
    }
}

/// The chunks of a function: about [`CHUNK_OPS`] scheduled ops each, cut only between
/// chains; the unscheduled ops (device handles, `ttnn.empty`) form the last chunk.
#[salsa::tracked(returns(clone))]
pub fn chunk_layout(db: &dyn Db, func: FuncId) -> Arc<ChunkLayout> {
    let sched = schedule(db, func);
    let graph = chains(db, func);
    let n = sched.position.len();
    let mut order: Vec<u32> = sched.order.clone();
    let scheduled = order.len();
    order.extend((0..n as u32).filter(|&i| sched.position[i as usize] == u32::MAX));
    let inside_chain =
        |i: u32| graph.op_chain.get(i as usize).copied().flatten().is_some_and(|(_, p)| p > 0);
    let mut bounds = vec![0u32];
    let mut p = 0usize;
    while p < scheduled {
        let mut next = (p + CHUNK_OPS).min(scheduled);
        while next < scheduled && inside_chain(order[next]) {
            next += 1;
        }
        bounds.push(next as u32);
        p = next;
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
    Arc::new(ChunkLayout { order, bounds, chunk_of, at })
}

/// One chunk of a plan: the plans of its ops and the chains and merges decided there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PlanSlice {
    /// Body indices of the chunk's ops, in chunk order.
    pub ops: Vec<u32>,
    /// The plan of each op, parallel to `ops`.
    pub plans: Vec<OpPlan>,
    /// (chain index, plan) of the chains whose ops lie here.
    pub chains: Vec<(u32, ChainPlan)>,
    /// Merges whose join lies here.
    pub merges: Vec<MergeRecord>,
}

/// Chunk `k` of the plan of `func` under `policy`.
#[salsa::tracked(returns(clone))]
pub fn plan_slice(db: &dyn Db, func: FuncId, policy: Policy, k: u32) -> Arc<PlanSlice> {
    let layout = chunk_layout(db, func);
    let plan = crate::planning::plan_for(db, func, policy);
    let ops: Vec<u32> = layout.ops(k as usize).to_vec();
    let plans = ops.iter().filter_map(|&i| plan.ops.get(i as usize).cloned()).collect();
    let chains = plan
        .chains
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.ops.first().is_some_and(|&i| layout.chunk_of.get(i as usize) == Some(&k))
        })
        .map(|(c, p)| (c as u32, p.clone()))
        .collect();
    let merges = plan
        .merges
        .iter()
        .filter(|m| layout.chunk_of.get(m.join as usize) == Some(&k))
        .cloned()
        .collect();
    Arc::new(PlanSlice { ops, plans, chains, merges })
}
