//! What each command does: read its arguments, call the library, hand the result to its
//! printer. No logic of the engine lives here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod env_command;

use super::args::{Cli, Command, RunArgs, SelectArg};
use super::cluster;
use super::maintain;
use super::print;
use super::print_plan;
use super::print_runs;
use super::progress::Progress;
use super::query;
use super::schedule;
use crate::catalog::{open_project_catalog, PipelineCatalog};
use crate::error::{Error, Result};
use crate::inspect;
use crate::plan::{
    lineage_of, lineage_roots, lineage_target, plan_backfill, plan_changes, plan_run,
    run_model_tests, select_jobs, validate, Backfill, RunRequest, Selector,
};
use crate::records::Invocation;
use crate::rollback::rollback;
use crate::run::{run_pipeline, RunOptions};
use crate::spec::{load_model_tests, load_with_catalog, producer_of, Pipeline, TableName};

/// Runs the command `cli` names.
pub async fn execute(cli: Cli) -> Result<()> {
    let project = std::path::absolute(&cli.project).map_err(|e| Error::io(&cli.project, e))?;
    let cx = Context { project, cli: &cli };
    match &cli.command {
        Command::Run {
            pipeline,
            full_refresh,
            reload_changed,
            plan,
            flags,
        } => {
            let refresh = (*full_refresh, *reload_changed);
            run(&cx, pipeline, refresh, *plan, flags).await
        }
        Command::Backfill {
            pipeline,
            from,
            to,
            tables,
            plan,
            flags,
        } => {
            let range = BackfillRange { from, to, tables };
            backfill(&cx, pipeline, &range, *plan, flags).await
        }
        Command::Rollback {
            run_id,
            reason,
            pipeline,
            plan,
        } => rollback_run(&cx, run_id, reason, pipeline, *plan).await,
        Command::Sql {
            statement,
            reason,
            pipeline,
            env,
        } => change_rows(&cx, statement, reason, pipeline, env).await,
        Command::Erase {
            pipeline,
            condition,
            plan,
            reason,
            purge,
            rewrite_sources,
            env,
        } => {
            let how = EraseFlags {
                plan: *plan,
                purge: *purge,
                rewrite_sources: *rewrite_sources,
                env: env.clone(),
            };
            erase(&cx, pipeline, condition, reason, how).await
        }
        Command::Orphans(args) => {
            maintain::orphans(&cx.project, cx.catalog_name(), args, cli.json).await
        }
        Command::Maintain(args) => {
            let invocation = cx.invocation(&args.reason);
            maintain::maintain(&cx.project, cx.catalog_name(), args, invocation, cli.json).await
        }
        Command::Init { name } => {
            let scaffold = super::init::init(&cx.project, name)?;
            super::print_files::scaffold(&scaffold, cli.json);
            Ok(())
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(
                *shell,
                &mut command,
                "pipeline",
                &mut crate::secrets::stdout(),
            );
            Ok(())
        }
        other => read_or_serve(&cx, other).await,
    }
}

