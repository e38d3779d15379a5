//! Read-only views of the catalog: table list, table description, snapshot history and SQL
//! queries (with time travel to an older snapshot).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use futures::TryStreamExt;
use iceberg::spec::Snapshot;
use iceberg::table::Table;
use serde::Serialize;

use crate::catalog::PipelineCatalog;
use crate::commit::summary::{self, number, total_records};
use crate::commit::{load_manifests, manifest_list, partition_label};
use crate::engine::{
    admit, new_session, plan, register_table, table_provider, CountedTable, Entry, Refusal,
};
use crate::error::{Error, Result};
use crate::spec::{TableName, COMMENT_PROPERTY};

/// One column of a table's current schema.
#[derive(Debug, Serialize)]
pub struct ColumnInfo {
    pub id: i32,
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub required: bool,
    /// The field's Iceberg `doc`: the spec's description of the column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
}

/// One table in `pipeline tables`: its size at its current snapshot and the run that wrote
/// that snapshot; or, for a table whose metadata cannot be read, what is wrong with it.
#[derive(Debug, Serialize)]
pub struct TableSummary {
    pub table: String,
    pub rows: u64,
    pub files: u64,
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot: Option<i64>,
    /// The run that committed the current snapshot (`pipeline run-info` shows it).
    pub last_run: Option<String>,
    /// Why the table cannot be read (the others are listed all the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
}

/// Every table of the catalog with its rows, files, snapshot and last run, sorted. A table
/// whose metadata cannot be read is listed as damaged, with the error; the listing goes on.
pub async fn list(catalog: &PipelineCatalog) -> Result<Vec<TableSummary>> {
    let mut out = Vec::new();
    for name in catalog.list_tables().await? {
        out.push(match catalog.load_existing(&name).await {
            Ok(t) => {
                let current = t.metadata().current_snapshot();
                TableSummary {
                    table: name.to_string(),
                    rows: total_records(current),
                    files: summary::total(current, summary::TOTAL_DATA_FILES),
                    snapshot: current.map(|s| s.snapshot_id()),
                    last_run: current.and_then(|s| {
                        s.summary()
                            .additional_properties
                            .get(summary::RUN_ID)
                            .cloned()
                    }),
                    damaged: None,
                }
            }
            Err(e) => TableSummary {
                table: name.to_string(),
                rows: 0,
                files: 0,
                snapshot: None,
                last_run: None,
                damaged: Some(e.to_string()),
            },
        });
    }
    Ok(out)
}

/// A table the user named: a name that is not in the catalog is a mistake in the command
/// (exit 2), said plainly; a table that is there but cannot be read is an error naming it.
async fn named(catalog: &PipelineCatalog, table: &TableName) -> Result<iceberg::table::Table> {
    if table.namespace.eq_ignore_ascii_case("information_schema") {
        return Err(Error::Usage(format!(
            "{table}: there is no information_schema; the engine reads catalog tables only, and `pipeline tables` lists them (`pipeline describe TABLE` shows a table's columns)"
        )));
    }
    catalog.load(table).await?.ok_or_else(|| {
        Error::Usage(format!(
            "no table {table} in this catalog; `pipeline tables` lists the tables"
        ))
    })
}

/// `pipeline describe`.
#[derive(Debug, Serialize)]
pub struct TableInfo {
    pub table: String,
    /// The table's `comment` property: the spec's description (null when none).
    pub description: Option<String>,
    pub location: String,
    pub metadata_location: String,
    pub format_version: String,
    pub columns: Vec<ColumnInfo>,
    pub partition_spec: Vec<String>,
    #[serde(with = "crate::id_text::option", default)]
    pub current_snapshot_id: Option<i64>,
    pub rows: u64,
    pub data_files: u64,
    pub bytes: u64,
    /// Manifests of the current snapshot (merge-append keeps this small).
    pub manifests: u64,
    /// Snapshots kept in the table's metadata.
    pub snapshots: u64,
}

