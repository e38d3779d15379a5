//! The first step of every command that changes tables: the pipeline's run lock taken (one run
//! of a pipeline per catalog at a time), then any publish an earlier command left half done
//! completed or undone. A run also validates its pipeline against the catalog, before the lock
//! and again after it when tables may have moved meanwhile.

use std::sync::Arc;

use super::report::Observer;
use crate::catalog::lock::{self, LockWait, RunLock};
use crate::catalog::PipelineCatalog;
use crate::commit::publish::recover;
use crate::error::{Error, Result};
use crate::plan::{validate, Validated};
use crate::spec::Pipeline;

/// The run lock of a pipeline, held until dropped.
pub(super) struct Locked {
    pub lock: RunLock,
    /// Tables may have moved since the caller read them: it waited for another run, or a
    /// half-done publish was resolved.
    pub moved: bool,
}

/// Takes the run lock of `pipeline` on `catalog` (waiting as `wait` says, and telling
/// `observer` whom it waits for), then resolves a publish an earlier command left half done.
pub(super) async fn lock_and_recover(
    catalog: &PipelineCatalog,
    pipeline: &str,
    wait: LockWait,
    observer: Arc<dyn Observer>,
) -> Result<Locked> {
    let database = catalog.lock_anchor()?;
    let (name, waiter) = (pipeline.to_string(), observer.clone());
    let lock = tokio::task::spawn_blocking(move || {
        lock::acquire(&database, &name, wait, |holder| waiter.waiting_for(holder))
    })
    .await
    .map_err(|e| Error::Internal(format!("the lock task failed: {e}")))??;
    let recovered = recover(catalog).await?;
    if let Some(r) = &recovered {
        observer.recovered(&r.to_string());
    }
    Ok(Locked {
        moved: lock.waited || recovered.is_some(),
        lock,
    })
}

/// A pipeline validated against its catalog, with its run lock held.
pub(super) struct Opened {
    pub validated: Validated,
    pub lock: RunLock,
}

/// Validates `pipeline`, takes its run lock and resolves a half-done publish; validates again
/// when tables moved meanwhile, so the run reads them as they are now.
pub(super) async fn open(
    pipeline: &Pipeline,
    wait: LockWait,
    observer: Arc<dyn Observer>,
) -> Result<Opened> {
    let clock = std::time::Instant::now();
    let mut validated = validate(pipeline).await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "validated");
    let locked = lock_and_recover(&validated.catalog, &pipeline.name, wait, observer).await?;
    if locked.moved {
        validated = validate(pipeline).await?;
    }
    Ok(Opened {
        validated,
        lock: locked.lock,
    })
}
