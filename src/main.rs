//! The `pipeline` command line: a thin shell over the library. Every command returns one
//! clear message and a non-zero exit code on failure.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pipeline::catalog::PipelineCatalog;
use pipeline::lineage::{ColumnRef, LineageFormat};
use pipeline::output::{batches_to_rows, render_table};
use pipeline::receipt::Invocation;
use pipeline::run::{
    rollback, run_pipeline, validate, Backfill, JobReport, LockWait, Observer, RunOptions,
    RunReport,
};
use pipeline::spec::{list_pipelines, load_pipeline, CatalogConfig, TableName};
use pipeline::{inspect, Error, Result};

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
#[derive(Parser)]
#[command(name = "pipeline", version, verbatim_doc_comment)]
struct Cli {
    /// Project directory holding pipelines/, sql/ and the warehouse.
    #[arg(long, global = true, default_value = ".")]
    project: PathBuf,
    /// Use the spec's `[catalogs.NAME]` instead of its `[catalog]` (e.g. a local catalog for
    /// development, `--catalog prod` for S3 Tables), with every command.
    #[arg(long, global = true, value_name = "NAME")]
    catalog: Option<String>,
    /// Print machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// Waiting for another run of the same pipeline.
#[derive(clap::Args)]
struct WaitArgs {
    /// Fail at once if another run of this pipeline is in progress (default: wait for it).
    #[arg(long)]
    no_wait: bool,
    /// How long to wait for another run of this pipeline to finish.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    wait_timeout: u64,
}

impl WaitArgs {
    fn lock_wait(&self) -> LockWait {
        LockWait((!self.no_wait).then(|| std::time::Duration::from_secs(self.wait_timeout)))
    }
}

#[derive(Subcommand)]
enum Command {
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
        /// Why this is run (a ticket, an incident, "late February files"): kept in the run
        /// record that `pipeline runs` and `pipeline run-info` show.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
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
        /// Why this is run (a ticket, an incident, "late February files"): kept in the run
        /// record that `pipeline runs` and `pipeline run-info` show.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Check a pipeline (spec, SQL, dependencies, referenced tables) without running anything.
    Validate { pipeline: String },
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
    },
    /// List files in table folders that no snapshot of any table references (left by failed
    /// or killed runs); `--delete` removes them.
    Orphans {
        /// Only files at least this old (so files a running job writes are never touched).
        #[arg(long, value_name = "MINUTES", default_value_t = 60)]
        older_than: u64,
        /// Delete the files listed.
        #[arg(long)]
        delete: bool,
        #[arg(long)]
        pipeline: Option<String>,
    },
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
    },
    /// Run a SELECT over catalog tables and print the result.
    Query {
        /// One SELECT; tables are written namespace.table.
        sql: String,
        /// Read tables as of this snapshot id (time travel); see `pipeline history`.
        #[arg(long = "as-of", value_name = "SNAPSHOT_ID")]
        as_of: Option<i64>,
        #[arg(long)]
        pipeline: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = match cli.verbose {
        0 => "warn",
        1 => "info,datafusion=warn,iceberg=warn",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PIPELINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(|| pipeline::secrets::RedactedStderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(main_inner(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", pipeline::secrets::redact(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}

async fn main_inner(cli: Cli) -> Result<()> {
    let project = std::path::absolute(&cli.project).map_err(|e| Error::io(&cli.project, e))?;
    match &cli.command {
        Command::Run {
            pipeline,
            full_refresh,
            reload_changed,
            reason,
            wait,
        } => {
            let spec = load_spec(&project, pipeline, cli.catalog.as_deref())?;
            let observer = Arc::new(Progress {
                tty: std::io::stderr().is_terminal(),
            });
            let mut options = RunOptions::new(wait.lock_wait());
            options.full_refresh = *full_refresh;
            options.reload_changed = *reload_changed;
            options.invocation = Invocation::current(reason.clone(), cli.catalog.clone());
            let report = run_pipeline(&spec, observer, options).await?;
            print_run(&report, cli.json)
        }
        Command::Backfill {
            pipeline,
            from,
            to,
            tables,
            plan,
            reason,
            wait,
        } => {
            let spec = load_spec(&project, pipeline, cli.catalog.as_deref())?;
            let backfill = backfill_request(&spec, from, to, tables)?;
            if *plan {
                let planned = pipeline::run::plan_backfill(&spec, &backfill).await?;
                print_backfill_plan(&planned, cli.json);
                return Ok(());
            }
            let observer = Arc::new(Progress {
                tty: std::io::stderr().is_terminal(),
            });
            let mut options = RunOptions::new(wait.lock_wait());
            options.backfill = Some(backfill);
            options.invocation = Invocation::current(reason.clone(), cli.catalog.clone());
            let report = run_pipeline(&spec, observer, options).await?;
            print_run(&report, cli.json)
        }
        Command::Lineage {
            target,
            format,
            pipeline,
        } => {
            let (table, column) = lineage_target(target)?;
            let name = match pipeline {
                Some(p) => p.clone(),
                None => producer_of(&project, &table)?,
            };
            let spec = load_spec(&project, &name, cli.catalog.as_deref())?;
            let lineage = pipeline::lineage::for_pipeline(&spec).await?;
            let columns = lineage
                .tables
                .get(&table)
                .ok_or_else(|| Error::Usage(format!("pipeline {name} does not write {table}")))?;
            let roots: Vec<ColumnRef> = match column {
                Some(c) if columns.contains(&c) => vec![ColumnRef::new(&table, &c)],
                Some(c) => {
                    return Err(Error::Usage(format!(
                        "{table} has no column `{c}`; its columns: {}",
                        columns.join(", ")
                    )))
                }
                None => columns.iter().map(|c| ColumnRef::new(&table, c)).collect(),
            };
            let format = if cli.json { "json" } else { format.as_str() };
            let format = LineageFormat::parse(format).unwrap_or(LineageFormat::Text);
            print!("{}", pipeline::lineage::render(&lineage, &roots, format));
            if format == LineageFormat::Json {
                println!();
            }
            Ok(())
        }
        Command::Plan {
            pipeline,
            fail_on_breaking,
        } => {
            let spec = load_spec(&project, pipeline, cli.catalog.as_deref())?;
            let plan = pipeline::impact::plan_changes(&spec).await?;
            if cli.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&plan).unwrap_or_default()
                );
            } else {
                print!("{}", pipeline::impact::render_text(&plan));
            }
            let count = plan.breaking();
            if *fail_on_breaking && count > 0 {
                return Err(Error::Breaking { count });
            }
            Ok(())
        }
        Command::Validate { pipeline } => {
            let spec = load_spec(&project, pipeline, cli.catalog.as_deref())?;
            let v = validate(&spec).await?;
            if cli.json {
                let tables: Vec<_> = v
                    .plan
                    .order
                    .iter()
                    .map(|j| match j {
                        pipeline::plan::JobId::Ingest(i) => spec.ingests[*i].table.to_string(),
                        pipeline::plan::JobId::Transform(i) => {
                            spec.transforms[*i].table.to_string()
                        }
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({"pipeline": spec.name, "valid": true, "jobs_in_order": tables})
                );
            } else {
                println!(
                    "pipeline {} is valid: {} ingest and {} transform jobs",
                    spec.name,
                    spec.ingests.len(),
                    spec.transforms.len()
                );
                for j in &v.plan.order {
                    let (kind, table, deps) = match j {
                        pipeline::plan::JobId::Ingest(i) => {
                            ("ingest", &spec.ingests[*i].table, String::new())
                        }
                        pipeline::plan::JobId::Transform(i) => (
                            "transform",
                            &spec.transforms[*i].table,
                            v.plan.transforms[*i]
                                .inputs
                                .iter()
                                .map(|t| t.to_string())
                                .collect::<Vec<_>>()
                                .join(", "),
                        ),
                    };
                    if deps.is_empty() {
                        println!("  {kind:<9} {table}");
                    } else {
                        println!("  {kind:<9} {table}  <- {deps}");
                    }
                }
            }
            Ok(())
        }
        Command::Tables { pipeline } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let tables = catalog.list_tables().await?;
            if cli.json {
                let names: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&names).unwrap_or_default()
                );
            } else {
                let mut rows = Vec::new();
                for t in &tables {
                    let info = inspect::describe(&catalog, t).await?;
                    rows.push(vec![
                        t.to_string(),
                        info.rows.to_string(),
                        info.data_files.to_string(),
                        info.current_snapshot_id
                            .map(|s| s.to_string())
                            .unwrap_or_default(),
                    ]);
                }
                print!(
                    "{}",
                    render_table(&strings(&["table", "rows", "files", "snapshot"]), &rows)
                );
            }
            Ok(())
        }
        Command::Files {
            table,
            as_of,
            pipeline,
        } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let files = inspect::files(&catalog, &table_arg(table)?, *as_of).await?;
            if cli.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&files).unwrap_or_default()
                );
            } else {
                let rows: Vec<Vec<String>> = files
                    .iter()
                    .map(|f| {
                        vec![
                            f.partition.clone(),
                            f.records.to_string(),
                            f.bytes.to_string(),
                            f.added_snapshot_id.map_or(String::new(), |s| s.to_string()),
                            f.path.clone(),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    render_table(
                        &strings(&["partition", "rows", "bytes", "added by", "path"]),
                        &rows
                    )
                );
            }
            Ok(())
        }
        Command::Describe { table, pipeline } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let info = inspect::describe(&catalog, &table_arg(table)?).await?;
            if cli.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&info).unwrap_or_default()
                );
            } else {
                println!("table:            {}", info.table);
                println!("location:         {}", info.location);
                println!("metadata:         {}", info.metadata_location);
                println!("format version:   {}", info.format_version);
                println!(
                    "current snapshot: {}",
                    info.current_snapshot_id
                        .map(|s| s.to_string())
                        .unwrap_or("(none)".into())
                );
                println!("rows:             {}", info.rows);
                println!(
                    "data files:       {} ({} bytes)",
                    info.data_files, info.bytes
                );
                println!(
                    "metadata:         {} snapshots, {} manifests in the current one",
                    info.snapshots, info.manifests
                );
                println!(
                    "partitioned by:   {}",
                    if info.partition_spec.is_empty() {
                        "(unpartitioned)".to_string()
                    } else {
                        info.partition_spec.join(", ")
                    }
                );
                println!();
                let rows: Vec<Vec<String>> = info
                    .columns
                    .iter()
                    .map(|c| {
                        vec![
                            c.id.to_string(),
                            c.name.clone(),
                            c.ty.clone(),
                            if c.required { "required" } else { "optional" }.into(),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    render_table(&strings(&["id", "column", "type", "nullability"]), &rows)
                );
            }
            Ok(())
        }
        Command::History { table, pipeline } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let snapshots = inspect::history(&catalog, &table_arg(table)?).await?;
            if cli.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&snapshots).unwrap_or_default()
                );
            } else {
                let rows: Vec<Vec<String>> = snapshots
                    .iter()
                    .map(|s| {
                        vec![
                            format!("{}{}", s.snapshot_id, if s.current { " *" } else { "" }),
                            s.committed_at.clone(),
                            s.operation.clone(),
                            format!("+{}", s.added_records),
                            format!("-{}", s.deleted_records),
                            s.total_records.to_string(),
                            s.run_id.clone().unwrap_or_default(),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    render_table(
                        &strings(&[
                            "snapshot (* = current)",
                            "committed at",
                            "operation",
                            "added",
                            "deleted",
                            "total rows",
                            "run"
                        ]),
                        &rows
                    )
                );
            }
            Ok(())
        }
        Command::Runs { pipeline } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let runs = catalog.runs().await?;
            if cli.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&runs).unwrap_or_default()
                );
            } else {
                let rows: Vec<Vec<String>> = runs
                    .iter()
                    .map(|r| {
                        vec![
                            r.run_id.clone(),
                            r.pipeline.clone(),
                            match &r.rolls_back {
                                Some(id) => format!("rollback of {id}"),
                                None => r.kind.clone(),
                            },
                            r.finished_at.clone(),
                            r.invocation.user.clone(),
                            r.invocation.reason.clone().unwrap_or_default(),
                            r.tables.len().to_string(),
                            pipeline::quality::summary(&r.quality),
                            r.undo_command(),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    render_table(
                        &strings(&[
                            "run",
                            "pipeline",
                            "kind",
                            "published at",
                            "by",
                            "reason",
                            "tables",
                            "checks",
                            "undo",
                        ]),
                        &rows
                    )
                );
            }
            Ok(())
        }
        Command::RunInfo { run_id, pipeline } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let run = catalog.run(run_id).await?;
            print_record(&run, cli.json);
            Ok(())
        }
        Command::Rollback {
            run_id,
            reason,
            pipeline,
        } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let invocation = Invocation::current(reason.clone(), cli.catalog.clone());
            let record = rollback(&catalog, run_id, &invocation).await?;
            print_record(&record, cli.json);
            Ok(())
        }
        Command::Orphans {
            older_than,
            delete,
            pipeline,
        } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let age = std::time::Duration::from_secs(older_than * 60);
            let orphans = pipeline::orphans::find_orphans(&catalog, age).await?;
            if *delete {
                pipeline::orphans::delete_orphans(&orphans)?;
            }
            if cli.json {
                println!(
                    "{}",
                    serde_json::json!({"orphans": orphans, "deleted": *delete})
                );
            } else {
                let rows: Vec<Vec<String>> = orphans
                    .iter()
                    .map(|o| vec![o.table.clone(), o.bytes.to_string(), o.path.clone()])
                    .collect();
                print!(
                    "{}",
                    render_table(&strings(&["table", "bytes", "file"]), &rows)
                );
                let total: u64 = orphans.iter().map(|o| o.bytes).sum();
                let verb = if *delete {
                    "deleted"
                } else {
                    "unreferenced (run with --delete to remove)"
                };
                println!("{} files, {total} bytes {verb}", orphans.len());
            }
            Ok(())
        }
        Command::Query {
            sql,
            as_of,
            pipeline,
        } => {
            let catalog =
                open_catalog(&project, pipeline.as_deref(), cli.catalog.as_deref()).await?;
            let (schema, batches) = inspect::query(&catalog, sql, *as_of).await?;
            let rows = batches_to_rows(&schema, &batches)?;
            if cli.json {
                println!("{}", rows.to_json());
            } else {
                print!("{}", rows.to_table());
                println!("({} rows)", rows.rows.len());
            }
            Ok(())
        }
    }
}

