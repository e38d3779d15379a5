//! The pipeline's DAG as an SVG picture, laid out here (no Graphviz): one column per stage,
//! left to right (source files, bronze, silver, gold, then the declared readers), nodes
//! stacked in each column in spec order. An edge between neighbouring columns is a curve in
//! the gap between them; an edge that skips columns runs in a lane of its own below every
//! box, so no edge crosses a box. The picture scales down to the page's width (never cut
//! off). Every node and edge carries `data-` attributes naming what it is, so a test (or a
//! script) can read the picture.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::html::escape;

/// One box of the picture.
#[derive(Debug, Clone)]
pub struct Node {
    /// Unique id: a table name, `source:PATH` or `reader:NAME`.
    pub id: String,
    pub label: String,
    /// Smaller second line (rows, format, owner).
    pub detail: String,
    /// Column index, left to right.
    pub column: usize,
    /// Where a click goes (a table page), if anywhere.
    pub href: Option<String>,
    /// CSS class: `source`, `bronze`, `silver`, `gold`, `reader`, `other`.
    pub class: String,
}

const NODE_W: f64 = 190.0;
const NODE_H: f64 = 44.0;
const COL_GAP: f64 = 60.0;
const ROW_GAP: f64 = 18.0;
const MARGIN: f64 = 20.0;
const HEADER: f64 = 28.0;
/// The height of the lane of one edge that skips columns.
const LANE: f64 = 10.0;

/// The SVG of `nodes` joined by `edges` (`from id`, `to id`), with `headers` over the columns.
pub fn svg(nodes: &[Node], edges: &[(String, String)], headers: &[String]) -> String {
    let columns = nodes.iter().map(|n| n.column + 1).max().unwrap_or(0);
    let mut rows_in: BTreeMap<usize, usize> = BTreeMap::new();
    let mut at: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for n in nodes {
        let row = rows_in.entry(n.column).or_insert(0);
        let x = MARGIN + n.column as f64 * (NODE_W + COL_GAP);
        let y = MARGIN + HEADER + *row as f64 * (NODE_H + ROW_GAP);
        *row += 1;
        at.insert(&n.id, (x, y));
    }
    let tallest = rows_in.values().copied().max().unwrap_or(0) as f64;
    let width = 2.0 * MARGIN + columns as f64 * NODE_W + columns.saturating_sub(1) as f64 * COL_GAP;
    let column_of: BTreeMap<&str, usize> =
        nodes.iter().map(|n| (n.id.as_str(), n.column)).collect();
    let skipping = edges
        .iter()
        .filter(
            |(f, t)| match (column_of.get(f.as_str()), column_of.get(t.as_str())) {
                (Some(a), Some(b)) => *b != a + 1,
                _ => false,
            },
        )
        .count();
    let lanes_top = MARGIN + HEADER + tallest * (NODE_H + ROW_GAP);
    let height = lanes_top + skipping as f64 * LANE + MARGIN;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"dag\" width=\"100%\" style=\"max-width:{width:.0}px\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"pipeline DAG\">\n"
    );
    for (c, h) in headers.iter().enumerate().take(columns) {
        let x = MARGIN + c as f64 * (NODE_W + COL_GAP) + NODE_W / 2.0;
        let _ = writeln!(
            out,
            "<text class=\"column-header\" x=\"{x:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            MARGIN + 14.0,
            escape(h)
        );
    }
    edge_paths(&mut out, edges, &at, &column_of, lanes_top);
    out.push_str("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" class=\"arrow\"/></marker></defs>\n");
    boxes(&mut out, nodes, &at);
    out.push_str("</svg>\n");
    out
}

