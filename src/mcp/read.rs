//! The read tools: what an analyst or an on-call agent asks of the lake. Each is annotated
//! read-only and answers with JSON text (or a tool error that says what to do).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::capped::CappedResult;
use super::context::table_context;
use super::isolated::query_in_child;
use super::server::{answer, structured, Lake};
use crate::error::{Error, Result};
use crate::inspect;
use crate::lineage::{render, render_downstream, LineageFormat};
use crate::plan::{
    lineage_of, lineage_roots, lineage_target, plan_backfill, plan_changes, Backfill,
};
use crate::spec::{producer_of, TableName};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PipelineArg {
    /// The pipeline whose catalog to read (default: the project's only one).
    pub pipeline: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TableArg {
    /// A table as namespace.table, e.g. gold.fact_orders.
    pub table: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct QueryArgs {
    /// One SELECT (or EXPLAIN SELECT) over catalog tables, written namespace.table.
    pub sql: String,
    /// Read every table that has this snapshot id as of it (time travel; describe_table
    /// lists snapshot ids). A string of digits, as describe_table gives it: a JSON number
    /// this large loses its last digits in most clients.
    #[serde(deserialize_with = "crate::id_text::option::deserialize", default)]
    #[schemars(with = "Option<String>")]
    pub as_of: Option<i64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LineageArgs {
    /// namespace.table.column (one column) or namespace.table (all its columns).
    pub target: String,
    /// The pipeline that writes it (default: found from the specs).
    pub pipeline: Option<String>,
    /// true: the other way, every column computed from it (what a change of it reaches).
    #[serde(default)]
    pub downstream: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PlanArgs {
    /// The pipeline whose spec and SQL on disk to compare with the live tables.
    pub pipeline: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RunsArgs {
    /// The pipeline (default: the project's only one).
    pub pipeline: Option<String>,
    /// How many of the newest runs (default 20).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RunArg {
    /// A run id, as list_runs shows it.
    pub run_id: String,
    pub pipeline: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct QualityArgs {
    /// The run whose checks to show (default: the newest run with checks).
    pub run_id: Option<String>,
    pub pipeline: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BackfillArgs {
    /// The pipeline to backfill.
    pub pipeline: String,
    /// First day, YYYY-MM-DD.
    pub from: String,
    /// Last day, YYYY-MM-DD (inclusive).
    pub to: String,
    /// Only these tables and what depends on them (default: every partitioned table).
    #[serde(default)]
    pub tables: Vec<String>,
}

fn table_name(text: &str) -> Result<TableName> {
    TableName::parse(text).ok_or_else(|| {
        Error::Usage(format!(
            "`{text}` is not a table name; write namespace.table, e.g. gold.fact_orders"
        ))
    })
}

#[tool_router(router = read_tools, vis = "pub(super)")]
impl Lake {
    #[tool(
        description = "List the lake's tables: layer (namespace), rows, data files, current snapshot and the run that wrote it.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_tables(&self, Parameters(a): Parameters<PipelineArg>) -> CallToolResult {
        answer(
            async {
                let catalog = self.open_catalog(a.pipeline.as_deref()).await?;
                inspect::list(&catalog).await
            }
            .await,
        )
    }

    #[tool(
        description = "The project's pipelines: name, description, spec file, catalog, schedule, and the tables each writes (job kind and description). Pipeline names are what plan, backfill_plan and list_runs take.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_pipelines(&self) -> CallToolResult {
        answer(pipelines_of(self))
    }

    #[tool(
        description = "Describe a table: what it holds in words (description, column descriptions), the pipeline and job that write it (the transform's SQL, or the ingest's source files), upstream tables it is computed from and downstream tables and declared readers that use it, its expectations with their newest results, its schema with Iceberg field ids and types, partitioning, row count, and its snapshots (id as a string, time, operation, rows, run).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn describe_table(&self, Parameters(a): Parameters<TableArg>) -> CallToolResult {
        answer(
            async {
                let table = table_name(&a.table)?;
                let catalog = self.open_catalog(None).await?;
                let info = inspect::describe(&catalog, &table).await?;
                let snapshots = inspect::history(&catalog, &table).await?;
                let catalog_name = self.catalog_name();
                let context =
                    table_context(self.project(), catalog_name.as_deref(), &catalog, &table)
                        .await?;
                Ok(json!({"context": context, "table": info, "snapshots": snapshots}))
            }
            .await,
        )
    }

    #[tool(
        description = "Run one read-only SELECT over catalog tables (namespace.table). Returns the columns with their SQL types and the rows (structured content), capped in rows and bytes (the result says when it was cut), within a timeout and a memory ceiling (a query past either is stopped with an error saying so; narrow it and call again). DDL, DML, COPY and file or URL tables are refused.",
        annotations(read_only_hint = true, open_world_hint = false),
        output_schema = rmcp::handler::server::common::schema_for_output::<CappedResult>()
    )]
    async fn query(&self, Parameters(a): Parameters<QueryArgs>) -> CallToolResult {
        structured(
            async {
                let catalog = self.catalog_name();
                query_in_child(
                    self.project(),
                    catalog.as_deref(),
                    &a.sql,
                    a.as_of,
                    self.limits,
                )
                .await
            }
            .await,
        )
    }

    #[tool(
        description = "Column lineage: where a column comes from, through every transform, down to the ingest jobs' source files and fields; with downstream = true, every column computed from it instead.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn lineage(&self, Parameters(a): Parameters<LineageArgs>) -> CallToolResult {
        answer(
            async {
                let (table, _) = lineage_target(&a.target)?;
                let name = match a.pipeline {
                    Some(p) => p,
                    None => producer_of(self.project(), &table)?,
                };
                let spec = self.spec(&name)?;
                let lineage = lineage_of(&spec).await?;
                let roots = lineage_roots(&lineage, &name, &a.target)?;
                let text = match a.downstream {
                    true => render_downstream(&lineage, &roots, LineageFormat::Json),
                    false => render(&lineage, &roots, LineageFormat::Json),
                };
                serde_json::from_str::<Value>(&text)
                    .map_err(|e| Error::Internal(format!("lineage as JSON: {e}")))
            }
            .await,
        )
    }

    #[tool(
        description = "Impact of a planned change: compare the pipeline's spec and SQL on disk with the live tables, list schema changes, which are breaking, and which downstream tables and declared readers (dashboards, exports) each would break. Changes nothing.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn plan(&self, Parameters(a): Parameters<PlanArgs>) -> CallToolResult {
        answer(
            async {
                let spec = self.spec(&a.pipeline)?;
                plan_changes(&spec).await
            }
            .await,
        )
    }

    #[tool(
        description = "The newest runs of a pipeline (runs, backfills, rollbacks, maintenance): id, kind, times, who and why, tables changed, checks passed and failed, the undo command.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_runs(&self, Parameters(a): Parameters<RunsArgs>) -> CallToolResult {
        answer(
            async {
                let pipeline = self.pipeline_or_only(a.pipeline.as_deref())?;
                let catalog = self.open_catalog(Some(&pipeline)).await?;
                let runs = catalog
                    .newest_runs(&pipeline, 0, a.limit.unwrap_or(20).clamp(1, 500))
                    .await?;
                let summary: Vec<Value> = runs
                    .iter()
                    .map(|r| {
                        json!({
                            "run_id": r.run_id,
                            "kind": r.kind,
                            "started_at": r.started_at,
                            "finished_at": r.finished_at,
                            "user": r.invocation.user,
                            "client": r.invocation.client,
                            "reason": r.invocation.reason,
                            "tables": r.tables.iter().map(|t| &t.table).collect::<Vec<_>>(),
                            "checks_failed": r.quality.iter().filter(|q| !q.passed).count(),
                            "checks": r.quality.len(),
                            "error": r.error,
                            "finished_jobs": r.finished_jobs,
                            "env": r.env,
                            "undo": r.undo,
                        })
                    })
                    .collect();
                Ok(json!({"pipeline": pipeline, "runs_newest_first": summary}))
            }
            .await,
        )
    }

    #[tool(
        description = "A run's receipt: every table it changed (snapshots before and after, rows, partitions), its checks and what they found, who ran it, why, from which client, and the command that undoes it.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn run_receipt(&self, Parameters(a): Parameters<RunArg>) -> CallToolResult {
        answer(
            async {
                let catalog = self.open_catalog(a.pipeline.as_deref()).await?;
                catalog.run(&a.run_id).await
            }
            .await,
        )
    }

    #[tool(
        description = "Quality results of a run (default: the newest run with checks): each expectation, passed or not, violations, sample rows, and for anomalies the traced upstream cause.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn quality(&self, Parameters(a): Parameters<QualityArgs>) -> CallToolResult {
        answer(async {
            let catalog = self.open_catalog(a.pipeline.as_deref()).await?;
            let record = match &a.run_id {
                Some(id) => catalog.run(id).await?,
                None => {
                    let pipeline = self.pipeline_or_only(a.pipeline.as_deref())?;
                    let runs = catalog.newest_runs(&pipeline, 0, 50).await?;
                    runs.into_iter()
                        .find(|r| !r.quality.is_empty())
                        .ok_or_else(|| {
                            Error::Usage(format!("no run of {pipeline} has quality results yet"))
                        })?
                }
            };
            Ok(json!({"run_id": record.run_id, "finished_at": record.finished_at, "results": record.quality}))
        }
        .await)
    }

    #[tool(
        description = "Plan a backfill without running it: for each table, what would be recomputed (partitions or full refresh) and what it would read (files and bytes).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn backfill_plan(&self, Parameters(a): Parameters<BackfillArgs>) -> CallToolResult {
        answer(
            async {
                let spec = self.spec(&a.pipeline)?;
                let backfill = Backfill::request(&spec, &a.from, &a.to, &a.tables)?;
                plan_backfill(&spec, &backfill, &[]).await
            }
            .await,
        )
    }
}

/// Every pipeline of the project: what `list_pipelines` returns.
fn pipelines_of(lake: &Lake) -> Result<Vec<Value>> {
    let catalog = lake.catalog_name();
    let mut out = Vec::new();
    for name in crate::spec::list_pipelines(lake.project()) {
        let spec = crate::spec::load_with_catalog(lake.project(), &name, catalog.as_deref())?;
        let file = spec
            .file
            .strip_prefix(&spec.project_dir)
            .unwrap_or(&spec.file);
        let ingests = spec.ingests.iter().map(|i| ("ingest", &i.table, &i.docs));
        let transforms = spec
            .transforms
            .iter()
            .map(|t| ("transform", &t.table, &t.docs));
        let tables: Vec<Value> = ingests
            .chain(transforms)
            .map(|(job, table, docs)| {
                json!({"table": table.to_string(), "job": job, "description": docs.description})
            })
            .collect();
        out.push(json!({
            "pipeline": spec.name,
            "description": spec.description,
            "spec_file": file.display().to_string(),
            "catalog": spec.catalog.describe(),
            "schedule": spec.schedule.as_ref().map(|s| json!({"cron": s.cron_text, "timezone": s.timezone.name()})),
            "tables": tables,
        }));
    }
    Ok(out)
}
