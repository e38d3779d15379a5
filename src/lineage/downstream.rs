//! Downstream lineage: every column of the pipeline computed from a column, at any distance,
//! as a tree (text), nested objects (JSON) or edges (Graphviz, Mermaid): what a change of the
//! column reaches.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{json, Value};

use super::graph::{ColumnOrigin, PipelineLineage};
use super::render::LineageFormat;
use crate::spec::ColumnRef;

/// Renders the downstream lineage of `roots`.
pub fn render_downstream(
    lineage: &PipelineLineage,
    roots: &[ColumnRef],
    format: LineageFormat,
) -> String {
    match format {
        LineageFormat::Text => {
            let mut out = String::new();
            for root in roots {
                tree(lineage, root, "", "", &mut Vec::new(), &mut out);
            }
            out
        }
        LineageFormat::Json => {
            let columns: Vec<Value> = roots
                .iter()
                .map(|r| nested(lineage, r, &mut Vec::new()))
                .collect();
            serde_json::to_string_pretty(&json!({ "columns": columns })).unwrap_or_default()
        }
        LineageFormat::Dot | LineageFormat::Mermaid => {
            let mut edges = BTreeSet::new();
            for root in roots {
                for c in std::iter::once(root.clone()).chain(lineage.all_downstream(root)) {
                    for d in lineage.downstream(&c) {
                        edges.insert((c.to_string(), d.to_string()));
                    }
                }
            }
            graph(&edges, format == LineageFormat::Dot)
        }
    }
}

/// How `column` is computed, for the tree.
fn how(lineage: &PipelineLineage, column: &ColumnRef) -> String {
    match lineage.origins.get(column) {
        Some(ColumnOrigin::Transform { expr, sql_file, .. }) => {
            format!("{column} <- {expr}  ({})", sql_file.display())
        }
        _ => column.to_string(),
    }
}

fn tree(
    lineage: &PipelineLineage,
    column: &ColumnRef,
    lead: &str,
    child_lead: &str,
    path: &mut Vec<ColumnRef>,
    out: &mut String,
) {
    let _ = writeln!(out, "{lead}{}", how(lineage, column));
    if path.contains(column) {
        return;
    }
    path.push(column.clone());
    let children = lineage.downstream(column);
    let n = children.len();
    for (i, child) in children.into_iter().enumerate() {
        let (branch, next) = match i + 1 == n {
            true => ("└── ", "    "),
            false => ("├── ", "│   "),
        };
        let (lead, deeper) = (
            format!("{child_lead}{branch}"),
            format!("{child_lead}{next}"),
        );
        tree(lineage, &child, &lead, &deeper, path, out);
    }
    path.pop();
}

fn nested(lineage: &PipelineLineage, column: &ColumnRef, path: &mut Vec<ColumnRef>) -> Value {
    let mut node = json!({ "column": column.to_string() });
    if let Some(ColumnOrigin::Transform { expr, .. }) = lineage.origins.get(column) {
        node["expr"] = json!(expr);
    }
    if path.contains(column) {
        node["to"] = json!([]);
        return node;
    }
    path.push(column.clone());
    let to: Vec<Value> = lineage
        .downstream(column)
        .iter()
        .map(|d| nested(lineage, d, path))
        .collect();
    path.pop();
    node["to"] = json!(to);
    node
}

/// `edges` as a Graphviz (`dot`) or Mermaid graph, left to right.
fn graph(edges: &BTreeSet<(String, String)>, dot: bool) -> String {
    let mut names: Vec<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    names.sort();
    names.dedup();
    let key = |n: &String| names.iter().position(|m| *m == n).unwrap_or(0);
    let mut out = match dot {
        true => String::from("digraph lineage {\n  rankdir=LR;\n  node [shape=box];\n"),
        false => String::from("flowchart LR\n"),
    };
    for (i, name) in names.iter().enumerate() {
        let _ = match dot {
            true => writeln!(out, "  n{i} [label=\"{}\"];", name.replace('"', "\\\"")),
            false => writeln!(out, "  n{i}[\"{}\"]", name.replace('"', "#quot;")),
        };
    }
    for (a, b) in edges {
        let arrow = if dot { "->" } else { "-->" };
        let _ = writeln!(out, "  n{} {arrow} n{}", key(a), key(b));
    }
    if dot {
        out.push_str("}\n");
    }
    out
}
