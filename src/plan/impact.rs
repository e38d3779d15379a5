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

use super::graph::{job_graph, JobId};
use crate::catalog::PipelineCatalog;
use crate::commit::{schema_of, type_change, DesiredColumn, TypeChange};
use crate::engine::{admit, lines_naming, plan, session_over, Entry};
use crate::error::{Error, Result};
use crate::ingest::{output_tables, with_added_columns};
use crate::lineage::{
    pipeline_lineage, query_lineage, record, recorded_on, renames, PipelineLineage, QueryLineage,
};
use crate::spec::{ColumnRef, Pipeline, ReaderUses, TableName};
use crate::transform::{logical_plan, output_columns, transform_quarantine_columns};

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

#[derive(Debug, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum ChangeKind {
    Added {
        column: String,
        #[serde(rename = "type")]
        ty: String,
    },
    Dropped {
        column: String,
    },
    Renamed {
        from: String,
        to: String,
    },
    Widened {
        column: String,
        from: String,
        to: String,
    },
    Retyped {
        column: String,
        from: String,
        to: String,
    },
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

    let mut live: HashMap<TableName, TableMetadata> = HashMap::new();
    let mut wanted: BTreeSet<TableName> = graph.producers.keys().cloned().collect();
    wanted.extend(graph.external_inputs().into_iter().map(|(_, t)| t));
    for table in &wanted {
        if let Some(t) = catalog.load(table).await? {
            live.insert(table.clone(), t.metadata().clone());
        }
    }
    let arrow_of = |m: &TableMetadata| -> Result<SchemaRef> {
        Ok(Arc::new(schema_to_arrow_schema(m.current_schema())?))
    };

    let mut new_schemas: HashMap<TableName, SchemaRef> = HashMap::new();
    let mut live_schemas: HashMap<TableName, SchemaRef> = HashMap::new();
    for (_, table) in graph.external_inputs() {
        if let Some(m) = live.get(&table) {
            new_schemas.insert(table.clone(), arrow_of(m)?);
            live_schemas.insert(table.clone(), arrow_of(m)?);
        }
    }
    // The columns each produced table would get, in order.
    let mut new_columns: BTreeMap<TableName, Vec<DesiredColumn>> = BTreeMap::new();
    let mut ingests = Vec::new();
    for job in &pipeline.ingests {
        let job = with_added_columns(job, live.get(&job.table));
        for (table, columns) in output_tables(&job) {
            let schema = Arc::new(schema_to_arrow_schema(&schema_of(&columns)?)?);
            let live_schema = live.get(&table).map(arrow_of).transpose()?;
            live_schemas.insert(table.clone(), live_schema.unwrap_or_else(|| schema.clone()));
            new_schemas.insert(table.clone(), schema);
            new_columns.insert(table, columns);
        }
        ingests.push(job);
    }

    let mut failures = Vec::new();
    let mut live_lineage: BTreeMap<TableName, QueryLineage> = BTreeMap::new();
    // Renames by table (new -> old name), and as `ns.table.old` -> `ns.table.new` for the
    // transforms downstream of them.
    let mut renamed: BTreeMap<TableName, BTreeMap<String, String>> = BTreeMap::new();
    let mut upstream: BTreeMap<String, String> = BTreeMap::new();
    for job_id in &graph.order {
        let JobId::Transform(i) = *job_id else {
            continue;
        };
        let job = &pipeline.transforms[i];
        let parsed = &graph.transforms[i];
        let live_schema = live.get(&job.table).map(arrow_of).transpose()?;
        let session = session_over(&new_schemas, &parsed.inputs)?;
        match logical_plan(&session, job, parsed).await {
            Ok(logical) => {
                let columns = output_columns(job, &logical)?;
                new_schemas.insert(
                    job.table.clone(),
                    Arc::new(schema_to_arrow_schema(&schema_of(&columns)?)?),
                );
                let lineage = query_lineage(&logical);
                if let Some(m) = live.get(&job.table) {
                    let r = renames(&recorded_on(m), &record(&lineage), &upstream);
                    for (new, old) in &r {
                        upstream.insert(
                            format!("{}.{old}", job.table),
                            format!("{}.{new}", job.table),
                        );
                    }
                    renamed.insert(job.table.clone(), r);
                }
                if !job.drops.is_empty() {
                    let q = transform_quarantine_columns(&columns);
                    let schema = Arc::new(schema_to_arrow_schema(&schema_of(&q)?)?);
                    let q_table = job.table.quarantine();
                    let live_q = live.get(&q_table).map(arrow_of).transpose()?;
                    live_schemas.insert(q_table.clone(), live_q.unwrap_or_else(|| schema.clone()));
                    new_schemas.insert(q_table.clone(), schema);
                    new_columns.insert(q_table, q);
                }
                new_columns.insert(job.table.clone(), columns);
            }
            Err(e) => {
                let (line, message) = match e {
                    Error::Sql { line, message, .. } => (line, message),
                    other => (None, other.to_string()),
                };
                failures.push(Failure {
                    name: job.table.to_string(),
                    file: job.sql_file.clone(),
                    line,
                    message,
                });
                if let Some(s) = &live_schema {
                    new_schemas.insert(job.table.clone(), s.clone());
                }
            }
        }
        let session = session_over(&live_schemas, &parsed.inputs)?;
        let planned_live = logical_plan(&session, job, parsed).await;
        if let Ok(logical) = &planned_live {
            live_lineage.insert(job.table.clone(), query_lineage(logical));
        }
        let schema = match (live_schema, planned_live) {
            (Some(s), _) => Some(s),
            (None, Ok(logical)) => Some(Arc::new(schema_to_arrow_schema(&schema_of(
                &output_columns(job, &logical)?,
            )?)?)),
            (None, Err(_)) => None,
        };
        if let Some(s) = schema {
            live_schemas.insert(job.table.clone(), s);
        }
    }
    let today = pipeline_lineage(pipeline, &ingests, &live_lineage);

    // What each reader uses today.
    let mut unplanned_readers = Vec::new();
    let mut reader_uses: Vec<BTreeSet<ColumnRef>> = Vec::new();
    for reader in &pipeline.readers {
        let uses = match &reader.uses {
            ReaderUses::Columns(columns) => {
                columns.iter().filter_map(|c| ColumnRef::parse(c)).collect()
            }
            ReaderUses::Sql(sql) => match plan_reader(sql, &live_schemas).await {
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

    let mut tables = Vec::new();
    let mut unchanged = Vec::new();
    for (table, columns) in ordered(pipeline, &new_columns) {
        let Some(metadata) = live.get(&table) else {
            tables.push(TablePlan {
                table: table.to_string(),
                new: true,
                changes: Vec::new(),
            });
            continue;
        };
        let none = BTreeMap::new();
        let kinds = diff(metadata, columns, renamed.get(&table).unwrap_or(&none));
        if kinds.is_empty() {
            unchanged.push(table.to_string());
            continue;
        }
        let changes = kinds
            .into_iter()
            .map(|(kind, breaking)| {
                let breaks = match (&kind, breaking) {
                    (
                        ChangeKind::Dropped { column }
                        | ChangeKind::Renamed { from: column, .. }
                        | ChangeKind::Retyped { column, .. },
                        true,
                    ) => breaks_of(
                        &ColumnRef::new(&table, column),
                        &today,
                        pipeline,
                        &reader_uses,
                    ),
                    _ => Vec::new(),
                };
                Change {
                    kind,
                    breaking,
                    breaks,
                }
            })
            .collect();
        tables.push(TablePlan {
            table: table.to_string(),
            new: false,
            changes,
        });
    }
    Ok(SchemaPlan {
        pipeline: pipeline.name.clone(),
        tables,
        unchanged,
        failures,
        unplanned_readers,
    })
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

/// Column changes from the live schema to `columns` (each with whether it breaks readers).
fn diff(
    live: &TableMetadata,
    columns: &[DesiredColumn],
    renamed: &BTreeMap<String, String>,
) -> Vec<(ChangeKind, bool)> {
    let schema = live.current_schema();
    let old: Vec<(String, iceberg::spec::Type)> = schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| (f.name.clone(), f.field_type.as_ref().clone()))
        .collect();
    // A rename whose type cannot be read as the new one is a drop and an add (new field id).
    let renamed: BTreeMap<String, String> = renamed
        .iter()
        .filter(|(new, old)| {
            let old_ty = schema.field_by_name(old).map(|f| f.field_type.as_ref().clone());
            let new_ty = columns.iter().find(|c| &c.name == *new).map(|c| &c.ty);
            matches!((old_ty, new_ty), (Some(o), Some(n)) if type_change(&o, n) != TypeChange::Incompatible)
        })
        .map(|(n, o)| (n.clone(), o.clone()))
        .collect();
    let renamed = &renamed;
    let renamed_from: BTreeSet<&String> = renamed.values().collect();
    let mut out = Vec::new();
    for (name, ty) in &old {
        let now = columns.iter().find(|c| &c.name == name);
        match now {
            None if renamed_from.contains(name) => {
                let to = renamed
                    .iter()
                    .find(|(_, from)| *from == name)
                    .map(|(to, _)| to.clone())
                    .unwrap_or_default();
                out.push((
                    ChangeKind::Renamed {
                        from: name.clone(),
                        to,
                    },
                    true,
                ));
            }
            None => out.push((
                ChangeKind::Dropped {
                    column: name.clone(),
                },
                true,
            )),
            Some(c) => match type_change(ty, &c.ty) {
                TypeChange::Same => {}
                TypeChange::Widen => out.push((
                    ChangeKind::Widened {
                        column: name.clone(),
                        from: ty.to_string(),
                        to: c.ty.to_string(),
                    },
                    false,
                )),
                TypeChange::Incompatible => out.push((
                    ChangeKind::Retyped {
                        column: name.clone(),
                        from: ty.to_string(),
                        to: c.ty.to_string(),
                    },
                    true,
                )),
            },
        }
    }
    for c in columns {
        if !old.iter().any(|(n, _)| *n == c.name) && !renamed.contains_key(&c.name) {
            out.push((
                ChangeKind::Added {
                    column: c.name.clone(),
                    ty: c.ty.to_string(),
                },
                false,
            ));
        }
    }
    out
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
