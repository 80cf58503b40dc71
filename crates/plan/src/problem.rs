//! `chain_problem` and `solve_chain`: one chain's solver input, and its solution.
//!
//! `solve_chain(chain)` reads only `chain_problem(chain)` (and the target), never the whole
//! function: an edit re-solves exactly the chains whose problem changed. The problem names
//! ops by their keys, not their locations, so renaming a `loc(...)` does not re-solve.

use std::sync::Arc;

use base_db::TargetInput;
use ir::{FuncId, OpId, Ty};
use layout::{OperandSource, TensorKey};
use opmodel::TensorDesc;
use solver::{Candidate, ChainProblem, ChainSolution, Edge, ProblemOp};
use ttnn_types::{DataType, PageLayout, TtnnLayout};

use crate::{Db, chain_graph::ChainId};

/// The layout an op gets when no chain claims it, as tt-mlir's `OpConfigAnalysis` picks
/// it: the first legal layout with the tiledness of the op's current result (DRAM
/// interleaved, since interleaved layouts come first and DRAM before L1). Ops whose output
/// the optimizer may not change keep their layout.
#[salsa::tracked(returns(clone))]
pub fn fallback_layout(db: &dyn Db, op: OpId) -> Option<TtnnLayout> {
    let sig = layout::op_signature(db, op)?;
    let existing = sig.tensor_result()?.layout.clone()?;
    let legal = layout::legal_op_layouts(db, op);
    if legal.fixed {
        return Some(existing);
    }
    let page = existing.page_layout();
    legal
        .layouts
        .iter()
        .find(|l| l.page_layout() == page)
        .or_else(|| legal.layouts.first())
        .cloned()
        .or(Some(existing))
}

/// The layout a value has when the optimizer leaves its producer alone.
pub(crate) fn source_layout(
    db: &dyn Db,
    func: FuncId,
    source: &OperandSource,
    ty: &Ty,
) -> Option<TtnnLayout> {
    match source {
        OperandSource::Op { key, .. } => {
            fallback_layout(db, OpId::new(db, func, key.clone())).or_else(|| ty.layout().cloned())
        }
        _ => ty.layout().cloned(),
    }
}

/// The solver input for one chain.
#[salsa::tracked(returns(clone))]
pub fn chain_problem(db: &dyn Db, chain: ChainId) -> Arc<ChainProblem> {
    let func = chain.func(db);
    let ops = chain.ops(db);
    let _p = tracing::debug_span!("chain_problem", func = %func.name(db), head = %ops.first().map_or("", |o| o.key(db))).entered();
    let mut problem = ChainProblem {
        ops: Vec::with_capacity(ops.len()),
        edges: Vec::new(),
        user_reshards: Vec::new(),
        preferred_output: chain.preferred(db),
        spills_output: !chain.to_d2m(db),
    };
    for (j, &op) in ops.iter().enumerate() {
        let Some(sig) = layout::op_signature(db, op) else { continue };
        let candidates: Vec<Candidate> = layout::legal_op_configs(db, op)
            .configs
            .iter()
            .filter(|c| c.layout.is_l1() && c.layout.is_sharded())
            .map(|c| Candidate { layout: c.layout.clone(), config: c.config.clone() })
            .collect();
        let mut operands = Vec::with_capacity(sig.operands.len());
        let mut reshard_targets = Vec::with_capacity(sig.operands.len());
        for (k, operand) in sig.operands.iter().enumerate() {
            let Some(t) = operand.ty.as_tensor() else {
                operands.push(None);
                reshard_targets.push(Arc::default());
                continue;
            };
            let shape = t.static_shape().unwrap_or_default();
            let dtype = t.data_type().unwrap_or(DataType::BF16);
            let in_chain = match &operand.source {
                OperandSource::Op { key, .. } => {
                    ops.iter().position(|o| o.key(db) == key).filter(|&p| p < j)
                }
                _ => None,
            };
            if let Some(p) = in_chain {
                problem.edges.push(Edge { producer: p, consumer: j, operand: k as u32 });
            }
            let layout = source_layout(db, func, &operand.source, &operand.ty)
                .unwrap_or_else(|| TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile));
            operands.push(Some(TensorDesc::new(&shape, layout)));
            let needs_targets = in_chain.is_some() || (j == 0 && k == 0);
            reshard_targets.push(if needs_targets {
                let pool =
                    layout::legal_tensor_layouts(db, TensorKey::new(db, shape.clone(), dtype));
                Arc::clone(&pool.reshard_targets)
            } else {
                Arc::default()
            });
        }
        if let Some(o) = layout::op_overrides(db, op) {
            for &k in &o.reshard_operands {
                problem.user_reshards.push((j, k));
            }
        }
        let result = sig.tensor_result();
        problem.ops.push(ProblemOp {
            name: op.key(db).clone(),
            kind: sig.kind.clone(),
            operands,
            output_shape: result.and_then(|t| t.static_shape()).unwrap_or_default(),
            output_dtype: result.and_then(|t| t.data_type()).unwrap_or(DataType::BF16),
            candidates,
            reshard_targets,
            input_from_d2m: j == 0 && chain.from_d2m(db),
        });
    }
    Arc::new(problem)
}

/// ShardSolver's solution for one (non-concat) chain.
#[salsa::tracked(returns(clone))]
pub fn solve_chain(db: &dyn Db, chain: ChainId) -> Arc<ChainSolution> {
    let problem = chain_problem(db, chain);
    let target = TargetInput::get(db).target(db);
    let _p = tracing::debug_span!("solve_chain", ops = problem.ops.len()).entered();
    Arc::new(solver::solve(&problem, db.op_model(), target))
}