/// The commands that change no table: what a pipeline would do (`lineage`, `plan`,
/// `validate`, `docs`), what the catalog holds (`tables`, `files`, `describe`, `history`,
/// `runs`, `run-info`, `check`, `query`), and the servers (`scheduler`, `executor`,
/// `schedule`, `mcp`).
async fn read_or_serve(cx: &Context<'_>, command: &Command) -> Result<()> {
    let json = cx.cli.json;
    match command {
        Command::Lineage {
            target,
            format,
            pipeline,
            downstream,
        } => lineage(cx, target, format, pipeline, *downstream).await,
        Command::Plan {
            pipeline,
            fail_on_breaking,
        } => plan(cx, pipeline, *fail_on_breaking).await,
        Command::Test { pipeline, select } => model_tests(cx, pipeline, select).await,
        Command::Env { action } => env_command::environments(cx, action).await,
        Command::Validate { pipeline } => {
            let spec = cx.load(pipeline)?;
            let validated = validate(&spec).await?;
            print::validate(&spec, &validated, json);
            Ok(())
        }
        Command::Docs { pipeline, out } => docs(cx, pipeline, out).await,
        Command::Scheduler(args) => cluster::scheduler(args).await,
        Command::Executor(args) => cluster::executor(args).await,
        Command::Schedule { action } => {
            schedule::execute(&cx.project, cx.catalog_name(), action, json).await
        }
        Command::Mcp {
            allow_write,
            max_rows,
            max_bytes,
            query_timeout,
            query_memory_mb,
            http,
        } => {
            let limits = crate::mcp::Limits {
                max_rows: *max_rows,
                max_bytes: *max_bytes,
                timeout: std::time::Duration::from_secs(*query_timeout),
                max_memory_mb: *query_memory_mb,
            };
            let lake = crate::mcp::Lake::new(
                cx.project.clone(),
                cx.cli.catalog.clone(),
                *allow_write,
                limits,
            );
            match http {
                Some(addr) => crate::mcp::serve_http(lake, *addr).await,
                None => crate::mcp::serve_stdio(lake).await,
            }
        }
        other => inspect_catalog(cx, other).await,
    }
}

/// The commands that read a catalog: `tables`, `files`, `describe`, `history`, `runs`,
/// `run-info`, `check` and `query`.
async fn inspect_catalog(cx: &Context<'_>, command: &Command) -> Result<()> {
    let json = cx.cli.json;
    match command {
        Command::Tables { pipeline } => {
            let catalog = cx.open_catalog(pipeline).await?;
            let tables = inspect::list(&catalog).await?;
            let due =
                super::due::maintenance_due(&cx.project, cx.catalog_name(), pipeline, &catalog)
                    .await;
            print::tables(&tables, &due, json);
            if tables.iter().any(|t| t.damaged.is_some()) {
                return Err(Error::Damaged(
                    "some tables cannot be read (DAMAGED above); `pipeline check` says which files are missing or cut short".into(),
                ));
            }
        }
        Command::Files {
            table,
            as_of,
            pipeline,
        } => {
            let catalog = cx.open_catalog(pipeline).await?;
            let files = inspect::files(&catalog, &table_arg(table)?, *as_of).await?;
            print::files(&files, json);
        }
        Command::Describe { table, pipeline } => {
            let catalog = cx.open_catalog(pipeline).await?;
            let info = inspect::describe(&catalog, &table_arg(table)?).await?;
            print::describe(&info, json);
        }
        Command::History { table, pipeline } => {
            let catalog = cx.open_catalog(pipeline).await?;
            let snapshots = inspect::history(&catalog, &table_arg(table)?).await?;
            print::history(&snapshots, json);
        }
        Command::Runs { pipeline } => {
            let catalog = cx.open_catalog(pipeline).await?;
            print_runs::runs(&catalog.runs().await?, json);
        }
        Command::RunInfo { run_id, pipeline } => return run_info(cx, run_id, pipeline).await,
        Command::Check { table, pipeline } => return check(cx, table, pipeline).await,
        Command::Query(args) => {
            query::ceiling(
                query::default_ceiling_mb(args.max_memory_mb),
                query::CLI_HINT,
            )?;
            let catalog = cx.open_catalog(&args.pipeline).await?;
            let catalog = catalog.in_env(args.env.clone())?;
            query::answer(&catalog, args, json).await?;
        }
        Command::AgentQuery {
            as_of,
            max_rows,
            max_bytes,
            max_memory_mb,
        } => {
            query::ceiling(*max_memory_mb, query::AGENT_HINT)?;
            let catalog = cx.open_catalog(&None).await?;
            let limits = crate::mcp::Limits {
                max_rows: *max_rows,
                max_bytes: *max_bytes,
                max_memory_mb: *max_memory_mb,
                ..Default::default()
            };
            query::agent_query(&catalog, *as_of, limits).await?;
        }
        _ => unreachable!("execute and read_or_serve run every other command"),
    }
    Ok(())
}

