//! `pipeline env ...`: the environments of a pipeline listed, compared with `main`,
//! published or dropped (see `crate::env`).

use std::sync::Arc;

use super::{table_arg, Context};
use crate::catalog::PipelineCatalog;
use crate::cli::args::EnvAction;
use crate::cli::print_env;
use crate::cli::progress::Progress;
use crate::error::{Error, Result};

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
        EnvAction::Publish { name, reason, .. } => {
            let observer = Arc::new(Progress::stderr());
            let invocation = cx.invocation(reason);
            let done =
                crate::env::publish_env(&catalog, &spec, name, &invocation, observer).await?;
            print_env::published(&done, cx.cli.json);
        }
    }
    Ok(())
}
