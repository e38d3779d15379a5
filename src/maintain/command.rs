//! `pipeline maintain PIPELINE`: what Iceberg's own procedures do, for the tables a pipeline
//! writes, as one recorded operation (`pipeline runs` lists it; its compactions are undone by
//! `pipeline rollback`):
//!
//! ```text
//!  lock      the pipeline's run lock (no run of it is staging files meanwhile), and a publish
//!            an earlier command left half done is resolved                (open.rs)
//!  plan      per table: partitions to compact, manifests to rewrite, snapshots to expire
//!            (never the newest `keep_last`, a branch or tag head, a snapshot a recent run
//!            record can roll back to, or one a transform's next incremental run reads from)
//!  write     compacted files (compact::compact), not yet referenced
//!  publish   every table's new metadata and the record in one catalog commit; a table
//!            another writer moved meanwhile is rebased (a compacted partition it touched is
//!            skipped and reported) and the commit tried again     (maintain_publish.rs)
//!  delete    the files only expired snapshots referenced (not on S3 Tables, which removes
//!            unreferenced files itself)
//! ```
//!
//! A reader that is reading a table at this moment keeps the snapshot it planned on: the
//! compaction's old files stay until a later expiry, older than `expire_older_than`, removes
//! them.

use std::sync::Arc;
use std::time::Instant;

use super::options::MaintainOptions;
use super::plan::plan;
use super::publish::MaintainOperation;
use super::report::MaintainReport;
use crate::catalog::PipelineCatalog;
use crate::error::Result;
use crate::operation::{operate, Held, Observer};
use crate::records::lock::LockWait;
use crate::records::Invocation;
use crate::spec::{Pipeline, TableName};

/// Maintains the tables of `pipeline` (see the module doc). Takes the run lock of every
/// pipeline of the project (it deletes files some of them may read); planned only, takes none
/// and changes nothing.
pub async fn maintain_pipeline(
    pipeline: &Pipeline,
    options: &MaintainOptions,
    observer: Arc<dyn Observer>,
) -> Result<MaintainReport> {
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    if options.plan_only {
        let clock = Instant::now();
        let now = options.now.unwrap_or_else(crate::fault::wall_now);
        let planned = plan(&catalog, pipeline, options, now).await?;
        return Ok(MaintainReport {
            pipeline: pipeline.name.clone(),
            run_id: None,
            planned_only: true,
            seconds: clock.elapsed().as_secs_f64(),
            tables: planned.into_iter().map(|p| p.report).collect(),
            undo: None,
        });
    }
    let operation = MaintainOperation {
        catalog: &catalog,
        pipeline,
        options,
        held: None,
        clock: Instant::now(),
    };
    operate(operation, observer).await
}

/// Maintains the tables of `pipeline` on `catalog` under the locks the caller holds (`held`:
/// at least the pipeline's run lock).
pub(crate) async fn maintain_locked(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    options: &MaintainOptions,
    observer: Arc<dyn Observer>,
    held: &Held,
) -> Result<MaintainReport> {
    let operation = MaintainOperation {
        catalog,
        pipeline,
        options,
        held: Some(held),
        clock: Instant::now(),
    };
    operate(operation, observer).await
}

/// `after_run = true`: maintains the tables a run just published, under the run's lock
/// (`held`), as its own recorded operation. A failure is returned as text: the run stays
/// published.
pub(crate) async fn after_run(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    tables: &[String],
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
    held: &Held,
) -> std::result::Result<MaintainReport, String> {
    let options = MaintainOptions {
        tables: Some(tables.iter().filter_map(|t| TableName::parse(t)).collect()),
        invocation: invocation.clone(),
        batch_expiry: true,
        ..MaintainOptions::new(LockWait(None))
    };
    maintain_locked(catalog, pipeline, &options, observer, held)
        .await
        .map_err(|e| {
            tracing::warn!(pipeline = %pipeline.name, error = %e, "maintenance after the run failed");
            e.to_string()
        })
}
