//! The site's pages, rendered from what [`super::Site`] gathered: the index (DAG and tables),
//! one page per table, and the runs.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::dag::{self, Node};
use super::html::{escape, page};
use super::links::{column_anchor, table_file};
use super::{Site, TablePage};
use crate::records::RunRecord;

/// Seconds between a run's start and finish (0 when a time does not parse).
fn seconds(run: &RunRecord) -> f64 {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match (parse(&run.started_at), parse(&run.finished_at)) {
        (Some(a), Some(b)) => (b - a).num_milliseconds() as f64 / 1000.0,
        _ => 0.0,
    }
}

/// `index.html`: the DAG, then the tables by layer.
pub fn index(site: &Site) -> String {
    let mut body = format!("<h1>{}</h1>\n", escape(&site.pipeline.name));
    if let Some(d) = &site.pipeline.description {
        let _ = writeln!(body, "<p>{}</p>", escape(d));
    }
    body.push_str(&super::search::results_section(site));
    let (nodes, edges, headers) = site.graph();
    body.push_str("<h2>DAG</h2>\n<div class=\"dag-box\" style=\"overflow-x:auto\">");
    body.push_str(&dag::svg(&nodes, &edges, &headers));
    body.push_str("</div>\n<h2>Tables</h2>\n<table class=\"grid\" id=\"tables\"><tr><th>table</th><th>description</th><th>written by</th><th>rows</th><th>files</th><th>last run</th></tr>\n");
    for t in &site.tables {
        let (rows, files) = match &t.info {
            Some(i) => (i.rows.to_string(), i.data_files.to_string()),
            None => ("not created yet".into(), String::new()),
        };
        let last = t
            .snapshots
            .last()
            .and_then(|s| s.run_id.clone())
            .unwrap_or_default();
        let _ = writeln!(
            body,
            "<tr><td><a class=\"table-link\" href=\"tables/{}\">{}</a></td><td class=\"description\">{}</td><td>{}</td><td class=\"num\">{rows}</td><td class=\"num\">{files}</td><td><a href=\"runs.html#{}\">{}</a></td></tr>",
            escape(&table_file(&t.name)),
            escape(&t.name),
            escape(t.docs.description.as_deref().unwrap_or("")),
            escape(&t.written_by),
            escape(&last),
            escape(&last)
        );
    }
    body.push_str("</table>\n");
    page(&site.pipeline.name, "DAG and tables", "", &body)
}

/// `tables/NAME.html`: schema, partitioning, SQL, column lineage, expectations, snapshots.
pub fn table(site: &Site, t: &TablePage) -> String {
    let mut body = format!("<h1>{}</h1>\n", escape(&t.name));
    if let Some(d) = &t.docs.description {
        let _ = writeln!(
            body,
            "<p class=\"description\" id=\"description\">{}</p>",
            escape(d)
        );
    }
    let _ = writeln!(body, "<p>Written by {}.</p>", escape(&t.written_by));
    push_table_info(&mut body, t);
    if let Some(sql) = &t.sql {
        let _ = writeln!(
            body,
            "<h2>SQL</h2>\n<pre class=\"sql\">{}</pre>",
            escape(sql)
        );
    }
    super::columns::push_columns(&mut body, site, t);
    super::columns::push_used_by(&mut body, site, t);
    push_expectations(&mut body, site, t);
    push_snapshots(&mut body, t);
    page(&site.pipeline.name, &t.name, "../", &body)
}

