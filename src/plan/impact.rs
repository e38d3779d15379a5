//! `pipeline plan`: what the spec and SQL on disk would change in the live tables' schemas, and
//! for every breaking change, what would break downstream: the transforms whose SQL uses the
//! column (file:line), the columns computed from it, and the declared `[[reader]]`s with
//! their owners. Nothing is run or written.
//!
//! Two worlds are planned. The **new** world plans every transform against the schemas the
//! run would produce; the **live** world plans the same SQL against the tables as they are, and
//! its lineage says who uses what today. A change breaks whoever uses, today, the changed
//! column or anything computed from it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::spec::TableMetadata;
use serde::Serialize;

use datafusion::logical_expr::LogicalPlan;

use super::graph::{job_graph, JobGraph, JobId};
use super::schema_diff::diff;
pub use super::schema_diff::ChangeKind;
use crate::catalog::PipelineCatalog;
use crate::commit::{schema_of, DesiredColumn};
use crate::engine::{admit, lines_naming, plan, session_over, Entry};
use crate::error::{Error, Result};
use crate::ingest::{output_tables, with_added_columns};
use crate::lineage::{
    pipeline_lineage, query_lineage, record, recorded_on, renames, PipelineLineage, QueryLineage,
};
use crate::spec::{ColumnRef, IngestJob, Pipeline, ReaderUses, TableName, TransformJob};
use crate::transform::{
    logical_plan, output_columns, transform_quarantine_columns, ParsedTransform,
};

/// Everything `pipeline plan` found.
#[derive(Debug, Serialize)]
pub struct SchemaPlan {
    pub pipeline: String,
    /// Tables whose schema changes, or that the run would create.
    pub tables: Vec<TablePlan>,
    /// Tables whose schema stays as it is.
    pub unchanged: Vec<String>,
    /// Transforms whose SQL would not plan against the new schemas.
    pub failures: Vec<Failure>,
    /// Readers whose SQL does not plan against the live tables (their use is unknown).
    pub unplanned_readers: Vec<Failure>,
}

impl SchemaPlan {
    /// Breaking changes plus transforms that would fail.
    pub fn breaking(&self) -> usize {
        self.tables
            .iter()
            .flat_map(|t| &t.changes)
            .filter(|c| c.breaking)
            .count()
            + self.failures.len()
    }
}

/// One table's schema changes.
#[derive(Debug, Serialize)]
pub struct TablePlan {
    pub table: String,
    /// The table does not exist yet: the run creates it.
    pub new: bool,
    pub changes: Vec<Change>,
}

/// One column change.
#[derive(Debug, Serialize)]
pub struct Change {
    #[serde(flatten)]
    pub kind: ChangeKind,
    pub breaking: bool,
    /// What would break (empty for safe changes).
    pub breaks: Vec<Break>,
}

/// Something that uses a changed column today.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Break {
    /// A transform of the pipeline whose SQL uses the column at these lines.
    Sql {
        table: String,
        sql: PathBuf,
        lines: Vec<usize>,
        column: String,
    },
    /// A column computed from the changed one.
    Column { column: String, from: String },
    /// A declared `[[reader]]`.
    Reader {
        name: String,
        owner: Option<String>,
        reader_kind: Option<String>,
        declared: String,
        columns: Vec<String>,
    },
}

