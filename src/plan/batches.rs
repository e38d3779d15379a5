//! Batches of a recompute: a transform with `incremental_by` that is recomputed whole (a new
//! table, `--full-refresh`, a changed SQL) or over many partitions (a backfill of a year) runs
//! as a few queries, each over a run of adjacent partitions of its time column and only the
//! input rows of that run, as a backfill of those partitions would (SQLMesh's `batch_size`,
//! dbt's `microbatch`). `incremental_by`
//! already says that a partition needs only the input rows of its own time range, so the
//! batches' rows together are the whole query's; what it buys is memory: a sort or a window
//! over the whole history (the usual `row_number()` dedup) holds one batch at a time instead
//! of spilling years of rows to disk.
//!
//! The batches come from the input files' column bounds (the same statistics a nightly run's
//! scope is decided by): each file's rows are spread over the partitions its bounds span,
//! adjacent partitions are grouped up to about [`batch_rows`] input rows, and the batches are
//! contiguous (a gap between partitions belongs to the batch before it), so every non-NULL
//! value lies in exactly one batch. Rows whose time column is NULL (or whose file does not
//! count its NULLs) get a batch of their own. No batches (`None`) when an input's bounds are
//! unknown, all its rows fit one batch, or its files are not laid out by time (files spanning
//! several batches would be decoded once per batch: more than a quarter more bytes read than
//! by one query): the query runs whole, as before.

use std::collections::BTreeMap;

use iceberg::spec::DataContentType;
use iceberg::table::Table;

use crate::commit::{changed_files, file_times, FileTimes, PartitionRange};
use crate::engine::memory_limit_mb;
use crate::error::Result;
use crate::spec::{Grain, TableName, TransformJob};

/// Input rows per batch per GiB of the memory pool (`PIPELINE_MEMORY_LIMIT_MB`, default 1 GiB:
/// two batches of the retail dedup, run at once, sort in memory), unless `batch_rows` or
/// `PIPELINE_BATCH_ROWS` says otherwise.
pub const BATCH_ROWS_PER_GIB: u64 = 500_000;

/// The fewest input rows per batch, however small the pool: below it a batch's fixed costs
/// (planning, reading the inputs' manifests) outweigh what it saves.
const MIN_BATCH_ROWS: u64 = 100_000;

/// A file whose bounds span more partitions than this is taken as unknown (no batches).
const MAX_UNITS_PER_FILE: i64 = 100_000;

/// Input rows per batch of `job` (0: never in batches): 0 when its spec says `batch_rows = 0`,
/// else `PIPELINE_BATCH_ROWS` when set, else its spec's `batch_rows`, else
/// [`BATCH_ROWS_PER_GIB`] per GiB of the process's memory pool.
pub fn batch_rows(job: &TransformJob) -> u64 {
    let env = std::env::var("PIPELINE_BATCH_ROWS")
        .ok()
        .and_then(|v| v.trim().parse().ok());
    match (job.batch_rows, env) {
        (Some(0), _) => 0,
        (_, Some(rows)) => rows,
        (Some(rows), None) => rows,
        (None, None) => rows_for_pool(memory_limit_mb() as u64),
    }
}

/// [`BATCH_ROWS_PER_GIB`] per GiB of a pool of `mb` MiB, at least [`MIN_BATCH_ROWS`].
fn rows_for_pool(mb: u64) -> u64 {
    (BATCH_ROWS_PER_GIB.saturating_mul(mb) / 1024).max(MIN_BATCH_ROWS)
}

/// One batch of a full recompute: the input rows it reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Batch {
    /// Rows of the `incremental_by` inputs whose time column lies in the range (about `rows`
    /// of them); the other inputs whole.
    Range { range: PartitionRange, rows: u64 },
    /// Rows of the `incremental_by` inputs whose time column is NULL; the other inputs whole.
    Nulls,
}

