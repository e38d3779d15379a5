//! `pipeline scheduler` and `pipeline executor`: Ballista's own scheduler and executor
//! (the `ballista-scheduler` and `ballista-executor` libraries, unchanged), started with the
//! engine's codecs and scheduler session so they can run a transform's plan. A cluster runs
//! these two commands of the same `pipeline` binary as its driver. Each reaches S3 with its
//! own settings and credentials ([`NodeS3`]); a plan names files, never how to sign for them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ballista_core::config::TaskSchedulingPolicy;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::start_server;
use datafusion::execution::runtime_env::RuntimeEnv;

use super::codec::{LogicalCodec, PhysicalCodec};
use super::session::scheduler_session;

use crate::catalog::NodeS3;
use crate::engine::{node_runtime_env, NodeStores};
use crate::error::{Error, Result};

/// How a scheduler is started.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Where it listens for clients and executors.
    pub bind: SocketAddr,
    /// The host name executors and clients are told to reach it by.
    pub external_host: String,
    /// An executor silent for this long is taken as lost: its tasks run again elsewhere.
    pub executor_timeout: Duration,
    /// How it reaches S3 (it reads the footers of the files a plan names on S3).
    pub s3: NodeS3,
}

/// Runs a scheduler until the process is stopped (or it fails).
pub async fn run_scheduler(options: SchedulerOptions) -> Result<()> {
    let (runtime, codec) = node_parts(&options.s3)?;
    let config = SchedulerConfig {
        bind_host: options.bind.ip().to_string(),
        bind_port: options.bind.port(),
        external_host: options.external_host.clone(),
        scheduling_policy: TaskSchedulingPolicy::PullStaged,
        task_distribution: TaskDistributionPolicy::RoundRobin,
        executor_timeout_seconds: options.executor_timeout.as_secs().max(1),
        expire_dead_executor_interval_seconds: (options.executor_timeout.as_secs() / 4)
            .clamp(1, 15),
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(codec)),
        override_session_builder: Some(Arc::new(move |config| {
            scheduler_session(config, runtime.clone())
        })),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| Error::Failed(format!("the Ballista scheduler cannot start: {e}")))?;
    tracing::info!(address = %options.bind, "Ballista scheduler listening");
    start_server(cluster, options.bind, Arc::new(config))
        .await
        .map_err(|e| Error::Failed(format!("the Ballista scheduler stopped: {e}")))
}

/// How an executor is started.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The scheduler it registers with (`host:port`).
    pub scheduler_host: String,
    pub scheduler_port: u16,
    /// Where it listens: Arrow Flight on `port` (results and shuffle data), gRPC on
    /// `grpc_port` (tasks pushed by the scheduler).
    pub bind_host: String,
    pub external_host: String,
    pub port: u16,
    pub grpc_port: u16,
    /// Tasks it runs at once (default: one per core).
    pub concurrent_tasks: usize,
    /// Where shuffle files go.
    pub work_dir: PathBuf,
    /// How often it tells the scheduler it is alive.
    pub heartbeat: Duration,
    /// How it reaches S3 (reads and writes of tables on S3, with its own credentials).
    pub s3: NodeS3,
}

/// The runtime (memory budget, object stores knowing S3 through `s3`) and the physical codec
/// of a node reaching S3 as `s3` says.
fn node_parts(s3: &NodeS3) -> Result<(Arc<RuntimeEnv>, PhysicalCodec)> {
    let file_io = s3.file_io();
    let runtime = node_runtime_env(Arc::new(NodeStores::new(file_io.clone())))?;
    Ok((runtime, PhysicalCodec::for_node(file_io)))
}

/// Runs an executor until the process is stopped (ctrl-c or SIGTERM) or it fails.
pub async fn run_executor(options: ExecutorOptions) -> Result<()> {
    std::fs::create_dir_all(&options.work_dir).map_err(|e| Error::Io {
        path: options.work_dir.clone(),
        source: e,
    })?;
    let (runtime, codec) = node_parts(&options.s3)?;
    let config = ExecutorProcessConfig {
        bind_host: options.bind_host,
        external_host: Some(options.external_host),
        port: options.port,
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler_host,
        scheduler_port: options.scheduler_port,
        concurrent_tasks: options.concurrent_tasks,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        work_dir: Some(options.work_dir.display().to_string()),
        executor_heartbeat_interval_seconds: options.heartbeat.as_secs().max(1),
        override_runtime_producer: Some(Arc::new(move |_| Ok(runtime.clone()))),
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(codec)),
        ..ExecutorProcessConfig::default()
    };
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| Error::Failed(format!("the Ballista executor stopped: {e}")))
}
