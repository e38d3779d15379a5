//! `[[transform]]`: one SQL `SELECT` into a silver or gold table.

use std::path::Path;

use super::fields::{
    erase_columns, io_reason, partition_fields, table_docs, table_name, target_size,
};
use super::position::{display_path_in, Positions};
use super::raw::RawTransform;
use crate::error::Result;
use crate::spec::partition::{Grain, PartitionField};
use crate::spec::sql::is_identifier;
use crate::spec::table::TableName;
use crate::spec::transform::{RangeInput, TransformJob, TransformMode};

/// One `[[transform]]` table; its SQL file is read from under `project_dir`.
pub(super) fn transform_job(
    at: &Positions,
    project_dir: &Path,
    raw: &RawTransform,
) -> Result<TransformJob> {
    let table = table_name(at, &raw.table)?;
    let sql_file = project_dir.join(raw.sql.get_ref());
    let sql = std::fs::read_to_string(&sql_file).map_err(|e| {
        at.error(
            raw.sql.span(),
            format!("cannot read SQL file `{}`: {}", raw.sql.get_ref(), io_reason(&e)),
            Some("the path is relative to the project directory, e.g. \"sql/retail/silver_orders.sql\"".into()),
        )
    })?;
    let partition_by = partition_fields(at, &raw.partition_by)?;
    let mode = mode(at, raw, &partition_by)?;
    let incremental_by = incremental_by(at, raw)?;
    let batch_rows = batch_rows(at, raw, &incremental_by)?;
    Ok(TransformJob {
        table,
        sql_file: display_path_in(project_dir, &sql_file),
        sql,
        partition_by,
        mode,
        incremental_by,
        batch_rows,
        target_file_size: target_size(&raw.target_file_size_mb, at)?,
        origin: at.origin(raw.table.span()),
        drops: Vec::new(),
        erase: erase_columns(&raw.erase, at)?,
        docs: table_docs(at, &raw.description, &raw.columns)?,
    })
}

/// `mode`: `full_refresh` (the default), or `replace_partitions` when `partition_by` has
/// exactly one time field.
fn mode(
    at: &Positions,
    raw: &RawTransform,
    partition_by: &[PartitionField],
) -> Result<TransformMode> {
    Ok(match raw.mode.as_ref().map(|m| (m, m.get_ref().as_str())) {
        None | Some((_, "full_refresh")) => TransformMode::FullRefresh,
        Some((m, "replace_partitions")) => {
            let time_fields = partition_by
                .iter()
                .filter(|p| Grain::of(p.transform).is_some())
                .count();
            if time_fields != 1 {
                return Err(at.error(
                    m.span(),
                    format!(
                        "mode \"replace_partitions\" needs exactly one time partition field; \
                         {} has {time_fields}",
                        raw.table.get_ref()
                    ),
                    Some(
                        "add one year(c), month(c), day(c) or hour(c) to partition_by, \
                         e.g. partition_by = [\"month(order_date)\"]"
                            .into(),
                    ),
                ));
            }
            TransformMode::ReplacePartitions
        }
        Some((m, other)) => {
            return Err(at.error(
                m.span(),
                format!("unknown transform mode `{other}`"),
                Some("mode is \"full_refresh\" (default) or \"replace_partitions\"".into()),
            ))
        }
    })
}

/// `incremental_by`: each input table with its time column, in the order written.
fn incremental_by(at: &Positions, raw: &RawTransform) -> Result<Vec<RangeInput>> {
    let mut incremental_by = Vec::new();
    for (input, column) in raw.incremental_by.iter().flat_map(|m| m.get_ref()) {
        let table = TableName::parse(input).ok_or_else(|| {
            at.error(
                column.span(),
                format!("incremental_by: `{input}` is not a table name"),
                Some("map each input table to its time column, e.g. \"bronze.orders\" = \"order_ts\"".into()),
            )
        })?;
        if !is_identifier(column.get_ref()) {
            return Err(at.error(
                column.span(),
                format!(
                    "incremental_by: `{}` is not a column name",
                    column.get_ref()
                ),
                None,
            ));
        }
        incremental_by.push(RangeInput {
            table,
            column: column.get_ref().clone(),
            line: at.line_col(column.span().start).0,
        });
    }
    Ok(incremental_by)
}

/// `batch_rows`: only where batches can exist, on a transform with `incremental_by`.
fn batch_rows(
    at: &Positions,
    raw: &RawTransform,
    incremental_by: &[RangeInput],
) -> Result<Option<u64>> {
    let Some(rows) = &raw.batch_rows else {
        return Ok(None);
    };
    if incremental_by.is_empty() {
        return Err(at.error(
            rows.span(),
            format!(
                "batch_rows on {}, which has no incremental_by: only a table whose partitions \
                 are computed from their own time range's input rows is recomputed in batches",
                raw.table.get_ref()
            ),
            Some(
                "declare the inputs' time columns, e.g. incremental_by = \
                 { \"bronze.orders\" = \"order_ts\" }, or remove batch_rows"
                    .into(),
            ),
        ));
    }
    Ok(Some(*rows.get_ref()))
}