fn print_record(run: &pipeline::catalog::RunRecord, json: bool) {
    if json {
        println!("{}", serde_json::to_string_pretty(run).unwrap_or_default());
        return;
    }
    println!("run:          {}", run.run_id);
    println!("pipeline:     {}", run.pipeline);
    println!("kind:         {}", run.kind);
    if let Some(id) = &run.rolls_back {
        println!("rolls back:   {id}");
    }
    println!("started at:   {}", run.started_at);
    println!("published at: {}", run.finished_at);
    if !run.invocation.user.is_empty() {
        println!(
            "by:           {} on {}",
            run.invocation.user, run.invocation.host
        );
    }
    if let Some(reason) = &run.invocation.reason {
        println!("reason:       {reason}");
    }
    if !run.invocation.command.is_empty() {
        println!("command:      {}", run.invocation.command.join(" "));
    }
    println!("undo with:    {}", run.undo_command());
    println!();
    let show = |s: Option<i64>| s.map_or_else(|| "(none)".to_string(), |s| s.to_string());
    let rows: Vec<Vec<String>> = run
        .tables
        .iter()
        .map(|t| {
            vec![
                t.table.clone(),
                t.operation.clone(),
                show(t.snapshot_before),
                show(t.snapshot_after),
                t.rows.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        render_table(
            &strings(&[
                "table",
                "operation",
                "snapshot before",
                "snapshot after",
                "rows"
            ]),
            &rows
        )
    );
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `ns.table` or `ns.table.column`.
fn lineage_target(text: &str) -> Result<(TableName, Option<String>)> {
    if let Some(table) = TableName::parse(text) {
        return Ok((table, None));
    }
    ColumnRef::parse(text)
        .map(|c| (c.table, Some(c.column)))
        .ok_or_else(|| {
            Error::Usage(format!(
                "`{text}` is neither namespace.table nor namespace.table.column, e.g. gold.fact_orders.customer_name"
            ))
        })
}

/// The pipeline of this project that writes `table`.
fn producer_of(project: &std::path::Path, table: &TableName) -> Result<String> {
    let mut found = Vec::new();
    for name in list_pipelines(project) {
        let spec = load_pipeline(project, &name)?;
        let writes = spec
            .ingests
            .iter()
            .any(|j| j.table == *table || (j.table.quarantine() == *table))
            || spec.transforms.iter().any(|j| j.table == *table);
        if writes {
            found.push(name);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::Usage(format!(
            "no pipeline in {}/pipelines writes {table}",
            project.display()
        ))),
        _ => Err(Error::Usage(format!(
            "pipelines {} all write {table}; add --pipeline NAME",
            found.join(", ")
        ))),
    }
}

fn table_arg(text: &str) -> Result<TableName> {
    TableName::parse(text).ok_or_else(|| {
        Error::Usage(format!(
            "`{text}` is not a table name; write namespace.table, e.g. gold.customer_metrics"
        ))
    })
}

/// Loads pipeline `name`, switched to `[catalogs.CATALOG]` when `--catalog` is given.
fn load_spec(
    project: &std::path::Path,
    name: &str,
    catalog: Option<&str>,
) -> Result<pipeline::spec::Pipeline> {
    let mut spec = load_pipeline(project, name)?;
    if let Some(c) = catalog {
        spec.use_catalog(c)?;
    }
    Ok(spec)
}

/// The catalog of `--pipeline`, else of the project's only pipeline, else the embedded default
/// (`--catalog NAME` picks one of that spec's `[catalogs.NAME]`).
async fn open_catalog(
    project: &std::path::Path,
    pipeline: Option<&str>,
    catalog: Option<&str>,
) -> Result<PipelineCatalog> {
    let only = list_pipelines(project);
    let name = pipeline.or(match only.as_slice() {
        [only] => Some(only.as_str()),
        _ => None,
    });
    let config = match (name, catalog) {
        (Some(name), _) => load_spec(project, name, catalog)?.catalog,
        // Several pipelines: `--catalog NAME` is fine if every spec that defines it agrees.
        (None, Some(wanted)) => {
            let mut found: Vec<CatalogConfig> = Vec::new();
            for name in &only {
                if let Some(c) = load_pipeline(project, name)?.catalogs.get(wanted) {
                    if !found.contains(c) {
                        found.push(c.clone());
                    }
                }
            }
            match found.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(Error::Usage(format!(
                        "no pipeline of this project defines [catalogs.{wanted}]"
                    )))
                }
                _ => {
                    return Err(Error::Usage(format!(
                        "pipelines define [catalogs.{wanted}] differently; add --pipeline NAME to say which"
                    )))
                }
            }
        }
        (None, None) => CatalogConfig::embedded_default(project),
    };
    PipelineCatalog::connect(&config).await
}

fn print_run(report: &RunReport, json: bool) -> Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        );
        return Ok(());
    }
    let rows: Vec<Vec<String>> = report
        .jobs
        .iter()
        .map(|j| {
            vec![
                j.job.clone(),
                j.table.clone(),
                j.rows_in.to_string(),
                j.rows_out.to_string(),
                j.quarantined.to_string(),
                j.files.to_string(),
                j.snapshot_id.to_string(),
                format!("{:.2}s", j.seconds),
                j.action.clone(),
            ]
        })
        .collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\nrun {} of pipeline {}: published {} tables in {:.2}s\n",
        report.run_id,
        report.pipeline,
        report.tables.len(),
        report.seconds
    );
    let _ = write!(
        out,
        "{}",
        render_table(
            &strings(&[
                "job",
                "table",
                "rows in",
                "rows out",
                "quarantined",
                "files",
                "snapshot",
                "time",
                "action"
            ]),
            &rows
        )
    );
    Ok(())
}

