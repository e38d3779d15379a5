//! `pipeline lineage` output: the upstream tree of one column or of every column of a table,
//! as text, Graphviz DOT, Mermaid or JSON.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{json, Value};

use super::graph::{ColumnOrigin, PipelineLineage};
use crate::spec::ColumnRef;

/// Output formats of `pipeline lineage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineageFormat {
    Text,
    Dot,
    Mermaid,
    Json,
}

impl LineageFormat {
    pub fn parse(text: &str) -> Option<LineageFormat> {
        Some(match text {
            "text" => LineageFormat::Text,
            "dot" => LineageFormat::Dot,
            "mermaid" => LineageFormat::Mermaid,
            "json" => LineageFormat::Json,
            _ => return None,
        })
    }
}

/// Renders the upstream lineage of `roots`.
pub fn render(lineage: &PipelineLineage, roots: &[ColumnRef], format: LineageFormat) -> String {
    match format {
        LineageFormat::Text => {
            let mut out = String::new();
            for root in roots {
                text_tree(lineage, root, "", "", &mut Vec::new(), &mut out);
            }
            out
        }
        LineageFormat::Json => {
            let columns: Vec<Value> = roots
                .iter()
                .map(|r| json_tree(lineage, r, &mut Vec::new()))
                .collect();
            serde_json::to_string_pretty(&json!({ "columns": columns })).unwrap_or_default()
        }
        LineageFormat::Dot => {
            let (nodes, edges) = edges(lineage, roots);
            let mut out = String::from("digraph lineage {\n  rankdir=LR;\n  node [shape=box];\n");
            for (id, label) in &nodes {
                let _ = writeln!(out, "  {} [label={}];", quote(id), quote(label));
            }
            for (from, to) in &edges {
                let _ = writeln!(out, "  {} -> {};", quote(from), quote(to));
            }
            out.push_str("}\n");
            out
        }
        LineageFormat::Mermaid => {
            let (nodes, edges) = edges(lineage, roots);
            let ids: Vec<&String> = nodes.iter().map(|(id, _)| id).collect();
            let key = |id: &String| ids.iter().position(|i| *i == id).unwrap_or(0);
            let mut out = String::from("flowchart LR\n");
            for (i, (_, label)) in nodes.iter().enumerate() {
                let _ = writeln!(out, "  n{i}[\"{}\"]", label.replace('"', "#quot;"));
            }
            for (from, to) in &edges {
                let _ = writeln!(out, "  n{} --> n{}", key(from), key(to));
            }
            out
        }
    }
}

fn describe(lineage: &PipelineLineage, column: &ColumnRef) -> String {
    match lineage.origins.get(column) {
        Some(ColumnOrigin::Transform {
            sql_file,
            derivation,
            expr,
        }) => {
            let how = if derivation.direct { "=" } else { "<-" };
            format!("{column} {how} {expr}  ({})", sql_file.display())
        }
        Some(ColumnOrigin::SourceField { format, .. }) => format!("{column}  ({format} ingest)"),
        Some(ColumnOrigin::Loader { what }) => format!("{column}  (loader: {what})"),
        None => format!("{column}  (external table: not written by this pipeline)"),
    }
}

fn source_field(lineage: &PipelineLineage, column: &ColumnRef) -> Option<String> {
    match lineage.origins.get(column) {
        Some(ColumnOrigin::SourceField {
            format,
            paths,
            field,
        }) => Some(format!("{format} field `{field}` of {}", paths.join(", "))),
        _ => None,
    }
}

fn text_tree(
    lineage: &PipelineLineage,
    column: &ColumnRef,
    lead: &str,
    child_lead: &str,
    path: &mut Vec<ColumnRef>,
    out: &mut String,
) {
    let _ = writeln!(out, "{lead}{}", describe(lineage, column));
    if path.contains(column) {
        return;
    }
    path.push(column.clone());
    let mut children: Vec<Result<ColumnRef, String>> =
        lineage.upstream(column).into_iter().map(Ok).collect();
    if let Some(field) = source_field(lineage, column) {
        children.push(Err(field));
    }
    let n = children.len();
    for (i, child) in children.into_iter().enumerate() {
        let last = i + 1 == n;
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        let lead = format!("{child_lead}{branch}");
        let deeper = format!("{child_lead}{next}");
        match child {
            Ok(c) => text_tree(lineage, &c, &lead, &deeper, path, out),
            Err(field) => {
                let _ = writeln!(out, "{lead}{field}");
            }
        }
    }
    path.pop();
}

fn json_tree(lineage: &PipelineLineage, column: &ColumnRef, path: &mut Vec<ColumnRef>) -> Value {
    let mut node = match lineage.origins.get(column) {
        Some(ColumnOrigin::Transform {
            sql_file,
            derivation,
            expr,
        }) => json!({
            "column": column.to_string(),
            "kind": "transform",
            "sql": sql_file.display().to_string(),
            "expr": expr,
            "direct": derivation.direct,
        }),
        Some(ColumnOrigin::SourceField {
            format,
            paths,
            field,
        }) => json!({
            "column": column.to_string(),
            "kind": "source",
            "format": format,
            "paths": paths,
            "field": field,
        }),
        Some(ColumnOrigin::Loader { what }) => json!({
            "column": column.to_string(),
            "kind": "loader",
            "what": what,
        }),
        None => json!({ "column": column.to_string(), "kind": "external" }),
    };
    if !path.contains(column) {
        path.push(column.clone());
        let from: Vec<Value> = lineage
            .upstream(column)
            .iter()
            .map(|c| json_tree(lineage, c, path))
            .collect();
        path.pop();
        node["from"] = Value::Array(from);
    }
    node
}

type Nodes = Vec<(String, String)>;
type Edges = BTreeSet<(String, String)>;

/// Every node (id, label) and edge (from, to) upstream of `roots`.
fn edges(lineage: &PipelineLineage, roots: &[ColumnRef]) -> (Nodes, Edges) {
    let mut nodes: Nodes = Vec::new();
    let mut edges = Edges::new();
    let mut stack: Vec<ColumnRef> = roots.to_vec();
    let mut seen = BTreeSet::new();
    let add_node = |nodes: &mut Nodes, id: String, label: String| {
        if !nodes.iter().any(|(i, _)| *i == id) {
            nodes.push((id, label));
        }
    };
    while let Some(c) = stack.pop() {
        if !seen.insert(c.clone()) {
            continue;
        }
        add_node(&mut nodes, c.to_string(), c.to_string());
        for up in lineage.upstream(&c) {
            edges.insert((up.to_string(), c.to_string()));
            stack.push(up);
        }
        if let Some(field) = source_field(lineage, &c) {
            let id = format!("source:{c}");
            add_node(&mut nodes, id.clone(), field);
            edges.insert((id, c.to_string()));
        }
    }
    (nodes, edges)
}

fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}
