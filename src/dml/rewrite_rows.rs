//! Copy-on-write rewriting of the rows a matcher picks, the one mechanism under `pipeline sql`
//! (a SQL condition) and `pipeline erase` (a SQL condition, or the fields of quarantined raw
//! lines). Every live data file Iceberg cannot rule out (by partition values and column
//! bounds, from an optional pruning expression) is read whole; a file with a match is
//! rewritten (without those rows, or with `edit`'s new values) and replaced in one `overwrite`
//! snapshot; files without a match stay as they are. No delete files are written, so every
//! Iceberg reader sees the change. The snapshot keeps the table's lineage and incremental keys.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::Int64Type;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::PhysicalExpr;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{schema_to_arrow_schema, ArrowReaderBuilder};
use iceberg::scan::FileScanTask;
use iceberg_datafusion::physical_plan::convert_filters_to_predicate;

use crate::catalog::PipelineCatalog;
use crate::commit::summary::{self, total_records, CARRIED_BY_REPLACE, LOADED_FILES};
use crate::commit::{stage_snapshot, StagedTable, TableTarget, WriteMode};
use crate::engine::expression;
use crate::error::{Error, Result};
use crate::records::TableRecord;
use crate::spec::{TableName, DEFAULT_TARGET_FILE_SIZE};
use crate::write::TableWriter;

/// Picks rows of a batch: true where the row is to be removed or changed (NULL is no match).
/// It is given the table's [`Rewrite::columns`] only, in that order.
pub(crate) type Matcher<'m> = dyn FnMut(&RecordBatch) -> Result<BooleanArray> + Send + 'm;

/// What happens to the rows the matcher picks.
pub(crate) enum Edit {
    Delete,
    /// Column index and its new value's expression (over the row's columns).
    Update(Vec<(usize, Arc<dyn PhysicalExpr>)>),
}

/// The rewrite of one table.
pub(crate) struct Rewrite<'a> {
    pub catalog: &'a PipelineCatalog,
    pub pipeline: &'a str,
    pub run_id: &'a str,
    pub table: &'a TableName,
    /// Rows outside it cannot match: Iceberg skips files by partition values and bounds.
    pub prune: Option<Expr>,
    /// The columns the matcher reads (by name, in the order it expects them): the first pass
    /// over the candidate files reads only these (and the source columns).
    pub columns: Vec<String>,
    pub edit: Edit,
    /// `delete`, `update` or `erase`: the snapshot's job and the new files' name prefix.
    pub job: &'static str,
    pub plan_only: bool,
    /// Source files (and their new ledger entries) rewritten with the table: recorded in the
    /// snapshot's file ledger so the next run takes them as loaded, not changed.
    pub ledger: Vec<crate::commit::ledger::LoadedFile>,
}

/// What a rewrite found and (unless planned only, or nothing matched) staged.
pub struct RewrittenTable {
    pub rows: u64,
    pub files_rewritten: u64,
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
    /// Partitions of the files rewritten (`order_date_month=2026-01`), for unpartitioned
    /// tables none.
    pub partitions: BTreeSet<String>,
    /// The landing files the matched rows came from, with their line numbers (bronze tables,
    /// by `_source_file`/`_source_line`; ingest quarantine tables, by `source_file`/`line`).
    pub sources: BTreeMap<String, BTreeSet<u64>>,
    pub staged: Option<(StagedTable, TableRecord)>,
}

/// Columns naming where a row was loaded from, when the table has them.
const SOURCE_COLUMNS: [(&str, &str); 2] =
    [("_source_file", "_source_line"), ("source_file", "line")];

/// `batch` with only the columns `names`, in that order.
fn project(batch: &RecordBatch, names: &[String]) -> Result<RecordBatch> {
    let schema = batch.schema();
    let indices = names
        .iter()
        .map(|n| schema.index_of(n))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(batch.project(&indices)?)
}

/// Records the source file and line of every matched row of `batch` into `sources`.
fn note_sources(
    batch: &RecordBatch,
    hit: &BooleanArray,
    sources: &mut BTreeMap<String, BTreeSet<u64>>,
) {
    let Some((files, lines)) = SOURCE_COLUMNS.iter().find_map(|(f, l)| {
        Some((
            batch.column_by_name(f)?.as_string_opt::<i32>()?,
            batch.column_by_name(l)?.as_primitive_opt::<Int64Type>()?,
        ))
    }) else {
        return;
    };
    for i in 0..batch.num_rows() {
        if hit.value(i) && files.is_valid(i) && lines.is_valid(i) {
            sources
                .entry(files.value(i).to_string())
                .or_default()
                .insert(lines.value(i) as u64);
        }
    }
}

