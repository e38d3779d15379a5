//! `--reload-changed`: a source file whose content changed since it was loaded has its old rows
//! removed in the same snapshot that adds its new rows, so the table holds the file's current
//! content once. Rows are removed copy-on-write: every live data file that holds any row of a
//! reloaded source file (found through the column bounds of the source-file column, then
//! checked row by row) is rewritten without those rows and deleted from the snapshot.

use std::collections::BTreeSet;

use arrow::array::{Array, BooleanArray, StringArray};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use iceberg::io::FileIO;
use iceberg::spec::{DataFile, PrimitiveLiteral, TableMetadata};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::commit::manifest_list;
use crate::error::{Error, Result};
use crate::spec::TableName;
use crate::write::TableWriter;

/// What removing the rows of some source files did to one table.
#[derive(Default)]
pub struct Removal {
    /// Data files (paths) that held such rows: deleted by the snapshot.
    pub deleted: BTreeSet<String>,
    /// Those files rewritten without the rows: added by the snapshot.
    pub rewritten: Vec<DataFile>,
    /// Rows removed.
    pub rows: u64,
}

/// Rewrites every live data file of `metadata`'s current snapshot that holds a row whose
/// `column` is one of `sources`, without those rows, into `writer`.
pub async fn remove_rows_of(
    table: &TableName,
    metadata: &TableMetadata,
    file_io: &FileIO,
    column: &str,
    sources: &BTreeSet<String>,
    mut writer: TableWriter,
) -> Result<Removal> {
    let mut removal = Removal::default();
    let Some(snapshot) = metadata.current_snapshot() else {
        return Ok(removal);
    };
    let field_id = metadata
        .current_schema()
        .field_by_name(column)
        .map(|f| f.id)
        .ok_or_else(|| Error::table_msg(table, format!("has no column `{column}`")))?;
    let list = manifest_list(file_io, metadata, snapshot).await?;
    for manifest_file in list.entries() {
        if !manifest_file.has_added_files() && !manifest_file.has_existing_files() {
            continue;
        }
        let manifest = manifest_file.load_manifest(file_io).await?;
        for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
            let file = entry.data_file();
            if !may_hold(file, field_id, sources) {
                continue;
            }
            // The file's bytes are read once; its rows are decoded twice (first only the
            // source-file column, to count; then, if any row goes, every column, streamed into
            // the writer) so no decoded file is held in memory.
            let bytes = file_io.new_input(file.file_path())?.read().await?;
            let mut removed = 0u64;
            for batch in batches(table, file, bytes.clone(), Some(column))? {
                let keep = keep_mask(&batch?, column, sources)?;
                removed += (keep.len() - keep.true_count()) as u64;
            }
            if removed == 0 {
                continue;
            }
            for batch in batches(table, file, bytes, None)? {
                let batch = batch?;
                let keep = keep_mask(&batch, column, sources)?;
                let kept = filter_record_batch(&batch, &keep)?;
                if kept.num_rows() > 0 {
                    writer.write(kept).await?;
                }
            }
            removal.rows += removed;
            removal.deleted.insert(file.file_path().to_string());
        }
    }
    removal.rewritten = writer.close().await?;
    Ok(removal)
}

/// The record batches of a Parquet data file held in `bytes`, with only `column` when given.
fn batches(
    table: &TableName,
    file: &DataFile,
    bytes: impl parquet::file::reader::ChunkReader + 'static,
    column: Option<&str>,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let unreadable = |e| Error::table(table, format!("cannot read {}", file.file_path()), e);
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(unreadable)?;
    let builder = match column {
        Some(name) => {
            let schema = builder.parquet_schema();
            let leaves: Vec<usize> = (0..schema.num_columns())
                .filter(|i| schema.column(*i).name() == name)
                .collect();
            let mask = parquet::arrow::ProjectionMask::leaves(schema, leaves);
            builder.with_projection(mask)
        }
        None => builder,
    };
    builder.build().map_err(unreadable)
}

/// True for the rows of `batch` whose `column` names none of `sources`.
fn keep_mask(
    batch: &RecordBatch,
    column: &str,
    sources: &BTreeSet<String>,
) -> Result<BooleanArray> {
    let values = cast(
        batch.column(batch.schema().index_of(column)?),
        &DataType::Utf8,
    )?;
    let values = values
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("cast to Utf8");
    Ok(values
        .iter()
        .map(|v| Some(!v.is_some_and(|s| sources.contains(s))))
        .collect())
}

/// False only when the file's bounds for the column prove it holds none of `sources`.
/// String bounds may be truncated prefixes, so the upper bound is compared with the same
/// number of leading bytes.
fn may_hold(file: &DataFile, field_id: i32, sources: &BTreeSet<String>) -> bool {
    let text = |d: Option<&iceberg::spec::Datum>| match d.map(|d| d.literal()) {
        Some(PrimitiveLiteral::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(lower), Some(upper)) = (
        text(file.lower_bounds().get(&field_id)),
        text(file.upper_bounds().get(&field_id)),
    ) else {
        return true;
    };
    sources.iter().any(|s| {
        let cut = s
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(s.len()))
            .take_while(|i| *i <= upper.len())
            .last()
            .unwrap_or(0);
        s.as_str() >= lower.as_str() && &s[..cut] <= upper.as_str()
    })
}
