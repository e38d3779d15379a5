//! `pipeline sql "DELETE FROM ns.table WHERE ..."`: rows removed copy-on-write. Every live
//! data file that may hold a matching row (Iceberg prunes by partition and column bounds) is
//! read whole; a file with a match is rewritten without those rows and replaced in one
//! `overwrite` snapshot, files without a match stay as they are. No delete files are written,
//! so every Iceberg reader sees the change. The snapshot keeps the table's lineage and
//! incremental keys (a transform's table is not recomputed because of it) and is published
//! with a run record of kind `sql` (who, why, the statement, rows removed): `pipeline
//! rollback` undoes it, and the next run recomputes downstream only the partitions whose
//! files changed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, BooleanArray};
use arrow::compute::filter_record_batch;
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{schema_to_arrow_schema, ArrowReaderBuilder};
use iceberg::scan::FileScanTask;
use iceberg_datafusion::physical_plan::convert_filters_to_predicate;

use super::open::lock_and_recover;
use super::report::Observer;
use crate::catalog::lock::LockWait;
use crate::catalog::{new_run_id, Invocation, PipelineCatalog, RunKind, RunRecord, TableRecord};
use crate::commit::publish::{publish, Publication, TableChange};
use crate::commit::summary::{self, total_records, CARRIED_BY_REPLACE};
use crate::commit::{stage_snapshot, TableTarget, WriteMode};
use crate::error::{Error, Result};
use crate::spec::{TableName, DEFAULT_TARGET_FILE_SIZE};
use crate::write::TableWriter;

/// What a row change did to its table, beside the run record.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RowChange {
    /// The run record published; `None` when no row matched and nothing changed.
    pub record: Option<RunRecord>,
    pub rows_removed: u64,
    /// Data files rewritten without the rows (the others were not touched).
    pub files_rewritten: u64,
    /// Live data files of the table before the change.
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
}

