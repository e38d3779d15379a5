//! The record of a scheduled tick whose run failed for good: published alone (no tables) under
//! the pipeline's lock, so the tick counts as served and `pipeline runs` shows the failure.

use std::sync::Arc;

use chrono::Utc;

use super::options::RunOptions;
use crate::catalog::PipelineCatalog;
use crate::commit::publish::Publication;
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::lock::LockWait;
use crate::records::{tick_key, RunKind, RunRecord};
use crate::spec::Pipeline;

/// Records that run `run_id` of `pipeline` failed for good serving `options.tick`, with
/// `error`. Nothing is recorded when a record already holds the tick: that record is returned
/// (the tick was served after all, whatever failed), `None` when the failure was recorded.
pub async fn record_failure(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: &RunOptions,
    run_id: &str,
    started: chrono::DateTime<Utc>,
    error: &str,
) -> Result<Option<RunRecord>> {
    let tick = options
        .tick
        .ok_or_else(|| Error::Internal("a failure is recorded for scheduled ticks only".into()))?;
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let operation = FailureRecord {
        catalog: &catalog,
        pipeline,
        options,
        run_id,
        started,
        tick,
        error,
    };
    match operate(operation, observer).await {
        // Another scheduler's record of the tick got there first: nothing to record.
        Err(Error::TickServed { .. }) => {}
        Ok(None) => return Ok(None),
        Ok(Some(record)) => return Ok(Some(record)),
        Err(e) => return Err(e),
    }
    let served = catalog
        .run_for_tick(&pipeline.name, &tick_key(tick))
        .await?;
    served.map(Some).ok_or_else(|| {
        Error::Internal("the publish said a record holds the tick, yet none was found".into())
    })
}

/// A failed tick's record as the operation skeleton publishes it: alone, no table changed,
/// under the pipeline's lock.
struct FailureRecord<'a> {
    catalog: &'a PipelineCatalog,
    pipeline: &'a Pipeline,
    options: &'a RunOptions,
    run_id: &'a str,
    /// When the failed run started (the record says so, not when it is written).
    started: chrono::DateTime<Utc>,
    tick: chrono::DateTime<Utc>,
    error: &'a str,
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
            kind: RunKind::Run,
            pipeline: &self.pipeline.name,
            invocation: &self.options.invocation,
            run_id: Some(self.run_id.to_string()),
            started: Some(self.started),
        }
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        _run: &RunStart,
        _observer: &Arc<dyn Observer>,
    ) -> Result<Staging<(), Option<RunRecord>>> {
        let key = tick_key(self.tick);
        let served = opened
            .catalog
            .run_for_tick(&self.pipeline.name, &key)
            .await?;
        Ok(match served {
            Some(record) => Staging::Done(Some(record)),
            None => Staging::Publish(()),
        })
    }

    fn describe(&self, record: RunRecord, _staged: &()) -> RunRecord {
        record.serving(self.tick)
    }

    async fn publication(
        &mut self,
        _catalog: &PipelineCatalog,
        _staged: &mut (),
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        Ok(Some(Publication {
            changes: Vec::new(),
            record: Some(record.failed(self.error)),
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
