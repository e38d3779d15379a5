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
use arrow::datatypes::{DataType, Int64Type};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::PhysicalExpr;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{schema_to_arrow_schema, ArrowReaderBuilder};
use iceberg::io::FileIO;
use iceberg::scan::{ArrowRecordBatchStream, FileScanTask};
use iceberg::spec::{DataFile, TableMetadata};
use iceberg::table::Table;
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
    // Strings may come as views (tables are read so): as `Utf8` either way.
    let Some((files, lines)) = SOURCE_COLUMNS.iter().find_map(|(f, l)| {
        let files = arrow::compute::cast(batch.column_by_name(f)?, &DataType::Utf8).ok()?;
        Some((
            files.as_string_opt::<i32>()?.clone(),
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

impl Edit {
    /// `batch` after the edit of the rows `hit` picks: without them (delete), or with each
    /// assigned column's value replaced by its new value cast to the column's type (update).
    fn apply(
        &self,
        batch: &RecordBatch,
        hit: &BooleanArray,
        arrow_schema: &arrow::datatypes::Schema,
    ) -> Result<RecordBatch> {
        Ok(match self {
            Edit::Delete => filter_record_batch(batch, &arrow::compute::not(hit)?)?,
            Edit::Update(assignments) => {
                let mut columns = batch.columns().to_vec();
                for (index, expr) in assignments {
                    let new = expr.evaluate(batch)?.into_array(batch.num_rows())?;
                    let new =
                        arrow::compute::cast(&new, columns[*index].data_type()).map_err(|e| {
                            Error::Usage(format!(
                                "SET {}: the new values are not a {}: {e}",
                                arrow_schema.field(*index).name(),
                                columns[*index].data_type()
                            ))
                        })?;
                    columns[*index] =
                        arrow::compute::kernels::zip::zip(hit, &new, &columns[*index])?;
                }
                RecordBatch::try_new(batch.schema(), columns)?
            }
        })
    }
}

/// The batches of the file `task` names (its projected columns), from a reader of its own that
/// reads one data file at a time.
fn read_file(file_io: &FileIO, task: FileScanTask) -> Result<ArrowRecordBatchStream> {
    let reader = ArrowReaderBuilder::new(file_io.clone(), iceberg::Runtime::try_current()?)
        .with_data_file_concurrency_limit(1)
        .build();
    Ok(reader
        .read(futures::stream::iter([Ok(task)]).boxed())?
        .stream())
}

/// The partition label (`order_date_month=2026-01`) of the file `task` reads; none for a file
/// without partition values or under an unpartitioned spec.
fn file_partition(task: &FileScanTask, metadata: &TableMetadata) -> Option<String> {
    let partition = task.partition.as_ref()?;
    // The file's own spec when the scan says it, else the table's (this engine
    // never changes a table's partitioning under its files).
    let spec = task
        .partition_spec
        .as_deref()
        .unwrap_or(metadata.default_partition_spec());
    (!spec.fields().is_empty()).then(|| crate::commit::partition_label(spec, partition))
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
        let first_pass = self.first_pass_fields(metadata.current_schema())?;
        let candidates = self.candidate_files(&loaded).await?;
        let file_io = loaded.file_io().clone();
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
            let hits = self
                .count_matches(&file_io, task, &first_pass, matcher, &mut out.sources)
                .await?;
            if hits == 0 {
                continue;
            }
            out.rows += hits;
            out.bytes_rewritten += task.file_size_in_bytes;
            if let Some(label) = file_partition(task, metadata) {
                out.partitions.insert(label);
            }
            removed_files.insert(path.clone());
            if self.plan_only {
                continue;
            }
            self.rewrite_file(&file_io, task, matcher, &arrow_schema, &mut writer)
                .await?;
        }
        let rewritten = writer.close().await?;
        out.files_rewritten = removed_files.len() as u64;
        // A table with no matching row still records the rewritten source files in its
        // ledger (their records were all quarantined): an append of no files.
        if self.plan_only || (removed_files.is_empty() && self.ledger.is_empty()) {
            return Ok(out);
        }
        let staged = self
            .stage_replacement(&loaded, before, rewritten, removed_files)
            .await?;
        out.staged = Some(staged);
        Ok(out)
    }

    /// The field ids the first pass reads: the matcher's columns, then the source columns when
    /// the table has both of a pair, each once; an error names a column the table lacks.
    fn first_pass_fields(&self, schema: &iceberg::spec::Schema) -> Result<Vec<i32>> {
        // What the first pass reads: the matcher's columns and the source columns.
        let mut first_pass: Vec<i32> = Vec::new();
        let sourced = SOURCE_COLUMNS
            .iter()
            .find(|(f, l)| schema.field_by_name(f).is_some() && schema.field_by_name(l).is_some())
            .map(|(f, l)| [f.to_string(), l.to_string()]);
        for name in self.columns.iter().chain(sourced.iter().flatten()) {
            let field = schema
                .field_by_name(name)
                .ok_or_else(|| Error::table_msg(self.table, format!("has no column `{name}`")))?;
            if !first_pass.contains(&field.id) {
                first_pass.push(field.id);
            }
        }
        Ok(first_pass)
    }

    /// The live data files Iceberg cannot rule out by partition values and bounds (from
    /// `prune`), by path, each as a task that reads the whole file, every row; an error if a
    /// file has delete files.
    async fn candidate_files(&self, loaded: &Table) -> Result<HashMap<String, FileScanTask>> {
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
                    self.table,
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
        Ok(candidates)
    }

    /// The first pass over one candidate file, reading only the fields `first_pass`: how many
    /// rows the matcher picks; the source lines of those rows are added to `sources`.
    async fn count_matches(
        &self,
        file_io: &FileIO,
        task: &FileScanTask,
        first_pass: &[i32],
        matcher: &mut Matcher<'_>,
        sources: &mut BTreeMap<String, BTreeSet<u64>>,
    ) -> Result<u64> {
        let mut hits = 0u64;
        let mut narrow = task.clone();
        narrow.project_field_ids = first_pass.to_vec();
        let mut batches = read_file(file_io, narrow)?;
        while let Some(batch) = batches.try_next().await? {
            let hit = matcher(&project(&batch, &self.columns)?)?;
            hits += hit.true_count() as u64;
            note_sources(&batch, &hit, sources);
        }
        Ok(hits)
    }

    /// The second pass over one file with a match: every batch, after [`Edit::apply`], goes to
    /// `writer`; a batch left with no rows is not written.
    async fn rewrite_file(
        &self,
        file_io: &FileIO,
        task: &FileScanTask,
        matcher: &mut Matcher<'_>,
        arrow_schema: &arrow::datatypes::Schema,
        writer: &mut TableWriter,
    ) -> Result<()> {
        let mut batches = read_file(file_io, task.clone())?;
        while let Some(batch) = batches.try_next().await? {
            let hit = matcher(&project(&batch, &self.columns)?)?;
            let kept = self.edit.apply(&batch, &hit, arrow_schema)?;
            if kept.num_rows() > 0 {
                writer.write(kept).await?;
            }
        }
        Ok(())
    }

    /// The new snapshot's summary properties: those a replace carries over from the current
    /// snapshot, this rewrite's pipeline, run id and job, and the file ledger when there is one.
    fn snapshot_properties(&self, metadata: &TableMetadata) -> Result<HashMap<String, String>> {
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
        Ok(properties)
    }

    /// Stages the snapshot on top of `before` that replaces `removed_files` by `rewritten` (a
    /// `rewrite`), or, with none removed, appends no files to record the ledger (a `ledger`);
    /// with the run record's entry for it. Nothing is published.
    async fn stage_replacement(
        &self,
        loaded: &Table,
        before: i64,
        rewritten: Vec<DataFile>,
        removed_files: BTreeSet<String>,
    ) -> Result<(StagedTable, TableRecord)> {
        let metadata = loaded.metadata();
        let properties = self.snapshot_properties(metadata)?;
        let location = loaded.metadata_location_result()?;
        let target = TableTarget::unchanged(self.table, metadata, location)?;
        let (mode, operation) = if removed_files.is_empty() {
            (WriteMode::Append, "ledger")
        } else {
            (WriteMode::Rewrite(removed_files), "rewrite")
        };
        let staged = stage_snapshot(target, rewritten, loaded.file_io(), properties, mode).await?;
        let entry = TableRecord {
            table: self.table.to_string(),
            operation: operation.into(),
            partitions: None,
            snapshot_before: Some(before),
            snapshot_after: Some(staged.snapshot_id),
            rows: total_records(staged.metadata.snapshot_by_id(staged.snapshot_id)),
            expired: None,
            dropped_metadata: None,
        };
        Ok((staged, entry))
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, StringViewArray,
    };

    use super::note_sources;

    #[test]
    fn sources_are_noted_whether_strings_come_as_views_or_not() {
        let files = [
            "data/a.csv",
            "data/b-with-a-name-longer-than-twelve.csv",
            "data/a.csv",
        ];
        let lines: ArrayRef = Arc::new(Int64Array::from(vec![3, 7, 9]));
        let hit = BooleanArray::from(vec![true, true, false]);
        let as_utf8: ArrayRef = Arc::new(StringArray::from(files.to_vec()));
        let as_views: ArrayRef = Arc::new(StringViewArray::from(files.to_vec()));
        let mut found = Vec::new();
        for column in [as_utf8, as_views] {
            let batch = RecordBatch::try_from_iter([
                ("_source_file", column),
                ("_source_line", lines.clone()),
            ])
            .unwrap();
            let mut sources = BTreeMap::new();
            note_sources(&batch, &hit, &mut sources);
            found.push(sources);
        }
        let want: BTreeMap<String, BTreeSet<u64>> = [
            ("data/a.csv".to_string(), BTreeSet::from([3])),
            (
                "data/b-with-a-name-longer-than-twelve.csv".to_string(),
                BTreeSet::from([7]),
            ),
        ]
        .into();
        assert_eq!(found, [want.clone(), want]);
    }
}