/// One snapshot in `pipeline history`.
#[derive(Debug, Serialize)]
pub struct SnapshotInfo {
    #[serde(with = "crate::id_text")]
    pub snapshot_id: i64,
    #[serde(with = "crate::id_text::option", default)]
    pub parent_id: Option<i64>,
    pub committed_at: String,
    pub operation: String,
    pub added_records: u64,
    pub deleted_records: u64,
    pub total_records: u64,
    pub added_files: u64,
    pub deleted_files: u64,
    pub run_id: Option<String>,
    pub current: bool,
}

/// Describes a table at its current snapshot.
pub async fn describe(catalog: &PipelineCatalog, table: &TableName) -> Result<TableInfo> {
    let t = named(catalog, table).await?;
    let m = t.metadata();
    let schema = m.current_schema();
    let columns = schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| ColumnInfo {
            id: f.id,
            name: f.name.clone(),
            ty: f.field_type.to_string(),
            required: f.required,
            doc: f.doc.clone(),
        })
        .collect();
    let partition_spec = m
        .default_partition_spec()
        .fields()
        .iter()
        .map(|f| {
            let source = schema
                .field_by_id(f.source_id)
                .map(|s| s.name.clone())
                .unwrap_or_else(|| format!("#{}", f.source_id));
            format!("{}({source}) as {}", f.transform, f.name)
        })
        .collect();
    let current = m.current_snapshot();
    let summary = current.map(|s| s.summary());
    let manifests = match current {
        Some(s) => manifest_list(t.file_io(), m, s).await?.entries().len() as u64,
        None => 0,
    };
    Ok(TableInfo {
        table: table.to_string(),
        description: m.properties().get(COMMENT_PROPERTY).cloned(),
        location: m.location().to_string(),
        metadata_location: t.metadata_location().unwrap_or_default().to_string(),
        format_version: m.format_version().to_string(),
        columns,
        partition_spec,
        current_snapshot_id: current.map(|s| s.snapshot_id()),
        rows: summary.map_or(0, |s| number(s, summary::TOTAL_RECORDS)),
        data_files: summary.map_or(0, |s| number(s, summary::TOTAL_DATA_FILES)),
        bytes: summary.map_or(0, |s| number(s, summary::TOTAL_FILES_SIZE)),
        manifests,
        snapshots: m.snapshots().count() as u64,
    })
}

/// Every snapshot of a table, oldest first.
pub async fn history(catalog: &PipelineCatalog, table: &TableName) -> Result<Vec<SnapshotInfo>> {
    let t = named(catalog, table).await?;
    let m = t.metadata();
    let current = m.current_snapshot_id();
    let mut snapshots: Vec<_> = m.snapshots().collect();
    snapshots.sort_by_key(|s| (s.sequence_number(), s.timestamp_ms()));
    Ok(snapshots
        .into_iter()
        .map(|s| {
            let summary = s.summary();
            SnapshotInfo {
                snapshot_id: s.snapshot_id(),
                parent_id: s.parent_snapshot_id(),
                committed_at: s
                    .timestamp()
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                    .unwrap_or_default(),
                operation: summary.operation.as_str().to_string(),
                added_records: number(summary, summary::ADDED_RECORDS),
                deleted_records: number(summary, summary::DELETED_RECORDS),
                total_records: number(summary, summary::TOTAL_RECORDS),
                added_files: number(summary, summary::ADDED_DATA_FILES),
                deleted_files: number(summary, summary::DELETED_DATA_FILES),
                run_id: summary.additional_properties.get(summary::RUN_ID).cloned(),
                current: Some(s.snapshot_id()) == current,
            }
        })
        .collect())
}

/// Runs a read-only SELECT over catalog tables. With `as_of`, every table the query reads that
/// has that snapshot is read as of it; at least one must have it.
pub async fn query(
    catalog: &PipelineCatalog,
    sql: &str,
    as_of: Option<i64>,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let (schema, stream) = query_stream(catalog, sql, as_of).await?;
    let batches = stream.try_collect().await?;
    Ok((schema, batches))
}

