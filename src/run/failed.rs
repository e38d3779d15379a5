//! The record of a scheduled tick whose run failed for good: published alone (no tables) under
//! the pipeline's lock, so the tick counts as served and `pipeline runs` shows the failure.

use std::sync::Arc;

use chrono::Utc;

use super::options::RunOptions;
use super::pipeline::served_by;
use crate::catalog::PipelineCatalog;
use crate::commit::publish::{publish, Publication};
use crate::error::{Error, Result};
use crate::operation::open::lock_and_recover;
use crate::operation::Observer;
use crate::records::{RunKind, RunRecord};
use crate::spec::Pipeline;

/// Records that run `run_id` of `pipeline` failed for good serving `options.tick`, with
/// `error`. Nothing is recorded when a record already holds the tick.
pub async fn record_failure(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: &RunOptions,
    run_id: &str,
    started: chrono::DateTime<Utc>,
    error: &str,
) -> Result<()> {
    let tick = options
        .tick
        .ok_or_else(|| Error::Internal("a failure is recorded for scheduled ticks only".into()))?;
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let _locked = lock_and_recover(&catalog, &pipeline.name, options.wait, observer).await?;
    if served_by(&catalog, &pipeline.name, tick).await?.is_some() {
        return Ok(());
    }
    let record = RunRecord::new(
        run_id,
        RunKind::Run,
        &pipeline.name,
        started,
        &options.invocation,
    )
    .serving(tick)
    .finished_now()
    .failed(error);
    publish(
        &catalog,
        Publication {
            changes: Vec::new(),
            record: Some(record),
        },
    )
    .await?;
    Ok(())
}