/// The table's size, current snapshot and metadata file, its schema and its partitioning;
/// a note instead when it is not created yet.
fn push_table_info(body: &mut String, t: &TablePage) {
    match &t.info {
        None => body.push_str(
            "<p class=\"muted\">Not created yet: the pipeline has not run on this catalog.</p>\n",
        ),
        Some(i) => {
            let _ = writeln!(
                body,
                "<p>{} rows in {} data files ({} bytes); current snapshot {}; Iceberg format {}.<br><span class=\"muted\">metadata: {}</span></p>",
                i.rows,
                i.data_files,
                i.bytes,
                i.current_snapshot_id.map(|s| s.to_string()).unwrap_or_else(|| "none".into()),
                escape(&i.format_version),
                escape(&i.metadata_location)
            );
            body.push_str("<h2>Schema</h2>\n<table class=\"grid\" id=\"schema\"><tr><th>field id</th><th>column</th><th>type</th><th>required</th><th>description</th></tr>\n");
            for c in &i.columns {
                let doc = t.column_doc(&c.name);
                let _ = writeln!(
                    body,
                    "<tr><td class=\"num\">{}</td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"description\">{}</td></tr>",
                    c.id,
                    column_anchor(&c.name),
                    escape(&c.name),
                    escape(&c.ty),
                    if c.required { "yes" } else { "" },
                    escape(doc.unwrap_or(""))
                );
            }
            body.push_str("</table>\n<h2>Partitioning</h2>\n");
            if i.partition_spec.is_empty() {
                body.push_str("<p>Unpartitioned.</p>\n");
            } else {
                let fields: Vec<String> = i.partition_spec.iter().map(|p| escape(p)).collect();
                let _ = writeln!(body, "<p>{}</p>", fields.join(", "));
            }
        }
    }
}

/// The table's expectations with their last result and its run.
fn push_expectations(body: &mut String, site: &Site, t: &TablePage) {
    body.push_str("<h2>Expectations</h2>\n");
    let expectations: Vec<_> = site
        .pipeline
        .expectations
        .iter()
        .filter(|e| e.table == t.table)
        .collect();
    if expectations.is_empty() {
        body.push_str("<p class=\"muted\">None declared.</p>\n");
    } else {
        body.push_str("<table class=\"grid\" id=\"expectations\"><tr><th>expectation</th><th>action</th><th>last result</th><th>run</th></tr>\n");
        for e in expectations {
            let last = site.last_result(&e.table.to_string(), &e.name);
            let (result, run) = match last {
                Some((run, q)) => (
                    format!(
                        "<span class=\"{}\">{}</span> {}",
                        if q.passed { "pass" } else { "fail" },
                        if q.passed { "passed" } else { "failed" },
                        escape(&q.detail)
                    ),
                    format!("<a href=\"../runs.html#{0}\">{0}</a>", escape(run)),
                ),
                None => (
                    "<span class=\"muted\">not evaluated yet</span>".into(),
                    String::new(),
                ),
            };
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{result}</td><td>{run}</td></tr>",
                escape(&e.name),
                e.action.name()
            );
        }
        body.push_str("</table>\n");
    }
}

/// The table's snapshots, newest first.
fn push_snapshots(body: &mut String, t: &TablePage) {
    body.push_str("<h2>Snapshots</h2>\n");
    if t.snapshots.is_empty() {
        body.push_str("<p class=\"muted\">None.</p>\n");
    } else {
        body.push_str("<table class=\"grid\" id=\"snapshots\"><tr><th>snapshot</th><th>committed</th><th>operation</th><th>added rows</th><th>deleted rows</th><th>total rows</th><th>run</th></tr>\n");
        for s in t.snapshots.iter().rev() {
            let run = s.run_id.clone().unwrap_or_default();
            let _ = writeln!(
                body,
                "<tr><td>{}{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><a href=\"../runs.html#{run}\">{run}</a></td></tr>",
                s.snapshot_id,
                if s.current { " (current)" } else { "" },
                escape(&s.committed_at),
                escape(&s.operation),
                s.added_records,
                s.deleted_records,
                s.total_records,
                run = escape(&run)
            );
        }
        body.push_str("</table>\n");
    }
}

