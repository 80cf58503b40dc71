//! `func_topology` and `schedule`: the DFS-schedulable order of a function's ops.
//!
//! `schedule` reads only `func_topology`, which keeps the dependency structure and nothing
//! else: an edit that leaves the data flow alone (a type, an attribute, an override) is
//! backdated at the topology and never re-schedules.

use std::{collections::BTreeSet, sync::Arc};

use ir::{FuncId, ValueRef};
use smallvec::SmallVec;

use crate::Db;

/// One use of an op's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Use {
    pub user: u32,
    pub operand: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopoOp {
    /// Distinct producer op indices of this op's operands. Inline up to two (most ops): a
    /// topology is rebuilt after an op is inserted or deleted, and a list per op was 20k
    /// allocations, and as many frees, on a 10k-op function.
    pub deps: SmallVec<[u32; 2]>,
    /// Every use of this op's results by other ops, in program order.
    pub users: SmallVec<[Use; 2]>,
    /// How many times the op's results are used, the terminator included.
    pub num_uses: u32,
    /// True if a result is returned.
    pub returned: bool,
    /// False for ops the scheduler ignores (`get_device`, `empty`): they stay in place.
    pub schedulable: bool,
    /// True for `ttnn.to_layout`: an empty chain prefers to start at one.
    pub to_layout: bool,
}

/// The data flow of a function: ops by index, with their dependencies and uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Topology {
    pub ops: Vec<TopoOp>,
}

/// A function's [`Topology`], from its frame and the data flow of each block of ops.
///
/// The groups' flows ([`flow_block`]) are a firewall: an edit to one op's attributes or
/// types re-runs its group's flow, which stays equal, and this is not re-run (it allocates
/// two lists per op of the function).
#[salsa::tracked(returns(clone))]
pub fn func_topology(db: &dyn Db, func: FuncId) -> Arc<Topology> {
    let Some(frame) = ir::func_frame(db, func) else { return Arc::default() };
    let _p = tracing::debug_span!("func_topology", func = %func.name(db)).entered();
    let blocks: Vec<Arc<[OpFlow]>> =
        layout::Groups::new(db, func).iter().map(|g| flow_of_group(db, func, g)).collect();
    let flows = || blocks.iter().flat_map(|b| b.iter());
    let mut ops: Vec<TopoOp> = flows()
        .map(|f| TopoOp {
            deps: SmallVec::new(),
            users: SmallVec::new(),
            num_uses: 0,
            returned: false,
            schedulable: f.schedulable,
            to_layout: f.to_layout,
        })
        .collect();
    for (i, f) in flows().enumerate() {
        for &(name, k) in &f.operands {
            let Some(op) = frame.index_of(name) else { continue };
            if let Some(p) = ops.get_mut(op as usize) {
                p.users.push(Use { user: i as u32, operand: k });
                p.num_uses += 1;
                if !ops[i].deps.contains(&op) {
                    ops[i].deps.push(op);
                }
            }
        }
    }
    for v in &frame.returns {
        if let Some((op, _)) = frame.result_of(*v)
            && let Some(p) = ops.get_mut(op as usize)
        {
            p.returned = true;
            p.num_uses += 1;
        }
    }
    Arc::new(Topology { ops })
}

/// What the topology reads of one op: the producers of its operands and two flags.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpFlow {
    /// Per operand that is an op's result: (producer key, operand index). By key, not body
    /// index, so that an op inserted elsewhere leaves this block's flow equal; the topology
    /// resolves the keys through the frame.
    pub operands: Vec<(ir::Name, u32)>,
    pub schedulable: bool,
    pub to_layout: bool,
}

/// [`OpFlow`] of each op of the group of a function's body that starts with the op keyed
/// `start` (`ir::func_group_at`).
#[salsa::tracked(returns(clone))]
pub fn flow_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<[OpFlow]> {
    flows_of(&ir::func_group_at(db, func, start))
}

/// [`flow_block`] of a group: the memo where the group has a name, else computed.
pub fn flow_of_group(db: &dyn Db, func: FuncId, group: layout::GroupRef) -> Arc<[OpFlow]> {
    match group {
        layout::GroupRef::Named(start) => flow_block(db, func, start),
        layout::GroupRef::Unnamed(_) => flows_of(&group.ops(db, func)),
    }
}

fn flows_of(ops: &[Arc<ir::OpData>]) -> Arc<[OpFlow]> {
    ops.iter()
        .map(|o| OpFlow {
            operands: o
                .operands
                .iter()
                .enumerate()
                .filter_map(|(k, v)| match *v {
                    ValueRef::Result { op, .. } => Some((op, k as u32)),
                    _ => None,
                })
                .collect(),
            schedulable: !matches!(o.name.as_str(), "ttnn.get_device" | "ttnn.empty")
                && !matches!(o.form, ir::OpForm::Opaque | ir::OpForm::Other),
            to_layout: o.name == "ttnn.to_layout",
        })
        .collect()
}

/// The scheduled order of a function's schedulable ops (indices into its body).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Schedule {
    pub order: Vec<u32>,
    /// Position of each op in `order` (`u32::MAX` for ops that are not scheduled).
    pub position: Vec<u32>,
}