/// The batches a recompute of `job` over `inputs` runs as (see the module docs): of the whole
/// table, or with `within`, of those partitions only (a backfill, a run that replaces a range:
/// every batch's range is inside it, and NULLs, in no partition, are not read). `None` when it
/// runs as one query.
pub async fn batches(
    job: &TransformJob,
    inputs: &[(TableName, Table)],
    within: Option<&PartitionRange>,
    max_rows: u64,
) -> Result<Option<Vec<Batch>>> {
    let time = job
        .time_partition()
        .and_then(|p| Some((p.field_name(), Grain::of(p.transform)?)));
    let Some((field, grain)) = time else {
        return Ok(None);
    };
    if max_rows == 0 || job.incremental_by.is_empty() {
        return Ok(None);
    }
    let mut files = Vec::new();
    let mut nulls = false;
    for (name, table) in inputs {
        let Some(column) = job.range_column(name) else {
            continue;
        };
        if !file_spans(table, column, grain, &mut files, &mut nulls).await? {
            return Ok(None);
        }
    }
    let mut per_unit = rows_per_unit(&files);
    if let Some(within) = within {
        files.retain(|f| within.units.range(f.first..=f.last).next().is_some());
        per_unit.retain(|unit, _| within.units.contains(unit));
        nulls = false;
    }
    let runs = group_units(&per_unit, max_rows);
    if runs.len() < 2 || !reads_each_file_about_once(&files, &runs) {
        return Ok(None);
    }
    let mut batches: Vec<Batch> = runs
        .into_iter()
        .map(|(first, last, rows)| {
            let mut range = PartitionRange::new(field.clone(), grain);
            range.units.extend(first..=last);
            if let Some(within) = within {
                range.units.retain(|unit| within.units.contains(unit));
            }
            Batch::Range { range, rows }
        })
        .collect();
    if nulls {
        batches.push(Batch::Nulls);
    }
    Ok(Some(batches))
}

/// One input data file as the batches see it: the partitions (units) its bounds span, its rows
/// and bytes.
#[derive(Debug, Clone, Copy)]
struct FileSpan {
    first: i32,
    last: i32,
    rows: u64,
    bytes: u64,
}

/// Adds `table`'s live data files with bounds on `column` to `files`; sets `nulls` when a file
/// may hold NULLs there. False when a file's bounds are unknown.
async fn file_spans(
    table: &Table,
    column: &str,
    grain: Grain,
    files: &mut Vec<FileSpan>,
    nulls: &mut bool,
) -> Result<bool> {
    let metadata = table.metadata();
    let Some(field) = metadata.current_schema().field_by_name(column) else {
        return Ok(false);
    };
    let field_id = field.id;
    let live = changed_files(
        table.file_io(),
        metadata,
        None,
        metadata.current_snapshot_id(),
    )
    .await?;
    let Some(live) = live else {
        return Ok(false);
    };
    for file in live
        .iter()
        .filter(|f| f.content_type() == DataContentType::Data)
    {
        if file.null_value_counts().get(&field_id) != Some(&0) {
            *nulls = true;
        }
        match file_times(file, field_id) {
            FileTimes::Within(lo, hi) => {
                let (first, last) = (grain.unit_of(lo), grain.unit_of(hi.max(lo)));
                if last as i64 - first as i64 >= MAX_UNITS_PER_FILE {
                    return Ok(false);
                }
                files.push(FileSpan {
                    first,
                    last,
                    rows: file.record_count(),
                    bytes: file.file_size_in_bytes(),
                });
            }
            FileTimes::AllNull => {}
            FileTimes::Unknown => return Ok(false),
        }
    }
    Ok(true)
}

/// Each file's rows spread evenly over the units it spans.
fn rows_per_unit(files: &[FileSpan]) -> BTreeMap<i32, u64> {
    let mut rows: BTreeMap<i32, u64> = BTreeMap::new();
    for f in files {
        let each = f.rows.div_ceil((f.last - f.first) as u64 + 1);
        for unit in f.first..=f.last {
            *rows.entry(unit).or_default() += each;
        }
    }
    rows
}