impl Rewrite<'_> {
    /// Finds the matching rows and, unless `plan_only`, rewrites the files that hold them and
    /// stages the snapshot; nothing is published. The caller holds the pipeline's run lock.
    pub async fn stage(self, matcher: &mut Matcher<'_>) -> Result<RewrittenTable> {
        let table = self.table;
        let loaded = self.catalog.load_existing(table).await?;
        let metadata = loaded.metadata();
        let mut out = RewrittenTable {
            rows: 0,
            files_rewritten: 0,
            files_in_table: summary::total(metadata.current_snapshot(), summary::TOTAL_DATA_FILES),
            bytes_rewritten: 0,
            partitions: BTreeSet::new(),
            sources: BTreeMap::new(),
            staged: None,
        };
        let Some(before) = metadata.current_snapshot_id() else {
            return Ok(out);
        };
        let arrow_schema = Arc::new(schema_to_arrow_schema(metadata.current_schema())?);
        // What the first pass reads: the matcher's columns and the source columns.
        let schema = metadata.current_schema();
        let mut first_pass: Vec<i32> = Vec::new();
        let sourced = SOURCE_COLUMNS
            .iter()
            .find(|(f, l)| schema.field_by_name(f).is_some() && schema.field_by_name(l).is_some())
            .map(|(f, l)| [f.to_string(), l.to_string()]);
        for name in self.columns.iter().chain(sourced.iter().flatten()) {
            let field = schema
                .field_by_name(name)
                .ok_or_else(|| Error::table_msg(table, format!("has no column `{name}`")))?;
            if !first_pass.contains(&field.id) {
                first_pass.push(field.id);
            }
        }

        // Candidate files: those Iceberg cannot rule out by partition values and bounds.
        let mut scan = loaded.scan().select_all();
        if let Some(p) = self
            .prune
            .as_ref()
            .and_then(|e| convert_filters_to_predicate(std::slice::from_ref(e)))
        {
            scan = scan.with_filter(p);
        }
        let mut candidates: HashMap<String, FileScanTask> = HashMap::new();
        let mut planned = scan.build()?.plan_files().await?;
        while let Some(mut task) = planned.try_next().await? {
            if !task.deletes.is_empty() {
                return Err(Error::table_msg(
                    table,
                    format!(
                        "{} has delete files (written by another engine); rewrite it with that engine first",
                        task.data_file_path
                    ),
                ));
            }
            // The whole file, every row: the reader must not filter by the predicate itself.
            task.predicate = None;
            task.start = 0;
            task.length = task.file_size_in_bytes;
            candidates
                .entry(task.data_file_path.clone())
                .or_insert(task);
        }
        let file_io = loaded.file_io().clone();
        let reader = || {
            Ok::<_, Error>(
                ArrowReaderBuilder::new(file_io.clone(), iceberg::Runtime::try_current()?)
                    .with_data_file_concurrency_limit(1)
                    .build(),
            )
        };
        let mut writer = TableWriter::new(
            &table.to_string(),
            metadata,
            file_io.clone(),
            DEFAULT_TARGET_FILE_SIZE,
            &format!("{}-{}", self.run_id, self.job),
        )
        .await?;
        let mut removed_files = BTreeSet::new();
        let mut paths: Vec<&String> = candidates.keys().collect();
        paths.sort();
        for path in paths {
            let task = &candidates[path];
            // First pass: count the matches; most files have none and are left alone.
            let mut hits = 0u64;
            let mut narrow = task.clone();
            narrow.project_field_ids = first_pass.clone();
            let mut batches = reader()?
                .read(futures::stream::iter([Ok(narrow)]).boxed())?
                .stream();
            while let Some(batch) = batches.try_next().await? {
                let hit = matcher(&project(&batch, &self.columns)?)?;
                hits += hit.true_count() as u64;
                note_sources(&batch, &hit, &mut out.sources);
            }
            if hits == 0 {
                continue;
            }
            out.rows += hits;
            out.bytes_rewritten += task.file_size_in_bytes;
            if let Some(partition) = &task.partition {
                // The file's own spec when the scan says it, else the table's (this engine
                // never changes a table's partitioning under its files).
                let spec = task
                    .partition_spec
                    .as_deref()
                    .unwrap_or(metadata.default_partition_spec());
                if !spec.fields().is_empty() {
                    out.partitions
                        .insert(crate::commit::partition_label(spec, partition));
                }
            }
            removed_files.insert(path.clone());
            if self.plan_only {
                continue;
            }
            let mut batches = reader()?
                .read(futures::stream::iter([Ok(task.clone())]).boxed())?
                .stream();
            while let Some(batch) = batches.try_next().await? {
                let hit = matcher(&project(&batch, &self.columns)?)?;
                let kept = match &self.edit {
                    Edit::Delete => filter_record_batch(&batch, &arrow::compute::not(&hit)?)?,
                    Edit::Update(assignments) => {
                        let mut columns = batch.columns().to_vec();
                        for (index, expr) in assignments {
                            let new = expr.evaluate(&batch)?.into_array(batch.num_rows())?;
                            let new = arrow::compute::cast(&new, columns[*index].data_type())
                                .map_err(|e| {
                                    Error::Usage(format!(
                                        "SET {}: the new values are not a {}: {e}",
                                        arrow_schema.field(*index).name(),
                                        columns[*index].data_type()
                                    ))
                                })?;
                            columns[*index] =
                                arrow::compute::kernels::zip::zip(&hit, &new, &columns[*index])?;
                        }
                        RecordBatch::try_new(batch.schema(), columns)?
                    }
                };
                if kept.num_rows() > 0 {
                    writer.write(kept).await?;
                }
            }
        }
        let rewritten = writer.close().await?;
        out.files_rewritten = removed_files.len() as u64;
        // A table with no matching row still records the rewritten source files in its
        // ledger (their records were all quarantined): an append of no files.
        if self.plan_only || (removed_files.is_empty() && self.ledger.is_empty()) {
            return Ok(out);
        }
        let mut properties: HashMap<String, String> = metadata
            .current_snapshot()
            .map(|s| {
                s.summary()
                    .additional_properties
                    .iter()
                    .filter(|(k, _)| CARRIED_BY_REPLACE.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        properties.insert(summary::PIPELINE.into(), self.pipeline.to_string());
        properties.insert(summary::RUN_ID.into(), self.run_id.to_string());
        properties.insert(summary::JOB.into(), self.job.into());
        if !self.ledger.is_empty() {
            let text = serde_json::to_string(&self.ledger)
                .map_err(|e| Error::Internal(format!("cannot encode the file ledger: {e}")))?;
            properties.insert(LOADED_FILES.into(), text);
        }
        let location = loaded.metadata_location_result()?;
        let target = TableTarget::unchanged(table, metadata, location)?;
        let (mode, operation) = if removed_files.is_empty() {
            (WriteMode::Append, "ledger")
        } else {
            (WriteMode::Rewrite(removed_files), "rewrite")
        };
        let staged = stage_snapshot(target, rewritten, &file_io, properties, mode).await?;
        let entry = TableRecord {
            table: table.to_string(),
            operation: operation.into(),
            partitions: None,
            snapshot_before: Some(before),
            snapshot_after: Some(staged.snapshot_id),
            rows: total_records(staged.metadata.snapshot_by_id(staged.snapshot_id)),
            expired: None,
            dropped_metadata: None,
        };
        out.staged = Some((staged, entry));
        Ok(out)
    }
}

/// A SQL condition over a table's columns, planned against `schema`: the columns it reads
/// (sorted; the matcher is given these only), the expression (for pruning) and its physical
/// form over those columns (for matching).
pub(crate) fn compile_condition(
    schema: &arrow::datatypes::Schema,
    condition: &str,
) -> Result<(Vec<String>, Expr, Arc<dyn PhysicalExpr>)> {
    let usage =
        |e: datafusion::error::DataFusionError| Error::Usage(format!("WHERE {condition}: {e}"));
    let df_schema = datafusion::common::DFSchema::try_from(schema.clone())?;
    let session = datafusion::prelude::SessionContext::new();
    let expr = expression(&session, condition, &df_schema)
        .map_err(|r| Error::Usage(format!("WHERE {condition}: {r}")))?;
    let mut columns: Vec<String> = expr.column_refs().iter().map(|c| c.name.clone()).collect();
    columns.sort();
    columns.dedup();
    let fields = columns
        .iter()
        .map(|c| schema.field_with_name(c).cloned())
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let narrow = datafusion::common::DFSchema::try_from(arrow::datatypes::Schema::new(fields))?;
    let physical = session
        .create_physical_expr(expr.clone(), &narrow)
        .map_err(usage)?;
    Ok((columns, expr, physical))
}

/// True where `physical` (a condition) is true on the rows of `batch`; NULL counts as false.
pub(crate) fn true_rows(
    physical: &dyn PhysicalExpr,
    batch: &RecordBatch,
    condition: &str,
) -> Result<BooleanArray> {
    let value = physical.evaluate(batch)?.into_array(batch.num_rows())?;
    let hit = value
        .as_any()
        .downcast_ref::<BooleanArray>()
        .cloned()
        .ok_or_else(|| Error::Usage(format!("WHERE {condition}: not a true/false condition")))?;
    Ok(if hit.null_count() == 0 {
        hit
    } else {
        arrow::compute::prep_null_mask_filter(&hit)
    })
}