/// `runs.html`: a chart of rows and seconds per run, then every run's receipt.
/// A failed run's error and the jobs that finished before it failed, for its row's "what
/// changed" cell; empty for a run that published.
fn failure_cell(r: &RunRecord) -> String {
    let Some(error) = &r.error else {
        return String::new();
    };
    let staged: Vec<String> = r
        .finished_jobs
        .iter()
        .map(|j| {
            format!(
                "{} {} ({} rows)",
                escape(&j.table),
                escape(&j.action),
                j.rows
            )
        })
        .collect();
    let staged = match staged.is_empty() {
        true => String::new(),
        false => format!(
            "<br>finished before it failed, not published: {}",
            staged.join("; ")
        ),
    };
    format!(
        "<br><span class=\"fail\">FAILED: {}</span>{staged}",
        escape(error)
    )
}

pub fn runs(site: &Site) -> String {
    let mut body = format!(
        "<h1>Runs of {}</h1>\n<p class=\"muted\">Newest first; the {} newest are shown (<code>pipeline runs</code> lists all).</p>\n",
        escape(&site.pipeline.name),
        site.runs.len()
    );
    body.push_str("<h2>Rows written and seconds per run</h2>\n");
    body.push_str(&super::chart::chart(&site.runs, seconds));
    body.push_str("<h2>Receipts</h2>\n<table class=\"grid\" id=\"runs\"><tr><th>run</th><th>kind</th><th>finished</th><th>who, why</th><th>what changed</th><th>checks</th><th>undo</th></tr>\n");
    for r in &site.runs {
        let mut who = format!(
            "{} on {}",
            escape(&r.invocation.user),
            escape(&r.invocation.host)
        );
        if let Some(c) = &r.invocation.client {
            let _ = write!(who, "<br>via MCP client {}", escape(c));
        }
        if let Some(reason) = &r.invocation.reason {
            let _ = write!(who, "<br><em>{}</em>", escape(reason));
        }
        let changed: Vec<String> = r
            .tables
            .iter()
            .map(|t| {
                format!(
                    "{} {}{} ({} rows)",
                    escape(&t.table),
                    escape(&t.operation),
                    t.partitions
                        .as_ref()
                        .map(|p| format!(" {}", escape(p)))
                        .unwrap_or_default(),
                    t.rows
                )
            })
            .collect();
        let failed: Vec<String> = r
            .quality
            .iter()
            .filter(|q| !q.passed)
            .map(|q| {
                format!(
                    "<span class=\"fail\">{}: {}</span>",
                    escape(&q.name),
                    escape(&q.detail)
                )
            })
            .collect();
        let checks = format!(
            "{} of {} passed{}{}",
            r.quality.iter().filter(|q| q.passed).count(),
            r.quality.len(),
            if failed.is_empty() { "" } else { "<br>" },
            failed.join("<br>")
        );
        let error = failure_cell(r);
        let _ = writeln!(
            body,
            "<tr id=\"{id}\" class=\"run\"><td><code class=\"run-id\">{id}</code></td><td>{}</td><td>{}<br><span class=\"muted\">{:.1} s</span></td><td>{who}</td><td>{}{error}</td><td>{checks}</td><td><code>{}</code></td></tr>",
            escape(&format!("{}{}", r.kind, r.env.as_ref().map(|e| format!(" (env {e})")).unwrap_or_default())),
            escape(&r.finished_at),
            seconds(r),
            changed.join("<br>"),
            escape(&r.undo),
            id = escape(&r.run_id),
        );
    }
    body.push_str("</table>\n");
    page(&site.pipeline.name, "runs", "", &body)
}

/// The DAG's nodes, edges and column headers.
pub(super) fn graph_of(site: &Site) -> (Vec<Node>, Vec<(String, String)>, Vec<String>) {
    let medallion = site
        .tables
        .iter()
        .all(|t| ["bronze", "silver", "gold"].contains(&t.table.namespace.as_str()));
    let (depth, table_headers) = columns_of_tables(site, medallion);
    let last = depth.values().copied().max().unwrap_or(1);
    let (mut nodes, mut edges) = sources_and_inputs(site);
    for t in &site.tables {
        let detail = match &t.info {
            Some(i) => format!("{} rows", i.rows),
            None => "not created yet".into(),
        };
        nodes.push(Node {
            id: t.name.clone(),
            label: t.name.clone(),
            detail,
            column: depth[&t.name],
            href: Some(format!("tables/{}", table_file(&t.name))),
            class: if medallion {
                t.table.namespace.clone()
            } else {
                "other".into()
            },
        });
    }
    for r in &site.pipeline.readers {
        let id = format!("reader:{}", r.name);
        nodes.push(Node {
            id: id.clone(),
            label: r.name.clone(),
            detail: r.owner.clone().unwrap_or_default(),
            column: last + 1,
            href: None,
            class: "reader".into(),
        });
        for t in site.tables_read_by(r) {
            edges.push((t, id.clone()));
        }
    }
    let mut headers = vec!["sources".to_string()];
    headers.extend(table_headers);
    headers.push("readers".into());
    (nodes, edges, headers)
}