/// A query that does not plan.
#[derive(Debug, Serialize)]
pub struct Failure {
    pub name: String,
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// Compares what `pipeline` would write with its live tables. Reads only catalog metadata.
pub async fn plan_changes(pipeline: &Pipeline) -> Result<SchemaPlan> {
    let graph = job_graph(pipeline)?;
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let live = live_metadata(&catalog, &graph).await?;
    let mut worlds = Worlds::over_external_inputs(&graph, &live)?;
    let ingests = worlds.plan_ingests(pipeline)?;
    for job_id in &graph.order {
        let JobId::Transform(i) = *job_id else {
            continue;
        };
        worlds
            .plan_transform(&pipeline.transforms[i], &graph.transforms[i])
            .await?;
    }
    let today = pipeline_lineage(pipeline, &ingests, &worlds.live_lineage);
    let (reader_uses, unplanned_readers) = reader_uses(pipeline, &worlds.live_schemas).await;
    let (tables, unchanged) = worlds.table_plans(pipeline, &today, &reader_uses);
    Ok(SchemaPlan {
        pipeline: pipeline.name.clone(),
        tables,
        unchanged,
        failures: worlds.failures,
        unplanned_readers,
    })
}

/// The metadata of the live tables the pipeline writes or reads from outside, by name (those
/// that do not exist are absent).
async fn live_metadata(
    catalog: &PipelineCatalog,
    graph: &JobGraph,
) -> Result<HashMap<TableName, TableMetadata>> {
    let mut wanted: BTreeSet<TableName> = graph.producers.keys().cloned().collect();
    wanted.extend(graph.external_inputs().into_iter().map(|(_, t)| t));
    let wanted: Vec<&TableName> = wanted.iter().collect();
    let loaded = catalog.load_many(&wanted).await?;
    Ok(wanted
        .into_iter()
        .zip(loaded)
        .filter_map(|(name, table)| Some((name.clone(), table?.metadata().clone())))
        .collect())
}

/// The Arrow schema of a table's current Iceberg schema.
fn arrow_of(m: &TableMetadata) -> Result<SchemaRef> {
    Ok(Arc::new(schema_to_arrow_schema(m.current_schema())?))
}

/// The two worlds being planned, filled job by job in dependency order: the schemas the run
/// would produce (new) and the tables as they are (live), with what planning them found.
struct Worlds<'a> {
    /// The live tables' metadata, by name (absent: not created yet).
    live: &'a HashMap<TableName, TableMetadata>,
    /// The schema of each table as the run would leave it.
    new_schemas: HashMap<TableName, SchemaRef>,
    /// The schema of each table today (as the run would create it, when it does not exist).
    live_schemas: HashMap<TableName, SchemaRef>,
    /// The columns each produced table would get, in order.
    new_columns: BTreeMap<TableName, Vec<DesiredColumn>>,
    /// Transforms whose SQL would not plan against the new schemas.
    failures: Vec<Failure>,
    /// The lineage of each transform planned against the live tables.
    live_lineage: BTreeMap<TableName, QueryLineage>,
    // Renames by table (new -> old name), and as `ns.table.old` -> `ns.table.new` for the
    // transforms downstream of them.
    renamed: BTreeMap<TableName, BTreeMap<String, String>>,
    upstream: BTreeMap<String, String>,
}

