//! Analysis findings for the editor, beyond syntax and semantics:
//!
//! - op-model errors on the IR as written (`op-model-rejects`), and the points where the live
//!   L1 of the IR as written exceeds the budget (`l1-out-of-memory`);
//! - the optimizer's findings with their reasons: a chain that failed on an edge
//!   (`chain-failed`, warning), a chain the cost model declined (`chain-declined`,
//!   information), an op whose output spills (`spill`, information), a reshard
//!   inserted in front of an operand (`reshard`, information).
//!
//! Verdicts come from memoized queries (`layout::written_checks_block` per block of ops, the
//! plan's findings per chunk, `chunk_findings`), so after an edit only the changed block and
//! chunks are re-evaluated; this pass only maps them to ranges.

use base_db::{SourceFile, TargetInput};
use ir::ValueRef;

use crate::{Analysis, Cancellable, Diagnostic, RootDatabase, Severity};

pub(crate) fn findings(db: &RootDatabase, file: SourceFile) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let lowered = ir::lower_file(db, file);
    if lowered.diagnostics.iter().any(|d| d.severity == Severity::Error) {
        // Findings on a broken file would describe a program that does not exist.
        return out;
    }
    let budget = TargetInput::get(db).target(db).usable_l1_per_core();
    for &func in ir::file_funcs(db, file).iter() {
        let (Some(body), Some(sm)) = (ir::func_body(db, func), ir::func_source_map(db, func))
        else {
            continue;
        };
        // The IR as written, in program order: each op alone, then with the live L1 of values
        // still to be used.
        let mut last_use = vec![0usize; body.ops.len()];
        for (i, o) in body.ops.iter().enumerate() {
            for v in &o.operands {
                if let ValueRef::Result { op, .. } = *v {
                    last_use[op as usize] = last_use[op as usize].max(i);
                }
            }
        }
        for v in &body.returns {
            if let ValueRef::Result { op, .. } = *v {
                last_use[op as usize] = usize::MAX;
            }
        }
        let mut live: u64 = body
            .args
            .iter()
            .map(|t| t.layout().map_or(0, ttnn_types::TtnnLayout::l1_bytes_per_core))
            .sum();
        // The values that die after each op, as one list sorted by op (`dying_at[i]..
        // dying_at[i + 1]` in `dying`). Found per op by scanning every earlier value, the
        // walk below was quadratic (50M steps on a 10k-op function, on every edit); a list
        // per op was 10k allocations per edit.
        // Released after its last use. A result nobody uses (`lu` still 0) is never
        // released, which the former scan did too; `verify` frees it after its own op.
        let n = body.ops.len();
        let released = |j: usize, lu: usize| j <= lu && lu < n;
        let mut dying_at = vec![0usize; n + 1];
        for (j, &lu) in last_use.iter().enumerate() {
            if released(j, lu) {
                dying_at[lu + 1] += 1;
            }
        }
        for i in 0..n {
            dying_at[i + 1] += dying_at[i];
        }
        let mut dying = vec![0usize; dying_at[n]];
        let mut fill = dying_at.clone();
        for (j, &lu) in last_use.iter().enumerate() {
            if released(j, lu) {
                dying[fill[lu]] = j;
                fill[lu] += 1;
            }
        }
        let mut outputs = vec![0u64; body.ops.len()];
        let mut checks: Option<(usize, std::sync::Arc<[Option<layout::WrittenCheck>]>)> = None;
        for i in 0..body.ops.len() {
            let range = sm.op_name_ranges.get(i).copied().unwrap_or_default();
            let j = i / ir::BODY_BLOCK;
            if checks.as_ref().is_none_or(|(k, _)| *k != j) {
                checks = Some((j, layout::written_checks_block(db, func, j as u32)));
            }
            let check = checks.as_ref().and_then(|(_, c)| c.get(i % ir::BODY_BLOCK)?.as_ref());
            if let Some(check) = check {
                match &check.error {
                    Some(e) => out.push(Diagnostic {
                        range,
                        severity: Severity::Warning,
                        code: "op-model-rejects",
                        message: format!("the op model rejects `{}` as written: {e}", body.ops[i].name),
                    }),
                    None if live.saturating_add(check.peak) > budget => out.push(Diagnostic {
                        range,
                        severity: Severity::Warning,
                        code: "l1-out-of-memory",
                        message: format!(
                            "out of L1 as written: {} B live + {} B for the op exceed the {budget} B usable per core",
                            live, check.peak
                        ),
                    }),
                    None => {}
                }
                outputs[i] = check.output_l1;
                live = live.saturating_add(check.output_l1);
            }
            for &j in dying.get(dying_at[i]..dying_at[i + 1]).unwrap_or(&[]) {
                live = live.saturating_sub(outputs[j]);
            }
        }
        // The optimizer's findings, for functions it rewrites.
        if rewrite::optimizable(&body).is_err() {
            continue;
        }
        // Chunk by chunk, position-free: after an edit only the chunks whose plan changed
        // format their messages again; here they only get their ranges.
        let policy = layout::effective_options(db).policy;
        for k in 0..plan::chunk_count(db, func) {
            for f in chunk_findings(db, func, policy, k).iter() {
                let i = f.op as usize;
                let range = match f.at {
                    Anchor::OpName => sm.op_name_ranges.get(i).copied(),
                    Anchor::Result => sm.result_ranges.get(i).and_then(|r| r.first().copied()),
                    Anchor::Operand(k) => {
                        sm.operand_ranges.get(i).and_then(|r| r.get(k as usize).copied())
                    }
                }
                .unwrap_or_default();
                out.push(Diagnostic {
                    range,
                    severity: f.severity,
                    code: f.code,
                    message: f.message.clone(),
                });
            }
        }
    }
    out.sort_by(|a, b| {
        (a.range.start, a.range.end, a.code).cmp(&(b.range.start, b.range.end, b.code))
    });
    out
}