/// Prints a backfill plan.
fn print_backfill_plan(planned: &[pipeline::run::PlannedTable], json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(planned).unwrap_or_default()
        );
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "backfill plan (nothing has been changed):\n");
    for t in planned {
        let _ = writeln!(out, "{}: {}", t.table, t.action);
        for i in &t.inputs {
            let amount = match (i.files, i.bytes) {
                (Some(f), Some(b)) => format!(": {f} files, {b} bytes"),
                _ => String::new(),
            };
            let _ = writeln!(out, "    reads {} ({}){amount}", i.table, i.read);
        }
    }
}

/// The backfill the command line asks for, checked against the spec.
fn backfill_request(
    spec: &pipeline::spec::Pipeline,
    from: &str,
    to: &str,
    tables: &[String],
) -> Result<Backfill> {
    let day = |flag: &str, text: &str| {
        chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| Error::Usage(format!("{flag} {text}: expected a date as YYYY-MM-DD")))
    };
    let (first, last) = (day("--from", from)?, day("--to", to)?);
    if last < first {
        return Err(Error::Usage(format!(
            "--to {to} is before --from {from}; the range is inclusive: --from {from} --to {from} is one day"
        )));
    }
    let micros = |d: chrono::NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .map_or(0, |t| t.and_utc().timestamp_micros())
    };
    let time_partitioned: Vec<&TableName> = spec
        .transforms
        .iter()
        .filter(|t| t.time_partition().is_some())
        .map(|t| &t.table)
        .collect();
    let names = |v: &[&TableName]| {
        v.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let selected = if tables.is_empty() {
        time_partitioned.iter().map(|t| (*t).clone()).collect()
    } else {
        let mut selected = Vec::new();
        for t in tables {
            let name = TableName::parse(t.trim())
                .filter(|n| time_partitioned.contains(&n))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "--tables {t}: not a transform of `{}` partitioned by year, month, day or hour; those are: {}",
                        spec.name,
                        names(&time_partitioned)
                    ))
                })?;
            selected.push(name);
        }
        selected
    };
    if selected.is_empty() {
        return Err(Error::Usage(format!(
            "pipeline `{}` has no transform partitioned by year, month, day or hour to backfill",
            spec.name
        )));
    }
    Ok(Backfill {
        tables: selected,
        from: micros(first),
        to: micros(last + chrono::Days::new(1)) - 1,
    })
}