impl<'a> Worlds<'a> {
    /// Both worlds holding only the live schemas of the tables read from outside the
    /// pipeline (which the run does not change).
    fn over_external_inputs(
        graph: &JobGraph,
        live: &'a HashMap<TableName, TableMetadata>,
    ) -> Result<Worlds<'a>> {
        let mut new_schemas: HashMap<TableName, SchemaRef> = HashMap::new();
        let mut live_schemas: HashMap<TableName, SchemaRef> = HashMap::new();
        for (_, table) in graph.external_inputs() {
            if let Some(m) = live.get(&table) {
                new_schemas.insert(table.clone(), arrow_of(m)?);
                live_schemas.insert(table.clone(), arrow_of(m)?);
            }
        }
        Ok(Worlds {
            live,
            new_schemas,
            live_schemas,
            new_columns: BTreeMap::new(),
            failures: Vec::new(),
            live_lineage: BTreeMap::new(),
            renamed: BTreeMap::new(),
            upstream: BTreeMap::new(),
        })
    }

    /// Adds the tables of every ingest (bronze and quarantine) to both worlds; returns the
    /// ingests with the columns the live tables already added.
    fn plan_ingests(&mut self, pipeline: &Pipeline) -> Result<Vec<IngestJob>> {
        let mut ingests = Vec::new();
        for job in &pipeline.ingests {
            let job = with_added_columns(job, self.live.get(&job.table));
            for (table, columns) in output_tables(&job) {
                let schema = Arc::new(schema_to_arrow_schema(&schema_of(&columns)?)?);
                let live_schema = self.live.get(&table).map(arrow_of).transpose()?;
                self.live_schemas
                    .insert(table.clone(), live_schema.unwrap_or_else(|| schema.clone()));
                self.new_schemas.insert(table.clone(), schema);
                self.new_columns.insert(table, columns);
            }
            ingests.push(job);
        }
        Ok(ingests)
    }

    /// Plans one transform in both worlds, after the jobs it reads.
    async fn plan_transform(&mut self, job: &TransformJob, parsed: &ParsedTransform) -> Result<()> {
        let live_schema = self.live.get(&job.table).map(arrow_of).transpose()?;
        let session = session_over(&self.new_schemas, &parsed.inputs)?;
        match logical_plan(&session, job, parsed).await {
            Ok(logical) => self.add_new(job, &logical)?,
            Err(e) => {
                let (line, message) = match e {
                    Error::Sql { line, message, .. } => (line, message),
                    other => (None, other.to_string()),
                };
                self.failures.push(Failure {
                    name: job.table.to_string(),
                    file: job.sql_file.clone(),
                    line,
                    message,
                });
                if let Some(s) = &live_schema {
                    self.new_schemas.insert(job.table.clone(), s.clone());
                }
            }
        }
        self.plan_live(job, parsed, live_schema).await
    }

    /// Adds what a transform planned in the new world would write (its table and quarantine
    /// table), and the columns it renames since its table's last run.
    fn add_new(&mut self, job: &TransformJob, logical: &LogicalPlan) -> Result<()> {
        let columns = output_columns(job, logical)?;
        self.new_schemas.insert(
            job.table.clone(),
            Arc::new(schema_to_arrow_schema(&schema_of(&columns)?)?),
        );
        let lineage = query_lineage(logical);
        if let Some(m) = self.live.get(&job.table) {
            let r = renames(&recorded_on(m), &record(&lineage), &self.upstream);
            for (new, old) in &r {
                self.upstream.insert(
                    format!("{}.{old}", job.table),
                    format!("{}.{new}", job.table),
                );
            }
            self.renamed.insert(job.table.clone(), r);
        }
        if !job.drops.is_empty() {
            let q = transform_quarantine_columns(&columns);
            let schema = Arc::new(schema_to_arrow_schema(&schema_of(&q)?)?);
            let q_table = job.table.quarantine();
            let live_q = self.live.get(&q_table).map(arrow_of).transpose()?;
            self.live_schemas
                .insert(q_table.clone(), live_q.unwrap_or_else(|| schema.clone()));
            self.new_schemas.insert(q_table.clone(), schema);
            self.new_columns.insert(q_table, q);
        }
        self.new_columns.insert(job.table.clone(), columns);
        Ok(())
    }

    /// Plans a transform against the live tables: its lineage today, and its table's live
    /// schema (or the one it would create, when it does not exist and its SQL plans).
    async fn plan_live(
        &mut self,
        job: &TransformJob,
        parsed: &ParsedTransform,
        live_schema: Option<SchemaRef>,
    ) -> Result<()> {
        let session = session_over(&self.live_schemas, &parsed.inputs)?;
        let planned_live = logical_plan(&session, job, parsed).await;
        if let Ok(logical) = &planned_live {
            self.live_lineage
                .insert(job.table.clone(), query_lineage(logical));
        }
        let schema = match (live_schema, planned_live) {
            (Some(s), _) => Some(s),
            (None, Ok(logical)) => Some(Arc::new(schema_to_arrow_schema(&schema_of(
                &output_columns(job, &logical)?,
            )?)?)),
            (None, Err(_)) => None,
        };
        if let Some(s) = schema {
            self.live_schemas.insert(job.table.clone(), s);
        }
        Ok(())
    }

    /// The plan of each produced table in the spec's order, and the names of those whose
    /// schema stays as it is.
    fn table_plans(
        &self,
        pipeline: &Pipeline,
        today: &PipelineLineage,
        reader_uses: &[BTreeSet<ColumnRef>],
    ) -> (Vec<TablePlan>, Vec<String>) {
        let mut tables = Vec::new();
        let mut unchanged = Vec::new();
        for (table, columns) in ordered(pipeline, &self.new_columns) {
            let Some(metadata) = self.live.get(&table) else {
                tables.push(TablePlan {
                    table: table.to_string(),
                    new: true,
                    changes: Vec::new(),
                });
                continue;
            };
            let none = BTreeMap::new();
            let kinds = diff(metadata, columns, self.renamed.get(&table).unwrap_or(&none));
            if kinds.is_empty() {
                unchanged.push(table.to_string());
                continue;
            }
            let changes = kinds
                .into_iter()
                .map(|(kind, breaking)| Change {
                    breaks: breaks_of_change(&table, &kind, breaking, today, pipeline, reader_uses),
                    kind,
                    breaking,
                })
                .collect();
            tables.push(TablePlan {
                table: table.to_string(),
                new: false,
                changes,
            });
        }
        (tables, unchanged)
    }
}

