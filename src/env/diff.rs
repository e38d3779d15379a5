//! `pipeline env diff PIPELINE NAME`: per table an environment changed, what differs from
//! `main`: schema changes by field id, row counts, and the rows only one side has (a
//! multiset difference over the columns both have), with a few samples of each.

use std::sync::Arc;

use futures::TryStreamExt;
use iceberg::spec::{Schema, TableMetadata};
use iceberg::table::Table;
use serde::Serialize;

use crate::catalog::{env, PipelineCatalog};
use crate::commit::summary::total_records;
use crate::engine::{admit, new_session, plan, register_table, table_provider, Entry};
use crate::error::{Error, Result};
use crate::output::batches_to_rows;
use crate::spec::{quote_ident, Pipeline, TableName};

/// Rows shown of each side.
const SAMPLES: usize = 5;

/// What differs in one table between `main` and the environment's branch.
#[derive(Debug, Clone, Serialize)]
pub struct TableDiff {
    pub table: String,
    pub main_snapshot: Option<i64>,
    pub env_snapshot: i64,
    /// `added x long`, `dropped x`, `renamed x -> y`, `x: int -> long` (by field id).
    pub schema: Vec<String>,
    pub main_rows: u64,
    pub env_rows: u64,
    /// Rows the environment has that `main` has not (counted with duplicates), and samples.
    pub added: u64,
    pub sample_added: Vec<Vec<Option<String>>>,
    /// Rows `main` has that the environment has not.
    pub removed: u64,
    pub sample_removed: Vec<Vec<Option<String>>>,
    /// The columns compared (those both sides have, by name).
    pub columns: Vec<String>,
}

impl TableDiff {
    /// Whether the two sides differ.
    pub fn differs(&self) -> bool {
        !self.schema.is_empty() || self.added > 0 || self.removed > 0
    }
}

/// The differences of every table of `pipeline` whose branch `name` is not `main` (only
/// `tables` when given). Reads the tables; writes nothing.
pub async fn diff_env(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    tables: &[TableName],
) -> Result<Vec<TableDiff>> {
    let mut out = Vec::new();
    let mut found = false;
    for table in pipeline.tables_written() {
        if !tables.is_empty() && !tables.contains(&table) {
            continue;
        }
        let Some(loaded) = catalog.load(&table).await? else {
            continue;
        };
        let branches = env::env_branches(loaded.metadata())?;
        let Some((_, head)) = branches.into_iter().find(|(n, _)| n == name) else {
            continue;
        };
        found = true;
        if loaded.metadata().current_snapshot_id() != Some(head) {
            out.push(table_diff(&table, loaded, head).await?);
        }
    }
    if !found {
        return Err(Error::Usage(format!(
            "no table of pipeline `{}` has environment `{name}` (`pipeline env list {}`)",
            pipeline.name, pipeline.name
        )));
    }
    Ok(out)
}

/// The schema of the snapshot `id` of `metadata` (the current one when it names none).
fn schema_at(metadata: &TableMetadata, id: Option<i64>) -> Option<&Schema> {
    let snapshot = metadata.snapshot_by_id(id?)?;
    let schema = match snapshot.schema_id() {
        Some(sid) => metadata.schema_by_id(sid)?,
        None => metadata.current_schema(),
    };
    Some(schema.as_ref())
}

/// Schema changes from `main` to `env`, by field id (top-level fields).
fn schema_changes(main: Option<&Schema>, env: &Schema) -> Vec<String> {
    let Some(main) = main else {
        return vec!["new table".into()];
    };
    let mut out = Vec::new();
    for field in env.as_struct().fields() {
        match main.field_by_id(field.id) {
            None => out.push(format!("added {} {}", field.name, field.field_type)),
            Some(old) if old.name != field.name => {
                out.push(format!("renamed {} -> {}", old.name, field.name))
            }
            Some(old) if old.field_type != field.field_type => out.push(format!(
                "{}: {} -> {}",
                field.name, old.field_type, field.field_type
            )),
            Some(_) => {}
        }
    }
    for field in main.as_struct().fields() {
        if env.field_by_id(field.id).is_none() {
            out.push(format!("dropped {}", field.name));
        }
    }
    out
}

/// The difference of one table between `main` and snapshot `head`.
async fn table_diff(name: &TableName, table: Table, head: i64) -> Result<TableDiff> {
    let metadata = table.metadata();
    let main = metadata.current_snapshot_id();
    let env_schema = schema_at(metadata, Some(head))
        .ok_or_else(|| Error::table_msg(name, format!("has no snapshot {head}")))?;
    let main_schema = schema_at(metadata, main);
    let columns: Vec<String> = env_schema
        .as_struct()
        .fields()
        .iter()
        .filter(|f| main_schema.is_some_and(|m| m.field_by_name(&f.name).is_some()))
        .map(|f| f.name.clone())
        .collect();
    let mut diff = TableDiff {
        table: name.to_string(),
        main_snapshot: main,
        env_snapshot: head,
        schema: schema_changes(main_schema, env_schema),
        main_rows: main.map_or(0, |id| total_records(metadata.snapshot_by_id(id))),
        env_rows: total_records(metadata.snapshot_by_id(head)),
        added: 0,
        sample_added: Vec::new(),
        removed: 0,
        sample_removed: Vec::new(),
        columns: columns.clone(),
    };
    let Some(main) = main else {
        diff.added = diff.env_rows;
        return Ok(diff);
    };
    let session = new_session();
    let side = |n: &str| TableName::parse(&format!("diff.{n}")).expect("a table name");
    let provider = |id| table_provider(table.clone(), Some(id));
    register_table(&session, &side("base"), provider(main).await?)?;
    register_table(&session, &side("branch"), provider(head).await?)?;
    let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let only = |a: &str, b: &str| {
        format!(
            "SELECT {0} FROM diff.{a} EXCEPT ALL SELECT {0} FROM diff.{b}",
            cols.join(", ")
        )
    };
    (diff.added, diff.sample_added) = side_rows(&session, &only("branch", "base")).await?;
    (diff.removed, diff.sample_removed) = side_rows(&session, &only("base", "branch")).await?;
    Ok(diff)
}

/// How many rows `sql` returns, and the first few: one pass over its stream, nothing kept
/// but the samples.
async fn side_rows(
    session: &datafusion::prelude::SessionContext,
    sql: &str,
) -> Result<(u64, Vec<Vec<Option<String>>>)> {
    let admitted = admit(sql, Entry::Query).map_err(|r| Error::Internal(r.message))?;
    let logical = plan(&session.state(), admitted)
        .await
        .map_err(|r| Error::Internal(r.message))?;
    let frame = session.execute_logical_plan(logical).await?;
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let mut stream = frame.execute_stream().await?;
    let (mut count, mut samples) = (0u64, Vec::new());
    while let Some(batch) = stream.try_next().await? {
        let wanted = SAMPLES.saturating_sub(samples.len()).min(batch.num_rows());
        if wanted > 0 {
            samples.extend(batches_to_rows(&schema, &[batch.slice(0, wanted)])?.rows);
        }
        count += batch.num_rows() as u64;
    }
    Ok((count, samples))
}
