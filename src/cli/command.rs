//! What each command does: read its arguments, call the library, hand the result to its
//! printer. No logic of the engine lives here.

use std::sync::Arc;

use super::args::{Cli, Command};
use super::cluster;
use super::maintain;
use super::print;
use super::print_runs;
use super::progress::Progress;
use super::schedule;
use crate::catalog::{open_project_catalog, PipelineCatalog};
use crate::error::{Error, Result};
use crate::inspect;
use crate::plan::{
    lineage_of, lineage_roots, lineage_target, plan_backfill, plan_changes, validate, Backfill,
};
use crate::records::Invocation;
use crate::rollback::rollback;
use crate::run::{run_pipeline, RunOptions};
use crate::spec::{load_with_catalog, producer_of, TableName};

/// Runs the command `cli` names.
pub async fn execute(cli: Cli) -> Result<()> {
    let project = std::path::absolute(&cli.project).map_err(|e| Error::io(&cli.project, e))?;
    let catalog_name = cli.catalog.as_deref();
    let invocation =
        |reason: &Option<String>| Invocation::current(reason.clone(), cli.catalog.clone());
    match &cli.command {
        Command::Run {
            pipeline,
            full_refresh,
            reload_changed,
            reason,
            engine,
            wait,
        } => {
            let spec = load_with_catalog(&project, pipeline, catalog_name)?;
            let mut options = RunOptions::new(wait.lock_wait());
            options.engine = engine.choice(&spec)?;
            options.full_refresh = *full_refresh;
            options.reload_changed = *reload_changed;
            options.invocation = invocation(reason);
            let report = run_pipeline(&spec, Arc::new(Progress::stderr()), options).await?;
            print::run(&report, cli.json);
        }
        Command::Backfill {
            pipeline,
            from,
            to,
            tables,
            plan,
            reason,
            engine,
            wait,
        } => {
            let spec = load_with_catalog(&project, pipeline, catalog_name)?;
            let backfill = Backfill::request(&spec, from, to, tables)?;
            if *plan {
                let planned = plan_backfill(&spec, &backfill).await?;
                print::backfill_plan(&planned, cli.json);
                return Ok(());
            }
            let mut options = RunOptions::new(wait.lock_wait());
            options.engine = engine.choice(&spec)?;
            options.backfill = Some(backfill);
            options.invocation = invocation(reason);
            let report = run_pipeline(&spec, Arc::new(Progress::stderr()), options).await?;
            print::run(&report, cli.json);
        }
        Command::Lineage {
            target,
            format,
            pipeline,
        } => {
            let (table, _) = lineage_target(target)?;
            let name = match pipeline {
                Some(p) => p.clone(),
                None => producer_of(&project, &table)?,
            };
            let spec = load_with_catalog(&project, &name, catalog_name)?;
            let lineage = lineage_of(&spec).await?;
            let roots = lineage_roots(&lineage, &name, target)?;
            print::lineage(&lineage, &roots, format, cli.json);
        }
        Command::Plan {
            pipeline,
            fail_on_breaking,
        } => {
            let spec = load_with_catalog(&project, pipeline, catalog_name)?;
            let plan = plan_changes(&spec).await?;
            print::schema_plan(&plan, cli.json);
            let count = plan.breaking();
            if *fail_on_breaking && count > 0 {
                return Err(Error::Breaking { count });
            }
        }
        Command::Validate { pipeline } => {
            let spec = load_with_catalog(&project, pipeline, catalog_name)?;
            let validated = validate(&spec).await?;
            print::validate(&spec, &validated, cli.json);
        }
        Command::Tables { pipeline } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let tables = inspect::list(&catalog).await?;
            print::tables(&tables, cli.json);
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
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let files = inspect::files(&catalog, &table_arg(table)?, *as_of).await?;
            print::files(&files, cli.json);
        }
        Command::Describe { table, pipeline } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let info = inspect::describe(&catalog, &table_arg(table)?).await?;
            print::describe(&info, cli.json);
        }
        Command::History { table, pipeline } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let snapshots = inspect::history(&catalog, &table_arg(table)?).await?;
            print::history(&snapshots, cli.json);
        }
        Command::Runs { pipeline } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            print_runs::runs(&catalog.runs().await?, cli.json);
        }
        Command::RunInfo { run_id, pipeline } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let record = catalog.run(run_id).await?;
            let purges = match record.erase {
                Some(_) => catalog.purges_of(&record).await?,
                None => Vec::new(),
            };
            print_runs::record_with_purges(&record, &purges, cli.json);
        }
        Command::Rollback {
            run_id,
            reason,
            pipeline,
            plan,
        } => {
            let catalog: PipelineCatalog =
                open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let observer = Arc::new(Progress::stderr());
            let done = rollback(&catalog, run_id, &invocation(reason), observer, *plan).await?;
            match &done.record {
                Some(record) => print_runs::record(record, cli.json),
                None => print_runs::rollback_plan(&done, cli.json),
            }
        }
        Command::Scheduler(args) => return cluster::scheduler(args).await,
        Command::Executor(args) => return cluster::executor(args).await,
        Command::Schedule { action } => {
            return schedule::execute(&project, catalog_name, action, cli.json).await
        }
        Command::Check { table, pipeline } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let only = table.as_deref().map(table_arg).transpose()?;
            let checked = crate::maintain::check(&catalog, only.as_ref()).await?;
            print::check(&checked, cli.json);
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
        }
        Command::Orphans(args) => {
            return maintain::orphans(&project, catalog_name, args, cli.json).await
        }
        Command::Maintain(args) => {
            let invocation = invocation(&args.reason);
            return maintain::maintain(&project, catalog_name, args, invocation, cli.json).await;
        }
        Command::Sql {
            statement,
            reason,
            pipeline,
        } => {
            let parsed = crate::dml::parse_row_change(statement)?;
            let name = match pipeline {
                Some(p) => p.clone(),
                None => producer_of(&project, &parsed.table)?,
            };
            // The lock and the record are the pipeline's `[pipeline] name`'s, whatever its
            // spec file is called.
            let spec = load_with_catalog(&project, &name, catalog_name)?;
            let catalog = PipelineCatalog::connect(&spec.catalog).await?;
            let change = crate::dml::change_rows(
                &catalog,
                &spec.name,
                &parsed,
                &invocation(reason),
                Arc::new(Progress::stderr()),
            )
            .await?;
            print::row_change(&parsed.table, &change, cli.json);
        }
        Command::Erase {
            pipeline,
            condition,
            plan,
            reason,
            purge,
            rewrite_sources,
        } => {
            if !*plan && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return Err(Error::Usage(
                    "erase: say why with --reason (a request or ticket id); it goes into the run record".into(),
                ));
            }
            let spec = load_with_catalog(&project, pipeline, catalog_name)?;
            let request = crate::erase::EraseRequest {
                condition: condition.clone(),
                plan_only: *plan,
                rewrite_sources: *rewrite_sources,
                purge: *purge,
                invocation: invocation(reason),
            };
            let report = crate::erase::erase(&spec, &request, Arc::new(Progress::stderr())).await?;
            print::erase(&report, cli.json);
        }
        Command::Docs { pipeline, out } => {
            let spec = load_with_catalog(&project, pipeline, catalog_name)?;
            let out = if out.is_absolute() {
                out.clone()
            } else {
                project.join(out)
            };
            let site = crate::docs::write_site(&spec, &out).await?;
            print::docs(&site, cli.json);
        }
        Command::Mcp {
            allow_write,
            max_rows,
            max_bytes,
            query_timeout,
            http,
        } => {
            let limits = crate::mcp::Limits {
                max_rows: *max_rows,
                max_bytes: *max_bytes,
                timeout: std::time::Duration::from_secs(*query_timeout),
            };
            let lake = crate::mcp::Lake::new(project, cli.catalog.clone(), *allow_write, limits);
            return match http {
                Some(addr) => crate::mcp::serve_http(lake, *addr).await,
                None => crate::mcp::serve_stdio(lake).await,
            };
        }
        Command::Query {
            sql,
            as_of,
            pipeline,
        } => {
            let catalog = open_project_catalog(&project, pipeline.as_deref(), catalog_name).await?;
            let (schema, batches) = inspect::query(&catalog, sql, *as_of).await?;
            print::query(&schema, &batches, cli.json)?;
        }
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
