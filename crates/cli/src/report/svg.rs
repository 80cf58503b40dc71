//! `report --compare --svg`: live L1 per core over the schedule, one panel per configuration,
//! written by hand as plain SVG 1.1 (no dependency, byte-for-byte deterministic).
//!
//! Each panel is a step chart: op `i` of the configuration's text (program order, functions in
//! file order) occupies `[i, i + 1)` on the x axis at the height of the verifier's live L1
//! before it plus the op's own peak (circular buffers and the tensors it allocates), which is
//! what must fit under the usable L1, drawn as a dashed line. All panels share the y scale so
//! they can be compared at a glance.

use std::fmt::Write as _;

use super::compare::{Comparison, percent};

const WIDTH: f64 = 960.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 24.0;
const HEADER: f64 = 64.0;
const PANEL: f64 = 230.0;
const PLOT_TOP: f64 = 28.0;
const PLOT_HEIGHT: f64 = 150.0;
const LIVE: &str = "#1f77b4";
const BUDGET: &str = "#d62728";
const BYTES_PER_MB: f64 = 1e6;

/// The chart for a comparison.
pub(crate) fn render(c: &Comparison) -> String {
    let series: Vec<Vec<u64>> = c
        .rows
        .iter()
        .map(|r| {
            r.verified
                .ops
                .iter()
                .map(|op| op.live_l1_before + op.l1.map_or(0, |l| l.peak))
                .collect()
        })
        .collect();
    let top = series.iter().flatten().copied().max().unwrap_or(0).max(c.budget);
    let y_step = nice_step(top.max(1) as f64 / 5.0);
    let y_max = (top as f64 / y_step).ceil().max(1.0) * y_step;
    let decimals = decimals_for(y_step / BYTES_PER_MB);
    let height = HEADER + PANEL * c.rows.len() as f64;
    let plot_width = WIDTH - LEFT - RIGHT;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="16" font-weight="bold">{}: live L1 per core over the schedule ({})</text>"#,
        WIDTH / 2.0,
        escape(&c.model),
        escape(&c.target)
    );
    // Legend.
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="44" x2="{}" y2="44" stroke="{LIVE}" stroke-width="2"/>"#,
        LEFT + 24.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="48">live L1 before the op + the op's own peak</text>"#,
        LEFT + 30.0
    );
    let _ = writeln!(
        s,
        r#"<line x1="{0}" y1="44" x2="{1}" y2="44" stroke="{BUDGET}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
        LEFT + 340.0,
        LEFT + 364.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="48">usable L1 ({} MB)</text>"#,
        LEFT + 370.0,
        mb(c.budget as f64, 3)
    );

    for (k, (row, values)) in c.rows.iter().zip(&series).enumerate() {
        let y0 = HEADER + PANEL * k as f64 + PLOT_TOP;
        let n = values.len().max(1);
        let x_of = |i: usize| LEFT + plot_width * i as f64 / n as f64;
        let y_of = |v: f64| y0 + PLOT_HEIGHT * (1.0 - v / y_max);
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="{}" font-weight="bold">{}: peak {} MB ({} of the budget), {} ops, {} new violations</text>"#,
            y0 - 10.0,
            escape(row.name),
            mb(row.verified.peak_live_l1 as f64, 3),
            percent(row.verified.peak_live_l1, c.budget),
            values.len(),
            row.new_violations.len()
        );
        // Axes, y grid and y labels.
        let mut tick = 0.0;
        while tick <= y_max + y_step / 2.0 {
            let y = y_of(tick);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd"/>"##,
                LEFT + plot_width
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                y + 4.0,
                mb(tick, decimals)
            );
            tick += y_step;
        }
        let x_step = nice_step(n as f64 / 8.0).max(1.0) as usize;
        for i in (0..=n).step_by(x_step) {
            let x = x_of(i);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#000000"/>"##,
                y0 + PLOT_HEIGHT,
                y0 + PLOT_HEIGHT + 4.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{i}</text>"#,
                y0 + PLOT_HEIGHT + 16.0
            );
        }
        let _ = writeln!(
            s,
            r##"<path d="M {LEFT} {y0:.1} V {:.1} H {:.1}" fill="none" stroke="#000000"/>"##,
            y0 + PLOT_HEIGHT,
            LEFT + plot_width
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">op index in program order</text>"#,
            LEFT + plot_width / 2.0,
            y0 + PLOT_HEIGHT + 32.0
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate({:.1} {:.1}) rotate(-90)" text-anchor="middle">L1 per core (MB)</text>"#,
            LEFT - 54.0,
            y0 + PLOT_HEIGHT / 2.0
        );
        // The step line: one horizontal segment per op.
        if !values.is_empty() {
            let mut d = String::new();
            for (i, v) in values.iter().enumerate() {
                let y = y_of(*v as f64);
                if i == 0 {
                    let _ = write!(d, "M {:.1} {y:.1}", x_of(0));
                } else {
                    let _ = write!(d, " V {y:.1}");
                }
                let _ = write!(d, " H {:.1}", x_of(i + 1));
            }
            let _ =
                writeln!(s, r#"<path d="{d}" fill="none" stroke="{LIVE}" stroke-width="1.5"/>"#);
        }
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="{BUDGET}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
            y_of(c.budget as f64),
            LEFT + plot_width
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The smallest of 1, 2, 2.5 and 5 times a power of ten that is at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mut base = 10f64.powf(raw.log10().floor());
    loop {
        for m in [1.0, 2.0, 2.5, 5.0] {
            if m * base >= raw {
                return m * base;
            }
        }
        base *= 10.0;
    }
}

/// Decimals that print every multiple of `step` exactly (at most 4).
fn decimals_for(step: f64) -> usize {
    (0..4)
        .find(|&d| {
            ((step * 10f64.powi(d as i32)).round() - step * 10f64.powi(d as i32)).abs() < 1e-9
        })
        .unwrap_or(4)
}

fn mb(bytes: f64, decimals: usize) -> String {
    format!("{:.*}", decimals, bytes / BYTES_PER_MB)
}

/// Text content escaped for XML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_two_and_a_half_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(265_130.4), 500_000.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(decimals_for(0.25), 2);
        assert_eq!(decimals_for(0.5), 1);
        assert_eq!(decimals_for(2.0), 0);
        assert_eq!(escape("a<b&\"c\">"), "a&lt;b&amp;&quot;c&quot;&gt;");
    }
}
