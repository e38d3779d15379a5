//! `pipeline maintain` as the operation skeleton runs it (`operation::operate`): the plan
//! made and compacted files written once (the staging); then at each publish attempt every
//! table's change (compaction, manifest rewrite, expiry, in that order on top of each other)
//! is built on the table as it is now and published with the record in one catalog commit. A
//! table another writer moved meanwhile has its compaction rebased (a partition it touched is
//! skipped and reported) and is rebuilt at the next attempt; files only expired snapshots
//! referenced are deleted once the commit is in.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::delete::Cleanup;
use super::options::MaintainOptions;
use super::plan::plan;
use super::report::{MaintainReport, Planned, TableMaintenance};
use crate::catalog::PipelineCatalog;
use crate::commit::publish::{rebase, Publication, TableChange};
use crate::commit::summary::{total_records, JOB, PIPELINE, RUN_ID};
use crate::commit::{
    expire_metadata, stage_snapshot, trim_metadata_log, StagedTable, TableTarget, WriteMode,
};
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::maintain::compact::compact;
use crate::maintain::{unreferenced_files, Unreferenced};
use crate::operation::{
    Held, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::lock::LockWait;
use crate::records::{ExpiredFiles, RunKind, RunRecord, TableRecord};
use crate::spec::Pipeline;

/// A maintenance of `pipeline`'s tables on `catalog`; `held`: the caller holds the locks
/// (maintenance after a run, a purge), else it takes every pipeline's of the project.
pub(super) struct MaintainOperation<'a> {
    pub catalog: &'a PipelineCatalog,
    pub pipeline: &'a Pipeline,
    pub options: &'a MaintainOptions,
    pub held: Option<&'a Held>,
    pub clock: Instant,
}

/// What maintenance staged: the plan, the compacted files (written once; a rebase reuses
/// them), and what the last publish attempt would leave to do.
pub(super) struct MaintainStaged {
    planned: Vec<Planned>,
    compacted: Vec<Option<StagedTable>>,
    properties: HashMap<String, String>,
    /// Each maintained table's location, in plan order, for the deletion step.
    locations: Vec<String>,
    /// The last attempt's changes, in publication order.
    last: Vec<After>,
}

/// One table's change in one publish attempt.
struct Change {
    change: TableChange,
    /// After the publish: what to report and delete.
    after: After,
}

/// What a published change leaves to do and report.
struct After {
    /// The table's index in the plan.
    index: usize,
    record: TableRecord,
    /// The files only the expired snapshots referenced, found before the publish (the
    /// record counts them) and deleted after it.
    unreferenced: Option<Unreferenced>,
    rewrote_manifests: bool,
    /// Earlier metadata files cut from the metadata log.
    old_metadata: Vec<String>,
}