/// `pipeline run-info RUN`: the record, with the purges that followed an erase.
async fn run_info(cx: &Context<'_>, run_id: &str, pipeline: &Option<String>) -> Result<()> {
    let catalog = cx.open_catalog(pipeline).await?;
    let record = catalog.run(run_id).await?;
    let purges = match record.erase {
        Some(_) => catalog.purges_of(&record).await?,
        None => Vec::new(),
    };
    print_runs::record_with_purges(&record, &purges, cx.cli.json);
    Ok(())
}

/// The project and the command line's global options, which every command reads.
struct Context<'a> {
    /// The project directory, absolute.
    project: PathBuf,
    cli: &'a Cli,
}

impl Context<'_> {
    /// `--catalog`: the named `[catalogs.NAME]` of the spec instead of its `[catalog]`.
    fn catalog_name(&self) -> Option<&str> {
        self.cli.catalog.as_deref()
    }

    /// Who runs this command, and why (`--reason`), for the run record.
    fn invocation(&self, reason: &Option<String>) -> Invocation {
        Invocation::current(reason.clone(), self.cli.catalog.clone())
    }

    /// The spec of `pipeline`, with `--catalog` applied.
    fn load(&self, pipeline: &str) -> Result<Pipeline> {
        load_with_catalog(&self.project, pipeline, self.catalog_name())
    }

    /// The catalog of `--pipeline` (default: the only pipeline's, else the embedded default).
    async fn open_catalog(&self, pipeline: &Option<String>) -> Result<PipelineCatalog> {
        open_project_catalog(&self.project, pipeline.as_deref(), self.catalog_name()).await
    }
}

impl RunArgs {
    /// `pipeline`'s spec, in the environment `--env` names.
    fn load(&self, cx: &Context, pipeline: &str) -> Result<Pipeline> {
        let mut spec = cx.load(pipeline)?;
        spec.env = self.env.env.clone();
        Ok(spec)
    }

    /// The run options these flags ask for on `spec`: its engine choice, the lock wait and
    /// the invocation.
    fn options(&self, cx: &Context, spec: &Pipeline) -> Result<RunOptions> {
        let mut options = RunOptions::new(self.wait.lock_wait());
        options.engine = self.engine.choice(spec)?;
        options.invocation = cx.invocation(&self.reason);
        options.select = Selector::parse_all(&self.select.select)?;
        Ok(options)
    }
}

/// `pipeline run`: the run's report once it published (or failed); with `plan`, only what it
/// would do.
async fn run(
    cx: &Context<'_>,
    pipeline: &str,
    (full_refresh, reload_changed): (bool, bool),
    plan: bool,
    flags: &RunArgs,
) -> Result<()> {
    let spec = flags.load(cx, pipeline)?;
    let request = RunRequest {
        full_refresh,
        reload_changed,
        select: Selector::parse_all(&flags.select.select)?,
    };
    if plan {
        let planned = plan_run(&spec, &request).await?;
        print_plan::run_plan(&planned, cx.cli.json);
        return Ok(());
    }
    let mut options = flags.options(cx, &spec)?;
    options.full_refresh = request.full_refresh;
    options.reload_changed = request.reload_changed;
    let report = run_pipeline(&spec, Arc::new(Progress::stderr()), options).await?;
    print::run(&report, cx.cli.json);
    Ok(())
}

/// The date range and tables of `pipeline backfill`.
struct BackfillRange<'a> {
    from: &'a str,
    to: &'a str,
    tables: &'a [String],
}

/// `pipeline backfill`: with `plan`, only what it would recompute and read; else the run.
async fn backfill(
    cx: &Context<'_>,
    pipeline: &str,
    range: &BackfillRange<'_>,
    plan: bool,
    flags: &RunArgs,
) -> Result<()> {
    let spec = flags.load(cx, pipeline)?;
    let backfill = Backfill::request(&spec, range.from, range.to, range.tables)?;
    if plan {
        let select = Selector::parse_all(&flags.select.select)?;
        let planned = plan_backfill(&spec, &backfill, &select).await?;
        print::backfill_plan(&planned, cx.cli.json);
        return Ok(());
    }
    let mut options = flags.options(cx, &spec)?;
    options.backfill = Some(backfill);
    let report = run_pipeline(&spec, Arc::new(Progress::stderr()), options).await?;
    print::run(&report, cx.cli.json);
    Ok(())
}

