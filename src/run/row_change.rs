//! `pipeline sql "DELETE FROM ns.table WHERE ..."` and `"UPDATE ns.table SET c = expr WHERE
//! ..."`: rows removed or changed copy-on-write. Every live data file that may hold a matching
//! row (Iceberg prunes by partition and column bounds) is read whole; a file with a match is
//! rewritten (without those rows, or with their new values) and replaced in one `overwrite`
//! snapshot, files without a match stay as they are. No delete files are written,
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
    /// `delete` or `update`.
    pub statement: &'static str,
    /// Rows deleted or updated.
    pub rows: u64,
    /// Data files rewritten without the rows (the others were not touched).
    pub files_rewritten: u64,
    /// Live data files of the table before the change.
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
}

/// What to do to the rows that match.
#[derive(Debug, Clone, PartialEq)]
pub enum RowEdit {
    Delete,
    /// `column = expression` (SQL over the row's columns), in order.
    Update(Vec<(String, String)>),
}

impl RowEdit {
    pub fn name(&self) -> &'static str {
        match self {
            RowEdit::Delete => "delete",
            RowEdit::Update(_) => "update",
        }
    }
}

/// A parsed `pipeline sql` statement: the table, the WHERE condition (SQL), the edit.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedChange {
    pub table: TableName,
    pub condition: String,
    pub edit: RowEdit,
}

/// One table's part of a row change: what matched, and (unless only planned, or nothing
/// matched) the staged snapshot with its run-record entry.
pub struct StagedRowChange {
    pub rows: u64,
    pub files_rewritten: u64,
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
    pub staged: Option<(crate::commit::StagedTable, TableRecord)>,
}

/// Applies `change` to the rows of its table where its condition is true, as run
/// `pipeline`'s change by `invocation`. Takes the pipeline's run lock.
pub async fn change_rows(
    catalog: &PipelineCatalog,
    pipeline: &str,
    change: &ParsedChange,
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
    let part = stage_row_change(catalog, pipeline, &run_id, change, false).await?;
    let mut out = RowChange {
        record: None,
        statement: change.edit.name(),
        rows: part.rows,
        files_rewritten: part.files_rewritten,
        files_in_table: part.files_in_table,
        bytes_rewritten: part.bytes_rewritten,
    };
    if let Some((staged, entry)) = part.staged {
        let record = RunRecord::new(&run_id, RunKind::Sql, pipeline, started, invocation)
            .finished_now()
            .with_tables(vec![entry]);
        let publication = Publication {
            changes: vec![TableChange::publish(staged)?],
            record: Some(record.clone()),
        };
        publish(catalog, publication).await?;
        out.record = Some(record);
    }
    Ok(out)
}

