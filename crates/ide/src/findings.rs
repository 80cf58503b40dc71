//! Analysis findings for the editor, beyond syntax and semantics:
//!
//! - op-model errors on the IR as written (`op-model-rejects`), and the points where the live
//!   L1 of the IR as written exceeds the budget (`l1-out-of-memory`);
//! - the optimizer's findings with their reasons: a chain that failed on an edge
//!   (`chain-failed`, warning), a chain the cost model declined (`chain-declined`,
//!   information), an op whose output spills (`spill`, information), a reshard
//!   inserted in front of an operand (`reshard`, information).
//!
//! The two are asked for apart ([`Analysis::problems`], [`Analysis::plan_findings`]): the
//! first are problems in the user's IR, which an editor publishes after every change; the
//! second are outcomes of the optimizer, shown for a range on request, and gathering the
//! first never computes the plan.
//!
//! Verdicts come from memoized queries (`layout::written_checks_segment` per segment of ops, the
//! walk of the IR as written with its live L1 per function, `written_findings`, and the
//! plan's findings per chunk, `chunk_findings`), all position-free, so after an edit only
//! what it changed is evaluated again; this pass only maps them to ranges.

use base_db::{SourceFile, TargetInput};

use syntax::TextRange;

use crate::{Analysis, Cancellable, Diagnostic, RootDatabase, Severity};

/// A file's findings, sorted by position, read in place: each is an entry of a memoized,
/// position-free list (`written_findings`, `chunk_findings`) with the range it gets now.
///
/// What the editor publishes after every keystroke: on a 10k-op file some 3500 findings, whose
/// messages a list of [`Diagnostic`]s would copy each time.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    lists: Vec<std::sync::Arc<[PlanFinding]>>,
    /// Each finding as a key that sorts as range, then code, then the order the lists give:
    /// `(start << 32 | end, code rank << 32 | list, index in the list)`. Packed because
    /// comparing ranges and looking codes up in the lists made sorting some 3500 findings
    /// after every keystroke cost more than the rest of this pass.
    order: Vec<(u64, u64, u32)>,
    /// Codes seen, in the order first seen (a code's place here is in `order` until the sort
    /// replaces it by its rank).
    codes: Vec<&'static str>,
}

/// One finding of [`Findings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindingRef<'a> {
    pub range: TextRange,
    pub severity: Severity,
    pub code: &'static str,
    pub message: &'a str,
}

impl Findings {
    /// The findings in order of position.
    pub fn iter(&self) -> impl Iterator<Item = FindingRef<'_>> {
        self.order.iter().filter_map(|&(span, code_list, i)| {
            let range = TextRange::new((span >> 32) as u32, span as u32);
            let f = self.lists.get(code_list as u32 as usize)?.get(i as usize)?;
            Some(FindingRef { range, severity: f.severity, code: f.code, message: &f.message })
        })
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.order.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Each finding as a [`Diagnostic`] of its own (a copy of its message).
    #[must_use]
    pub fn to_diagnostics(&self) -> Vec<Diagnostic> {
        self.iter()
            .map(|f| Diagnostic {
                range: f.range,
                severity: f.severity,
                code: f.code,
                message: f.message.to_owned(),
            })
            .collect()
    }

    fn push_list(
        &mut self,
        list: std::sync::Arc<[PlanFinding]>,
        range: impl Fn(&PlanFinding) -> TextRange,
    ) {
        let l = u64::from(self.lists.len() as u32);
        let codes = &mut self.codes;
        self.order.extend(list.iter().enumerate().map(|(i, f)| {
            let r = range(f);
            // A handful of codes: a scan finds them sooner than a map.
            let code = match codes.iter().position(|&c| std::ptr::eq(c, f.code) || c == f.code) {
                Some(k) => k,
                None => {
                    codes.push(f.code);
                    codes.len() - 1
                }
            };
            let span = u64::from(r.start) << 32 | u64::from(r.end);
            (span, (code as u64) << 32 | l, i as u32)
        }));
        self.lists.push(list);
    }

