//! What an agent needs to understand a table beyond its schema: the pipeline that writes it,
//! in words (descriptions) and in code (its SQL or its source files), what it reads and what
//! reads it (tables of every pipeline of the project, declared readers), and the checks on it
//! with their newest results. Read from the specs and SQL on disk and the run records.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::catalog::PipelineCatalog;
use crate::error::Result;
use crate::plan::{job_graph, tables_read_by};
use crate::records::RunRecord;
use crate::spec::{
    list_pipelines, load_with_catalog, violation_predicate, ExpectAction, Pipeline, TableName,
    TransformMode,
};

/// A table in context.
#[derive(Debug, Serialize)]
pub struct TableContext {
    /// The pipeline that writes the table (`None`: no pipeline of the project does).
    pub pipeline: Option<String>,
    /// The spec's description of the table (also its `comment` property).
    pub description: Option<String>,
    /// The spec's descriptions of its columns (also each field's `doc`).
    pub column_descriptions: BTreeMap<String, String>,
    pub written_by: Option<WrittenBy>,
    /// Tables it is computed from.
    pub upstream: Vec<String>,
    /// Tables computed from it, in any pipeline of the project.
    pub downstream: Vec<String>,
    /// Declared consumers outside the pipelines (`[[reader]]`) that read it.
    pub readers: Vec<ReaderInfo>,
    pub expectations: Vec<ExpectationInfo>,
}

/// The job that writes the table.
#[derive(Debug, Serialize)]
pub struct WrittenBy {
    /// `ingest` or `transform`.
    pub job: &'static str,
    /// The transform's SQL file and text (the SELECT whose rows the table holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// `full_refresh` or `replace_partitions` (transforms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    pub partition_by: Vec<String>,
    /// The source file patterns an ingest loads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ReaderInfo {
    pub name: String,
    pub owner: Option<String>,
    pub kind: Option<String>,
}

/// One expectation on the table and its newest result.
#[derive(Debug, Serialize)]
pub struct ExpectationInfo {
    pub name: String,
    /// The kind of check (`unique`, `not_null`, `relationships`, ...).
    pub check: &'static str,
    pub action: ExpectAction,
    /// The condition a violating row meets (row-level checks), as SQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violating_rows: Option<String>,
    /// Where the spec declares it.
    pub defined_at: String,
    /// Its newest result: run, passed, violations, what was found.
    pub last_result: Option<serde_json::Value>,
}

/// The context of `table` in the project at `project` (specs of every pipeline, loaded with
/// `catalog_name`), with the newest results of its checks from `catalog`'s run records.
pub async fn table_context(
    project: &Path,
    catalog_name: Option<&str>,
    catalog: &PipelineCatalog,
    table: &TableName,
) -> Result<TableContext> {
    let mut specs = Vec::new();
    for name in list_pipelines(project) {
        specs.push(load_with_catalog(project, &name, catalog_name)?);
    }
    let mut context = TableContext {
        pipeline: None,
        description: None,
        column_descriptions: BTreeMap::new(),
        written_by: None,
        upstream: Vec::new(),
        downstream: Vec::new(),
        readers: Vec::new(),
        expectations: Vec::new(),
    };
    for spec in &specs {
        let graph = job_graph(spec)?;
        for (i, parsed) in graph.transforms.iter().enumerate() {
            let target = &spec.transforms[i].table;
            if parsed.inputs.contains(table) && !context.downstream.contains(&target.to_string()) {
                context.downstream.push(target.to_string());
            }
            if target == table {
                context.upstream = parsed.inputs.iter().map(|t| t.to_string()).collect();
            }
        }
        context.readers.extend(
            spec.readers
                .iter()
                .filter(|r| tables_read_by(r).contains(table))
                .map(|r| ReaderInfo {
                    name: r.name.clone(),
                    owner: r.owner.clone(),
                    kind: r.kind.clone(),
                }),
        );
        if describe_writer(spec, table, &mut context) {
            let runs = catalog.newest_runs(&spec.name, 0, 50).await?;
            context.expectations = expectations_of(spec, table, &runs);
        }
    }
    Ok(context)
}

/// Fills in who writes `table` when `spec` does; whether it does.
fn describe_writer(spec: &Pipeline, table: &TableName, context: &mut TableContext) -> bool {
    let project = &spec.project_dir;
    let (docs, written_by) = if let Some(t) = spec.transforms.iter().find(|t| &t.table == table) {
        let file = t.sql_file.strip_prefix(project).unwrap_or(&t.sql_file);
        let mode = match t.mode {
            TransformMode::FullRefresh => "full_refresh",
            TransformMode::ReplacePartitions => "replace_partitions",
        };
        let written_by = WrittenBy {
            job: "transform",
            sql_file: Some(file.display().to_string()),
            sql: Some(t.sql.clone()),
            mode: Some(mode),
            partition_by: t.partition_by.iter().map(|p| p.text.clone()).collect(),
            sources: Vec::new(),
        };
        (&t.docs, written_by)
    } else if let Some(i) = spec.ingests.iter().find(|i| &i.table == table) {
        let written_by = WrittenBy {
            job: "ingest",
            sql_file: None,
            sql: None,
            mode: None,
            partition_by: i.partition_by.iter().map(|p| p.text.clone()).collect(),
            sources: i.paths.clone(),
        };
        (&i.docs, written_by)
    } else {
        return false;
    };
    context.pipeline = Some(spec.name.clone());
    context.description = docs.description.clone();
    context.column_descriptions = docs
        .columns
        .iter()
        .map(|d| (d.column.clone(), d.text.clone()))
        .collect();
    context.written_by = Some(written_by);
    true
}

/// The expectations of `spec` on `table`, each with its newest result among `runs` (newest
/// first).
fn expectations_of(spec: &Pipeline, table: &TableName, runs: &[RunRecord]) -> Vec<ExpectationInfo> {
    spec.expectations
        .iter()
        .filter(|e| &e.table == table)
        .map(|e| {
            let last_result = runs.iter().find_map(|r| {
                let q = r
                    .quality
                    .iter()
                    .find(|q| q.name == e.name && q.table == table.to_string())?;
                Some(serde_json::json!({
                    "run_id": r.run_id,
                    "finished_at": r.finished_at,
                    "passed": q.passed,
                    "violations": q.violations,
                    "detail": q.detail,
                }))
            });
            let file = e
                .origin
                .file
                .strip_prefix(&spec.project_dir)
                .unwrap_or(&e.origin.file);
            ExpectationInfo {
                name: e.name.clone(),
                check: e.check.kind(),
                action: e.action,
                violating_rows: violation_predicate(&e.check),
                defined_at: format!("{}:{}", file.display(), e.origin.line),
                last_result,
            }
        })
        .collect()
}
