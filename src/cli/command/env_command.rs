//! `pipeline env ...`: the environments of a pipeline listed, compared with `main`,
//! published or dropped (see `crate::env`).

use std::sync::Arc;

use super::{table_arg, Context};
use crate::catalog::PipelineCatalog;
use crate::cli::args::EnvAction;
use crate::cli::print_env;
use crate::cli::progress::Progress;
use crate::error::{Error, Result};
use crate::records::lock::LockWait;
use crate::records::Invocation;
use crate::run::{run_pipeline, RunOptions};
use crate::spec::Pipeline;

/// `pipeline env list|diff|publish|drop`.
pub(super) async fn environments(cx: &Context<'_>, action: &EnvAction) -> Result<()> {
    let name = match action {
        EnvAction::List { pipeline }
        | EnvAction::Drop { pipeline, .. }
        | EnvAction::Publish { pipeline, .. }
        | EnvAction::Diff { pipeline, .. } => pipeline,
    };
    let spec = cx.load(name)?;
    let catalog = PipelineCatalog::connect(&spec.catalog).await?;
    match action {
        EnvAction::List { .. } => {
            print_env::list(&crate::env::list_envs(&catalog, &spec).await?, cx.cli.json)
        }
        EnvAction::Drop { name, reason, .. } => {
            let observer = Arc::new(Progress::stderr());
            let invocation = cx.invocation(reason);
            let done = crate::env::drop_env(&catalog, &spec, name, &invocation, observer).await?;
            print_env::dropped(&done, cx.cli.json);
        }
        EnvAction::Diff {
            name, tables, key, ..
        } => {
            let tables = tables
                .iter()
                .map(|t| table_arg(t))
                .collect::<Result<Vec<_>>>()?;
            let diffs = crate::env::diff_env(&catalog, &spec, name, &tables, key).await?;
            print_env::diff(&diffs, name, cx.cli.json);
            let differ = diffs.iter().filter(|d| d.differs()).count();
            if differ > 0 {
                return Err(Error::Failed(format!(
                    "{differ} table(s) differ between main and environment {name}"
                )));
            }
        }
        EnvAction::Publish {
            name,
            reason,
            rebase,
            ..
        } => {
            let invocation = cx.invocation(reason);
            if *rebase && !rebase_env(&catalog, &spec, name, &invocation).await? {
                // Run again on top of main, the environment changes nothing main holds.
                let nothing = crate::env::EnvChange {
                    env: name.clone(),
                    tables: Vec::new(),
                    run_id: None,
                };
                print_env::published(&nothing, cx.cli.json);
                return Ok(());
            }
            let observer = Arc::new(Progress::stderr());
            let done =
                crate::env::publish_env(&catalog, &spec, name, &invocation, observer).await?;
            print_env::published(&done, cx.cli.json);
        }
    }
    Ok(())
}

/// `env publish --rebase`, before the publish: when `main` of a table moved since environment
/// `name` was made, its branches start again from `main` (dropped, recorded) and the
/// environment is run again; nothing when `main` did not move. Refused, changing nothing, when
/// row edits made in the environment would be lost. Whether the environment then has
/// anything to publish.
async fn rebase_env(
    catalog: &PipelineCatalog,
    spec: &Pipeline,
    name: &str,
    invocation: &Invocation,
) -> Result<bool> {
    let moved = crate::env::diverged(catalog, spec, name).await?;
    if moved.is_empty() {
        return Ok(true);
    }
    crate::env::refuse_lost_edits(catalog, spec, name).await?;
    let progress = Arc::new(Progress::stderr());
    crate::env::drop_env(catalog, spec, name, invocation, progress.clone()).await?;
    let mut in_env = spec.clone();
    in_env.env = Some(name.to_string());
    let mut options = RunOptions::new(LockWait(None));
    options.invocation = invocation.clone();
    let report = run_pipeline(&in_env, progress, options).await?;
    tell!(
        "environment {name} ran again on top of main (main had moved in {}): run {}",
        moved.join(", "),
        report.run_id
    );
    let envs = crate::env::list_envs(catalog, spec).await?;
    Ok(envs.iter().any(|e| e.env == name))
}
