//! The rows that differ between `diff.base` (`main`'s files the branch lacks) and
//! `diff.branch` (the branch's files `main` lacks), both with a `_partition` column: counted
//! per partition, a few of each kind kept as samples, in one streamed pass.
//!
//! Without a key, a row is *added* (the branch has it more often than `main`) or *removed*
//! (the reverse): a multiset difference. With a key (the table's `unique` expectation, or
//! `--key`), rows only one side has are paired by it: a key on both sides is *changed*, and
//! each column whose values differ is counted.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray};
use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;
use serde::Serialize;

use super::diff_scan::PARTITION;
use crate::engine::{admit, plan, Entry};
use crate::error::{Error, Result};
use crate::output::batches_to_rows;
use crate::spec::quote_ident;

/// Rows shown of each kind.
const SAMPLES: usize = 5;

/// What differs in one partition.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PartitionCounts {
    pub added: u64,
    pub removed: u64,
    pub changed: u64,
}

/// One column of a changed row: its value on `main` and in the environment.
#[derive(Debug, Clone, Serialize)]
pub struct ColumnChange {
    pub column: String,
    pub main: Option<String>,
    pub env: Option<String>,
}

/// A changed row: its key's values and the columns that changed.
#[derive(Debug, Clone, Serialize)]
pub struct ChangedRow {
    pub key: Vec<Option<String>>,
    pub changes: Vec<ColumnChange>,
}

/// The rows that differ, counted and sampled.
#[derive(Debug, Clone, Default)]
pub struct RowDiff {
    pub added: u64,
    pub removed: u64,
    pub changed: u64,
    pub sample_added: Vec<Vec<Option<String>>>,
    pub sample_removed: Vec<Vec<Option<String>>>,
    pub sample_changed: Vec<ChangedRow>,
    /// Per changed column, the changed rows where it differs.
    pub changed_columns: BTreeMap<String, u64>,
    pub partitions: BTreeMap<String, PartitionCounts>,
}