/// The DAG column of each table, by name, and the headers of the table columns (column 1
/// on). When every table is in a medallion layer, each layer has its columns, left to
/// right: a table one column right of its deepest input of the same layer (a gold table
/// read by another gold table stands left of it). Otherwise a table stands one column right
/// of its deepest input.
fn columns_of_tables(site: &Site, medallion: bool) -> (BTreeMap<String, usize>, Vec<String>) {
    let layers = ["bronze", "silver", "gold"];
    let layer = |t: &TablePage| match medallion {
        true => layers
            .iter()
            .position(|l| *l == t.table.namespace)
            .unwrap_or(2),
        false => 0,
    };
    // Depth within the layer (site.tables is in dependency order).
    let mut depth: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for t in &site.tables {
        let l = layer(t);
        let d = t
            .inputs
            .iter()
            .filter_map(|i| depth.get(i))
            .filter(|(il, _)| *il == l)
            .map(|(_, d)| d + 1)
            .max()
            .unwrap_or(0);
        depth.insert(t.name.clone(), (l, d));
    }
    let layer_count = if medallion { layers.len() } else { 1 };
    let width: Vec<usize> = (0..layer_count)
        .map(|l| {
            1 + depth
                .values()
                .filter(|(tl, _)| *tl == l)
                .map(|(_, d)| *d)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let offset = |l: usize| 1 + width[..l].iter().sum::<usize>();
    let mut headers = Vec::new();
    for (l, w) in width.iter().enumerate() {
        for d in 0..*w {
            headers.push(match (medallion, d) {
                (true, 0) => layers[l].to_string(),
                (true, d) => format!("{} ({})", layers[l], d + 1),
                (false, d) => format!("step {}", d + 1),
            });
        }
    }
    let columns = depth
        .into_iter()
        .map(|(name, (l, d))| (name, offset(l) + d))
        .collect();
    (columns, headers)
}

/// A source's label in the DAG: its last two path parts (`orders/*.csv`), or the whole
/// pattern when another source's label would be the same.
fn source_label(source: &str, all: &[&str]) -> String {
    let short = |s: &str| {
        let parts: Vec<&str> = s.rsplit('/').take(2).collect();
        parts.into_iter().rev().collect::<Vec<_>>().join("/")
    };
    let label = short(source);
    match all.iter().filter(|s| short(s) == label).count() {
        1 => label,
        _ => source.to_string(),
    }
}

/// One node per source file (column 0, each once), and the edges from sources and input
/// tables to the tables that read them.
fn sources_and_inputs(site: &Site) -> (Vec<Node>, Vec<(String, String)>) {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let all: Vec<&str> = site
        .tables
        .iter()
        .flat_map(|t| t.sources.iter().map(String::as_str))
        .collect();
    for t in &site.tables {
        for source in &t.sources {
            let id = format!("source:{source}");
            if !nodes.iter().any(|n: &Node| n.id == id) {
                nodes.push(Node {
                    id: id.clone(),
                    label: source_label(source, &all),
                    detail: source.clone(),
                    column: 0,
                    href: None,
                    class: "source".into(),
                });
            }
            edges.push((id, t.name.clone()));
        }
        for input in &t.inputs {
            edges.push((input.clone(), t.name.clone()));
        }
    }
    (nodes, edges)
}
