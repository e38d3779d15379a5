//! Streaming a transform's result into its table's data files. A large result of a partitioned
//! table is written by one writer per target partition at once (Parquet encoding and
//! compression are the costly part of a transform), its rows hash-partitioned by the table's
//! partition keys so that every table partition still goes to exactly one writer: the files are
//! the ones a single writer would write, only sooner. Small results, and unpartitioned tables
//! (whose parallel writers would each leave a file), are written by one writer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use datafusion::common::Column;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::functions::datetime::expr_fn::date_trunc;
use datafusion::logical_expr::{lit, Expr, LogicalPlan};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{execute_stream, ExecutionPlan, Partitioning};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use iceberg::spec::{DataFile, Transform};
use tokio::task::JoinSet;

use super::drop;
use crate::commit::TableTarget;
use crate::engine::clean_message;
use crate::error::{Error, Result};
use crate::spec::TransformJob;
use crate::write::TableWriter;

/// Input rows from which a partitioned table's result is written by parallel writers
/// (`PIPELINE_PARALLEL_WRITE_MIN_ROWS` overrides it).
pub const PARALLEL_WRITE_MIN_INPUT_ROWS: u64 = 500_000;

fn parallel_write_min_rows() -> u64 {
    std::env::var("PIPELINE_PARALLEL_WRITE_MIN_ROWS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(PARALLEL_WRITE_MIN_INPUT_ROWS)
}

/// What the writers wrote: the table's files, the quarantine table's, rows dropped per
/// expectation.
pub struct Written {
    pub files: Vec<DataFile>,
    pub quarantine_files: Vec<DataFile>,
    pub dropped: BTreeMap<String, u64>,
}

/// Where the result goes: the table (and its quarantine table, with `drop` expectations).
pub struct Targets<'a> {
    pub table: &'a TableTarget,
    pub quarantine: Option<&'a TableTarget>,
    pub file_io: &'a iceberg::io::FileIO,
    /// File name prefix, unique per run and job; writers add their number.
    pub prefix: &'a str,
    pub run_id: &'a str,
}

/// The hash keys that send each partition of `job`'s table to one writer: the time
/// transforms as `date_trunc` of their column, other fields as their column. `None` for an
/// unpartitioned table.
fn partition_keys(job: &TransformJob) -> Option<Vec<Expr>> {
    let keys: Vec<Expr> = job
        .partition_by
        .iter()
        .map(|p| {
            let unit = match p.transform {
                Transform::Year => Some("year"),
                Transform::Month => Some("month"),
                Transform::Day => Some("day"),
                Transform::Hour => Some("hour"),
                _ => None,
            };
            let column = Expr::Column(Column::new_unqualified(p.source.as_str()));
            match unit {
                Some(unit) => date_trunc(lit(unit), column),
                None => column,
            }
        })
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// The writers `job`'s result gets, reading `input_rows` rows in `session`: one per target
/// partition with the keys that deal rows to them, or `None` for a single writer.
fn parallel_writers(
    session: &SessionContext,
    job: &TransformJob,
    input_rows: u64,
) -> Option<(usize, Vec<Expr>)> {
    let n = session.state().config().target_partitions();
    if n < 2 || input_rows < parallel_write_min_rows() {
        return None;
    }
    partition_keys(job).map(|keys| (n, keys))
}

/// Runs `plan` and writes its rows into `targets`, counting them into `progress`.
pub async fn write_result(
    session: &SessionContext,
    job: &TransformJob,
    plan: LogicalPlan,
    input_rows: u64,
    targets: Targets<'_>,
    progress: Arc<AtomicU64>,
) -> Result<Written> {
    let parallel = parallel_writers(session, job, input_rows);
    let df = session.execute_logical_plan(plan).await?;
    let schema = df.schema().clone();
    let task_ctx = Arc::new(df.task_ctx());
    let physical = df
        .create_physical_plan()
        .await
        .map_err(|e| exec_error(&job.sql_file, e))?;
    let streams: Vec<SendableRecordBatchStream> = match parallel {
        // After the optimizer (which drops a repartition nothing above asks for): rows are
        // dealt to the writers by their table partition.
        Some((n, keys)) => {
            let keys = keys
                .into_iter()
                .map(|k| session.state().create_physical_expr(k, &schema))
                .collect::<datafusion::error::Result<Vec<_>>>()?;
            let dealt = Arc::new(RepartitionExec::try_new(
                physical,
                Partitioning::Hash(keys, n),
            )?);
            (0..n)
                .map(|i| dealt.execute(i, task_ctx.clone()))
                .collect::<datafusion::error::Result<_>>()
        }
        None => execute_stream(physical, task_ctx).map(|s| vec![s]),
    }
    .map_err(|e| exec_error(&job.sql_file, e))?;
    let mut tasks = JoinSet::new();
    for (i, stream) in streams.into_iter().enumerate() {
        let prefix = format!("{}-{i}", targets.prefix);
        let table = &job.table.to_string();
        let writer = TableWriter::new(
            table,
            &targets.table.metadata,
            targets.file_io.clone(),
            job.target_file_size,
            &prefix,
        )
        .await?;
        let quarantine = match targets.quarantine {
            Some(q) => Some(
                TableWriter::new(
                    &job.table.quarantine().to_string(),
                    &q.metadata,
                    targets.file_io.clone(),
                    job.target_file_size,
                    &prefix,
                )
                .await?,
            ),
            None => None,
        };
        tasks.spawn(drain(
            stream,
            writer,
            quarantine,
            targets.run_id.to_string(),
            job.sql_file.clone(),
            progress.clone(),
        ));
    }
    let mut written = Written {
        files: Vec::new(),
        quarantine_files: Vec::new(),
        dropped: BTreeMap::new(),
    };
    while let Some(done) = tasks.join_next().await {
        let one = done.map_err(|e| Error::Internal(format!("a writer task failed: {e}")))??;
        written.files.extend(one.files);
        written.quarantine_files.extend(one.quarantine_files);
        for (name, n) in one.dropped {
            *written.dropped.entry(name).or_default() += n;
        }
    }
    Ok(written)
}

/// Writes one stream into `writer` (violating rows into `quarantine`) and closes both.
async fn drain(
    mut stream: SendableRecordBatchStream,
    mut writer: TableWriter,
    mut quarantine: Option<TableWriter>,
    run_id: String,
    sql_file: PathBuf,
    progress: Arc<AtomicU64>,
) -> Result<Written> {
    let mut dropped = BTreeMap::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| exec_error(&sql_file, e))?;
        progress.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        match quarantine.as_mut() {
            None => writer.write(batch).await?,
            Some(q_writer) => {
                let (kept, rejected) = drop::split(&batch, &run_id, &mut dropped)?;
                writer.write(kept).await?;
                if let Some(rejected) = rejected {
                    q_writer.write(rejected).await?;
                }
            }
        }
    }
    let quarantine_files = match quarantine {
        Some(q) => q.close().await?,
        None => Vec::new(),
    };
    Ok(Written {
        files: writer.close().await?,
        quarantine_files,
        dropped,
    })
}

/// A failure while the query ran: a storage problem (a file missing or cut short, a full
/// disk) said plainly, anything else as the SQL file's execution error.
pub fn exec_error(sql_file: &std::path::Path, e: DataFusionError) -> Error {
    Error::from_source(&e).unwrap_or_else(|| Error::Execution {
        file: sql_file.to_path_buf(),
        message: clean_message(&e),
    })
}