    /// Sorts by position; among equal ones by code, then as listed (the same order as a
    /// stable sort of the findings by range and code).
    fn sort(&mut self) {
        let mut by_name: Vec<usize> = (0..self.codes.len()).collect();
        by_name.sort_unstable_by_key(|&k| self.codes[k]);
        let mut rank = vec![0u64; self.codes.len()];
        for (r, &k) in by_name.iter().enumerate() {
            rank[k] = r as u64;
        }
        for key in &mut self.order {
            let code = (key.1 >> 32) as usize;
            key.1 =
                rank.get(code).copied().unwrap_or(u64::from(u32::MAX)) << 32 | key.1 & 0xffff_ffff;
        }
        // Keys are unique, so an unstable sort gives the one order (a stable one, tried, was
        // slower on these mostly sorted lists).
        self.order.sort_unstable();
    }
}

/// Which findings [`findings`] gathers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// Problems in the IR as written (`written_findings`): never reads the optimizer's plan.
    Problems,
    /// The optimizer's outcomes (`chunk_findings`) whose range meets `range`.
    Plan { range: Option<TextRange> },
}

pub(crate) fn findings(
    db: &RootDatabase,
    file: SourceFile,
    which: Which,
    keep: &mut Vec<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
) -> Findings {
    let mut out = Findings::default();
    let lowered = ir::lower_file(db, file);
    if lowered.diagnostics.iter().any(|d| d.severity == Severity::Error) {
        // Findings on a broken file would describe a program that does not exist.
        return out;
    }
    for &func in ir::file_funcs(db, file).iter() {
        let (Some(body), Some(sm)) = (ir::func_body(db, func), ir::func_source_map(db, func))
        else {
            continue;
        };
        let range_of = |f: &PlanFinding| {
            let i = f.op as usize;
            match f.at {
                Anchor::OpName => sm.op_name_ranges.get(i).copied(),
                Anchor::Result => sm.result_ranges.get(i).and_then(|r| r.first().copied()),
                Anchor::Operand(k) => {
                    sm.operand_ranges.get(i).and_then(|r| r.get(k as usize).copied())
                }
            }
            .unwrap_or_default()
        };
        let range = match which {
            Which::Problems => {
                // The IR as written, position-free and memoized: after an edit that leaves
                // the function's data flow and the op model's verdicts as they were, not
                // walked again.
                out.push_list(written_findings(db, func), range_of);
                continue;
            }
            Which::Plan { range } => range,
        };
        if range.is_some_and(|r| sm.range.end < r.start || sm.range.start > r.end) {
            continue;
        }
        // The optimizer's findings, for functions it rewrites.
        if rewrite::optimizable(&body).is_err() {
            continue;
        }
        // Chunk by chunk, position-free: after an edit only the chunks whose plan changed
        // format their messages again; here they only get their ranges.
        let policy = layout::effective_options(db).policy;
        for k in 0..plan::chunk_count(db, func) {
            let found = chunk_findings(db, func, policy, k);
            // What an edit re-derives here (a chunk's walk and its findings) is freed off
            // the next edit's path (see `Retained`) rather than when salsa replaces it.
            keep.push(std::sync::Arc::new(found.clone()));
            keep.push(plan::plan_chunk(db, func, policy, k));
            match range {
                Some(r) => {
                    let inside: std::sync::Arc<[PlanFinding]> = found
                        .iter()
                        .filter(|f| {
                            let at = range_of(f);
                            at.start <= r.end && r.start <= at.end
                        })
                        .cloned()
                        .collect();
                    if !inside.is_empty() {
                        out.push_list(inside, range_of);
                    }
                }
                None => out.push_list(found, range_of),
            }
        }
    }
    out.sort();
    out
}