/// `pipeline rollback`: the rollback's record, or with `plan` what it would undo.
async fn rollback_run(
    cx: &Context<'_>,
    run_id: &str,
    reason: &Option<String>,
    pipeline: &Option<String>,
    plan: bool,
) -> Result<()> {
    let catalog: PipelineCatalog = cx.open_catalog(pipeline).await?;
    let observer = Arc::new(Progress::stderr());
    let done = rollback(&catalog, run_id, &cx.invocation(reason), observer, plan).await?;
    match &done.record {
        Some(record) => print_runs::record(record, cx.cli.json),
        None => print_runs::rollback_plan(&done, cx.cli.json),
    }
    Ok(())
}

/// `pipeline sql`: one UPDATE or DELETE on a table, run as a run of the pipeline producing it
/// (`--pipeline`, or the one whose spec writes the table).
async fn change_rows(
    cx: &Context<'_>,
    statement: &str,
    reason: &Option<String>,
    pipeline: &Option<String>,
    env: &Option<String>,
) -> Result<()> {
    let parsed = crate::dml::parse_row_change(statement)?;
    let name = match pipeline {
        Some(p) => p.clone(),
        None => producer_of(&cx.project, &parsed.table)?,
    };
    // The lock and the record are the pipeline's `[pipeline] name`'s, whatever its
    // spec file is called.
    let spec = cx.load(&name)?;
    let catalog = PipelineCatalog::connect(&spec.catalog).await?;
    let catalog = catalog.in_env(env.clone())?;
    let change = crate::dml::change_rows(
        &catalog,
        &spec.name,
        &parsed,
        &cx.invocation(reason),
        Arc::new(Progress::stderr()),
    )
    .await?;
    print::row_change(&parsed.table, &change, cx.cli.json);
    Ok(())
}

/// How `pipeline erase` goes about it: `--plan`, `--purge`, `--rewrite-sources`, `--env`
/// (a plan only).
struct EraseFlags {
    plan: bool,
    purge: bool,
    rewrite_sources: bool,
    env: Option<String>,
}

/// `pipeline erase`: the rows matching `condition` erased (or, with `--plan`, what would
/// be); anything but a plan needs a `--reason`.
async fn erase(
    cx: &Context<'_>,
    pipeline: &str,
    condition: &str,
    reason: &Option<String>,
    how: EraseFlags,
) -> Result<()> {
    if !how.plan && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(Error::Usage(
            "erase: say why with --reason (a request or ticket id); it goes into the run record"
                .into(),
        ));
    }
    let mut spec = cx.load(pipeline)?;
    spec.env = how.env.filter(|_| how.plan);
    let request = crate::erase::EraseRequest {
        condition: condition.to_string(),
        plan_only: how.plan,
        rewrite_sources: how.rewrite_sources,
        purge: how.purge,
        invocation: cx.invocation(reason),
    };
    let report = crate::erase::erase(&spec, &request, Arc::new(Progress::stderr())).await?;
    print::erase(&report, cx.cli.json);
    Ok(())
}

/// `pipeline lineage`: the lineage of a table or column, from the pipeline that writes it
/// (`--pipeline`, or the one whose spec produces the table).
async fn lineage(
    cx: &Context<'_>,
    target: &str,
    format: &str,
    pipeline: &Option<String>,
    downstream: bool,
) -> Result<()> {
    let (table, _) = lineage_target(target)?;
    let name = match pipeline {
        Some(p) => p.clone(),
        None => producer_of(&cx.project, &table)?,
    };
    let spec = cx.load(&name)?;
    let lineage = lineage_of(&spec).await?;
    let roots = lineage_roots(&lineage, &name, target)?;
    print::lineage(&lineage, &roots, format, downstream, cx.cli.json);
    Ok(())
}