/// Deletes the rows of `table` where `predicate` (SQL, over the table's columns) is true,
/// as run `pipeline`'s change by `invocation`. Takes the pipeline's run lock.
pub async fn delete_rows(
    catalog: &PipelineCatalog,
    pipeline: &str,
    table: &TableName,
    predicate: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<RowChange> {
    let _locked = lock_and_recover(
        catalog,
        pipeline,
        LockWait(Some(Duration::from_secs(3600))),
        observer,
    )
    .await?;
    let started = chrono::Utc::now();
    let run_id = new_run_id(started);
    let loaded = catalog.load_existing(table).await?;
    let metadata = loaded.metadata();
    let Some(before) = metadata.current_snapshot_id() else {
        return Err(Error::Usage(format!("{table} has no rows to delete")));
    };
    let arrow_schema = Arc::new(schema_to_arrow_schema(metadata.current_schema())?);
    let df_schema = DFSchema::try_from(arrow_schema.as_ref().clone())?;
    let session = SessionContext::new();
    let condition: Expr = session
        .parse_sql_expr(predicate, &df_schema)
        .map_err(|e| Error::Usage(format!("WHERE {predicate}: {e}")))?;
    let physical = session
        .create_physical_expr(condition.clone(), &df_schema)
        .map_err(|e| Error::Usage(format!("WHERE {predicate}: {e}")))?;

    // Candidate files: those Iceberg cannot rule out by partition values and column bounds.
    let mut scan = loaded.scan().select_all();
    if let Some(p) = convert_filters_to_predicate(std::slice::from_ref(&condition)) {
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
    let matches = |batch: &arrow::record_batch::RecordBatch| -> Result<BooleanArray> {
        let value = physical.evaluate(batch)?.into_array(batch.num_rows())?;
        let hit = value
            .as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .ok_or_else(|| {
                Error::Usage(format!("WHERE {predicate}: not a true/false condition"))
            })?;
        // NULL is not a match: only rows where the condition is true are deleted.
        Ok(if hit.null_count() == 0 {
            hit
        } else {
            arrow::compute::prep_null_mask_filter(&hit)
        })
    };
    let prefix = format!("{run_id}-sql");
    let mut writer = TableWriter::new(
        &table.to_string(),
        metadata,
        file_io.clone(),
        DEFAULT_TARGET_FILE_SIZE,
        &prefix,
    )
    .await?;
    let mut removed_files = BTreeSet::new();
    let (mut rows_removed, mut bytes_rewritten) = (0u64, 0u64);
    let mut paths: Vec<&String> = candidates.keys().collect();
    paths.sort();
    for path in paths {
        let task = &candidates[path];
        // First pass: count the matches; most files have none and are left alone.
        let mut hits = 0u64;
        let mut batches = reader()?
            .read(futures::stream::iter([Ok(task.clone())]).boxed())?
            .stream();
        while let Some(batch) = batches.try_next().await? {
            hits += matches(&batch)?.true_count() as u64;
        }
        if hits == 0 {
            continue;
        }
        let mut batches = reader()?
            .read(futures::stream::iter([Ok(task.clone())]).boxed())?
            .stream();
        while let Some(batch) = batches.try_next().await? {
            let keep = arrow::compute::not(&matches(&batch)?)?;
            let kept = filter_record_batch(&batch, &keep)?;
            if kept.num_rows() > 0 {
                writer.write(kept).await?;
            }
        }
        rows_removed += hits;
        bytes_rewritten += task.file_size_in_bytes;
        removed_files.insert(path.clone());
    }
    let rewritten = writer.close().await?;
    let files_in_table = summary::total(metadata.current_snapshot(), summary::TOTAL_DATA_FILES);
    let mut tables = Vec::new();
    let mut publication = Publication::default();
    if !removed_files.is_empty() {
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
        properties.insert(summary::PIPELINE.into(), pipeline.to_string());
        properties.insert(summary::RUN_ID.into(), run_id.clone());
        properties.insert(summary::JOB.into(), "sql".into());
        let location = loaded.metadata_location_result()?;
        let target = TableTarget::unchanged(table, metadata, location)?;
        let files_rewritten = removed_files.len() as u64;
        let staged = stage_snapshot(
            target,
            rewritten,
            &file_io,
            properties,
            WriteMode::Rewrite(removed_files),
        )
        .await?;
        let after = Some(staged.snapshot_id);
        let rows = total_records(staged.metadata.snapshot_by_id(staged.snapshot_id));
        tables.push(TableRecord {
            table: table.to_string(),
            operation: "rewrite".into(),
            partitions: None,
            snapshot_before: Some(before),
            snapshot_after: after,
            rows,
        });
        publication.changes.push(TableChange::publish(staged)?);
        let record = RunRecord::new(&run_id, RunKind::Sql, pipeline, started, invocation)
            .finished_now()
            .with_tables(tables);
        publication.record = Some(record.clone());
        publish(catalog, publication).await?;
        return Ok(RowChange {
            record: Some(record),
            rows_removed,
            files_rewritten,
            files_in_table,
            bytes_rewritten,
        });
    }
    Ok(RowChange {
        record: None,
        rows_removed: 0,
        files_rewritten: 0,
        files_in_table,
        bytes_rewritten: 0,
    })
}

/// The table and the WHERE condition (as SQL) of `DELETE FROM ns.table WHERE condition`.
/// Anything else (UPDATE, a DELETE without WHERE, USING, several tables) is refused with what
/// to write instead.
pub fn parse_delete(sql: &str) -> Result<(TableName, String)> {
    use datafusion::sql::parser::{DFParser, Statement as DFStatement};
    use datafusion::sql::sqlparser::ast::{FromTable, Statement, TableFactor};
    let usage = |m: String| Error::Usage(m);
    let mut statements = DFParser::parse_sql(sql).map_err(|e| usage(format!("sql: {e}")))?;
    let statement = match (statements.pop_front(), statements.is_empty()) {
        (Some(DFStatement::Statement(s)), true) => *s,
        _ => return Err(usage("sql: pass exactly one DELETE statement".into())),
    };
    let Statement::Delete(delete) = statement else {
        return Err(usage(
            "sql: only `DELETE FROM namespace.table WHERE ...` is supported (UPDATE is not yet)"
                .into(),
        ));
    };
    let from = match &delete.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    let ([one], true, true) = (
        from.as_slice(),
        delete.using.is_none() && delete.tables.is_empty(),
        delete.returning.is_none() && delete.limit.is_none() && delete.order_by.is_empty(),
    ) else {
        return Err(usage(
            "sql: DELETE from one table, without USING, RETURNING, ORDER BY or LIMIT".into(),
        ));
    };
    let TableFactor::Table { name, .. } = &one.relation else {
        return Err(usage(
            "sql: DELETE FROM a table, written namespace.table".into(),
        ));
    };
    if !one.joins.is_empty() {
        return Err(usage("sql: DELETE from one table, without joins".into()));
    }
    let table = TableName::parse(&name.to_string()).ok_or_else(|| {
        usage(format!(
            "sql: write the table as namespace.table (got `{name}`); `pipeline tables` lists them"
        ))
    })?;
    let condition = delete.selection.ok_or_else(|| {
        usage(format!(
            "sql: DELETE FROM {table} needs a WHERE; to empty a table, `WHERE true` says so"
        ))
    })?;
    Ok((table, condition.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_delete;

    #[test]
    fn a_delete_names_its_table_and_condition_and_nothing_else_passes() {
        let (t, c) = parse_delete("DELETE FROM silver.customers WHERE customer_id = 4711").unwrap();
        assert_eq!(t.to_string(), "silver.customers");
        assert_eq!(c, "customer_id = 4711");
        for bad in [
            "UPDATE silver.customers SET name = 'x' WHERE customer_id = 1",
            "DELETE FROM silver.customers",
            "DELETE FROM customers WHERE customer_id = 1",
            "SELECT 1",
            "DELETE FROM silver.a WHERE x = 1; DELETE FROM silver.b WHERE x = 1",
        ] {
            assert!(parse_delete(bad).is_err(), "{bad}");
        }
    }
}
