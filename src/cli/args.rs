//! The command line as clap reads it: global options and one variant per command, each with
//! the help text `pipeline --help` and `pipeline COMMAND --help` print.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use super::run_args::{EngineArg, EnvAction, EnvArg, RunArgs, SelectArg, WaitArgs};

/// Medallion ETL on Apache Iceberg: CSV/JSON files into bronze tables, SQL into silver and gold.
///
/// A pipeline is pipelines/NAME.toml plus the SQL files it names. Tables live in an Iceberg
/// catalog (by default an embedded SQLite catalog in ./warehouse) that PyIceberg, DuckDB,
/// Spark and Trino read directly.
///
/// Examples:
///   pipeline run retail                 run every job, publish all tables at once
///   pipeline backfill retail --from 2026-02-01 --to 2026-02-28 --plan
///                                       what recomputing February would touch
///   pipeline validate retail            check spec and SQL without running
///   pipeline plan retail                schema changes the SQL would make, and who they break
///   pipeline lineage gold.fact_orders.customer_name
///                                       where a column comes from, down to the source files
///   pipeline run retail --catalog prod  the same spec on its [catalogs.prod] (S3 Tables, REST)
///   pipeline tables                     list tables
///   pipeline describe gold.customer_metrics
///   pipeline history silver.orders      snapshots, newest last
///   pipeline query "SELECT * FROM gold.monthly_revenue ORDER BY month"
///   pipeline query "SELECT count(*) FROM silver.orders" --as-of 1234567890
///   pipeline docs retail --out site     a static site: DAG picture, table pages, runs
///   pipeline mcp                        the lake for AI agents (Model Context Protocol, stdio)
#[derive(Parser)]
#[command(name = "pipeline", version, verbatim_doc_comment)]
pub struct Cli {
    /// Project directory holding pipelines/, sql/ and the warehouse.
    #[arg(long, global = true, default_value = ".")]
    pub project: PathBuf,
    /// Use the spec's `[catalogs.NAME]` instead of its `[catalog]` (e.g. a local catalog for
    /// development, `--catalog prod` for S3 Tables), with every command.
    #[arg(long, global = true, value_name = "NAME")]
    pub catalog: Option<String>,
    /// Print machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a pipeline: load new source files, recompute what changed, publish all tables at once.
    ///
    /// Ingest jobs load only files no earlier run loaded. A transform whose inputs and SQL are
    /// unchanged since its table's last run is skipped ("up to date"); one with
    /// mode = "replace_partitions" recomputes only the partitions whose input rows changed;
    /// any other is recomputed whole. Every table of the run is published in one catalog
    /// transaction, or none is.
    #[command(verbatim_doc_comment)]
    Run {
        /// Pipeline name: pipelines/<PIPELINE>.toml.
        pipeline: String,
        /// Recompute every transform whole, even when nothing changed.
        #[arg(long)]
        full_refresh: bool,
        /// Load again source files whose content changed since they were loaded: their old
        /// rows are replaced by the new content in the same commit (default: such a file
        /// stops the run).
        #[arg(long)]
        reload_changed: bool,
        /// Only print what the run would do, job by job: the files each ingest would load,
        /// which transforms would run and why (new files, changed SQL, changed inputs, a full
        /// refresh), the partitions each would replace and what it would read. Nothing is
        /// written.
        #[arg(long)]
        plan: bool,
        #[command(flatten)]
        flags: RunArgs,
    },
    /// Recompute the partitions of a date range in selected tables and everything downstream.
    ///
    /// Each selected table (default: every transform partitioned by year/month/day/hour) gets
    /// the partitions overlapping FROM..TO (inclusive) recomputed from its inputs as they are
    /// now, and exactly those partitions replaced; all its other data files stay as they are.
    /// Inputs declared in the transform's incremental_by are read for that range only.
    /// Downstream tables follow (their changed partitions, or a full refresh). No source files
    /// are loaded. Everything is published at once and can be undone with `pipeline rollback`.
    ///
    /// Example:
    ///   pipeline backfill retail --from 2026-02-01 --to 2026-02-28 --tables silver.orders --plan
    #[command(verbatim_doc_comment)]
    Backfill {
        pipeline: String,
        /// First day of the range (YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        from: String,
        /// Last day of the range, included (YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        to: String,
        /// Comma-separated tables to recompute (default: every time-partitioned transform).
        #[arg(long, value_delimiter = ',', value_name = "TABLES")]
        tables: Vec<String>,
        /// Only print what would happen (tables, partitions, input files and bytes); change nothing.
        #[arg(long)]
        plan: bool,
        #[command(flatten)]
        flags: RunArgs,
    },
    /// Check a pipeline (spec, SQL, dependencies, referenced tables) without running anything.
    Validate { pipeline: String },
    /// Run the pipeline's model tests: rows given for a transform's input tables, and the
    /// rows its SQL must return.
    ///
    /// Tests are `[[test]]` tables in the spec file and in tests/<PIPELINE>/*.toml. Each runs
    /// the transform's real SQL in memory on the rows given (an input not given is empty;
    /// columns a row leaves out are NULL) and compares what it returns, in any order, with `expect` on the columns
    /// `expect` names. No catalog is read or written. Exit status 1 when any test fails,
    /// with the rows missing and unexpected.
    ///
    ///   [[test]]
    ///   name = "a cancelled order keeps its row, status spelled one way"
    ///   table = "silver.orders"
    ///   given."bronze.pos_orders" = [
    ///     { order_id = 1, customer_id = 7, order_ts = "2026-01-03 09:12:00", quantity = 2,
    ///       unit_price = "5.00", status = " Canceled " },
    ///   ]
    ///   expect = [ { order_id = 1, amount = "10.00", status = "cancelled" } ]
    ///
    /// Rows may come from a CSV file with a header instead: given."bronze.x" = { csv = "tests/retail/x.csv" }.
    #[command(verbatim_doc_comment)]
    Test {
        pipeline: String,
        #[command(flatten)]
        select: SelectArg,
    },
    /// Show what the spec and SQL on disk would change in the live tables' schemas, and what
    /// each breaking change would break, before anything runs.
    ///
    /// Every transform is planned against the schemas the next run would produce and
    /// compared with its live table: columns added or widened are safe; dropped, renamed or
    /// retyped columns are BREAKING, listed with every transform SQL file:line that uses them
    /// today, the columns computed from them, and each declared [[reader]] (with its owner).
    /// Nothing is run or written.
    ///
    /// Example (in CI, before merging a SQL change):
    ///   pipeline plan retail --fail-on-breaking
    #[command(verbatim_doc_comment)]
    Plan {
        /// Pipeline name: pipelines/<PIPELINE>.toml.
        pipeline: String,
        /// Exit with status 3 when any change is breaking (or a transform would fail).
        #[arg(long)]
        fail_on_breaking: bool,
    },
    /// List the tables in the catalog.
    Tables {
        /// Use this pipeline's catalog (default: the only pipeline's, else the embedded default).
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// Show a table's schema, partition spec, current snapshot and row count.
    Describe {
        /// namespace.table
        table: String,
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// List a table's live data files: path, partition, rows, bytes, adding snapshot.
    Files {
        /// namespace.table
        table: String,
        /// Files of this snapshot instead of the current one.
        #[arg(long, value_name = "SNAPSHOT_ID")]
        as_of: Option<i64>,
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// List a table's snapshots: id, time, operation, row counts, run id.
    History {
        /// namespace.table
        table: String,
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// List published runs and rollbacks, oldest first: id, pipeline, tables, undo command.
    Runs {
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// Show one run: every table it changed, snapshot before and after, rows.
    RunInfo {
        /// A run id from `pipeline runs`.
        run_id: String,
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// Undo a run: every table it changed goes back to its previous snapshot, atomically.
    /// Refused if any of those tables changed after the run (roll back later runs first).
    Rollback {
        /// A run id from `pipeline runs`.
        run_id: String,
        /// Why this is run (a ticket, an incident, "late February files"): kept in the run
        /// record that `pipeline runs` and `pipeline run-info` show.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[arg(long)]
        pipeline: Option<String>,
        /// Say what the rollback would do to each table (move back, drop a table the run
        /// created, register a dropped table back); change nothing.
        #[arg(long)]
        plan: bool,
    },
    /// Run pipelines on their `[schedule]`: serve what is due now (`tick`), run as a scheduler
    /// (`run`), or show where each schedule stands (`status`).
    ///
    /// A tick runs at most once, whatever happens (two schedulers, a restart mid-run, `tick`
    /// from cron next to `run`): the run record holds the tick it served. A tick whose run
    /// failed for good (after the schedule's retries) is recorded as failed.
    /// Examples:
    ///   pipeline schedule tick                 from system cron, e.g. every 5 minutes
    ///   pipeline schedule run                  a foreground scheduler (SIGTERM: finish, exit)
    ///   pipeline schedule status retail
    ///   pipeline schedule tick --now 2026-03-01T02:05:00Z   as if it were that time
    #[command(verbatim_doc_comment)]
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
    /// Environments: the Iceberg branches `pipeline run --env NAME` writes.
    Env {
        #[command(subcommand)]
        action: EnvAction,
    },
    /// Check that the lake is intact: every table's metadata reads, and every file its current
    /// snapshot needs (manifest list, manifests, data files) exists with the recorded size.
    ///
    /// Nothing is changed. Each damaged table is listed with its bad files and what is wrong,
    /// and the run that wrote its current snapshot (roll it back to return to the last
    /// readable snapshot). Exit status 5 when anything is damaged.
    /// Examples:
    ///   pipeline check
    ///   pipeline check silver.orders --json
    #[command(verbatim_doc_comment)]
    Check {
        /// namespace.table (default: every table of the catalog).
        table: Option<String>,
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// List files in table folders that no snapshot of any table references (left by failed
    /// or killed runs); `--delete` removes them.
    ///
    /// `--delete` first takes the run lock of every pipeline of the project, waiting for runs
    /// in progress to publish or fail, so a file a run has written but not yet published is
    /// never deleted. Files younger than --older-than are never listed: below 60 minutes it
    /// needs --force (a run of a pipeline outside this project, or on another machine, may
    /// be writing into the same warehouse).
    /// Examples:
    ///   pipeline orphans                       list (nothing is deleted)
    ///   pipeline orphans --delete              delete those older than an hour
    #[command(verbatim_doc_comment)]
    Orphans(OrphansArgs),
    /// Keep a pipeline's tables fast and small: compact small files, rewrite many small
    /// manifests, expire old snapshots and delete the files only they referenced.
    ///
    /// Per table the pipeline writes (or --tables): each partition with at least
    /// min_input_files files smaller than 75 % of the target size is compacted into files of
    /// the target size (a `replace` snapshot: readers see the same rows); data manifests
    /// beyond max_manifests are rewritten into one; snapshots older than expire_older_than
    /// expire (never the newest keep_last, a branch or tag head, a snapshot a recent run can
    /// be rolled back to, or one a transform's next incremental run reads from), and the
    /// files no kept snapshot references are deleted. Settings: the spec's [maintenance].
    /// Takes the pipeline's run lock; recorded like a run (`pipeline runs`); its compactions
    /// are undone by `pipeline rollback`. Expiry cannot be undone.
    /// Examples:
    ///   pipeline maintain retail --plan       what would be done; nothing changes
    ///   pipeline maintain retail
    ///   pipeline maintain retail --tables silver.orders,gold.daily_revenue
    #[command(verbatim_doc_comment)]
    Maintain(MaintainArgs),
    /// Show where a table's columns come from: the upstream tree of each column through every
    /// transform's SELECT down to bronze and the source files' fields.
    ///
    /// Lineage is read from the SQL planned against the tables' schemas; nothing runs.
    /// Examples:
    ///   pipeline lineage gold.fact_orders.customer_name
    ///   pipeline lineage gold.monthly_revenue --format mermaid
    ///   pipeline lineage silver.orders.amount --format dot | dot -Tsvg > amount.svg
    #[command(verbatim_doc_comment)]
    Lineage {
        /// namespace.table or namespace.table.column
        target: String,
        /// text (a tree), dot (Graphviz), mermaid, or json (also with --json).
        #[arg(long, default_value = "text", value_parser = ["text", "dot", "mermaid", "json"])]
        format: String,
        /// The pipeline to read (default: the one that writes the table).
        #[arg(long)]
        pipeline: Option<String>,
        /// The other way: every column of the pipeline computed from the column (what a
        /// change of it reaches), instead of where it comes from.
        #[arg(long)]
        downstream: bool,
    },
    /// Delete or update rows of a table, copy-on-write, as a recorded and undoable change:
    ///   pipeline sql "DELETE FROM silver.customers WHERE customer_id = 4711" --reason "GDPR-12"
    ///   pipeline sql "UPDATE bronze.pos_orders SET status = 'cancelled' WHERE order_id = 1002"
    ///
    /// Only the data files holding matching rows are rewritten; the change is
    /// published atomically with a run record (`pipeline runs`, `pipeline rollback RUN_ID`),
    /// and the next run recomputes downstream the partitions whose files changed.
    #[command(verbatim_doc_comment)]
    Sql {
        /// One `DELETE FROM namespace.table WHERE condition` or `UPDATE namespace.table SET
        /// column = expression, ... WHERE condition`.
        statement: String,
        /// Why (a ticket, an incident): recorded in the run record.
        #[arg(long)]
        reason: Option<String>,
        /// The pipeline whose run lock and records to use (default: the one that writes the
        /// table).
        #[arg(long)]
        pipeline: Option<String>,
        /// Change the table's branch of environment NAME (`run --env NAME`), not `main`.
        #[arg(long, value_name = "NAME")]
        env: Option<String>,
    },
    /// Erase one subject (a customer) from every table of a pipeline that holds it,
    /// copy-on-write, in one atomic publish recorded as an `erase` run:
    ///   pipeline erase retail --where "customer_id = 4711" --plan
    ///   pipeline erase retail --where "customer_id = 4711" --reason "GDPR request 2026-118"
    ///
    /// A table holds the subject when it has the condition's columns: by name, under the name
    /// its `erase = { customer_id = "buyer_id" }` key gives, or (a transform) passed through
    /// from an input that holds it (column lineage). Quarantined raw lines are read field by
    /// field. Tables computed from erased ones without the subject (monthly totals) are
    /// recomputed in the same publish. The receipt (`pipeline run-info RUN`) names the
    /// landing files the rows came from; --rewrite-sources rewrites them without those
    /// records (the file ledger takes the new files as loaded). --purge then expires the
    /// older snapshots of the erased tables and deletes the files only they referenced.
    #[command(verbatim_doc_comment)]
    Erase {
        pipeline: String,
        /// The subject, as a SQL condition over the tables' columns.
        #[arg(long = "where", value_name = "CONDITION")]
        condition: String,
        /// Only list the tables, rows and files it would rewrite.
        #[arg(long)]
        plan: bool,
        /// With --plan: what it would find in environment NAME (each table's branch NAME, or
        /// `main` where the environment did not change it). An erase itself is on `main`.
        #[arg(long, value_name = "NAME", requires = "plan")]
        env: Option<String>,
        /// Why: recorded in the run record (required to erase).
        #[arg(long)]
        reason: Option<String>,
        /// Then expire every older snapshot of the erased tables (even those kept for
        /// rollback) and delete the data files and metadata only they referenced, so no file
        /// of the warehouse holds the rows any more (recorded as a `maintain` run).
        #[arg(long)]
        purge: bool,
        /// Also rewrite the landing files that held the subject's records without them.
        #[arg(long)]
        rewrite_sources: bool,
    },
    /// Write a static documentation site of a pipeline into a folder: its DAG as a picture,
    /// a page per table (schema, partitioning, SQL, column lineage, expectations and their
    /// last results, snapshots) and the runs (who, why, what changed, checks, how to undo).
    ///
    /// The folder opens from disk in any browser (no server, no network):
    ///   pipeline docs retail --out site && xdg-open site/index.html
    #[command(verbatim_doc_comment)]
    Docs {
        /// The pipeline to document (pipelines/NAME.toml).
        pipeline: String,
        /// The folder to write (created; its pages are replaced).
        #[arg(long, value_name = "DIR", default_value = "site")]
        out: PathBuf,
    },
    /// Serve the lake to AI agents over the Model Context Protocol (stdio, or streamable HTTP
    /// with --http): read tools for tables, schemas, queries, lineage, plans, runs and quality
    /// results; write tools (run, backfill, rollback) only with --allow-write.
    ///
    /// Register it with an MCP client, e.g. in a client's JSON config:
    ///   {"command": "pipeline", "args": ["mcp", "--project", "/path/to/project"]}
    /// Queries are one read-only SELECT over catalog tables, capped in rows, bytes and time.
    /// Every call is logged on stderr.
    #[command(verbatim_doc_comment)]
    Mcp {
        /// Offer the write tools (run, backfill, rollback; each needs a reason, recorded with
        /// the client's name in the run's receipt). Without it they are absent and refused.
        #[arg(long)]
        allow_write: bool,
        /// Most rows a query returns (the result says when it was cut).
        #[arg(long, value_name = "N", default_value_t = 1000)]
        max_rows: usize,
        /// Most bytes of JSON rows a query returns.
        #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
        max_bytes: usize,
        /// Seconds a query may run.
        #[arg(long, value_name = "SECONDS", default_value_t = 60)]
        query_timeout: u64,
        /// Memory a query may hold, in MiB: each query runs in a process of its own, stopped
        /// at this ceiling (the call is answered with the error, the server goes on).
        #[arg(long, value_name = "MIB", default_value_t = 2048)]
        query_memory_mb: usize,
        /// Serve MCP's streamable HTTP transport at http://ADDR/mcp instead of stdio, e.g.
        /// 127.0.0.1:8765 (port 0 picks a free one). Keep it on loopback unless a proxy in
        /// front authenticates clients: the server itself does not.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// Run a Ballista scheduler for `--engine df://HOST:PORT` (transforms on a cluster).
    ///
    /// Ballista's own scheduler (the ballista-scheduler library), with the engine's plan
    /// codecs: it plans each transform's query and hands its tasks to executors. Start it,
    /// then one `pipeline executor` per machine (the same binary), then run with --engine.
    /// Every node must see the warehouse at the same path (a shared file system).
    ///
    /// Example:
    ///   pipeline scheduler --bind 0.0.0.0:50050 --external-host sched-1
    ///   pipeline executor --scheduler sched-1:50050      (on each worker)
    ///   pipeline run retail --engine df://sched-1:50050
    #[command(verbatim_doc_comment)]
    Scheduler(super::cluster::SchedulerArgs),
    /// Run a Ballista executor that takes tasks from a `pipeline scheduler`.
    ///
    /// Ballista's own executor (the ballista-executor library), with the engine's plan codecs:
    /// it reads a transform's input files, runs its tasks and writes the table's data files.
    /// It stops on ctrl-c or SIGTERM.
    #[command(verbatim_doc_comment)]
    Executor(super::cluster::ExecutorArgs),
    /// Run a SELECT over catalog tables and print the result.
    ///
    /// The query runs within a memory ceiling (--max-memory-mb): a query that needs more stops
    /// with one sentence and exit code 2, without touching the machine's other work. Sorts and
    /// aggregations spill to disk at half the ceiling first.
    ///
    /// Examples:
    ///   pipeline query "SELECT month, revenue FROM gold.monthly_revenue ORDER BY month"
    ///   pipeline query --max-memory-mb 8192 --timeout 600 "SELECT ... FROM silver.orders ..."
    ///   pipeline query --env dev "SELECT country, count(*) FROM silver.customers GROUP BY 1"
    ///   pipeline query "SELECT * FROM gold.fact_orders" --out fact_orders.parquet
    ///   pipeline query "SELECT * FROM gold.monthly_revenue" --format csv > revenue.csv
    #[command(verbatim_doc_comment)]
    Query(super::query_args::QueryArgs),
    /// Start a new pipeline: a working scaffold to edit, written into the project folder.
    ///
    /// Writes pipelines/NAME.toml (a CSV ingest into bronze, a silver and a gold transform
    /// with descriptions, an expectation), sample-data/NAME/ (one CSV file), sql/NAME/ (two
    /// SELECTs) and tests/NAME/ (a model test of the gold SQL). Never overwrites a file.
    ///
    /// Examples:
    ///   pipeline init shop                   in the current folder
    ///   pipeline --project ~/lake init shop  the folder is created if missing
    ///   then: pipeline run shop; pipeline test shop; pipeline docs shop --out site
    #[command(verbatim_doc_comment)]
    Init {
        /// The pipeline's name: letters, digits and _.
        name: String,
    },
    /// Print a shell completion script for pipeline's commands and options.
    ///
    /// Examples:
    ///   pipeline completions bash > ~/.local/share/bash-completion/completions/pipeline
    ///   pipeline completions zsh > ~/.zfunc/_pipeline     (with fpath+=~/.zfunc in .zshrc)
    ///   pipeline completions fish > ~/.config/fish/completions/pipeline.fish
    #[command(verbatim_doc_comment)]
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// One query of the MCP server, in a process of its own (internal: `pipeline mcp` starts
    /// it). Reads one SELECT on stdin; prints the capped rows as JSON.
    #[command(hide = true)]
    AgentQuery {
        #[arg(long = "as-of", value_name = "SNAPSHOT_ID")]
        as_of: Option<i64>,
        #[arg(long)]
        max_rows: usize,
        #[arg(long)]
        max_bytes: usize,
        #[arg(long)]
        max_memory_mb: usize,
    },
}

/// What `pipeline schedule` does.
#[derive(Subcommand)]
pub enum ScheduleAction {
    /// Serve every tick due now (at most one per pipeline), then exit.
    Tick {
        /// Pipelines (default: every pipeline of the project with a [schedule]).
        pipelines: Vec<String>,
        /// Take this as the time now (RFC 3339, e.g. 2026-03-01T02:05:00Z): tests and replays.
        #[arg(long, value_name = "TIME")]
        now: Option<String>,
    },
    /// A foreground scheduler: serve each tick when it comes, until SIGTERM or SIGINT (a run in
    /// progress finishes first).
    Run {
        /// Pipelines (default: every pipeline of the project with a [schedule]).
        pipelines: Vec<String>,
        /// Start the scheduler's clock at this time (RFC 3339); it runs on from there.
        #[arg(long, value_name = "TIME")]
        now: Option<String>,
    },
    /// Per pipeline: last tick and its result, the tick due, missed ticks, next ticks (local
    /// time and UTC), and who holds the lock.
    Status {
        /// Pipelines (default: every pipeline of the project with a [schedule]).
        pipelines: Vec<String>,
        /// Take this as the time now (RFC 3339).
        #[arg(long, value_name = "TIME")]
        now: Option<String>,
    },
}

/// `pipeline orphans`.
#[derive(clap::Args)]
pub struct OrphansArgs {
    /// Only files at least this old (so files a running job writes are never touched).
    #[arg(long, value_name = "MINUTES", default_value_t = 60)]
    pub older_than: u64,
    /// Delete the files listed.
    #[arg(long)]
    pub delete: bool,
    /// Allow --delete with --older-than below 60 minutes.
    #[arg(long)]
    pub force: bool,
    #[arg(long)]
    pub pipeline: Option<String>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `pipeline maintain`.
#[derive(clap::Args)]
pub struct MaintainArgs {
    pub pipeline: String,
    /// Comma-separated tables (default: every table the pipeline writes).
    #[arg(long, value_delimiter = ',', value_name = "TABLES")]
    pub tables: Vec<String>,
    /// Only print what would be done; change nothing.
    #[arg(long)]
    pub plan: bool,
    /// Also expire the snapshots kept for a reason: those recent runs can be rolled back to
    /// (their rollback stops working) and those transforms' next incremental runs start from
    /// (they recompute their whole table next time). For rows that must be gone for good.
    #[arg(long)]
    pub expire_protected: bool,
    /// Why this is run: kept in the record `pipeline runs` shows.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub wait: WaitArgs,
}