/// The edges: between neighbouring columns a curve in the gap; one that skips columns
/// through the gaps and a lane of its own below every box (lanes from `lanes_top` down).
fn edge_paths(
    out: &mut String,
    edges: &[(String, String)],
    at: &BTreeMap<&str, (f64, f64)>,
    column_of: &BTreeMap<&str, usize>,
    lanes_top: f64,
) {
    let mut lane = 0;
    for (from, to) in edges {
        let (Some(&(x1, y1)), Some(&(x2, y2))) = (at.get(from.as_str()), at.get(to.as_str()))
        else {
            continue;
        };
        let (sx, sy) = (x1 + NODE_W, y1 + NODE_H / 2.0);
        let (ex, ey) = (x2, y2 + NODE_H / 2.0);
        let next_column = column_of[from.as_str()] + 1 == column_of[to.as_str()];
        let d = if next_column {
            // In the gap between two columns: from the right side to the left side.
            let bend = (ex - sx).max(40.0) / 2.0;
            format!(
                "M{sx:.1},{sy:.1} C{:.1},{sy:.1} {:.1},{ey:.1} {ex:.1},{ey:.1}",
                sx + bend,
                ex - bend
            )
        } else {
            // Out into the gap, down to a lane of its own below every box, along it, and up
            // in the gap before the target.
            let y = lanes_top + lane as f64 * LANE + LANE / 2.0;
            lane += 1;
            let (gx1, gx2) = (sx + COL_GAP * 0.35, ex - COL_GAP * 0.35);
            format!(
                "M{sx:.1},{sy:.1} L{gx1:.1},{sy:.1} L{gx1:.1},{y:.1} L{gx2:.1},{y:.1} L{gx2:.1},{ey:.1} L{ex:.1},{ey:.1}"
            )
        };
        let _ = writeln!(
            out,
            "<path class=\"edge\" data-from=\"{}\" data-to=\"{}\" d=\"{d}\" marker-end=\"url(#arrow)\"/>",
            escape(from),
            escape(to),
        );
    }
}

/// The boxes, each a link to its page when it has one.
fn boxes(out: &mut String, nodes: &[Node], at: &BTreeMap<&str, (f64, f64)>) {
    for n in nodes {
        let (x, y) = at[n.id.as_str()];
        let open = match &n.href {
            Some(h) => format!("<a href=\"{}\">", escape(h)),
            None => String::new(),
        };
        let close = if n.href.is_some() { "</a>" } else { "" };
        let _ = writeln!(
            out,
            "{open}<g class=\"node {}\" data-node=\"{}\"><title>{}</title><rect x=\"{x:.0}\" y=\"{y:.0}\" width=\"{NODE_W:.0}\" height=\"{NODE_H:.0}\" rx=\"6\"/><text x=\"{:.0}\" y=\"{:.0}\" class=\"label\">{}</text><text x=\"{:.0}\" y=\"{:.0}\" class=\"detail\">{}</text></g>{close}",
            escape(&n.class),
            escape(&n.id),
            escape(&format!("{} {}", n.label, n.detail)),
            x + 10.0,
            y + 18.0,
            escape(&clip(&n.label, 26)),
            x + 10.0,
            y + 35.0,
            escape(&clip(&n.detail, 30)),
        );
    }
}

/// `text` cut to `n` characters with an ellipsis (the full text is on the table page).
fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut s: String = text.chars().take(n - 1).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, column: usize) -> Node {
        Node {
            id: id.into(),
            label: id.into(),
            detail: String::new(),
            column,
            href: None,
            class: "other".into(),
        }
    }

    #[test]
    fn columns_go_left_to_right_and_edges_join_right_side_to_left_side() {
        let nodes = vec![node("a", 0), node("b", 1), node("c", 1), node("d<&>", 2)];
        let edges = vec![("a".into(), "c".into()), ("c".into(), "d<&>".into())];
        let headers: Vec<String> = ["one", "two", "three"].map(String::from).to_vec();
        let svg = svg(&nodes, &edges, &headers);
        // a at (20, 48); c is the second node of column 1: (270, 110).
        assert!(
            svg.contains("data-node=\"a\"><title>a </title><rect x=\"20\" y=\"48\""),
            "{svg}"
        );
        assert!(
            svg.contains("data-node=\"c\"><title>c </title><rect x=\"270\" y=\"110\""),
            "{svg}"
        );
        // The edge a -> c starts at a's right middle (210, 70) and ends at c's left (270, 132).
        assert!(
            svg.contains("data-from=\"a\" data-to=\"c\" d=\"M210.0,70.0"),
            "{svg}"
        );
        assert!(svg.contains(" 270.0,132.0\""), "{svg}");
        // Names are escaped, and an edge to an unknown node is left out.
        assert!(svg.contains("data-node=\"d&lt;&amp;&gt;\""));
        let lone = super::svg(&nodes, &[("a".into(), "zz".into())], &[]);
        assert!(!lone.contains("class=\"edge\""));
    }
}