/// What each reader uses today (in the spec's order; nothing for one whose SQL does not plan
/// against `live_schemas`), and the readers whose SQL does not plan.
async fn reader_uses(
    pipeline: &Pipeline,
    live_schemas: &HashMap<TableName, SchemaRef>,
) -> (Vec<BTreeSet<ColumnRef>>, Vec<Failure>) {
    let mut unplanned_readers = Vec::new();
    let mut reader_uses: Vec<BTreeSet<ColumnRef>> = Vec::new();
    for reader in &pipeline.readers {
        let uses = match &reader.uses {
            ReaderUses::Columns(columns) => {
                columns.iter().filter_map(|c| ColumnRef::parse(c)).collect()
            }
            ReaderUses::Sql(sql) => match plan_reader(sql, live_schemas).await {
                Ok(lineage) => lineage.uses.into_iter().map(|u| u.column).collect(),
                Err(message) => {
                    unplanned_readers.push(Failure {
                        name: reader.name.clone(),
                        file: reader.origin.file.clone(),
                        line: Some(reader.origin.line),
                        message,
                    });
                    BTreeSet::new()
                }
            },
        };
        reader_uses.push(uses);
    }
    (reader_uses, unplanned_readers)
}

/// What a change to `table` breaks: for a breaking drop, rename or retype, everything that
/// uses the column today; nothing otherwise.
fn breaks_of_change(
    table: &TableName,
    kind: &ChangeKind,
    breaking: bool,
    today: &PipelineLineage,
    pipeline: &Pipeline,
    reader_uses: &[BTreeSet<ColumnRef>],
) -> Vec<Break> {
    match (kind, breaking) {
        (
            ChangeKind::Dropped { column }
            | ChangeKind::Renamed { from: column, .. }
            | ChangeKind::Retyped { column, .. },
            true,
        ) => breaks_of(&ColumnRef::new(table, column), today, pipeline, reader_uses),
        _ => Vec::new(),
    }
}

/// The produced tables in the spec's order (ingests, their quarantine tables, transforms).
fn ordered<'a>(
    pipeline: &Pipeline,
    columns: &'a BTreeMap<TableName, Vec<DesiredColumn>>,
) -> Vec<(TableName, &'a [DesiredColumn])> {
    let mut names = Vec::new();
    for job in &pipeline.ingests {
        names.push(job.table.clone());
        names.push(job.table.quarantine());
    }
    for job in &pipeline.transforms {
        names.push(job.table.clone());
        names.push(job.table.quarantine());
    }
    names
        .into_iter()
        .filter_map(|t| columns.get(&t).map(|c| (t, c.as_slice())))
        .collect()
}

/// Everything that uses `column`, or a column computed from it, today.
fn breaks_of(
    column: &ColumnRef,
    today: &PipelineLineage,
    pipeline: &Pipeline,
    reader_uses: &[BTreeSet<ColumnRef>],
) -> Vec<Break> {
    let mut affected = vec![column.clone()];
    affected.extend(today.all_downstream(column));
    let mut out = Vec::new();
    for a in &affected {
        if a != column {
            out.push(Break::Column {
                column: a.to_string(),
                from: column.to_string(),
            });
        }
        for (table, (sql, uses)) in &today.uses {
            let mine: Vec<_> = uses.iter().filter(|u| &u.column == a).collect();
            let mut lines: BTreeSet<usize> = mine.iter().filter_map(|u| u.line).collect();
            // The planner drops the position of some uses (a SELECT over an aggregate):
            // then every line naming the column counts.
            if mine.iter().any(|u| u.line.is_none()) {
                if let Some(job) = pipeline.transforms.iter().find(|j| &j.sql_file == sql) {
                    lines.extend(lines_naming(&job.sql, &a.column));
                }
            }
            if !mine.is_empty() {
                out.push(Break::Sql {
                    table: table.to_string(),
                    sql: sql.clone(),
                    lines: lines.into_iter().collect(),
                    column: a.to_string(),
                });
            }
        }
    }
    for (reader, uses) in pipeline.readers.iter().zip(reader_uses) {
        let columns: Vec<String> = affected
            .iter()
            .filter(|a| uses.contains(*a))
            .map(|a| a.to_string())
            .collect();
        if !columns.is_empty() {
            out.push(Break::Reader {
                name: reader.name.clone(),
                owner: reader.owner.clone(),
                reader_kind: reader.kind.clone(),
                declared: format!("{}:{}", reader.origin.file.display(), reader.origin.line),
                columns,
            });
        }
    }
    out
}

/// The lineage of a reader's SQL planned against `schemas`, or why it does not plan.
async fn plan_reader(
    sql: &str,
    schemas: &HashMap<TableName, SchemaRef>,
) -> std::result::Result<QueryLineage, String> {
    let admitted = admit(sql, Entry::Reader).map_err(|r| r.with_line())?;
    let session = session_over(schemas, admitted.tables()).map_err(|e| e.to_string())?;
    let logical = plan(&session.state(), admitted)
        .await
        .map_err(|r| r.with_line())?;
    Ok(query_lineage(&logical))
}
