//! The options `pipeline run` and `pipeline backfill` share (and `test` its `--select`): which
//! jobs, in which environment, on which engine, and how long to wait for the lock.

use crate::run::LockWait;
use crate::spec::Engine;

/// What `run` and `backfill` share: why, which jobs, where they write, on which engine, and
/// how long to wait for the pipeline's lock.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Why this is run (a ticket, an incident, "late February files"): kept in the run
    /// record that `pipeline runs` and `pipeline run-info` show.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub select: SelectArg,
    #[command(flatten)]
    pub env: EnvArg,
    #[command(flatten)]
    pub engine: EngineArg,
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// Which jobs a run or a backfill covers.
#[derive(clap::Args)]
pub struct SelectArg {
    /// Only these jobs, named by the tables they write (comma-separated, or repeated):
    /// `silver.orders` (that job), `silver.orders+` (and every job downstream of it),
    /// `+gold.fact_orders` (and every job it reads from, up to the ingests). Tables left out
    /// keep what they have; selected ones read them as published.
    #[arg(long, value_name = "TABLES")]
    pub select: Vec<String>,
}

/// Where a run's transforms execute.
#[derive(clap::Args)]
pub struct EngineArg {
    /// Where transforms run: `local` (this machine), `ballista` (the cluster of the spec's
    /// [engine]) or a Ballista scheduler's URL, `df://host:50050` (started with `pipeline
    /// scheduler`). Default: the spec's [engine], else local. Ingest, audits and the publish
    /// always run here.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
}

impl EngineArg {
    /// The engine `--engine` names for a run of `spec` (`None`: the spec's own).
    pub fn choice(&self, spec: &crate::spec::Pipeline) -> crate::error::Result<Option<Engine>> {
        self.engine
            .as_deref()
            .map(|e| Engine::parse_choice(e, &spec.engine).map_err(crate::error::Error::Usage))
            .transpose()
    }
}

/// Waiting for another run of the same pipeline.
#[derive(clap::Args)]
pub struct WaitArgs {
    /// Fail at once if another run of this pipeline is in progress (default: wait for it).
    #[arg(long)]
    pub no_wait: bool,
    /// How long to wait for another run of this pipeline to finish.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub wait_timeout: u64,
}

impl WaitArgs {
    /// How long a run waits for another run of the same pipeline.
    pub fn lock_wait(&self) -> LockWait {
        LockWait((!self.no_wait).then(|| std::time::Duration::from_secs(self.wait_timeout)))
    }
}

/// The environment a run writes to.
#[derive(clap::Args)]
pub struct EnvArg {
    /// Write every table the run changes to its Iceberg branch NAME instead of `main`
    /// (created from `main`'s current snapshot, zero copy; tables the run leaves alone are
    /// read from their branch NAME where they have one, else from `main`). Readers of `main`
    /// see nothing; PyIceberg, Spark and Trino read the branch by name. On every catalog.
    #[arg(long, value_name = "NAME")]
    pub env: Option<String>,
}

/// `pipeline env ...`.
#[derive(clap::Subcommand)]
pub enum EnvAction {
    /// List the environments of a pipeline's tables: per environment, the tables that have
    /// its branch and each branch's head snapshot.
    List { pipeline: String },
    /// Compare environment NAME with main, table by table: schema changes (by field id), row
    /// counts, and the rows that differ (over the columns both have): added, removed and,
    /// paired by the table's key, changed (with the columns that changed), per partition,
    /// with samples. Only the data files one side alone has are read. Exit status 1 when
    /// anything differs (for CI), 0 when nothing does. Writes nothing.
    ///
    /// A table's key is its first `unique` expectation, or --key:
    ///   pipeline env diff retail dev --key silver.customers:customer_id
    ///   pipeline env diff retail dev --tables gold.fact_orders --key order_id+line
    #[command(verbatim_doc_comment)]
    Diff {
        pipeline: String,
        name: String,
        /// Only these tables (comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "TABLES")]
        tables: Vec<String>,
        /// Pair rows by these columns (`a+b`), for one table (`TABLE:a+b`) or every table;
        /// repeatable.
        #[arg(long, value_name = "[TABLE:]COLUMNS")]
        key: Vec<String>,
    },
    /// Publish environment NAME: `main` of every table it changed fast-forwards to the
    /// table's branch NAME, all tables in one atomic publish, recorded; `pipeline rollback
    /// RUN` undoes it. Refused, publishing nothing, when `main` of a table moved since the
    /// branch was made (the tables are named), unless --rebase. The branches stay until
    /// `env drop`.
    Publish {
        pipeline: String,
        name: String,
        /// Why (kept in the record).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// When `main` moved: start the environment's branches again from `main`, run the
        /// environment again (the project's SQL as it is now), then publish. Refused when
        /// row edits made in the environment (`sql --env`) would be lost.
        #[arg(long)]
        rebase: bool,
    },
    /// Remove environment NAME: its branch of every table of the pipeline, in one publish,
    /// recorded. `main` does not move; the branch's snapshots and files go with the next
    /// expiry of `pipeline maintain` (or a run's maintenance).
    Drop {
        pipeline: String,
        name: String,
        /// Why (kept in the record).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
}
