//! `report --html OUT`: the plan explorer, one self-contained HTML file (no network, no
//! external script or font): the op graph coloured by where each result lives, chains,
//! reshards and spills marked, per-op time and L1 on selection, the live-L1 timeline under
//! it, search by `loc` name, and every configuration side by side.
//!
//! The graph layout is computed here, not in the browser: a layered (Sugiyama-style) layout
//! over the schedule order. A TTNN function is a DAG whose ops are written in an order where
//! every operand is defined before its use, so layering needs no cycle breaking: an op's layer
//! is one more than its deepest producer's (longest path), and within a layer ops are sorted
//! by the mean row of their producers (one barycentre sweep, ties by program order). That is
//! linear in ops and edges and deterministic, and it keeps the page's own script down to
//! drawing and interaction, so it is interactive quickly on large models
//! (`docs/cli/report.md#the-plan-explorer` has the figures).
//!
//! The data goes into the page as one JSON object; the script draws the graph as SVG once and
//! re-colours it when another configuration is picked.

use std::collections::BTreeMap;

use ide::PlanReport;
use serde_json::{Value, json};
use ttnn_types::{BufferType, TensorMemoryLayout, TtnnLayout};

use super::compare::Comparison;

/// Where a result lives, as the explorer colours it.
fn placement(l: Option<&TtnnLayout>) -> &'static str {
    let Some(l) = l else { return "none" };
    match (l.buffer, l.memory_layout) {
        (BufferType::L1, Some(TensorMemoryLayout::Interleaved)) => "l1i",
        (BufferType::L1, _) => "l1s",
        (BufferType::Dram, _) => "dram",
        (BufferType::SystemMemory, _) => "host",
        _ => "none",
    }
}

/// The op graph of the optimizable functions, in plan order: edges from producer to consumer
/// (node indices), and each node's (layer, row).
pub(crate) struct Graph {
    pub(crate) edges: Vec<(u32, u32)>,
    pub(crate) positions: Vec<(u32, u32)>,
}

/// The edges between the ops of `plan` (one node per op, in its order), read from `text`.
pub(crate) fn graph(text: &str, plan: &PlanReport) -> Graph {
    let parse = syntax::parse(text);
    let lowered = ir::lower_parse(text, &parse);
    let mut edges = Vec::new();
    // The plan lists the ops of each optimizable function in a run; match each run to the
    // first unused lowered function of that name with as many ops.
    let mut used = vec![false; lowered.funcs.len()];
    let mut start = 0;
    while start < plan.ops.len() {
        let func = &plan.ops[start].func;
        let len = plan.ops[start..].iter().take_while(|d| &d.func == func).count();
        let found = lowered
            .funcs
            .iter()
            .enumerate()
            .find(|(i, f)| !used[*i] && &f.name == func && f.body.ops.len() == len);
        if let Some((i, f)) = found {
            used[i] = true;
            for (consumer, op) in f.body.ops.iter().enumerate() {
                for operand in &op.operands {
                    let ir::ValueRef::Result { op: key, .. } = operand else { continue };
                    let Some(producer) = f.body.op_index(key.as_str()) else { continue };
                    // Program order is a topological order; anything else is not a DAG edge.
                    if producer < consumer {
                        edges.push(((start + producer) as u32, (start + consumer) as u32));
                    }
                }
            }
        }
        start += len;
    }
    edges.sort_unstable();
    edges.dedup();
    let positions = layered_layout(plan.ops.len(), &edges);
    Graph { edges, positions }
}

/// (layer, row) of each of `n` nodes whose `edges` all go from a lower index to a higher one:
/// longest-path layers, rows by the barycentre of the producers' rows.
pub(crate) fn layered_layout(n: usize, edges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    // Only forward edges between known nodes count; the layering below reads a producer's
    // layer before its consumer's, which needs `from < to`.
    for &(from, to) in edges {
        if from < to
            && let Some(p) = preds.get_mut(to as usize)
        {
            p.push(from);
        }
    }
    let mut layer = vec![0u32; n];
    for i in 0..n {
        layer[i] = preds[i].iter().map(|&p| layer[p as usize] + 1).max().unwrap_or(0);
    }
    let mut by_layer: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, &l) in layer.iter().enumerate() {
        by_layer.entry(l).or_default().push(i);
    }
    let mut row = vec![0u32; n];
    for nodes in by_layer.values_mut() {
        // Producers are all in earlier layers, so their rows are final. Keys in hundredths
        // keep the sort in integers (total order, no float ties).
        let key = |i: usize| -> u64 {
            let p = &preds[i];
            if p.is_empty() {
                return u64::MAX;
            }
            p.iter().map(|&q| u64::from(row[q as usize]) * 100).sum::<u64>() / p.len() as u64
        };
        nodes.sort_by_key(|&i| (key(i), i));
        for (r, &i) in nodes.iter().enumerate() {
            row[i] = r as u32;
        }
    }
    layer.into_iter().zip(row).collect()
}

