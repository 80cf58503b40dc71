//! Where the overrides reach: the chunks whose walk differs from the plan without overrides.
//!
//! The plan without overrides (`base_chunk`, `base_carry`, `base_slice`, and the cost over
//! them, `base_plan_cost`) reads the graph alone, so a tuning host, whose overrides change
//! at a lower durability than the graph, keeps every memo of it valid in O(1) after an
//! override. The plan with overrides is that plan except in the chunks the overrides reach,
//! which [`override_reach`] finds from the overrides themselves: the chunks of the
//! overridden ops and of the ops reading them have parts, chains and legality the
//! overrides can change ([`overridden_chunks`]); a chunk whose walk read something of those
//! that comes out different with the overrides ([`base_readers`] says which walks read
//! them, `PlanChunk::reads` what they read) is walked again (`overridden_chunk`), and so is
//! the chunk after each chunk whose walk hands on a different carry. The plan's cost is the
//! base cost corrected by the reached chunks', so after one override salsa re-checks a few
//! memos, not every chunk's.

use std::{collections::BTreeSet, sync::Arc};

use base_db::Policy;
use ir::FuncId;

use crate::{
    Db,
    chunks::{
        ChunkLayout, WalkReads, base_carry, base_chunk, base_parts, chunk_chains, chunk_count,
        chunk_layout, foreign_chain, foreign_op_plan, overridden_carry,
    },
    problem::Reads,
};

/// The chunks the overrides reach under a policy, each with the first chunk of its run:
/// inside a run each chunk's carry in is the walk before's; a run starts from the carry of
/// the plan without overrides.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Reach {
    /// (chunk, first chunk of its run), by chunk.
    pub chunks: Vec<(u32, u32)>,
}

impl Reach {
    /// The first chunk of chunk `k`'s run, if the overrides reach chunk `k`.
    #[must_use]
    pub fn start_of(&self, k: u32) -> Option<u32> {
        let at = self.chunks.binary_search_by_key(&k, |&(c, _)| c).ok()?;
        Some(self.chunks[at].1)
    }
}

/// The chunks whose parts or chains the overrides may change, sorted: the chunk of each op
/// with overrides, of each op reading one (a chain whose op reads an overridden producer
/// reads the overrides too), and of each op it reads (a chain's concat preference reads its
/// users' chainability). Reads which groups have overrides ([`layout::overridden_groups`])
/// and those groups' overrides.
#[salsa::tracked(returns(clone))]
pub fn overridden_chunks(db: &dyn Db, func: FuncId) -> Arc<[u32]> {
    let overridden = layout::overridden_groups(db, func);
    let groups = layout::Groups::new(db, func);
    let layout = chunk_layout(db, func);
    let topo = crate::scheduling::func_topology(db, func);
    let mut out = BTreeSet::new();
    // The groups with overrides and those without a name (whose overrides are not among
    // `overridden`), not every group: this runs after every override.
    let named = overridden.iter().filter_map(|&start| groups.index_of(start));
    let mut visit: Vec<u32> = named.chain(groups.unnamed()).collect();
    visit.sort_unstable();
    visit.dedup();
    for g in visit {
        let group = groups.get(g);
        let overrides = crate::chain_graph::group_overrides(db, func, group);
        let first = groups.layout.range(g).start;
        for (at, o) in overrides.iter().enumerate() {
            if o.is_none() {
                continue;
            }
            let i = first + at;
            let users = topo.ops.get(i).map(|o| o.users.as_slice()).unwrap_or_default();
            let deps = topo.ops.get(i).map(|o| o.deps.as_slice()).unwrap_or_default();
            let near = users.iter().map(|u| u.user).chain(deps.iter().copied());
            for op in std::iter::once(i as u32).chain(near) {
                if let Some((k, _)) = layout.locate(op) {
                    out.insert(k);
                }
            }
        }
    }
    out.into_iter().collect()
}

/// Whether the overrides may change chunk `k`'s parts or chains ([`overridden_chunks`]): a
/// firewall per chunk, so that a walk that read chunk `k` re-runs only when that changes.
#[salsa::tracked(returns(copy))]
pub fn chunk_overridden(db: &dyn Db, func: FuncId, k: u32) -> bool {
    overridden_chunks(db, func).binary_search(&k).is_ok()
}