/// tt-mlir's DFS scheduler, made a function of the topology alone.
///
/// - The ready ops are those whose dependencies are all scheduled, in program order, with
///   the ones that have a *blocked successor* first: a user that would still wait for
///   another dependency after this op runs. That puts the side branches of a fork-join
///   first, so the join's last input is produced right before the join (tt-mlir #3744).
/// - After scheduling an op with a single use that consumes it as operand 0, that user is
///   scheduled next if it is ready: the depth-first chain-following that lets L1 chains grow.
///   tt-mlir follows the user only while the current op is chainable; here the schedule
///   follows it regardless of op kinds, so it reads only the topology (a documented
///   deviation; chains are cut afterwards by the chain rules).
///
/// Runs in O(E log N) with two ordered ready sets instead of re-sorting per step.
#[salsa::tracked(returns(clone))]
pub fn schedule(db: &dyn Db, func: FuncId) -> Arc<Schedule> {
    let topo = func_topology(db, func);
    let _p = tracing::debug_span!("schedule", func = %func.name(db)).entered();
    Arc::new(compute_schedule(&topo))
}

pub(crate) fn compute_schedule(topo: &Topology) -> Schedule {
    let n = topo.ops.len();
    let sched = |i: usize| topo.ops[i].schedulable;
    let mut remaining: Vec<u32> = (0..n)
        .map(|i| topo.ops[i].deps.iter().filter(|&&d| sched(d as usize)).count() as u32)
        .collect();
    // Distinct schedulable users of each op.
    let users: Vec<Vec<u32>> = (0..n)
        .map(|i| {
            let mut u: Vec<u32> =
                topo.ops[i].users.iter().map(|u| u.user).filter(|&u| sched(u as usize)).collect();
            u.dedup();
            u.sort_unstable();
            u.dedup();
            u
        })
        .collect();
    let mut blocked: Vec<u32> = (0..n)
        .map(|i| users[i].iter().filter(|&&u| remaining[u as usize] >= 2).count() as u32)
        .collect();
    let mut scheduled = vec![false; n];
    let mut ready_blocked: BTreeSet<u32> = BTreeSet::new();
    let mut ready_free: BTreeSet<u32> = BTreeSet::new();
    for i in (0..n).filter(|&i| sched(i) && remaining[i] == 0) {
        if blocked[i] > 0 {
            ready_blocked.insert(i as u32);
        } else {
            ready_free.insert(i as u32);
        }
    }
    let mut order = Vec::new();
    let mut next: Option<u32> = None;
    loop {
        let pick = next
            .filter(|x| ready_blocked.contains(x) || ready_free.contains(x))
            .or_else(|| ready_blocked.first().copied())
            .or_else(|| ready_free.first().copied());
        let Some(x) = pick else { break };
        ready_blocked.remove(&x);
        ready_free.remove(&x);
        scheduled[x as usize] = true;
        order.push(x);
        for &u in &users[x as usize] {
            let ru = &mut remaining[u as usize];
            *ru = ru.saturating_sub(1);
            if *ru == 1 {
                // `u` no longer waits on two or more ops: its other pending producers lose
                // their blocked successor.
                for &d in &topo.ops[u as usize].deps {
                    let d = d as usize;
                    if sched(d) && !scheduled[d] {
                        blocked[d] = blocked[d].saturating_sub(1);
                        if blocked[d] == 0 && ready_blocked.remove(&(d as u32)) {
                            ready_free.insert(d as u32);
                        }
                    }
                }
            }
            if *ru == 0 && !scheduled[u as usize] {
                if blocked[u as usize] > 0 {
                    ready_blocked.insert(u);
                } else {
                    ready_free.insert(u);
                }
            }
        }
        let op = &topo.ops[x as usize];
        next = match op.users.as_slice() {
            [only] if op.num_uses == 1 && only.operand == 0 => Some(only.user),
            _ => None,
        };
    }
    let mut position = vec![u32::MAX; n];
    for (p, &i) in order.iter().enumerate() {
        position[i as usize] = p as u32;
    }
    Schedule { order, position }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(deps: &[u32], schedulable: bool) -> TopoOp {
        TopoOp {
            deps: SmallVec::from_slice(deps),
            users: SmallVec::new(),
            num_uses: 0,
            returned: false,
            schedulable,
            to_layout: false,
        }
    }

    fn topo(mut ops: Vec<TopoOp>) -> Topology {
        for i in 0..ops.len() {
            let deps = ops[i].deps.clone();
            for (k, d) in deps.iter().enumerate() {
                ops[*d as usize].users.push(Use { user: i as u32, operand: k as u32 });
                ops[*d as usize].num_uses += 1;
            }
        }
        Topology { ops }
    }

    #[test]
    fn side_branches_of_a_fork_join_are_scheduled_first() {
        // 0 forks into 1 and 2; 3 joins (1, 2) but 2 was written before 1's chain 4.
        //   0 -> 1 -> 3(join with 2)
        //   0 -> 2
        let t = topo(vec![op(&[], true), op(&[0], true), op(&[0], true), op(&[1, 2], true)]);
        assert_eq!(compute_schedule(&t).order, vec![0, 1, 2, 3]);
    }

    #[test]
    fn single_use_operand_zero_users_are_followed_depth_first() {
        // Two independent chains written interleaved: 0->2->4 and 1->3.
        let t = topo(vec![
            op(&[], true),
            op(&[], true),
            op(&[0], true),
            op(&[1], true),
            op(&[2], true),
        ]);
        assert_eq!(compute_schedule(&t).order, vec![0, 2, 4, 1, 3]);
    }

    #[test]
    fn unschedulable_ops_are_left_out_and_do_not_block() {
        let t = topo(vec![op(&[], false), op(&[0], true), op(&[1], true)]);
        let s = compute_schedule(&t);
        assert_eq!(s.order, vec![1, 2]);
        assert_eq!(s.position, vec![u32::MAX, 0, 1]);
    }
}
