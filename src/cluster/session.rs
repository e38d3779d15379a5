//! Sessions on a Ballista cluster: the driver's client session (its queries are planned and
//! run by the scheduler and executors) and the session every query gets on the scheduler
//! (DataFusion's planner knowing the engine's write, the engine's own physical rule).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ballista::extension::{SessionConfigExt, SessionContextExt};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use super::codec::{LogicalCodec, PhysicalCodec};
use super::files::read_written;
use super::planner::ClusterPlanner;
use super::write_node::{ClusterWrite, WriteNode};
use crate::engine::{clean_message, StreamingRowNumber};
use crate::error::{Error, Result};
use crate::write::Written;

/// A client session of the scheduler at `url` (`df://host:port`): queries planned in it run on
/// the cluster, as Ballista job `job`, in `partitions` partitions (file groups of each scan,
/// shuffle partitions). Nothing connects until a query runs.
pub async fn cluster_session(url: &str, job: &str, partitions: usize) -> Result<SessionContext> {
    let mut config = SessionConfig::new_with_ballista()
        .with_information_schema(false)
        .with_default_catalog_and_schema("datafusion", "public")
        .with_target_partitions(partitions.max(1))
        .with_ballista_logical_extension_codec(Arc::new(LogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(PhysicalCodec::default()))
        .with_ballista_job_name(job);
    config.options_mut().sql_parser.collect_spans = true;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    SessionContext::remote_with_state(url, state)
        .await
        .map_err(|e| Error::Usage(format!("cannot use the Ballista scheduler at {url}: {e}")))
}

/// The scheduler's session for a query whose client settings are `config`, in `runtime`.
pub fn scheduler_session(
    config: SessionConfig,
    runtime: Arc<RuntimeEnv>,
) -> datafusion::error::Result<datafusion::execution::SessionState> {
    Ok(SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_query_planner(Arc::new(ClusterPlanner))
        .with_physical_optimizer_rule(Arc::new(StreamingRowNumber))
        .build())
}

/// Times a job is submitted before its failure stands, when it failed because an executor
/// was lost (see [`lost_executor`]).
const ATTEMPTS: usize = 3;

/// Runs `plan` on the cluster `session` belongs to, its rows written by the executors as
/// `write` says, and returns what they wrote (the files' entries, as the executors made them
/// from the files' footers). The rows never pass through here; `progress` learns their count
/// once the job is done. Nothing is committed: files of a failed attempt are never reported.
///
/// A job that fails because an executor was lost (Ballista reruns a lost executor's tasks
/// itself, but a task that cannot fetch its input from the lost executor fails the job) is
/// submitted again, up to [`ATTEMPTS`] times in all: with the lost executor gone, the new job
/// runs on the others.
pub async fn write_on_cluster(
    session: &SessionContext,
    plan: LogicalPlan,
    write: ClusterWrite,
    progress: &AtomicU64,
) -> Result<Written> {
    let table = write.destination.table.clone();
    let write = Arc::new(write);
    let mut attempt = 1;
    loop {
        match write_once(session, plan.clone(), write.clone()).await {
            Ok(written) => {
                let rows: u64 = written
                    .files
                    .iter()
                    .chain(&written.quarantine_files)
                    .map(|f| f.record_count())
                    .sum();
                progress.fetch_add(rows, Ordering::Relaxed);
                return Ok(written);
            }
            Err(Error::DataFusion(e)) if attempt < ATTEMPTS && lost_executor(&e) => {
                tracing::warn!(
                    table = %table,
                    "the cluster lost an executor while it wrote {table}; submitting its job again (attempt {} of {ATTEMPTS}): {}",
                    attempt + 1,
                    clean_message(&e)
                );
                attempt += 1;
            }
            Err(Error::DataFusion(e)) if lost_executor(&e) => {
                return Err(Error::Failed(format!(
                    "{table}: the cluster lost an executor in each of {ATTEMPTS} attempts; nothing was published ({})",
                    clean_message(&e)
                )))
            }
            Err(Error::DataFusion(e)) => {
                return Err(match cluster_gone(&e) {
                    Some(what) => Error::Failed(format!(
                        "{table}: {what}; nothing was published (--engine local runs the transforms here)"
                    )),
                    None => Error::DataFusion(e),
                })
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether a job failed because a process of the cluster could not be reached (an executor
/// whose shuffle output or results were needed, or the scheduler itself).
fn lost_executor(e: &datafusion::error::DataFusionError) -> bool {
    let text = e.to_string();
    text.contains("FetchFailed") || text.contains("Error connecting to Ballista")
}

/// What went wrong, in words, when a job failed because the cluster itself could not be
/// reached (nothing listens at the scheduler's address) or its connection broke (the
/// scheduler stopped); read from the transport error Ballista passes on.
fn cluster_gone(e: &datafusion::error::DataFusionError) -> Option<String> {
    let text = e.to_string();
    if let Some(after) = text.split("tcp connect error\", ").nth(1) {
        let address = after.split([',', ')', ' ']).next().unwrap_or("").trim();
        return Some(format!(
            "the cluster cannot be reached at {address} (is `pipeline scheduler` running there?)"
        ));
    }
    let broke = [
        "h2 protocol error",
        "error reading a body from connection",
        "broken pipe",
    ];
    broke.iter().any(|b| text.contains(b)).then(|| {
        "the connection to the Ballista scheduler broke while the job ran (did the scheduler stop?)"
            .to_string()
    })
}

async fn write_once(
    session: &SessionContext,
    plan: LogicalPlan,
    write: Arc<ClusterWrite>,
) -> Result<Written> {
    let destination = write.destination.clone();
    let node = WriteNode::try_new(plan, write)?;
    let plan = LogicalPlan::Extension(Extension {
        node: Arc::new(node),
    });
    let mut stream = session
        .execute_logical_plan(plan)
        .await
        .map_err(Error::DataFusion)?
        .execute_stream()
        .await
        .map_err(Error::DataFusion)?;
    let mut written = Written::default();
    while let Some(batch) = stream.next().await {
        read_written(
            &batch.map_err(Error::DataFusion)?,
            &destination,
            &mut written,
        )?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use datafusion::error::DataFusionError;

    use super::*;

    #[test]
    fn a_cluster_that_is_gone_is_said_in_words() {
        let refused = DataFusionError::Execution(
            "tonic::transport::Error(Transport, ConnectError(ConnectError(\"tcp connect error\", 127.0.0.1:1, Os { code: 111 })))".into(),
        );
        assert_eq!(
            cluster_gone(&refused).unwrap(),
            "the cluster cannot be reached at 127.0.0.1:1 (is `pipeline scheduler` running there?)"
        );
        let broken = DataFusionError::Execution(
            "code: 'Unknown error', message: \"h2 protocol error: error reading a body from connection\"".into(),
        );
        assert!(cluster_gone(&broken)
            .unwrap()
            .contains("did the scheduler stop?"));
        let other = DataFusionError::Execution("Divide by zero error".into());
        assert_eq!(cluster_gone(&other), None);
        let fetch = DataFusionError::Execution(
            "FetchFailed(\"e1\", 1, 9, \"Error connecting to Ballista scheduler or executor at http://127.0.0.1:45765\")".into(),
        );
        assert!(lost_executor(&fetch));
        assert!(!lost_executor(&other));
    }
}
