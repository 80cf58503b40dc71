//! The optimizer's decisions as plain data: per op and per chain, with reasons, for the
//! CLI (`optimize --report`), the session's `plan` command and hovers.

use std::sync::Arc;

use base_db::SourceFile;
use ttnn_types::TtnnLayout;

use crate::{Analysis, Cancellable, RootDatabase};

/// One op's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpDecision {
    pub func: String,
    /// The op's `loc` name, else its result names.
    pub op: String,
    pub kind: String,
    /// The layout as written and as planned.
    pub written: Option<TtnnLayout>,
    pub planned: Option<TtnnLayout>,
    /// The op config in words (`conv2d act_block_h 64`, `matmul 2D mcast 8x8`), if any.
    pub config: Option<String>,
    /// Chain index, position (1-based) and chain length, and the chain's state.
    pub chain: Option<(u32, u32, u32, &'static str)>,
    pub reason: String,
    /// Conversions in front of operands: (operand, layout, reason).
    pub reshards: Vec<(u32, TtnnLayout, String)>,
    /// The conversion of the result right after the op, with its reason.
    pub spill: Option<(TtnnLayout, String)>,
    /// Schedule position.
    pub position: Option<u32>,
    /// The cost model's device time for the op as planned (its own kernel, not the
    /// conversions around it), in ns.
    pub time_ns: u64,
    /// The op's part of the cost model's lower bound (`plan::op_lower_bounds`): its time at
    /// its best placement with every free tensor local in L1, in ns. Below `time_ns` but
    /// where a conversion in front of the op carries part of it (a weight the bound reads in
    /// DRAM, converted to L1 first).
    pub bound_ns: u64,
}

/// One chain's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    pub func: String,
    pub index: u32,
    pub ops: Vec<String>,
    pub state: &'static str,
    pub concat: bool,
    pub failure: Option<String>,
    pub spill: &'static str,
    pub spill_reason: String,
}

/// A file's plan: decisions, chains, merges and counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanReport {
    pub policy: String,
    pub ops: Vec<OpDecision>,
    pub chains: Vec<ChainSummary>,
    pub merges: Vec<String>,
    pub ops_in_l1: usize,
    pub reshards: usize,
    pub spills: usize,
    /// Functions the optimizer left alone, and why.
    pub skipped: Vec<(String, String)>,
}

impl PlanReport {
    /// Chains by state: (state, count), in a fixed order.
    #[must_use]
    pub fn chains_by_state(&self) -> Vec<(&'static str, usize)> {
        ["completed", "declined", "failed", "built", "resolved", "in-build"]
            .into_iter()
            .map(|s| (s, self.chains.iter().filter(|c| c.state == s).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

pub(crate) fn config_text(c: &opmodel::OpConfig) -> Option<String> {
    match c {
        opmodel::OpConfig::None => None,
        opmodel::OpConfig::Conv2d { conv, slice, .. } => Some(format!(
            "conv2d act_block_h_override={} deallocate_activation={}{}{}",
            conv.act_block_h_override.map_or("-".to_owned(), |v| v.to_string()),
            conv.deallocate_activation.map_or("-".to_owned(), |v| v.to_string()),
            conv.shard_layout.map_or(String::new(), |s| format!(" shard_layout={s}")),
            slice.map_or(String::new(), |s| format!(" slices={} x{}", s.slice_type, s.num_slices))
        )),
        opmodel::OpConfig::Matmul { program: Some(p), .. } => {
            let (m, n) = p.per_core();
            Some(format!(
                "matmul {} per_core {m}x{n} in0_block_w {}",
                p.kind_name(),
                p.in0_block_w()
            ))
        }
        opmodel::OpConfig::Matmul { program: None, .. } => None,
    }
}

pub(crate) fn plan_report(db: &RootDatabase, file: SourceFile) -> PlanReport {
    plan_report_for(db, file, layout::effective_options(db).policy)
}

pub(crate) fn plan_report_for(
    db: &RootDatabase,
    file: SourceFile,
    policy: base_db::Policy,
) -> PlanReport {
    let mut report = PlanReport::default();
    for &func in ir::file_funcs(db, file).iter() {
        let Some(body) = ir::func_body(db, func) else { continue };
        if let Err(why) = rewrite::optimizable(&body) {
            report.skipped.push((func.name(db).clone(), why));
            continue;
        }
        let plan: Arc<plan::Plan> = plan::plan_for(db, func, policy);
        report.policy = plan.policy.name().to_owned();
        let names = ir::func_loc_names(db, func);
        let op_name = |i: usize| {
            names.of_key(&body.ops[i].key).map_or_else(|| body.ops[i].key.clone(), str::to_owned)
        };
        for (ci, c) in plan.chains.iter().enumerate() {
            report.chains.push(ChainSummary {
                func: func.name(db).clone(),
                index: ci as u32,
                ops: c.ops.iter().map(|&i| op_name(i as usize)).collect(),
                state: c.state.name(),
                concat: c.concat,
                failure: c.failure.clone(),
                spill: c.spill.name(),
                spill_reason: c.spill_reason.clone(),
            });
        }
        for m in &plan.merges {
            report.merges.push(format!("{}: {}", m.kind.name(), m.description));
        }
        report.ops_in_l1 += plan.ops_in_l1();
        report.reshards += plan.reshards();
        report.spills += plan.spills();
        let cost = plan::plan_cost(db, func, policy);
        let bounds = plan::op_lower_bounds(db, func);
        for (i, (data, p)) in body.ops.iter().zip(&plan.ops).enumerate() {
            // A chain index the plan's list lacks (a planner bug) reads as no chain, not a
            // panic of the language server.
            let chain = p.chain.and_then(|(c, pos)| {
                let ch = plan.chains.get(c as usize)?;
                Some((c, pos + 1, ch.ops.len() as u32, ch.state.name()))
            });
            report.ops.push(OpDecision {
                func: func.name(db).clone(),
                op: op_name(i),
                kind: data.name.clone(),
                written: data.results.first().and_then(|t| t.layout().cloned()),
                planned: p.layout.clone(),
                config: config_text(&p.config),
                chain,
                reason: p.reason.to_string(),
                reshards: p
                    .expected_operands
                    .iter()
                    .enumerate()
                    .filter_map(|(k, c)| {
                        c.as_ref().map(|c| (k as u32, c.layout.clone(), c.reason.to_string()))
                    })
                    .collect(),
                spill: p.spill.as_ref().map(|s| (s.layout.clone(), s.reason.to_string())),
                position: plan.schedule.position.get(i).copied().filter(|&p| p != u32::MAX),
                time_ns: cost.per_op.get(i).copied().unwrap_or(0),
                bound_ns: bounds.get(i).copied().unwrap_or(0),
            });
        }
    }
    report
}

impl Analysis {
    /// The optimizer's decisions for every function of a file.
    pub fn plan_report(&self, file: SourceFile) -> Cancellable<PlanReport> {
        self.with_db(|db| plan_report(db, file))
    }

    /// The decisions under `policy`, whatever the options say (policies side by side).
    pub fn plan_report_for(
        &self,
        file: SourceFile,
        policy: base_db::Policy,
    ) -> Cancellable<PlanReport> {
        self.with_db(move |db| plan_report_for(db, file, policy))
    }

    /// The optimized text of a file.
    pub fn final_ir(&self, file: SourceFile) -> Cancellable<Arc<rewrite::FinalIr>> {
        self.with_db(|db| rewrite::final_ir(db, file))
    }
}