/// Findings on the IR as written, in program order: op-model errors (`op-model-rejects`)
/// and the points where the live L1 exceeds the budget (`l1-out-of-memory`): each op with
/// the output L1 of the values still to be used.
///
/// Reads the verdicts per segment of ops (`layout::written_checks_segment`) and, only for
/// the values that hold L1 as written, their uses from the segments' data flow
/// (`ir::segment_uses`): not the body, and not the function's topology, which an insertion
/// or deletion anywhere changes (its lists are by body index) and which costs a walk that
/// allocates per op. A value in DRAM never adds to the live L1, so a function written all
/// in DRAM (what tt-mlir's optimizer takes as input) needs no use lists at all. An edit to one
/// op's attributes re-checks its segment, and unless a verdict or the data flow of an L1 value
/// changed this is not re-run.
#[salsa::tracked(returns(clone))]
pub(crate) fn written_findings(
    db: &dyn plan::Db,
    func: ir::FuncId,
) -> std::sync::Arc<[PlanFinding]> {
    let Some(frame) = ir::func_frame(db, func) else { return std::sync::Arc::from([]) };
    let _p = tracing::debug_span!("written_findings", func = %func.name(db)).entered();
    let budget = TargetInput::get(db).target(db).usable_l1_per_core();
    let groups = ir::func_groups(db, func);
    let n = frame.n_ops;
    // Per segment: its first op's body index and its key, when that names it (else its ops
    // are read by group, unmemoized: only a file whose keys repeat has such a segment, and
    // problems are not reported on one).
    let segments: Vec<(usize, Option<ir::Name>)> = (0..groups.segments() as u32)
        .map(|s| {
            let first = groups.segment_groups(s).start;
            (groups.range(first).start, ir::group_start(&frame, &groups, first))
        })
        .collect();
    let unnamed_ops = |s: usize| -> Vec<std::sync::Arc<ir::OpData>> {
        groups.segment_groups(s as u32).flat_map(|g| ir::func_group(db, func, g).to_vec()).collect()
    };
    let checks: Vec<std::sync::Arc<[Option<layout::WrittenCheck>]>> = segments
        .iter()
        .enumerate()
        .map(|(s, &(_, start))| match start {
            Some(start) => layout::written_checks_segment(db, func, start),
            None => layout::written_checks(db, &unnamed_ops(s)),
        })
        .collect();
    let ops = || {
        segments.iter().zip(&checks).flat_map(|(&(base, _), checks)| {
            checks.iter().enumerate().map(move |(at, c)| (base + at, c.as_ref()))
        })
    };
    let check_of = |i: usize| {
        let s = segments.partition_point(|&(base, _)| base <= i).checked_sub(1)?;
        checks.get(s)?.get(i - segments[s].0)?.as_ref()
    };
    // The ops whose result holds L1 as written, by key, and the last op that uses each
    // (`None`: returned, or used by no op, and so never released; `verify` frees an unused
    // result after its own op, this walk keeps it, as it always has).
    let mut last_use: rustc_hash::FxHashMap<ir::Name, (u32, Option<u32>)> = ops()
        .take_while(|&(i, _)| i < n)
        .filter(|(_, c)| c.is_some_and(|c| c.output_l1 > 0))
        .filter_map(|(i, _)| Some((*frame.keys.get(i)?, (i as u32, None))))
        .collect();
    if !last_use.is_empty() {
        for (s, &(base, start)) in segments.iter().enumerate() {
            let uses = match start {
                Some(start) => ir::segment_uses(db, func, start),
                None => ir::uses_of(&unnamed_ops(s)),
            };
            for &(at, name) in uses.iter() {
                if let Some((_, last)) = last_use.get_mut(&name) {
                    let user = (base + at as usize) as u32;
                    *last = Some(last.map_or(user, |l| l.max(user)));
                }
            }
        }
        for v in &frame.returns {
            if let ir::ValueRef::Result { op, .. } = *v
                && let Some((_, last)) = last_use.get_mut(&op)
            {
                *last = None;
            }
        }
    }
    let last_use: rustc_hash::FxHashMap<u32, Option<u32>> = last_use.into_values().collect();
    // The values that die after each op, sorted by op: a value used by no later op than its
    // own is released after it.
    let mut dying: Vec<(u32, u32)> = last_use
        .iter()
        .filter_map(|(&def, &last)| Some((last.filter(|&l| l >= def && (l as usize) < n)?, def)))
        .collect();
    dying.sort_unstable();
    let mut dying = dying.into_iter().peekable();
    let mut live: u64 = frame
        .args
        .iter()
        .map(|t| t.layout().map_or(0, ttnn_types::TtnnLayout::l1_bytes_per_core))
        .sum();
    let mut out = Vec::new();
    for (i, check) in ops().take_while(|&(i, _)| i < n) {
        if let Some(check) = check {
            let message = match &check.error {
                Some(e) => Some(("op-model-rejects", e.clone())),
                None if live.saturating_add(check.peak) > budget => Some((
                    "l1-out-of-memory",
                    format!(
                        "out of L1 as written: {} B live + {} B for the op exceed the {budget} B usable per core",
                        live, check.peak
                    ),
                )),
                None => None,
            };
            if let Some((code, message)) = message {
                out.push(PlanFinding {
                    op: i as u32,
                    at: Anchor::OpName,
                    severity: Severity::Warning,
                    code,
                    message,
                });
            }
            live = live.saturating_add(check.output_l1);
        }
        while let Some((_, def)) = dying.next_if(|&(at, _)| at as usize == i) {
            live = live.saturating_sub(check_of(def as usize).map_or(0, |c| c.output_l1));
        }
    }
    out.into()
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
    /// Problems in the IR as written and the optimizer's findings (failed and declined
    /// chains, spills, reshards), sorted by position. Empty for files with errors.
    pub fn findings(&self, file: SourceFile) -> Cancellable<Vec<Diagnostic>> {
        let mut out = self.problems(file)?.to_diagnostics();
        out.extend(self.plan_findings(file, None)?.to_diagnostics());
        out.sort_by(|a, b| {
            (a.range.start, a.range.end, a.code).cmp(&(b.range.start, b.range.end, b.code))
        });
        Ok(out)
    }

    /// Problems in the IR as written: op-model rejections (`op-model-rejects`) and live L1
    /// over the budget (`l1-out-of-memory`), read in place. Never computes the optimizer's
    /// plan, so an editor can publish them after every keystroke without waiting for it.
    pub fn problems(&self, file: SourceFile) -> Cancellable<Findings> {
        self.findings_of(file, Which::Problems)
    }

    /// The optimizer's findings (`chain-failed`, `chain-declined`, `spill`, `reshard`) whose
    /// range meets `range` (all of them for `None`), read in place. Computes the plan of the
    /// functions that meet `range`: for range-scoped requests (inlay hints), not for what is
    /// published after every change.
    pub fn plan_findings(
        &self,
        file: SourceFile,
        range: Option<TextRange>,
    ) -> Cancellable<Findings> {
        self.findings_of(file, Which::Plan { range })
    }

    fn findings_of(&self, file: SourceFile, which: Which) -> Cancellable<Findings> {
        let (out, keep) = self.with_db(|db| {
            let mut keep = Vec::new();
            (findings(db, file, which, &mut keep), keep)
        })?;
        self.retain_all(keep);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(op: u32, code: &'static str, message: &str) -> PlanFinding {
        PlanFinding {
            op,
            at: Anchor::OpName,
            severity: Severity::Info,
            code,
            message: message.to_owned(),
        }
    }

    #[test]
    fn findings_sort_by_range_then_code_then_list_order() {
        // Ops 0 and 1 share a range: their findings sort by code, then as listed.
        let ranges = [TextRange::new(10, 20), TextRange::new(10, 20), TextRange::new(5, 30)];
        let range = |f: &PlanFinding| ranges[f.op as usize];
        let mut out = Findings::default();
        out.push_list(
            std::sync::Arc::from([finding(0, "spill", "a"), finding(2, "reshard", "b")]),
            range,
        );
        out.push_list(
            std::sync::Arc::from([
                finding(1, "chain-failed", "c"),
                finding(0, "spill", "d"),
                finding(1, "reshard", "e"),
            ]),
            range,
        );
        out.sort();
        let order: Vec<String> =
            out.iter().map(|f| format!("{:?} {} {}", f.range, f.code, f.message)).collect();
        expect_test::expect![[r#"
            [
                "5..30 reshard b",
                "10..20 chain-failed c",
                "10..20 reshard e",
                "10..20 spill a",
                "10..20 spill d",
            ]
        "#]]
        .assert_debug_eq(&order);
    }
}
