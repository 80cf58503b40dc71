//! Plain-text rendering of a report: the per-op table and the summary, shared by the CLI and
//! the snapshot tests so that the tests pin exactly what people read.

use std::fmt::Write as _;

use ttnn_types::{BufferType, PageLayout, TensorMemoryLayout, TtnnLayout};

use crate::{OpReport, Report};

/// A layout in a few characters: `DRAM il`, `L1 il`, `L1 bs 2x8`, `L1 hs 32`, `L1 ws 8`,
/// `host`; ` rm` marks row-major pages and ` partial` an `ignorePhysicalLayout` layout.
#[must_use]
pub fn short_layout(layout: &TtnnLayout) -> String {
    let mut s = match layout.buffer {
        BufferType::Dram => "DRAM".to_owned(),
        BufferType::L1 => "L1".to_owned(),
        BufferType::SystemMemory => "host".to_owned(),
        BufferType::L1Small => "L1-small".to_owned(),
        BufferType::Trace => "trace".to_owned(),
    };
    let grid = layout.grid2d();
    match layout.memory_layout {
        Some(TensorMemoryLayout::Interleaved) => s.push_str(" il"),
        // Height and width sharding have a one-dimensional grid; the core count says it all.
        Some(TensorMemoryLayout::HeightSharded) => {
            let _ = write!(s, " hs {}", grid.volume());
        }
        Some(TensorMemoryLayout::WidthSharded) => {
            let _ = write!(s, " ws {}", grid.volume());
        }
        Some(TensorMemoryLayout::BlockSharded) => {
            let _ = write!(s, " bs {grid}");
        }
        Some(TensorMemoryLayout::NdSharded) => {
            let _ = write!(s, " nd {grid}");
        }
        None => {}
    }
    if layout.page_layout() == PageLayout::RowMajor && layout.buffer != BufferType::SystemMemory {
        s.push_str(" rm");
    }
    if layout.ignore_physical_layout {
        s.push_str(" partial");
    }
    s
}

/// The per-op table, one block per function, in program order.
#[must_use]
pub fn render_table(report: &Report) -> String {
    const HEADER: [&str; 9] = [
        "op",
        "kind",
        "result layout",
        "valid",
        "cb",
        "tensor",
        "output",
        "live L1 before",
        "error",
    ];
    // Numbers are right-aligned so magnitudes line up.
    const RIGHT: [bool; 9] = [false, false, false, false, true, true, true, true, false];
    let mut out = String::new();
    let mut start = 0;
    while start < report.ops.len() {
        let func = &report.ops[start].func;
        let end = report.ops[start..]
            .iter()
            .position(|op| &op.func != func)
            .map_or(report.ops.len(), |n| start + n);
        let rows: Vec<[String; 9]> = report.ops[start..end].iter().map(row).collect();
        let mut widths = HEADER.map(str::len);
        for r in &rows {
            for (w, cell) in widths.iter_mut().zip(r) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let _ = writeln!(out, "func @{func}");
        let mut line = |cells: [&str; 9]| {
            let mut l = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let last = i == cells.len() - 1;
                let pad = widths[i].saturating_sub(cell.chars().count());
                if RIGHT[i] {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(cell);
                } else {
                    l.push_str(cell);
                    if !last {
                        l.push_str(&" ".repeat(pad));
                    }
                }
                if !last {
                    l.push_str("  ");
                }
            }
            let _ = writeln!(out, "{}", l.trim_end());
        };
        line(HEADER);
        for r in &rows {
            line(r.each_ref().map(String::as_str));
        }
        start = end;
    }
    return out;

    fn row(op: &OpReport) -> [String; 9] {
        let num = |f: fn(&crate::L1Use) -> u64| {
            op.l1.as_ref().map_or("-".to_owned(), |l| f(l).to_string())
        };
        [
            op.op.clone(),
            op.kind.clone(),
            op.result_layout.as_ref().map_or("-".to_owned(), short_layout),
            if op.valid { "yes" } else { "NO" }.to_owned(),
            num(|l| l.cb),
            num(|l| l.tensor),
            num(|l| l.output),
            op.live_l1_before.to_string(),
            op.error.clone().unwrap_or_default(),
        ]
    }
}

/// The summary: counts, peak L1 against the budget, and where L1 runs out.
#[must_use]
pub fn render_summary(report: &Report) -> String {
    let mut out = String::new();
    let n_valid = report.ops.iter().filter(|op| op.valid).count();
    let n_unknown = report.ops.iter().filter(|op| !op.known_op).count();
    let _ = write!(
        out,
        "ops: {}, valid: {n_valid}, violations: {}",
        report.ops.len(),
        report.violations
    );
    if n_unknown > 0 {
        let _ = write!(out, ", unknown to the op model: {n_unknown}");
    }
    out.push('\n');
    let percent = if report.budget == 0 {
        0.0
    } else {
        report.peak_live_l1 as f64 * 100.0 / report.budget as f64
    };
    let _ = writeln!(
        out,
        "peak L1: {} / {} bytes per core ({percent:.1}%)",
        report.peak_live_l1, report.budget
    );
    let oom: Vec<String> = report
        .oom_points()
        .map(|op| format!("{} (@{} op {})", op.op, op.func, op.op_index))
        .collect();
    if oom.is_empty() {
        out.push_str("out of L1: nowhere\n");
    } else {
        let _ = writeln!(out, "out of L1 at: {}", oom.join(", "));
    }
    out
}