/// Per chunk, the chunks whose walk without overrides read its parts, chains or ops'
/// legality (`PlanChunk::reads`, inverted), sorted. Reads the graph alone.
#[salsa::tracked(returns(clone))]
pub fn base_readers(db: &dyn Db, func: FuncId, policy: Policy) -> Arc<[Vec<u32>]> {
    let n = chunk_count(db, func);
    let layout = chunk_layout(db, func);
    let mut out = vec![Vec::new(); n as usize];
    for k in 0..n {
        for c in base_chunk(db, func, policy, k).reads.chunks_read(&layout) {
            if let Some(readers) = out.get_mut(c as usize)
                && readers.last() != Some(&k)
            {
                readers.push(k);
            }
        }
    }
    out.into()
}

/// Whether two answers are equal, by pointer first (most come from one memo).
fn same<T: PartialEq>(a: Option<Arc<T>>, b: Option<Arc<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(&a, &b) || a == b,
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// Whether something a walk without overrides read (`reads`) comes out different with them:
/// only what lies in the chunks the overrides change (`direct`) can.
fn reads_differ(
    db: &dyn Db,
    func: FuncId,
    merging: bool,
    reads: &WalkReads,
    (direct, layout): (&[u32], &ChunkLayout),
) -> bool {
    let changed = |k: u32| direct.binary_search(&k).is_ok();
    let op_changed = |i: u32| layout.locate(i).is_some_and(|(k, _)| changed(k));
    reads.chunks.iter().any(|&k| {
        changed(k) && {
            !same(
                Some(base_parts(db, func, merging, k, Reads::Base)),
                Some(base_parts(db, func, merging, k, Reads::Overrides)),
            )
        }
    }) || reads.chain_of.iter().any(|&i| {
        layout.locate(i).is_some_and(|(k, at)| {
            changed(k)
                && chunk_chains(db, func, k, Reads::Base).of_op.get(at)
                    != chunk_chains(db, func, k, Reads::Overrides).of_op.get(at)
        })
    }) || reads.plans.iter().any(|&i| {
        op_changed(i)
            && !same(
                foreign_op_plan(db, func, merging, i, Reads::Base),
                foreign_op_plan(db, func, merging, i, Reads::Overrides),
            )
    }) || reads.chains.iter().any(|&i| {
        op_changed(i)
            && !same(
                foreign_chain(db, func, merging, i, Reads::Base),
                foreign_chain(db, func, merging, i, Reads::Overrides),
            )
    }) || reads.legal.iter().any(|&i| {
        op_changed(i) && {
            let ops = ir::func_ops(db, func);
            ops.get(i as usize).is_some_and(|&op| {
                crate::problem::legal_layouts(db, op, Reads::Base)
                    != crate::problem::legal_layouts(db, op, Reads::Overrides)
            })
        }
    })
}

/// The chunks the overrides reach under `policy` (see the module docs). Empty without
/// overrides; `greedy` plans every chunk with its own walk and is not asked.
#[salsa::tracked(returns(clone))]
pub fn override_reach(db: &dyn Db, func: FuncId, policy: Policy) -> Arc<Reach> {
    let direct = overridden_chunks(db, func);
    if direct.is_empty() || policy == Policy::Greedy {
        return Arc::default();
    }
    let n = chunk_count(db, func);
    let layout = chunk_layout(db, func);
    let merging = policy == Policy::DfShardingMerge;
    let readers = base_readers(db, func, policy);
    let mut candidates: BTreeSet<u32> = direct.iter().copied().collect();
    for &d in direct.iter() {
        candidates.extend(readers.get(d as usize).into_iter().flatten().copied());
    }
    let mut out = Reach::default();
    // The start of the current run while the chunk before handed on a changed carry.
    let mut run: Option<u32> = None;
    let mut k = candidates.first().copied().unwrap_or(n);
    while k < n {
        // Outside a run, a chunk is walked again when something its walk read changes
        // (its own parts among them).
        let walked = run.is_some()
            || (candidates.contains(&k)
                && reads_differ(
                    db,
                    func,
                    merging,
                    &base_chunk(db, func, policy, k).reads,
                    (&direct, &layout),
                ));
        if !walked {
            match candidates.range(k + 1..).next() {
                Some(&c) => {
                    k = c;
                    continue;
                }
                None => break,
            }
        }
        let start = run.unwrap_or(k);
        out.chunks.push((k, start));
        let carried = overridden_carry(db, func, policy, k, start);
        run = (carried != base_carry(db, func, policy, k)).then_some(start);
        k += 1;
    }
    Arc::new(out)
}