/// True when the batches `runs` read about as many bytes as one query would: a file whose
/// bounds span several batches is read by each of them, so inputs not laid out by time (an
/// unpartitioned table whose every file spans the whole history) would be decoded once per
/// batch; then the query runs whole.
fn reads_each_file_about_once(files: &[FileSpan], runs: &[(i32, i32, u64)]) -> bool {
    let once: u64 = files.iter().map(|f| f.bytes).sum();
    let batched: u64 = runs
        .iter()
        .map(|&(first, last, _)| {
            files
                .iter()
                .filter(|f| f.first <= last && f.last >= first)
                .map(|f| f.bytes)
                .sum::<u64>()
        })
        .sum();
    batched <= once + once / 4
}

/// Adjacent units grouped, in order, into contiguous runs `(first, last, rows)` of at most
/// `max_rows` rows each (a unit holding more is a run alone); a gap between units belongs to
/// the run before it.
fn group_units(rows_per_unit: &BTreeMap<i32, u64>, max_rows: u64) -> Vec<(i32, i32, u64)> {
    let mut runs: Vec<(i32, i32, u64)> = Vec::new();
    for (&unit, &rows) in rows_per_unit {
        match runs.last_mut() {
            Some(run) if run.2 + rows <= max_rows => {
                run.1 = unit;
                run.2 += rows;
            }
            Some(run) => {
                run.1 = unit - 1;
                runs.push((unit, unit, rows));
            }
            None => runs.push((unit, unit, rows)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_grouped_up_to_the_row_budget_and_gaps_join_the_batch_before() {
        let units: BTreeMap<i32, u64> = [
            (10, 400),
            (11, 500),
            (12, 300),
            (15, 900),
            (16, 2_000),
            (17, 50),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            group_units(&units, 1_000),
            vec![
                (10, 11, 900),
                (12, 14, 300),
                (15, 15, 900),
                (16, 16, 2_000),
                (17, 17, 50)
            ]
        );
        // The runs cover every unit from the first to the last, each exactly once.
        let runs = group_units(&units, 1_000);
        for pair in runs.windows(2) {
            assert_eq!(pair[0].1 + 1, pair[1].0);
        }
        assert_eq!(runs.iter().map(|r| r.2).sum::<u64>(), 4_150);
        assert_eq!(group_units(&units, u64::MAX), vec![(10, 17, 4_150)]);
    }

    #[test]
    fn batches_grow_with_the_memory_pool_down_to_a_floor() {
        assert_eq!(rows_for_pool(1024), 500_000);
        assert_eq!(rows_for_pool(4096), 2_000_000);
        assert_eq!(rows_for_pool(512), 250_000);
        assert_eq!(rows_for_pool(16), MIN_BATCH_ROWS);
    }

    fn file(first: i32, last: i32, rows: u64) -> FileSpan {
        FileSpan {
            first,
            last,
            rows,
            bytes: rows * 10,
        }
    }

    #[test]
    fn files_laid_out_by_time_are_batched_and_files_spanning_the_history_are_not() {
        // One file per month (a month-partitioned bronze table): each read by one batch.
        let monthly: Vec<FileSpan> = (0..12).map(|m| file(m, m, 1_000)).collect();
        let per_unit = rows_per_unit(&monthly);
        assert_eq!(per_unit.values().sum::<u64>(), 12_000);
        let runs = group_units(&per_unit, 3_000);
        assert_eq!(runs.len(), 4);
        assert!(reads_each_file_about_once(&monthly, &runs));
        // Four files each spanning the whole year: every batch would decode all of them.
        let spread: Vec<FileSpan> = (0..4).map(|_| file(0, 11, 3_000)).collect();
        let per_unit = rows_per_unit(&spread);
        assert_eq!(per_unit[&0], 4 * 250);
        let runs = group_units(&per_unit, 3_000);
        assert_eq!(runs.len(), 4);
        assert!(!reads_each_file_about_once(&spread, &runs));
        // A few files straddling a month boundary cost little: still batched.
        let mut mostly: Vec<FileSpan> = (0..12).map(|m| file(m, m, 1_000)).collect();
        mostly.push(file(5, 6, 100));
        assert!(reads_each_file_about_once(
            &mostly,
            &group_units(&rows_per_unit(&mostly), 3_000)
        ));
    }
}
