//! The first step of every command that changes tables: the run lock taken (one run of a
//! pipeline per catalog at a time, keyed by its `[pipeline] name`; for a command that deletes
//! files, the lock of every pipeline of the project), then any publish an earlier command left
//! half done completed or undone. A run also validates its pipeline against the catalog,
//! before the lock and again after it when tables may have moved meanwhile.

use std::path::Path;
use std::sync::Arc;

use super::report::Observer;
use crate::catalog::PipelineCatalog;
use crate::commit::publish::recover;
use crate::error::{Error, Result};
use crate::plan::{validate, Validated};
use crate::records::lock::{self, acquire_others, AllLocks, LockWait, RunLock};
use crate::spec::{pipeline_names, Pipeline};

/// The run locks a command holds, released on drop.
pub enum Held {
    /// Its own pipeline's.
    Own(RunLock),
    /// Every pipeline's of the project (commands that delete files: `maintain`, `erase
    /// --purge`).
    All(AllLocks),
}

/// Which locks a command takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The pipeline's own.
    Pipeline,
    /// Every pipeline's of the project, in name order: the command deletes files.
    Project,
}

impl Held {
    /// The locks the one deletion path needs: every pipeline's. A command holding only its
    /// own takes the others without waiting; `None` when one of them is busy (the deletion
    /// is then left to a later `maintain`). `others` keeps what was taken.
    pub(crate) fn for_deleting<'a>(
        &'a self,
        catalog: &PipelineCatalog,
        project_dir: &Path,
        others: &'a mut Option<AllLocks>,
    ) -> Result<Option<&'a AllLocks>> {
        match self {
            Held::All(all) => Ok(Some(all)),
            Held::Own(own) => {
                let names = pipeline_names(project_dir)?;
                *others = acquire_others(&catalog.lock_anchor()?, &names, own)?;
                Ok(others.as_ref())
            }
        }
    }
}

/// The run lock of a pipeline, held until dropped.
pub(super) struct Locked {
    pub lock: Held,
    /// Tables may have moved since the caller read them: it waited for another run, or a
    /// half-done publish was resolved.
    pub moved: bool,
}

/// Takes the run lock of `pipeline` (its `[pipeline] name`) on `catalog` (waiting as `wait`
/// says, and telling `observer` whom it waits for), then resolves a publish an earlier command
/// left half done.
pub(super) async fn lock_and_recover(
    catalog: &PipelineCatalog,
    pipeline: &str,
    wait: LockWait,
    observer: Arc<dyn Observer>,
) -> Result<Locked> {
    let anchor = catalog.lock_anchor()?;
    let (name, waiter) = (pipeline.to_string(), observer.clone());
    let lock = tokio::task::spawn_blocking(move || {
        lock::acquire(&anchor, &name, wait, |holder| waiter.waiting_for(holder))
    })
    .await
    .map_err(|e| Error::Internal(format!("the lock task failed: {e}")))??;
    let waited = lock.waited;
    recovered(catalog, Held::Own(lock), waited, observer).await
}

/// Takes the run lock of every pipeline of `pipeline`'s project (by `[pipeline] name`, in
/// name order, `pipeline`'s own included), then resolves a half-done publish.
pub(super) async fn lock_project_and_recover(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    wait: LockWait,
    observer: Arc<dyn Observer>,
) -> Result<Locked> {
    let anchor = catalog.lock_anchor()?;
    let mut names = pipeline_names(&pipeline.project_dir)?;
    names.push(pipeline.name.clone());
    let waiter = observer.clone();
    let (locks, waited) = tokio::task::spawn_blocking(move || {
        let waited = std::sync::atomic::AtomicBool::new(false);
        let locks = lock::acquire_all(&anchor, &names, wait, |name, holder| {
            waited.store(true, std::sync::atomic::Ordering::Relaxed);
            waiter.waiting_for(&format!("{name}: {holder}"))
        })?;
        Ok::<_, Error>((locks, waited.into_inner()))
    })
    .await
    .map_err(|e| Error::Internal(format!("the lock task failed: {e}")))??;
    recovered(catalog, Held::All(locks), waited, observer).await
}

async fn recovered(
    catalog: &PipelineCatalog,
    lock: Held,
    waited: bool,
    observer: Arc<dyn Observer>,
) -> Result<Locked> {
    let recovered = recover(catalog).await?;
    if let Some(r) = &recovered {
        observer.recovered(&r.to_string());
    }
    Ok(Locked {
        moved: waited || recovered.is_some(),
        lock,
    })
}

/// Refuses to change a table of `pipeline` whose location lies outside the embedded catalog's
/// warehouse: a copied project's catalog points at the original's files (Iceberg locations
/// are absolute), and writing there would leave files the original's catalog does not know.
pub(super) async fn refuse_outside_warehouse(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
) -> Result<()> {
    if catalog.local_warehouse().is_none() {
        return Ok(());
    }
    let mut outside = Vec::new();
    let mut root = None;
    for table in pipeline.tables_written() {
        let Some(loaded) = catalog.load(&table).await? else {
            continue;
        };
        let location = loaded.metadata().location().to_string();
        if let Some(warehouse) = catalog.outside_warehouse(&location) {
            outside.push(format!("{table} at {location}"));
            root = Some(warehouse);
        }
    }
    let Some(root) = root else {
        return Ok(());
    };
    Err(Error::Pipeline {
        file: pipeline.file.clone(),
        message: format!(
            "{} table(s) of this catalog keep their files outside its warehouse {}: {}; nothing was changed",
            outside.len(),
            root.display(),
            outside.join(", ")
        ),
        hint: Some(
            "the project was probably copied or its warehouse moved (Iceberg locations are absolute, so the copy's catalog points at the original's files): point [catalog] warehouse (and uri) at the original's, or remove this project's warehouse/ to start afresh".into(),
        ),
    })
}

/// A pipeline validated against its catalog, with its run lock held.
pub(super) struct OpenedPipeline {
    pub validated: Validated,
    pub lock: Held,
}

/// Validates `pipeline`, takes the locks `scope` says and resolves a half-done publish;
/// validates again when tables moved meanwhile, so the run reads them as they are now.
pub(super) async fn open(
    pipeline: &Pipeline,
    wait: LockWait,
    observer: Arc<dyn Observer>,
    scope: Scope,
) -> Result<OpenedPipeline> {
    let clock = std::time::Instant::now();
    let mut validated = validate(pipeline).await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "validated");
    let catalog = &validated.catalog;
    let locked = match scope {
        Scope::Pipeline => lock_and_recover(catalog, &pipeline.name, wait, observer).await?,
        Scope::Project => lock_project_and_recover(catalog, pipeline, wait, observer).await?,
    };
    if locked.moved {
        validated = validate(pipeline).await?;
    }
    refuse_outside_warehouse(&validated.catalog, pipeline).await?;
    Ok(OpenedPipeline {
        validated,
        lock: locked.lock,
    })
}