/// Progress on stderr: a line per job start and end, and row counts of long jobs.
struct Progress {
    tty: bool,
}

impl Observer for Progress {
    fn job_started(&self, job: &str, table: &TableName) {
        eprintln!("  started   {job:<9} {table}");
    }
    fn job_progress(&self, table: &TableName, rows: u64, seconds: f64) {
        let _ = self.tty;
        eprintln!("  running   {table}: {rows} rows after {seconds:.0}s");
    }
    fn job_finished(&self, r: &JobReport) {
        if r.job == "ingest" && r.rows_in == 0 && r.already_loaded > 0 {
            eprintln!(
                "  finished  ingest    {}: nothing new ({} files already loaded)",
                r.table, r.already_loaded
            );
            return;
        }
        if r.job == "transform" && r.action == "up to date" {
            eprintln!(
                "  finished  transform {}: up to date (inputs and SQL unchanged)",
                r.table
            );
            return;
        }
        eprintln!(
            "  finished  {:<9} {}: {}; {} rows in, {} rows out, {} quarantined, {} files, {} bytes, {:.2}s",
            r.job, r.table, r.action, r.rows_in, r.rows_out, r.quarantined, r.files, r.bytes, r.seconds
        );
    }
    fn recovered(&self, what: &str) {
        eprintln!("  recovered {what}");
    }
    fn checked(&self, r: &pipeline::quality::QualityResult) {
        let verdict = match (r.passed, r.action.as_str()) {
            (true, _) => "passed",
            (false, "warn") => "WARNING",
            (false, "drop") => "rows dropped",
            (false, _) => "FAILED",
        };
        eprintln!(
            "  check     {} {}: {verdict} ({})",
            r.table, r.name, r.detail
        );
        if !r.passed && r.action == "warn" {
            for row in &r.sample {
                eprintln!("              {row}");
            }
        }
    }
    fn rebasing(&self, table: &TableName, attempt: u32) {
        eprintln!(
            "  conflict  {table}: another writer committed first; rebasing (attempt {attempt})"
        );
    }
    fn waiting_for(&self, holder: &str) {
        eprintln!("  waiting   another run of this pipeline is in progress ({holder})");
    }
    fn publishing(&self, tables: usize) {
        eprintln!("  publishing {tables} tables");
    }
}