/// [`query`] as a stream of record batches, for callers that stop early (a row cap). The
/// statement passes the SQL gate (`engine::admit`, `Entry::Query`): one SELECT (or `EXPLAIN`
/// of one), nested within the limits, its plan verified to hold no DDL, DML or other
/// statement; only the catalog tables it names are registered: no file or URL tables.
pub async fn query_stream(
    catalog: &PipelineCatalog,
    sql: &str,
    as_of: Option<i64>,
) -> Result<(SchemaRef, SendableRecordBatchStream)> {
    let usage = |m: String| Error::Usage(m);
    let refused = |r: Refusal| usage(format!("query: {}", r.with_line()));
    let admitted = admit(sql, Entry::Query).map_err(refused)?;
    let session = new_session();
    let mut matched_as_of = false;
    for name in admitted.tables() {
        let table = named(catalog, name).await?;
        let snapshot = match as_of {
            Some(id) => table.metadata().snapshot_by_id(id).cloned(),
            None => None,
        };
        let rows = total_records(snapshot.as_ref().or(table.metadata().current_snapshot()));
        let snapshot_id = snapshot.map(|s| s.snapshot_id());
        matched_as_of |= snapshot_id.is_some();
        let provider = table_provider(table, snapshot_id)
            .await
            .map_err(|e| Error::table(name, "cannot read table", e))?;
        register_table(&session, name, Arc::new(CountedTable::new(provider, rows)))?;
    }
    if let (Some(id), false) = (as_of, matched_as_of) {
        return Err(usage(format!(
            "--as-of {id}: no table in the query has that snapshot; `pipeline history <table>` lists snapshot ids"
        )));
    }
    let plan = plan(&session.state(), admitted).await.map_err(refused)?;
    let df = session.execute_logical_plan(plan).await?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let stream = df.execute_stream().await?;
    Ok((schema, stream))
}

/// One live data file in `pipeline files`.
#[derive(Debug, Serialize)]
pub struct FileInfo {
    pub path: String,
    /// `field=value` pairs of the file's partition, e.g. `order_date_month=2026-02`.
    pub partition: String,
    pub records: u64,
    pub bytes: u64,
    /// The snapshot that added the file.
    #[serde(with = "crate::id_text::option", default)]
    pub added_snapshot_id: Option<i64>,
}

/// The live data files of a table's current snapshot (or of `snapshot_id`), by path.
pub async fn files(
    catalog: &PipelineCatalog,
    table: &TableName,
    snapshot_id: Option<i64>,
) -> Result<Vec<FileInfo>> {
    let t = named(catalog, table).await?;
    let m = t.metadata();
    let snapshot = match snapshot_id {
        Some(id) => Some(m.snapshot_by_id(id).ok_or_else(|| {
            Error::table_msg(
                table,
                format!("has no snapshot {id}; `pipeline history {table}` lists them"),
            )
        })?),
        None => m.current_snapshot(),
    };
    match snapshot {
        Some(snapshot) => snapshot_files(&t, snapshot).await,
        None => Ok(Vec::new()),
    }
}

/// The live data files of `snapshot` of `table`, by path, each with its partition (read from
/// the snapshot's manifests, several at a time).
pub async fn snapshot_files(table: &Table, snapshot: &Snapshot) -> Result<Vec<FileInfo>> {
    let m = table.metadata();
    let list = manifest_list(table.file_io(), m, snapshot).await?;
    let manifests = load_manifests(table.file_io(), list.entries().iter().cloned()).await?;
    let mut out = Vec::new();
    for (manifest_file, manifest) in &manifests {
        let spec = m.partition_spec_by_id(manifest_file.partition_spec_id);
        for e in manifest.entries().iter().filter(|e| e.is_alive()) {
            let file = e.data_file();
            out.push(FileInfo {
                path: file.file_path().to_string(),
                partition: spec
                    .map(|spec| partition_label(spec, file.partition()))
                    .unwrap_or_default(),
                records: file.record_count(),
                bytes: file.file_size_in_bytes(),
                added_snapshot_id: e.snapshot_id(),
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}