/// The explorer page for a comparison whose rows each carry their plan.
pub(crate) fn render(c: &Comparison, text: &str) -> String {
    let base = c.rows.first().map(|r| &r.plan);
    let empty = PlanReport::default();
    let base = base.unwrap_or(&empty);
    let g = graph(text, base);
    let nodes: Vec<Value> = base
        .ops
        .iter()
        .zip(&g.positions)
        .map(|(d, (layer, row))| json!({"n": d.op, "k": d.kind, "f": d.func, "x": layer, "y": row}))
        .collect();
    let configs: Vec<Value> = c.rows.iter().map(|r| config_json(r, base)).collect();
    let data = json!({
        "model": c.model,
        "target": c.target,
        "imported": c.imported,
        "budget": c.budget,
        "lower_bound_ns": c.lower_bound_ns,
        "load_ns": c.load_ns,
        "nodes": nodes,
        "edges": g.edges,
        "configs": configs,
    });
    let data = script_json(&data);
    let title = escape(&format!("{}: plan explorer", c.model));
    // Split rather than replaced in turn: the data may spell either placeholder.
    let (head, tail) = PAGE.split_once("{{DATA}}").unwrap_or((PAGE, ""));
    format!("{}{data}{tail}", head.replace("{{TITLE}}", &title))
}

/// One configuration's per-op view, aligned with the base plan's ops.
fn config_json(r: &super::compare::Row, base: &PlanReport) -> Value {
    let as_written = r.name == super::compare::AS_WRITTEN;
    // The verifier's numbers for this configuration's text, by (function, op name); the
    // conversions a plan inserts have names of their own and are only on the timeline.
    let verified: BTreeMap<(&str, &str), (usize, &verify::OpReport)> = r
        .verified
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| ((op.func.as_str(), op.op.as_str()), (i, op)))
        .collect();
    let timeline: Vec<u64> =
        r.verified.ops.iter().map(|op| op.live_l1_before + op.l1.map_or(0, |l| l.peak)).collect();
    let ops: Vec<Value> = base
        .ops
        .iter()
        .enumerate()
        .map(|(i, b)| {
            // Plans of every configuration list the same ops in the same order; the IR as
            // written has no decisions (its row carries the first policy's plan for the
            // layouts as written only).
            let d = r.plan.ops.get(i).filter(|d| !as_written && d.op == b.op && d.func == b.func);
            let layout = if as_written {
                b.written.as_ref()
            } else {
                d.and_then(|d| d.planned.as_ref())
            };
            let v = verified.get(&(b.func.as_str(), b.op.as_str()));
            let l1 = v.and_then(|(_, op)| op.l1);
            json!({
                "p": placement(layout),
                "l": cli::short_layout(layout),
                "t": if as_written { v.and_then(|(_, op)| op.cost.map(|c| c.total_ns)) } else { d.map(|d| d.time_ns) },
                "b": l1.map(|l| l.peak),
                "o": l1.map(|l| l.output),
                "live": v.map(|(_, op)| op.live_l1_before),
                "i": v.map(|(i, _)| *i),
                "err": v.and_then(|(_, op)| op.error.clone()),
                "ch": d.and_then(|d| d.chain.map(|(c, p, n, s)| json!([c, p, n, s]))),
                "cfg": d.and_then(|d| d.config.clone()),
                "why": d.map(|d| d.reason.clone()),
                "rs": d.map(|d| d.reshards.iter().map(|(k, l, why)| format!("operand {k} to {}: {why}", cli::short_layout(Some(l)))).collect::<Vec<_>>()).unwrap_or_default(),
                "sp": d.and_then(|d| d.spill.as_ref().map(|(l, why)| format!("to {}: {why}", cli::short_layout(Some(l))))),
            })
        })
        .collect();
    json!({
        "name": r.name,
        "time_ns": r.time_ns,
        "ops_in_l1": r.ops_in_l1,
        "ops": r.ops,
        "reshards": r.reshards,
        "spills": r.spills,
        "peak_l1": r.verified.peak_live_l1,
        "new_violations": r.new_violations.len(),
        "preexisting": r.preexisting,
        "merges": if as_written { Vec::new() } else { r.plan.merges.clone() },
        "chains": if as_written { 0 } else { r.plan.chains.len() },
        "timeline": timeline,
        "per_op": ops,
    })
}

/// JSON to put inside a `<script>` element: a `</` in a string (an op named `</script>`)
/// would end the element early, so it is written `<\/`, which JSON reads back as `</`.
fn script_json(data: &Value) -> String {
    data.to_string().replace("</", "<\\/")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page: styles, markup and the script that draws the data. No external resources.
const PAGE: &str = include_str!("explorer.html");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_follow_the_longest_path_and_rows_the_producers() {
        // 0 -> 1 -> 3, 0 -> 2 -> 3, 2 -> 4, 5 alone: a diamond, a branch and a source.
        let edges = [(0, 1), (0, 2), (1, 3), (2, 3), (2, 4)];
        let pos = layered_layout(6, &edges);
        assert_eq!(pos, [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (0, 1)]);
    }

    #[test]
    fn names_that_would_close_the_script_element_are_escaped_and_read_back() {
        let data = json!({"n": "x</script><script>alert(1)"});
        let text = script_json(&data);
        assert!(!text.contains("</"), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(data));
    }

    #[test]
    fn backward_and_out_of_range_edges_are_ignored() {
        let pos = layered_layout(3, &[(0, 1), (2, 1), (1, 1), (0, 7), (9, 2)]);
        assert_eq!(pos, [(0, 0), (1, 0), (0, 1)]);
    }

    #[test]
    fn a_skip_connection_puts_the_merge_below_the_longer_branch() {
        // A residual block: 0 feeds 1 -> 2 -> 3 and 3 adds 0 back in.
        let pos = layered_layout(4, &[(0, 1), (1, 2), (2, 3), (0, 3)]);
        assert_eq!(pos.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }
}
