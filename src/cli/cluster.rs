//! `pipeline scheduler` and `pipeline executor`: the two processes of a Ballista cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::catalog::NodeS3;
use crate::cluster::{run_executor, run_scheduler, ExecutorOptions, SchedulerOptions};
use crate::error::{Error, Result};

/// How a node of the cluster reaches S3, for tables whose files are there. Credentials are
/// never given here: each node signs with the AWS credential chain of its own environment
/// (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, credential_process, SSO, an
/// instance or container role), loaded when it first touches S3.
#[derive(clap::Args)]
pub struct NodeS3Args {
    /// An S3-compatible endpoint (MinIO, a VPC endpoint); default: AWS_ENDPOINT_URL_S3 or
    /// AWS_ENDPOINT_URL, else AWS's own.
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// The S3 region (default: AWS_REGION or AWS_DEFAULT_REGION).
    #[arg(long, value_name = "REGION")]
    pub s3_region: Option<String>,
    /// Path-style S3 requests (ENDPOINT/BUCKET/KEY), as most S3-compatible stores want.
    #[arg(long)]
    pub s3_path_style: bool,
}

impl NodeS3Args {
    fn settings(&self) -> NodeS3 {
        NodeS3 {
            endpoint: self.s3_endpoint.clone(),
            region: self.s3_region.clone(),
            path_style: self.s3_path_style,
        }
        .with_environment()
    }
}

/// `pipeline scheduler`.
#[derive(clap::Args)]
pub struct SchedulerArgs {
    /// Where it listens for clients and executors.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50050")]
    pub bind: SocketAddr,
    /// The host name executors and clients reach it by (default: the bind address's IP).
    #[arg(long, value_name = "HOST")]
    pub external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor is taken as lost and its tasks run
    /// again on the others (keep it above the executors' --heartbeat).
    #[arg(long, value_name = "SECONDS", default_value_t = 180)]
    pub executor_timeout: u64,
    #[command(flatten)]
    pub s3: NodeS3Args,
}

/// `pipeline executor`.
#[derive(clap::Args)]
pub struct ExecutorArgs {
    /// The scheduler to register with, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    pub scheduler: String,
    /// The address it listens on: Arrow Flight (results, shuffles) on PORT, task gRPC on
    /// --grpc-port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub bind: SocketAddr,
    /// The port the scheduler pushes tasks to (default: the Flight port + 1).
    #[arg(long, value_name = "PORT")]
    pub grpc_port: Option<u16>,
    /// The host name the scheduler and clients reach it by (default: the bind address's IP).
    #[arg(long, value_name = "HOST")]
    pub external_host: Option<String>,
    /// Tasks it runs at once (default: one per core).
    #[arg(long, value_name = "N")]
    pub concurrent_tasks: Option<usize>,
    /// Where shuffle files go (default: a folder under the system's temporary folder).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Seconds between heartbeats to the scheduler.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub heartbeat: u64,
    #[command(flatten)]
    pub s3: NodeS3Args,
}

/// Runs the scheduler until the process is stopped.
pub async fn scheduler(args: &SchedulerArgs) -> Result<()> {
    run_scheduler(SchedulerOptions {
        bind: args.bind,
        external_host: args
            .external_host
            .clone()
            .unwrap_or_else(|| args.bind.ip().to_string()),
        executor_timeout: Duration::from_secs(args.executor_timeout),
        s3: args.s3.settings(),
    })
    .await
}

/// Runs the executor until the process is stopped.
pub async fn executor(args: &ExecutorArgs) -> Result<()> {
    let (host, port) = args
        .scheduler
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
        .ok_or_else(|| {
            Error::Usage(format!(
                "--scheduler {}: write HOST:PORT, e.g. 127.0.0.1:50050",
                args.scheduler
            ))
        })?;
    let port_plus_one = args
        .bind
        .port()
        .checked_add(1)
        .ok_or_else(|| Error::Usage("--bind: give a port below 65535 or --grpc-port".into()))?;
    let work_dir = args.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("pipeline-executor-{}", args.bind.port()))
    });
    run_executor(ExecutorOptions {
        scheduler_host: host,
        scheduler_port: port,
        bind_host: args.bind.ip().to_string(),
        external_host: args
            .external_host
            .clone()
            .unwrap_or_else(|| args.bind.ip().to_string()),
        port: args.bind.port(),
        grpc_port: args.grpc_port.unwrap_or(port_plus_one),
        concurrent_tasks: args.concurrent_tasks.unwrap_or(0),
        work_dir,
        heartbeat: Duration::from_secs(args.heartbeat),
        s3: args.s3.settings(),
    })
    .await
}