/// Where on its op a plan finding points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    OpName,
    /// The op's first result.
    Result,
    /// An operand use, by index.
    Operand(u32),
}

/// One optimizer finding, without a position: the op it is about (body index) and where on
/// it, what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanFinding {
    op: u32,
    at: Anchor,
    severity: Severity,
    code: &'static str,
    message: String,
}

/// The optimizer's findings in chunk `k` of a function's plan: chains that failed or were
/// declined, spills, reshards. A memo per chunk, so the 3490 messages of a 10k-op file are
/// not formatted again after every keystroke, only those of the chunks an edit changed.
#[salsa::tracked(returns(clone))]
pub(crate) fn chunk_findings(
    db: &dyn plan::Db,
    func: ir::FuncId,
    policy: base_db::Policy,
    k: u32,
) -> std::sync::Arc<[PlanFinding]> {
    let slice = plan::plan_slice(db, func, policy, k);
    let mut out = Vec::new();
    for c in &slice.chains {
        if let (Some(f), Some(&first)) = (&c.failure, c.ops.first()) {
            // A declined chain is a decision, not a problem: information, not a warning.
            let (severity, code, what) = if c.state == plan::ChainState::Declined {
                (Severity::Info, "chain-declined", "is declined and stays in DRAM")
            } else {
                (Severity::Warning, "chain-failed", "failed and falls back to DRAM")
            };
            out.push(PlanFinding {
                op: first,
                at: Anchor::OpName,
                severity,
                code,
                message: format!("this L1 chain of {} ops {what}: {f}", c.ops.len()),
            });
        }
    }
    for (&i, p) in slice.ops.iter().zip(&slice.plans) {
        if let Some(s) = &p.spill {
            out.push(PlanFinding {
                op: i,
                at: Anchor::Result,
                severity: Severity::Info,
                code: "spill",
                message: format!("output goes to {}: {}", s.layout.describe(), s.reason),
            });
        }
        for (k, c) in p.expected_operands.iter().enumerate() {
            if let Some(c) = c {
                out.push(PlanFinding {
                    op: i,
                    at: Anchor::Operand(k as u32),
                    severity: Severity::Info,
                    code: "reshard",
                    message: format!("reshard to {}: {}", c.layout.describe(), c.reason),
                });
            }
        }
    }
    out.into()
}

impl Analysis {
    /// Op-model errors on the IR as written and the optimizer's findings (failed chains,
    /// spills, reshards). Empty for files with errors.
    pub fn findings(&self, file: SourceFile) -> Cancellable<Vec<Diagnostic>> {
        self.with_db(|db| findings(db, file))
    }
}
