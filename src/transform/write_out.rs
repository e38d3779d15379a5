//! Streaming a transform's result into its table's data files. A large result of a partitioned
//! table is written by one writer per target partition at once (Parquet encoding and
//! compression are the costly part of a transform), its rows hash-partitioned by the table's
//! partition keys so that every table partition still goes to exactly one writer: the files are
//! the ones a single writer would write, only sooner. Small results, and unpartitioned tables
//! (whose parallel writers would each leave a file), are written by one writer.
//!
//! On a cluster the same decision holds, and the writers are the executors' tasks
//! ([`crate::cluster::write_on_cluster`]): only the written files' descriptions come back.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{execute_stream, ExecutionPlan, Partitioning};
use datafusion::prelude::SessionContext;
use tokio::task::JoinSet;

use crate::cluster::{write_on_cluster, ClusterWrite};
use crate::commit::TableTarget;
use crate::engine::clean_message;
use crate::error::{Error, Result};
use crate::spec::TransformJob;
use crate::write::{drain, partition_keys, Destination, FileLayout, Written};

/// Input rows from which a partitioned table's result is written by parallel writers
/// (`PIPELINE_PARALLEL_WRITE_MIN_ROWS` overrides it).
pub const PARALLEL_WRITE_MIN_INPUT_ROWS: u64 = 500_000;

fn parallel_write_min_rows() -> u64 {
    std::env::var("PIPELINE_PARALLEL_WRITE_MIN_ROWS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(PARALLEL_WRITE_MIN_INPUT_ROWS)
}

/// Where the result goes: the table (and its quarantine table, with `drop` expectations).
pub struct Targets<'a> {
    pub table: &'a TableTarget,
    pub quarantine: Option<&'a TableTarget>,
    pub file_io: &'a iceberg::io::FileIO,
    /// File name prefix, unique per run and job; writers add their number.
    pub prefix: &'a str,
    pub run_id: &'a str,
    /// The query runs on a cluster (its session is a Ballista client's).
    pub on_cluster: bool,
}

/// The hash keys that deal `job`'s result to parallel writers, when it gets them: a
/// partitioned table, and at least `PARALLEL_WRITE_MIN_INPUT_ROWS` input rows.
fn parallel_keys(targets: &Targets<'_>, input_rows: u64) -> Option<Vec<Expr>> {
    if input_rows < parallel_write_min_rows() {
        return None;
    }
    partition_keys(&FileLayout::of(&targets.table.metadata).ok()?)
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
    let destination = destination_of(job, &targets)?;
    let keys = parallel_keys(&targets, input_rows);
    if targets.on_cluster {
        let write = ClusterWrite {
            destination,
            prefix: targets.prefix.to_string(),
            run_id: targets.run_id.to_string(),
            parallel: keys.is_some(),
        };
        return write_on_cluster(session, plan, write, &progress)
            .await
            .map_err(|e| match e {
                Error::DataFusion(e) => exec_error(&job.sql_file, e),
                e => e,
            });
    }
    let n = session.state().config().target_partitions();
    let parallel = keys.filter(|_| n >= 2);
    let streams = result_streams(session, job, plan, parallel, n).await?;
    drain_all(streams, destination, job, &targets, progress).await
}

/// The data files `job` writes: its table's (and its quarantine table's) file layouts.
fn destination_of(job: &TransformJob, targets: &Targets<'_>) -> Result<Destination> {
    Ok(Destination {
        table: job.table.to_string(),
        layout: FileLayout::of(&targets.table.metadata)?,
        quarantine: match targets.quarantine {
            Some(q) => Some((
                job.table.quarantine().to_string(),
                FileLayout::of(&q.metadata)?,
            )),
            None => None,
        },
        target_file_size: job.target_file_size,
    })
}

/// Plans and starts `plan` here: one stream of its rows, or with `parallel` keys, `n` streams
/// the rows are dealt to by their table partition.
async fn result_streams(
    session: &SessionContext,
    job: &TransformJob,
    plan: LogicalPlan,
    parallel: Option<Vec<Expr>>,
    n: usize,
) -> Result<Vec<SendableRecordBatchStream>> {
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
        Some(keys) => {
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
    Ok(streams)
}

/// Drains every stream into `destination` on a writer task of its own (writer `i` names its
/// files `<prefix>-<i>`); returns all they wrote, or the first failure.
async fn drain_all(
    streams: Vec<SendableRecordBatchStream>,
    destination: Destination,
    job: &TransformJob,
    targets: &Targets<'_>,
    progress: Arc<AtomicU64>,
) -> Result<Written> {
    let destination = Arc::new(destination);
    let mut tasks = JoinSet::new();
    for (i, stream) in streams.into_iter().enumerate() {
        let prefix = format!("{}-{i}", targets.prefix);
        let (destination, file_io) = (destination.clone(), targets.file_io.clone());
        let (run_id, sql_file) = (targets.run_id.to_string(), job.sql_file.clone());
        let progress = progress.clone();
        tasks.spawn(async move {
            let query_error = |e| exec_error(&sql_file, e);
            drain(
                stream,
                &destination,
                &file_io,
                &prefix,
                &run_id,
                &progress,
                query_error,
            )
            .await
        });
    }
    let mut written = Written::default();
    while let Some(done) = tasks.join_next().await {
        let one = done.map_err(|e| Error::Internal(format!("a writer task failed: {e}")))??;
        written.absorb(one);
    }
    Ok(written)
}

/// A failure while the query ran: a storage problem (a file missing or cut short, a full
/// disk) said plainly, anything else as the SQL file's execution error.
pub fn exec_error(sql_file: &std::path::Path, e: DataFusionError) -> Error {
    Error::from_source(&e).unwrap_or_else(|| Error::Execution {
        file: sql_file.to_path_buf(),
        message: clean_message(&e),
    })
}