/// The query: per row `_kind`, `_partition`, one flag per column (`_d{i}`: differs), the
/// environment's values (`_a{i}`) and `main`'s (`_r{i}`).
fn query(columns: &[String], key: &[String]) -> String {
    let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let list = format!("{}, {PARTITION}", cols.join(", "));
    let only = |a: &str, b: &str| {
        format!("SELECT {list} FROM diff.{a} EXCEPT ALL SELECT {list} FROM diff.{b}")
    };
    let each = |f: &dyn Fn(usize, &str) -> String| -> String {
        cols.iter()
            .enumerate()
            .map(|(i, c)| f(i, c))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if key.is_empty() {
        let side = |kind: &str, a: bool, from: String| {
            let flags = each(&|i, _| format!("false AS _d{i}"));
            let values = each(&|i, c| match a {
                true => format!("{c} AS _a{i}, NULL AS _r{i}"),
                false => format!("NULL AS _a{i}, {c} AS _r{i}"),
            });
            format!("SELECT '{kind}' AS _kind, {PARTITION}, {flags}, {values} FROM ({from}) s")
        };
        return format!(
            "{} UNION ALL {}",
            side("added", true, only("branch", "base")),
            side("removed", false, only("base", "branch"))
        );
    }
    let on: Vec<String> = key
        .iter()
        .map(|k| format!("r.{0} = a.{0}", quote_ident(k)))
        .collect();
    format!(
        "SELECT CASE WHEN r._side IS NULL THEN 'added' WHEN a._side IS NULL THEN 'removed' \
         ELSE 'changed' END AS _kind, COALESCE(a.{PARTITION}, r.{PARTITION}) AS {PARTITION}, \
         {}, {} FROM (SELECT s.*, 1 AS _side FROM ({}) s) r \
         FULL OUTER JOIN (SELECT s.*, 1 AS _side FROM ({}) s) a ON {}",
        each(&|i, c| {
            format!("(a._side IS NOT NULL AND r._side IS NOT NULL AND a.{c} IS DISTINCT FROM r.{c}) AS _d{i}")
        }),
        each(&|i, c| format!("a.{c} AS _a{i}, r.{c} AS _r{i}")),
        only("base", "branch"),
        only("branch", "base"),
        on.join(" AND ")
    )
}

/// Counts and samples the rows that differ (see the module doc), in one pass.
pub async fn row_diff(
    session: &SessionContext,
    columns: &[String],
    key: &[String],
) -> Result<RowDiff> {
    let sql = query(columns, key);
    let admitted = admit(&sql, Entry::Query).map_err(|r| Error::Internal(r.message))?;
    let logical = plan(&session.state(), admitted)
        .await
        .map_err(|r| Error::Internal(r.message))?;
    let frame = session.execute_logical_plan(logical).await?;
    let mut stream = frame.execute_stream().await?;
    let mut diff = RowDiff::default();
    let keyed: Vec<usize> = key
        .iter()
        .filter_map(|k| columns.iter().position(|c| c == k))
        .collect();
    while let Some(batch) = stream.try_next().await? {
        add_batch(&mut diff, &batch, columns, &keyed)?;
    }
    Ok(diff)
}

/// Adds one batch of the query's rows to `diff`.
fn add_batch(
    diff: &mut RowDiff,
    batch: &RecordBatch,
    columns: &[String],
    keyed: &[usize],
) -> Result<()> {
    let n = columns.len();
    // Strings may come as views (tables are read so): as `Utf8` either way.
    let utf8 = |i: usize| arrow::compute::cast(batch.column(i), &arrow::datatypes::DataType::Utf8);
    let (kinds, partitions) = (utf8(0)?, utf8(1)?);
    let (kinds, partitions) = (kinds.as_string::<i32>(), partitions.as_string::<i32>());
    let flags: Vec<_> = (0..n).map(|i| batch.column(2 + i).as_boolean()).collect();
    for row in 0..batch.num_rows() {
        let counts = diff
            .partitions
            .entry(partitions.value(row).to_string())
            .or_default();
        let kind = kinds.value(row);
        match kind {
            "added" => (diff.added, counts.added) = (diff.added + 1, counts.added + 1),
            "removed" => (diff.removed, counts.removed) = (diff.removed + 1, counts.removed + 1),
            _ => {
                (diff.changed, counts.changed) = (diff.changed + 1, counts.changed + 1);
                for (i, flag) in flags.iter().enumerate() {
                    if flag.is_valid(row) && flag.value(row) {
                        *diff.changed_columns.entry(columns[i].clone()).or_default() += 1;
                    }
                }
            }
        }
        sample(diff, batch, row, kind, columns, keyed, &flags)?;
    }
    Ok(())
}

/// Keeps row `row` of `batch` as a sample of its kind while there are fewer than
/// [`SAMPLES`].
fn sample(
    diff: &mut RowDiff,
    batch: &RecordBatch,
    row: usize,
    kind: &str,
    columns: &[String],
    keyed: &[usize],
    flags: &[&arrow::array::BooleanArray],
) -> Result<()> {
    let full = match kind {
        "added" => diff.sample_added.len(),
        "removed" => diff.sample_removed.len(),
        _ => diff.sample_changed.len(),
    } >= SAMPLES;
    if full {
        return Ok(());
    }
    let n = columns.len();
    let one = batches_to_rows(&batch.schema(), &[batch.slice(row, 1)])?;
    let values = one.rows.into_iter().next().unwrap_or_default();
    let env = |i: usize| values.get(2 + n + 2 * i).cloned().flatten();
    let main = |i: usize| values.get(2 + n + 2 * i + 1).cloned().flatten();
    match kind {
        "added" => diff.sample_added.push((0..n).map(env).collect()),
        "removed" => diff.sample_removed.push((0..n).map(main).collect()),
        _ => diff.sample_changed.push(ChangedRow {
            key: keyed.iter().map(|&i| env(i)).collect(),
            changes: (0..n)
                .filter(|&i| flags[i].is_valid(row) && flags[i].value(row))
                .map(|i| ColumnChange {
                    column: columns[i].clone(),
                    main: main(i),
                    env: env(i),
                })
                .collect(),
        }),
    }
    Ok(())
}
