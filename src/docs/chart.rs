//! The runs page's chart: per run, oldest left, the rows its tables hold after it (blue, left
//! axis) and its seconds (amber, right axis), with ticks on both axes, the runs' dates below
//! and a legend. An SVG made here, scaled to the page's width.

use std::fmt::Write;

use super::html::escape;
use crate::records::RunRecord;

const WIDTH: f64 = 900.0;
const PLOT_H: f64 = 180.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 60.0;
const TOP: f64 = 30.0;
const TICKS: usize = 4;

/// The chart of `runs` (newest first, as the page lists them); `seconds` gives a run's
/// duration.
pub fn chart(runs: &[RunRecord], seconds: impl Fn(&RunRecord) -> f64) -> String {
    let oldest_first: Vec<&RunRecord> = runs.iter().rev().collect();
    let rows: Vec<f64> = oldest_first
        .iter()
        .map(|r| r.tables.iter().map(|t| t.rows as f64).sum())
        .collect();
    let secs: Vec<f64> = oldest_first.iter().map(|r| seconds(r)).collect();
    let max_rows = nice(rows.iter().cloned().fold(1.0, f64::max));
    let max_secs = nice(secs.iter().cloned().fold(0.001, f64::max));
    let plot_w = WIDTH - LEFT - RIGHT;
    let slot = plot_w / oldest_first.len().max(1) as f64;
    let bar = (slot * 0.4).clamp(0.5, 14.0);
    let height = TOP + PLOT_H + 50.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"100%\" style=\"max-width:{WIDTH:.0}px\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" role=\"img\" aria-label=\"rows and seconds per run\">\n"
    );
    axes(&mut out, max_rows, max_secs);
    for (i, r) in oldest_first.iter().enumerate() {
        let x = LEFT + slot * i as f64 + (slot - 2.0 * bar) / 2.0;
        let rh = PLOT_H * rows[i] / max_rows;
        let sh = PLOT_H * secs[i] / max_secs;
        let _ = writeln!(
            out,
            "<g class=\"run-bars\" data-run=\"{}\" data-rows=\"{}\" data-seconds=\"{:.3}\"><title>{} {} ({}): {} rows, {:.1} s</title><rect class=\"bar-rows\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{rh:.1}\"/><rect class=\"bar-secs\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{sh:.1}\"/></g>",
            escape(&r.run_id),
            rows[i],
            secs[i],
            escape(&r.kind.to_string()),
            escape(&r.run_id),
            escape(&r.finished_at),
            rows[i],
            secs[i],
            TOP + PLOT_H - rh,
            x + bar,
            TOP + PLOT_H - sh,
        );
    }
    dates(&mut out, &oldest_first, slot);
    out.push_str("</svg>\n");
    out
}

/// The two value axes with their ticks and labels, the base line and the legend.
fn axes(out: &mut String, max_rows: f64, max_secs: f64) {
    let (x0, x1, y0) = (LEFT, WIDTH - RIGHT, TOP + PLOT_H);
    for i in 0..=TICKS {
        let f = i as f64 / TICKS as f64;
        let y = y0 - PLOT_H * f;
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{x0:.0}\" y1=\"{y:.1}\" x2=\"{x1:.0}\" y2=\"{y:.1}\"/><text class=\"tick rows-tick\" x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><text class=\"tick secs-tick\" x=\"{:.0}\" y=\"{:.1}\">{}</text>",
            x0 - 6.0,
            y + 3.0,
            count(max_rows * f),
            x1 + 6.0,
            y + 3.0,
            format_args!("{:.1} s", max_secs * f),
        );
    }
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{x0:.0}\" y1=\"{TOP:.0}\" x2=\"{x0:.0}\" y2=\"{y0:.0}\"/><line class=\"axis\" x1=\"{x1:.0}\" y1=\"{TOP:.0}\" x2=\"{x1:.0}\" y2=\"{y0:.0}\"/><line class=\"axis\" x1=\"{x0:.0}\" y1=\"{y0:.0}\" x2=\"{x1:.0}\" y2=\"{y0:.0}\"/>"
    );
    let _ = writeln!(
        out,
        "<g class=\"legend\"><rect class=\"bar-rows\" x=\"{x0:.0}\" y=\"8\" width=\"10\" height=\"10\"/><text x=\"{:.0}\" y=\"17\">rows in the run's tables after it (left axis)</text><rect class=\"bar-secs\" x=\"{:.0}\" y=\"8\" width=\"10\" height=\"10\"/><text x=\"{:.0}\" y=\"17\">seconds (right axis)</text></g>",
        x0 + 14.0,
        x0 + 320.0,
        x0 + 334.0
    );
}

/// The dates of the first, last and a few runs between, under their bars.
fn dates(out: &mut String, runs: &[&RunRecord], slot: f64) {
    let n = runs.len();
    if n == 0 {
        return;
    }
    let mut shown: Vec<usize> = (0..5).map(|k| k * (n - 1) / 4).collect();
    shown.dedup();
    for i in shown {
        let x = LEFT + slot * (i as f64 + 0.5);
        let date = runs[i]
            .finished_at
            .get(..10)
            .unwrap_or(&runs[i].finished_at);
        let _ = writeln!(
            out,
            "<text class=\"tick date\" x=\"{x:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            TOP + PLOT_H + 16.0,
            escape(date)
        );
    }
    let _ = writeln!(
        out,
        "<text class=\"tick\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">run, oldest left ({n} shown)</text>",
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        TOP + PLOT_H + 38.0
    );
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `v`: a round top for an axis.
fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * p)
}

/// A row count for an axis: `12`, `3.4k`, `1.2M`.
fn count(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1}G", v / 1e9),
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{count, nice};

    #[test]
    fn axis_tops_are_round_and_counts_short() {
        assert_eq!(nice(37.0), 50.0);
        assert_eq!(nice(0.37), 0.5);
        assert_eq!(nice(100.0), 100.0);
        assert_eq!(count(1500.0), "1.5k");
        assert_eq!(count(2_000_000.0), "2.0M");
        assert_eq!(count(12.0), "12");
    }
}