/// `pipeline plan`: the schema changes of the next run; with `fail_on_breaking`, an error
/// when any of them breaks something.
async fn plan(cx: &Context<'_>, pipeline: &str, fail_on_breaking: bool) -> Result<()> {
    let spec = cx.load(pipeline)?;
    let plan = plan_changes(&spec).await?;
    // A transform that would fail is the schema plan's to report; the run plan then says why
    // it could not be made.
    let run = plan_run(&spec, &RunRequest::default())
        .await
        .map_err(|e| e.to_string());
    print_plan::schema_plan(&plan, &run, cx.cli.json);
    let count = plan.breaking();
    if fail_on_breaking && count > 0 {
        return Err(Error::Breaking { count });
    }
    Ok(())
}

/// `pipeline test`: the model tests of `pipeline` (of the tables `--select` names), and an
/// error when any failed.
async fn model_tests(cx: &Context<'_>, pipeline: &str, select: &SelectArg) -> Result<()> {
    let spec = cx.load(pipeline)?;
    let tests = load_model_tests(&spec.project_dir, &spec.name, &spec.file)?;
    let selectors = Selector::parse_all(&select.select)?;
    let tables: Option<HashSet<TableName>> = match selectors.is_empty() {
        true => None,
        false => {
            let graph = crate::plan::job_graph(&spec)?;
            let jobs = select_jobs(&graph, &spec, &selectors)?;
            Some(
                spec.transforms
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| jobs.contains(&crate::plan::JobId::Transform(*i)))
                    .map(|(_, t)| t.table.clone())
                    .collect(),
            )
        }
    };
    let outcomes = run_model_tests(&spec, &tests, tables.as_ref()).await?;
    print_plan::model_tests(&outcomes, &spec.name, cx.cli.json);
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    if failed > 0 {
        return Err(Error::Failed(format!(
            "{failed} of {} model test(s) failed",
            outcomes.len()
        )));
    }
    Ok(())
}

/// `pipeline docs`: the site written to `out` (relative to the project unless absolute).
async fn docs(cx: &Context<'_>, pipeline: &str, out: &Path) -> Result<()> {
    let spec = cx.load(pipeline)?;
    let out = if out.is_absolute() {
        out.to_path_buf()
    } else {
        cx.project.join(out)
    };
    let site = crate::docs::write_site(&spec, &out).await?;
    super::print_files::docs(&site, cx.cli.json);
    Ok(())
}

/// `pipeline check`: every table's files (or one table's), and an error when any is damaged
/// or keeps its files outside the warehouse.
async fn check(cx: &Context<'_>, table: &Option<String>, pipeline: &Option<String>) -> Result<()> {
    let catalog = cx.open_catalog(pipeline).await?;
    let only = table.as_deref().map(table_arg).transpose()?;
    let checked = crate::maintain::check(&catalog, only.as_ref()).await?;
    print::check(&checked, cx.cli.json);
    let damaged = checked.iter().filter(|t| !t.intact()).count();
    let outside = checked
        .iter()
        .filter(|t| t.outside_warehouse.is_some())
        .count();
    if outside > 0 && damaged == 0 {
        return Err(Error::Damaged(format!(
            "{outside} of {} table(s) keep their files outside this catalog's warehouse (listed above): the project was probably copied or its warehouse moved (Iceberg locations are absolute); point [catalog] warehouse and uri at the original's, or remove this project's warehouse/ to start afresh",
            checked.len()
        )));
    }
    if damaged > 0 {
        return Err(Error::Damaged(format!(
            "{damaged} of {} table(s) damaged (listed above)",
            checked.len()
        )));
    }
    Ok(())
}

/// A `namespace.table` argument.
fn table_arg(text: &str) -> Result<TableName> {
    TableName::parse(text).ok_or_else(|| {
        Error::Usage(format!(
            "`{text}` is not a table name; write namespace.table, e.g. gold.customer_metrics"
        ))
    })
}
