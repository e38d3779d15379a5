//! `pipeline env diff PIPELINE NAME`: per table an environment changed, what differs from
//! `main`: schema changes by field id, row counts, and the rows that differ, over the columns
//! both have: added, removed and (paired by the table's key) changed, with the columns that
//! changed, per partition, with a few samples of each. Only the data files one side has and
//! the other has not are read (see `diff_scan`): a partition the environment did not touch
//! costs nothing.

use std::collections::BTreeMap;

use iceberg::spec::{Schema, TableMetadata};
use iceberg::table::Table;
use serde::Serialize;

use super::diff_rows::{row_diff, ChangedRow, PartitionCounts};
use super::diff_scan::{files_table, planned, split};
use crate::catalog::{env, PipelineCatalog};
use crate::commit::summary::total_records;
use crate::engine::{new_session, register_table};
use crate::error::{Error, Result};
use crate::spec::{Check, Pipeline, TableName};

/// One partition's differences.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionDiff {
    /// `field=value/...` (empty for an unpartitioned table).
    pub partition: String,
    #[serde(flatten)]
    pub counts: PartitionCounts,
}

/// What differs in one table between `main` and the environment's branch.
#[derive(Debug, Clone, Serialize)]
pub struct TableDiff {
    pub table: String,
    #[serde(with = "crate::id_text::option", default)]
    pub main_snapshot: Option<i64>,
    #[serde(with = "crate::id_text")]
    pub env_snapshot: i64,
    /// `added x long`, `dropped x`, `renamed x -> y`, `x: int -> long` (by field id).
    pub schema: Vec<String>,
    pub main_rows: u64,
    pub env_rows: u64,
    /// The columns rows are paired by (its `unique` expectation, or `--key`); empty: none,
    /// rows are only added or removed.
    pub key: Vec<String>,
    /// Rows the environment has that `main` has not (counted with duplicates; with a key:
    /// keys only the environment has), and samples.
    pub added: u64,
    pub sample_added: Vec<Vec<Option<String>>>,
    /// Rows `main` has that the environment has not.
    pub removed: u64,
    pub sample_removed: Vec<Vec<Option<String>>>,
    /// With a key: keys on both sides whose rows differ, per column how many differ there,
    /// and samples (the key, each changed column on main and in the environment).
    pub changed: u64,
    pub changed_columns: BTreeMap<String, u64>,
    pub sample_changed: Vec<ChangedRow>,
    /// The partitions where rows differ, with their counts.
    pub partitions: Vec<PartitionDiff>,
    /// Data files read (those one side alone has), and files both have (not read).
    pub files_read: usize,
    pub files_skipped: usize,
    /// The columns compared (those both sides have, by name).
    pub columns: Vec<String>,
}

impl TableDiff {
    /// Whether the two sides differ.
    pub fn differs(&self) -> bool {
        !self.schema.is_empty() || self.added > 0 || self.removed > 0 || self.changed > 0
    }
}

/// The key a table's rows are paired by: `keys` given for it (`--key`, as
/// `table:col+col` or, for every table, `col+col`), else its first `unique` expectation.
fn key_of(pipeline: &Pipeline, table: &TableName, keys: &[String]) -> Vec<String> {
    let split = |k: &str| k.split('+').map(|c| c.trim().to_string()).collect();
    let prefix = format!("{table}:");
    if let Some(k) = keys.iter().find_map(|k| k.strip_prefix(&prefix)) {
        return split(k);
    }
    if let Some(k) = keys.iter().find(|k| !k.contains(':')) {
        return split(k);
    }
    pipeline
        .expectations
        .iter()
        .filter(|e| &e.table == table)
        .find_map(|e| match &e.check {
            Check::Unique { columns } => Some(columns.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The differences of every table of `pipeline` whose branch `name` is not `main` (only
/// `tables` when given). Reads the tables; writes nothing.
pub async fn diff_env(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    tables: &[TableName],
    keys: &[String],
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
            let key = key_of(pipeline, &table, keys);
            out.push(table_diff(&table, loaded, head, key).await?);
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

/// The difference of one table between `main` and snapshot `head`, rows paired by `key`
/// (when both sides have its columns).
async fn table_diff(
    name: &TableName,
    table: Table,
    head: i64,
    key: Vec<String>,
) -> Result<TableDiff> {
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
    if let Some(missing) = key.iter().find(|k| !columns.contains(k)) {
        return Err(Error::Usage(format!(
            "--key: key column `{missing}` of table {name} is not a column both main and the environment have; columns: {}",
            columns.join(", ")
        )));
    }
    let mut diff = TableDiff {
        table: name.to_string(),
        main_snapshot: main,
        env_snapshot: head,
        schema: schema_changes(main_schema, env_schema),
        main_rows: main.map_or(0, |id| total_records(metadata.snapshot_by_id(id))),
        env_rows: total_records(metadata.snapshot_by_id(head)),
        key,
        added: 0,
        sample_added: Vec::new(),
        removed: 0,
        sample_removed: Vec::new(),
        changed: 0,
        changed_columns: BTreeMap::new(),
        sample_changed: Vec::new(),
        partitions: Vec::new(),
        files_read: 0,
        files_skipped: 0,
        columns: columns.clone(),
    };
    match main {
        Some(main) if !columns.is_empty() => {
            compare_rows(&mut diff, &table, main, head).await?;
        }
        _ => diff.added = diff.env_rows,
    }
    Ok(diff)
}

/// Fills in the rows that differ between snapshots `main` and `head`, reading only the
/// files one of them alone has.
async fn compare_rows(diff: &mut TableDiff, table: &Table, main: i64, head: i64) -> Result<()> {
    let columns = diff.columns.clone();
    let main_files = planned(table, main, &columns).await?;
    let env_files = planned(table, head, &columns).await?;
    let (main_only, env_only, shared) = split(main_files, env_files);
    diff.files_skipped = shared;
    diff.files_read = main_only.len() + env_only.len();
    if diff.files_read == 0 {
        return Ok(());
    }
    let session = new_session();
    let side = |n: &str| TableName::parse(&format!("diff.{n}")).expect("a table name");
    register_table(
        &session,
        &side("base"),
        files_table(table, main, &columns, main_only)?,
    )?;
    register_table(
        &session,
        &side("branch"),
        files_table(table, head, &columns, env_only)?,
    )?;
    let rows = row_diff(&session, &columns, &diff.key).await?;
    diff.added = rows.added;
    diff.removed = rows.removed;
    diff.changed = rows.changed;
    diff.sample_added = rows.sample_added;
    diff.sample_removed = rows.sample_removed;
    diff.sample_changed = rows.sample_changed;
    diff.changed_columns = rows.changed_columns;
    diff.partitions = rows
        .partitions
        .into_iter()
        .map(|(partition, counts)| PartitionDiff { partition, counts })
        .collect();
    Ok(())
}