/// Finds the rows of `change` in its table and, unless `plan_only`, rewrites the files that
/// hold them and stages the snapshot (for run `run_id` of `pipeline`); nothing is published.
/// The caller holds the pipeline's run lock.
pub async fn stage_row_change(
    catalog: &PipelineCatalog,
    pipeline: &str,
    run_id: &str,
    change: &ParsedChange,
    plan_only: bool,
) -> Result<StagedRowChange> {
    let table = &change.table;
    let predicate = change.condition.as_str();
    let loaded = catalog.load_existing(table).await?;
    let metadata = loaded.metadata();
    let Some(before) = metadata.current_snapshot_id() else {
        return Ok(StagedRowChange {
            rows: 0,
            files_rewritten: 0,
            files_in_table: 0,
            bytes_rewritten: 0,
            staged: None,
        });
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
    // UPDATE: for each assigned column, its position and its new value's expression.
    let mut assignments = Vec::new();
    if let RowEdit::Update(set) = &change.edit {
        for (column, value) in set {
            let index = arrow_schema.index_of(column).map_err(|_| {
                Error::Usage(format!(
                    "SET {column}: {table} has no column `{column}`; its columns: {}",
                    arrow_schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            let expr = session
                .parse_sql_expr(value, &df_schema)
                .and_then(|e| session.create_physical_expr(e, &df_schema))
                .map_err(|e| Error::Usage(format!("SET {column} = {value}: {e}")))?;
            assignments.push((index, expr));
        }
    }

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
    let (mut rows_changed, mut bytes_rewritten) = (0u64, 0u64);
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
        rows_changed += hits;
        bytes_rewritten += task.file_size_in_bytes;
        removed_files.insert(path.clone());
        if plan_only {
            continue;
        }
        let mut batches = reader()?
            .read(futures::stream::iter([Ok(task.clone())]).boxed())?
            .stream();
        while let Some(batch) = batches.try_next().await? {
            let hit = matches(&batch)?;
            let out = match &change.edit {
                RowEdit::Delete => filter_record_batch(&batch, &arrow::compute::not(&hit)?)?,
                RowEdit::Update(_) => {
                    let mut columns = batch.columns().to_vec();
                    for (index, expr) in &assignments {
                        let new = expr.evaluate(&batch)?.into_array(batch.num_rows())?;
                        let new = arrow::compute::cast(&new, columns[*index].data_type()).map_err(
                            |e| {
                                Error::Usage(format!(
                                    "SET {}: the new values are not a {}: {e}",
                                    arrow_schema.field(*index).name(),
                                    columns[*index].data_type()
                                ))
                            },
                        )?;
                        columns[*index] =
                            arrow::compute::kernels::zip::zip(&hit, &new, &columns[*index])?;
                    }
                    arrow::record_batch::RecordBatch::try_new(batch.schema(), columns)?
                }
            };
            if out.num_rows() > 0 {
                writer.write(out).await?;
            }
        }
    }
    let rewritten = writer.close().await?;
    let files_in_table = summary::total(metadata.current_snapshot(), summary::TOTAL_DATA_FILES);
    let files_rewritten = removed_files.len() as u64;
    let mut part = StagedRowChange {
        rows: rows_changed,
        files_rewritten,
        files_in_table,
        bytes_rewritten,
        staged: None,
    };
    if plan_only || removed_files.is_empty() {
        return Ok(part);
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
    properties.insert(summary::PIPELINE.into(), pipeline.to_string());
    properties.insert(summary::RUN_ID.into(), run_id.to_string());
    properties.insert(summary::JOB.into(), change.edit.name().into());
    let location = loaded.metadata_location_result()?;
    let target = TableTarget::unchanged(table, metadata, location)?;
    let staged = stage_snapshot(
        target,
        rewritten,
        &file_io,
        properties,
        WriteMode::Rewrite(removed_files),
    )
    .await?;
    let entry = TableRecord {
        table: table.to_string(),
        operation: "rewrite".into(),
        partitions: None,
        snapshot_before: Some(before),
        snapshot_after: Some(staged.snapshot_id),
        rows: total_records(staged.metadata.snapshot_by_id(staged.snapshot_id)),
    };
    part.staged = Some((staged, entry));
    Ok(part)
}

/// The table, WHERE condition (as SQL) and edit of `DELETE FROM ns.table WHERE condition` or
/// `UPDATE ns.table SET column = expression, ... WHERE condition`. Anything else (no WHERE,
/// USING or FROM, several tables, RETURNING, LIMIT) is refused with what to write instead.
pub fn parse_row_change(sql: &str) -> Result<ParsedChange> {
    use datafusion::sql::parser::{DFParser, Statement as DFStatement};
    use datafusion::sql::sqlparser::ast::{
        AssignmentTarget, FromTable, Statement, TableFactor, TableWithJoins,
    };
    let usage = |m: String| Error::Usage(m);
    let mut statements = DFParser::parse_sql(sql).map_err(|e| usage(format!("sql: {e}")))?;
    let statement = match (statements.pop_front(), statements.is_empty()) {
        (Some(DFStatement::Statement(s)), true) => *s,
        _ => {
            return Err(usage(
                "sql: pass exactly one DELETE or UPDATE statement".into(),
            ))
        }
    };
    let table_of = |t: &TableWithJoins| -> Result<TableName> {
        let TableFactor::Table { name, .. } = &t.relation else {
            return Err(usage("sql: name a table, written namespace.table".into()));
        };
        if !t.joins.is_empty() {
            return Err(usage("sql: one table, without joins".into()));
        }
        TableName::parse(&name.to_string()).ok_or_else(|| {
            usage(format!(
                "sql: write the table as namespace.table (got `{name}`); `pipeline tables` lists them"
            ))
        })
    };
    let (table, selection, edit) = match statement {
        Statement::Delete(delete) => {
            let from = match &delete.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            let [one] = from.as_slice() else {
                return Err(usage("sql: DELETE from one table".into()));
            };
            if delete.using.is_some()
                || !delete.tables.is_empty()
                || delete.returning.is_some()
                || delete.limit.is_some()
                || !delete.order_by.is_empty()
            {
                return Err(usage(
                    "sql: DELETE from one table, without USING, RETURNING, ORDER BY or LIMIT".into(),
                ));
            }
            (table_of(one)?, delete.selection, RowEdit::Delete)
        }
        Statement::Update(update) => {
            if update.from.is_some() || update.returning.is_some() || update.limit.is_some() {
                return Err(usage(
                    "sql: UPDATE one table, without FROM, RETURNING or LIMIT".into(),
                ));
            }
            let mut set = Vec::new();
            for a in &update.assignments {
                let AssignmentTarget::ColumnName(column) = &a.target else {
                    return Err(usage("sql: SET one column at a time: SET a = 1, b = 2".into()));
                };
                let column = column.to_string();
                let column = column.rsplit('.').next().unwrap_or(&column).trim_matches('"');
                set.push((column.to_string(), a.value.to_string()));
            }
            (table_of(&update.table)?, update.selection, RowEdit::Update(set))
        }
        _ => {
            return Err(usage(
                "sql: only `DELETE FROM namespace.table WHERE ...` and `UPDATE namespace.table SET column = expression WHERE ...`"
                    .into(),
            ))
        }
    };
    let condition = selection.ok_or_else(|| {
        usage(format!(
            "sql: {} {table} needs a WHERE; for every row, `WHERE true` says so",
            edit.name().to_uppercase()
        ))
    })?;
    Ok(ParsedChange {
        table,
        condition: condition.to_string(),
        edit,
    })
}

#[cfg(test)]
mod tests {
    use super::{parse_row_change, RowEdit};

    #[test]
    fn deletes_and_updates_name_their_table_condition_and_edit_and_nothing_else_passes() {
        let d = parse_row_change("DELETE FROM silver.customers WHERE customer_id = 4711").unwrap();
        assert_eq!(d.table.to_string(), "silver.customers");
        assert_eq!(d.condition, "customer_id = 4711");
        assert_eq!(d.edit, RowEdit::Delete);
        let u = parse_row_change(
            "UPDATE bronze.pos_orders SET status = 'cancelled', quantity = quantity + 1 WHERE order_id = 42",
        )
        .unwrap();
        assert_eq!(u.table.to_string(), "bronze.pos_orders");
        assert_eq!(u.condition, "order_id = 42");
        assert_eq!(
            u.edit,
            RowEdit::Update(vec![
                ("status".into(), "'cancelled'".into()),
                ("quantity".into(), "quantity + 1".into())
            ])
        );
        for bad in [
            "UPDATE silver.customers SET name = 'x'",
            "DELETE FROM silver.customers",
            "DELETE FROM customers WHERE customer_id = 1",
            "SELECT 1",
            "DELETE FROM silver.a WHERE x = 1; DELETE FROM silver.b WHERE x = 1",
        ] {
            assert!(parse_row_change(bad).is_err(), "{bad}");
        }
    }
}
