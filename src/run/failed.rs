//! The record of a run that failed: published alone (no tables) under the pipeline's lock, so
//! `pipeline runs` shows the failure, the next run names it, and a scheduled tick counts as
//! served.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::options::RunOptions;
use crate::catalog::PipelineCatalog;
use crate::commit::publish::Publication;
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::lock::LockWait;
use crate::records::{tick_key, FailureTrail, RunKind, RunRecord};
use crate::spec::Pipeline;

/// A run that failed: its id, when it started, why, and what it got done first.
#[derive(Debug, Clone)]
pub struct Failure {
    pub run_id: String,
    pub started: DateTime<Utc>,
    /// The error, as said to the user (secrets are redacted again when recorded).
    pub error: String,
    pub trail: FailureTrail,
}

/// Records that run `failure.run_id` of `pipeline` (asked with `options`: a backfill, a
/// scheduled tick) failed. Nothing is recorded when a record already holds the run or its tick
/// (the publish went through after all, whatever failed; or another scheduler served the
/// tick): that record is returned; `None` when the failure was recorded.
pub async fn record_failure(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: &RunOptions,
    failure: &Failure,
) -> Result<Option<RunRecord>> {
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let operation = FailureRecord {
        catalog: &catalog,
        pipeline,
        options,
        failure,
    };
    match operate(operation, observer).await {
        // Another scheduler's record of the tick got there first: nothing to record.
        Err(Error::TickServed { .. }) => {}
        Ok(found) => return Ok(found),
        Err(e) => return Err(e),
    }
    let tick = options.tick.map(tick_key).unwrap_or_default();
    let served = catalog.run_for_tick(&pipeline.name, &tick).await?;
    served.map(Some).ok_or_else(|| {
        Error::Internal("the publish said a record holds the tick, yet none was found".into())
    })
}

/// The newest run of `pipeline` (maintenance aside), when it failed: what a new run says first.
pub(super) async fn last_failure(
    catalog: &PipelineCatalog,
    pipeline: &str,
) -> Result<Option<RunRecord>> {
    let newest = catalog.newest_runs(pipeline, 0, 4).await?;
    Ok(newest
        .into_iter()
        .find(|r| r.kind != RunKind::Maintain)
        .filter(RunRecord::is_failure))
}

/// What a run says of the failure before it: when, why, and where to read more.
pub(super) fn failure_note(last: &RunRecord) -> String {
    format!(
        "the last run, {} (started {}), failed: {}; `pipeline run-info {}` shows what it got done",
        last.run_id,
        last.started_at,
        last.error.as_deref().unwrap_or("(no reason recorded)"),
        last.run_id
    )
}

/// A failed run's record as the operation skeleton publishes it: alone, no table changed,
/// under the pipeline's lock (after recovering any publish the run left half done).
struct FailureRecord<'a> {
    catalog: &'a PipelineCatalog,
    pipeline: &'a Pipeline,
    options: &'a RunOptions,
    failure: &'a Failure,
}

impl FailureRecord<'_> {
    /// The record that already holds the run or its tick, if one does.
    async fn already_recorded(&self, catalog: &PipelineCatalog) -> Result<Option<RunRecord>> {
        if let Some(record) = catalog.find_run(&self.failure.run_id).await? {
            return Ok(Some(record));
        }
        match self.options.tick {
            Some(tick) => {
                let key = tick_key(tick);
                catalog.run_for_tick(&self.pipeline.name, &key).await
            }
            None => Ok(None),
        }
    }
}

impl<'a> TableOperation<'a> for FailureRecord<'a> {
    type Staged = ();
    type Output = Option<RunRecord>;

    fn opening(&self) -> Opening<'a> {
        Opening::Pipeline {
            catalog: self.catalog,
            pipeline: &self.pipeline.name,
        }
    }

    fn wait(&self) -> LockWait {
        self.options.wait
    }

    fn identity(&self) -> Identity<'_> {
        Identity {
            kind: match self.options.backfill {
                Some(_) => RunKind::Backfill,
                None => RunKind::Run,
            },
            pipeline: &self.pipeline.name,
            invocation: &self.options.invocation,
            run_id: Some(self.failure.run_id.clone()),
            started: Some(self.failure.started),
        }
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        _run: &RunStart,
        _observer: &Arc<dyn Observer>,
    ) -> Result<Staging<(), Option<RunRecord>>> {
        Ok(match self.already_recorded(&opened.catalog).await? {
            Some(record) => Staging::Done(Some(record)),
            None => Staging::Publish(()),
        })
    }

    fn describe(&self, mut record: RunRecord, _staged: &()) -> RunRecord {
        record.env = self.pipeline.env.clone();
        match self.options.tick {
            Some(tick) => record.serving(tick),
            None => record,
        }
    }

    async fn publication(
        &mut self,
        _catalog: &PipelineCatalog,
        _staged: &mut (),
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        let failure = self.failure;
        Ok(Some(Publication {
            changes: Vec::new(),
            record: Some(record.failed(&failure.error, failure.trail.clone())),
        }))
    }

    async fn finish(
        self,
        _opened: Opened<'a>,
        _staged: (),
        _record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<Option<RunRecord>> {
        Ok(None)
    }
}