impl<'a> TableOperation<'a> for MaintainOperation<'a> {
    type Staged = MaintainStaged;
    type Output = MaintainReport;

    fn opening(&self) -> Opening<'a> {
        match self.held {
            Some(_) => Opening::Held {
                catalog: self.catalog,
            },
            None => Opening::Project {
                catalog: self.catalog,
                pipeline: self.pipeline,
            },
        }
    }

    fn wait(&self) -> LockWait {
        self.options.wait
    }

    fn identity(&self) -> Identity<'_> {
        Identity::new(
            RunKind::Maintain,
            &self.pipeline.name,
            &self.options.invocation,
        )
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        run: &RunStart,
        observer: &Arc<dyn Observer>,
    ) -> Result<Staging<MaintainStaged, MaintainReport>> {
        let now = self.options.now.unwrap_or_else(crate::fault::wall_now);
        let planned = plan(&opened.catalog, self.pipeline, self.options, now).await?;
        let properties: HashMap<String, String> = [
            (PIPELINE, self.pipeline.name.as_str()),
            (RUN_ID, run.run_id.as_str()),
            (JOB, "maintain"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut staged = MaintainStaged {
            locations: planned
                .iter()
                .map(|p| p.table.metadata().location().to_string())
                .collect(),
            compacted: Vec::new(),
            planned,
            properties,
            last: Vec::new(),
        };
        if staged.planned.iter().any(|p| p.report.changes()) {
            write_compactions(&mut staged, &run.run_id, observer).await?;
            pause_point("maintain-written");
        }
        Ok(Staging::Publish(staged))
    }

    fn describe(&self, mut record: RunRecord, _staged: &MaintainStaged) -> RunRecord {
        record.purge_of = self.options.purge_of.clone();
        record
    }

    async fn publication(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut MaintainStaged,
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        staged.last.clear();
        if !staged.planned.iter().any(|p| p.report.changes()) {
            return Ok(None);
        }
        let mut changes = Vec::new();
        for (i, p) in staged.planned.iter().enumerate() {
            let compacted = staged.compacted[i].as_ref();
            if let Some(mut change) = build(catalog, p, compacted, &staged.properties).await? {
                change.after.index = i;
                changes.push(change);
            }
        }
        if changes.is_empty() {
            return Ok(None);
        }
        let tables = changes.iter().map(|c| c.after.record.clone()).collect();
        let mut publication = Publication {
            record: Some(record.with_tables(tables)),
            ..Publication::default()
        };
        for c in changes {
            publication.changes.push(c.change);
            staged.last.push(c.after);
        }
        Ok(Some(publication))
    }

    async fn on_conflict(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut MaintainStaged,
        _publication: &Publication,
        conflicts: &[usize],
        attempt: u32,
        observer: &Arc<dyn Observer>,
    ) -> Result<()> {
        for &c in conflicts {
            let i = staged.last[c].index;
            observer.rebasing(&staged.planned[i].name, attempt);
            let Some(compacted) = staged.compacted[i].take() else {
                continue; // rebuilt on the table as it is now at the next attempt
            };
            let report = &mut staged.planned[i].report;
            match rebase(catalog, &compacted).await {
                Ok(rebased) => {
                    skip_lost_groups(report, &rebased);
                    staged.compacted[i] = Some(rebased);
                }
                Err(Error::Conflict { message, .. }) => {
                    report.skipped_partitions = report
                        .compaction
                        .groups
                        .iter()
                        .map(|g| g.partition.clone())
                        .collect();
                    report.note = Some(format!("compaction skipped: {message}"));
                    report.files_out = 0;
                    report.files_in = 0;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn finish(
        self,
        opened: Opened<'a>,
        staged: MaintainStaged,
        record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<MaintainReport> {
        let held = self
            .held
            .or(opened.lock.as_ref())
            .ok_or_else(|| Error::Internal("maintenance without its locks".into()))?;
        let catalog: &PipelineCatalog = &opened.catalog;
        let published = record.is_some();
        let locations = staged.locations.clone();
        let (mut tables, freed) = published_reports(catalog, staged, published);
        pause_point("maintain-published");
        if self.options.batch_expiry && freed.iter().all(|(_, files)| files.is_empty()) {
            // After a run, nothing freed: the search for files nothing references (a killed
            // run's) waits for the next expiry, which surveys the catalog anyway.
            return Ok(report(self, record, tables));
        }
        let cleanup = Cleanup {
            held,
            unreferenced_age: self.options.unreferenced_age,
            purging: self.options.purge_of.is_some(),
            locations: &locations,
        };
        cleanup
            .run(catalog, self.pipeline, freed, &mut tables)
            .await?;
        Ok(report(self, record, tables))
    }
}

/// The report of a finished maintenance.
fn report(
    operation: MaintainOperation<'_>,
    record: Option<RunRecord>,
    tables: Vec<TableMaintenance>,
) -> MaintainReport {
    MaintainReport {
        pipeline: operation.pipeline.name.clone(),
        undo: record.as_ref().and_then(|r| r.undo_command()),
        run_id: record.map(|r| r.run_id),
        planned_only: false,
        seconds: operation.clock.elapsed().as_secs_f64(),
        tables,
    }
}

/// Writes the compacted files of every table whose plan compacts, once, into `staged`.
async fn write_compactions(
    staged: &mut MaintainStaged,
    run_id: &str,
    observer: &Arc<dyn Observer>,
) -> Result<()> {
    for p in staged.planned.iter_mut() {
        let plan = &p.report.compaction;
        if plan.groups.is_empty() {
            staged.compacted.push(None);
            continue;
        }
        observer.maintaining(
            &p.name,
            &format!(
                "compacting {} files in {} partition(s)",
                plan.input_files(),
                plan.groups.len()
            ),
        );
        let prefix = format!("{run_id}-compact-{}", uuid::Uuid::new_v4().simple());
        let properties = staged.properties.clone();
        let done = compact(&p.name, &p.table, plan, p.target, &prefix, properties).await?;
        if let Some(c) = &done {
            p.report.files_in = c.files_in;
            p.report.files_out = c.files_out;
            p.report.bytes_in = c.bytes_in;
            p.report.bytes_out = c.bytes_out;
        }
        staged.compacted.push(done.map(|c| c.staged));
    }
    Ok(())
}

/// Every table's report once the publish is in (or, `published` false, with nothing
/// published), and per table (by index) the files the published expiry freed, for the
/// deletion step.
fn published_reports(
    catalog: &PipelineCatalog,
    staged: MaintainStaged,
    published: bool,
) -> (Vec<TableMaintenance>, Vec<(usize, Vec<String>)>) {
    let mut reports: Vec<TableMaintenance> = staged.planned.into_iter().map(|p| p.report).collect();
    if !published {
        return (reports, Vec::new());
    }
    let mut freed_files = Vec::new();
    for after in staged.last {
        let report = &mut reports[after.index];
        report.snapshot_before = after.record.snapshot_before;
        report.snapshot_after = after.record.snapshot_after;
        report.rewrite_manifests = after.rewrote_manifests;
        report.expired_snapshots = after.record.expired.as_ref().map_or(0, |e| e.snapshots);
        if staged.compacted[after.index].is_none() {
            report.compaction.groups.clear();
        }
        let mut freed = after.old_metadata;
        if let Some(unreferenced) = after.unreferenced {
            report.deleted_data_files = unreferenced.data_files;
            report.deleted_bytes = unreferenced.data_bytes;
            if catalog.kind() == "s3tables" {
                report.note =
                    Some("S3 Tables removes the files expired snapshots referenced itself".into());
            } else {
                freed.extend(unreferenced.files);
            }
        }
        freed_files.push((after.index, freed));
    }
    (reports, freed_files)
}

/// The change of one table on top of its current state: the compaction (rebased when the
/// table moved), then a manifest rewrite, then expiry. `None` when nothing changes.
async fn build(
    catalog: &PipelineCatalog,
    p: &Planned,
    compacted: Option<&StagedTable>,
    properties: &HashMap<String, String>,
) -> Result<Option<Change>> {
    let file_io = catalog.file_io();
    let Some(Base {
        mut metadata,
        location,
        before,
        mut operation,
    }) = base(catalog, p, compacted).await?
    else {
        return Ok(None);
    };
    let mut rewrote_manifests = false;
    if p.report.rewrite_manifests && metadata.current_snapshot_id().is_some() {
        metadata = rewrite_manifests(p, metadata, &location, catalog, properties).await?;
        operation = operation.or(Some("rewrite_manifests"));
        rewrote_manifests = true;
    }
    let Some(head) = metadata.current_snapshot_id() else {
        return Ok(None);
    };
    let expired = expire_metadata(&p.name, &metadata, head, &p.expiry, file_io).await?;
    if let Some(e) = &expired {
        metadata = e.metadata.clone();
    }
    let Some(operation) = operation.or(expired.as_ref().map(|_| "expire_snapshots")) else {
        return Ok(None);
    };
    // The embedded catalog's metadata log is ours to keep short (a REST server keeps its own;
    // S3 Tables removes unreferenced files itself). After a run, with the expiry: deleting what
    // the trim drops surveys the catalog, which is done once per expiry batch.
    let old_metadata = if catalog.local_warehouse().is_some() && !p.expiry.hold_window {
        let (trimmed, dropped) = trim_metadata_log(metadata)?;
        metadata = trimmed;
        dropped
    } else {
        Vec::new()
    };
    let rows = total_records(metadata.current_snapshot());
    // What the expiry frees, against the metadata to be published (recorded, then deleted).
    let unreferenced = match &expired {
        Some(e) => Some(unreferenced_files(file_io, &metadata, e).await?),
        None => None,
    };
    let expired = expired.map(|e| ExpiredFiles {
        snapshots: e.snapshots.len() as u64,
        data_files: unreferenced.as_ref().map_or(0, |u| u.data_files),
        data_bytes: unreferenced.as_ref().map_or(0, |u| u.data_bytes),
        files: unreferenced.as_ref().map_or(0, |u| u.files.len() as u64)
            + old_metadata.len() as u64,
    });
    let record = TableRecord {
        table: p.name.to_string(),
        operation: operation.into(),
        partitions: None,
        snapshot_before: before,
        snapshot_after: Some(head),
        rows,
        expired,
        dropped_metadata: None,
    };
    Ok(Some(Change {
        after: After {
            index: 0,
            unreferenced,
            rewrote_manifests,
            old_metadata,
            record,
        },
        change: TableChange {
            table: p.name.clone(),
            expected_location: Some(location),
            metadata: Some(metadata),
        },
    }))
}

/// What a table's change starts from: the compaction's metadata (on the metadata location it
/// was staged on) or the table as it is now.
struct Base {
    metadata: iceberg::spec::TableMetadata,
    location: String,
    before: Option<i64>,
    operation: Option<&'static str>,
}

/// The base of `p`'s change; `None` when the table has no metadata location to move from.
async fn base(
    catalog: &PipelineCatalog,
    p: &Planned,
    compacted: Option<&StagedTable>,
) -> Result<Option<Base>> {
    let (metadata, location, before, operation) = match compacted {
        Some(staged) => (
            staged.published_metadata()?,
            staged.base_location.clone(),
            staged.metadata.current_snapshot_id(),
            Some("compact"),
        ),
        None => {
            let current = catalog.load_existing(&p.name).await?;
            let location = current.metadata_location_result()?;
            (
                TableTarget::unchanged(&p.name, current.metadata(), location)?.metadata,
                Some(location.to_string()),
                current.metadata().current_snapshot_id(),
                None,
            )
        }
    };
    Ok(location.map(|location| Base {
        metadata,
        location,
        before,
        operation,
    }))
}

/// `metadata` with its manifests rewritten (a `replace` snapshot of the same files).
async fn rewrite_manifests(
    p: &Planned,
    metadata: iceberg::spec::TableMetadata,
    location: &str,
    catalog: &PipelineCatalog,
    properties: &HashMap<String, String>,
) -> Result<iceberg::spec::TableMetadata> {
    let target = TableTarget {
        table: p.name.clone(),
        base_location: Some(location.to_string()),
        metadata,
        reshaped: false,
    };
    let mode = WriteMode::RewriteManifests;
    let staged = stage_snapshot(
        target,
        Vec::new(),
        catalog.file_io(),
        properties.clone(),
        mode,
    )
    .await?;
    staged.published_metadata()
}

/// After a rebase, the compaction's groups whose files are no longer replaced (another writer
/// changed them) are reported as skipped.
fn skip_lost_groups(report: &mut TableMaintenance, rebased: &StagedTable) {
    let WriteMode::Compact(kept) = &rebased.mode else {
        return;
    };
    for group in &report.compaction.groups {
        if !group.files.iter().any(|f| kept.contains(f))
            && !report.skipped_partitions.contains(&group.partition)
        {
            report.skipped_partitions.push(group.partition.clone());
        }
    }
}
