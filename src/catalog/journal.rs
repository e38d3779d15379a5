//! Publishing on catalogs that move one table at a time (S3 Tables; REST servers without
//! multi-table commits), through a durable publish record.
//!
//! The record lives in the catalog itself, in the control table `pipeline_meta.runs`: its
//! table property `pipeline.publishing` holds the run's intent (which snapshot each table moves
//! to, from which metadata version), and each published run appends one row holding its run
//! record. Every change of the control table is a new snapshot moved by compare-and-set, so
//! only one intent can be pending at a time.
//!
//! ```text
//!  write new metadata files ─▶ check every table is still at its base ─▶ (conflict: nothing done)
//!      ─▶ control table: set intent ─▶ move table 1 … table N (compare-and-set each)
//!      ─▶ control table: clear intent + append run record
//! ```
//!
//! A command killed after the intent is set leaves it pending. The next command that changes
//! tables ([`recover`]) completes it: tables still at their base move forward, and the run
//! record is written. If a table was moved meanwhile by another writer (neither at its base
//! nor at its target), the intent is rolled back instead: tables already moved go back to their
//! base version, and no run record is written. Moving a table that is already at its target is
//! a no-op, so a recovery racing the original command converges on the same outcome.
//!
//! What a reader can observe: between the first and the last table move, some of the run's
//! tables are at the new version and others at the old one (never a mix within one table).

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use async_trait::async_trait;
use futures::TryStreamExt;
use iceberg::io::FileIO;
use iceberg::spec::{
    FormatVersion, NestedField, PrimitiveType, Schema, SnapshotReference, SnapshotRetention,
    TableMetadata, Type, MAIN_BRANCH,
};
use iceberg::{MetadataLocation, NamespaceIdent, TableCreation};
use serde::{Deserialize, Serialize};

use super::publish::{Publication, PublishOutcome, Publisher};
use super::remote::{RemoteCatalog, Swap};
use super::runs::RunRecord;
use crate::commit::{expire_snapshots, stage_snapshot, TableTarget, WriteMode};
use crate::error::{Error, Result};
use crate::spec::TableName;
use crate::write::TableWriter;

/// Namespace of the control table of remote catalogs.
pub const CONTROL_NAMESPACE: &str = "pipeline_meta";
/// Name of the control table: run records (rows) and the pending publish (a table property).
pub const CONTROL_TABLE: &str = "runs";
const INTENT_KEY: &str = "pipeline.publishing";
/// Run records are compacted into one file when the control table holds this many.
const CONTROL_FILES_MAX: usize = 32;
/// Snapshots of the control table kept (older ones expire: nobody time-travels it).
const CONTROL_SNAPSHOTS_KEPT: usize = 16;

/// One table's planned move.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IntentEntry {
    table: String,
    /// The metadata version the change was staged on.
    from_location: String,
    from_snapshot: Option<i64>,
    /// `main` after the move (`None`: the table is emptied).
    to_snapshot: Option<i64>,
    /// The new metadata, already written.
    metadata_file: String,
}

/// A publish in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Intent {
    id: String,
    started_at: String,
    entries: Vec<IntentEntry>,
    record: Option<RunRecord>,
}

/// What [`recover`] did with a publish a previous command left half done.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// The run whose publish was pending.
    pub run_id: String,
    /// `true`: completed (rolled forward); `false`: undone (rolled back).
    pub completed: bool,
    /// Tables it moved.
    pub tables: Vec<String>,
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.completed {
            write!(
                f,
                "completed the publish of run {} that an earlier command left half done (moved: {})",
                self.run_id,
                list(&self.tables)
            )
        } else {
            write!(
                f,
                "rolled back the half-done publish of run {}: another writer changed one of its tables meanwhile (moved back: {})",
                self.run_id,
                list(&self.tables)
            )
        }
    }
}

fn list(tables: &[String]) -> String {
    if tables.is_empty() {
        "none".into()
    } else {
        tables.join(", ")
    }
}

pub(super) fn control_name() -> TableName {
    TableName {
        namespace: CONTROL_NAMESPACE.into(),
        name: CONTROL_TABLE.into(),
    }
}

fn control_schema() -> Result<Schema> {
    let fields = [
        "run_id",
        "pipeline",
        "kind",
        "started_at",
        "finished_at",
        "record",
    ]
    .iter()
    .enumerate()
    .map(|(i, name)| {
        NestedField::required(i as i32 + 1, *name, Type::Primitive(PrimitiveType::String)).into()
    })
    .collect::<Vec<_>>();
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// The control table's current version, created on first use.
async fn control_table(remote: &RemoteCatalog) -> Result<super::remote::Current> {
    let name = control_name();
    if let Some(current) = remote.current(&name).await? {
        return Ok(current);
    }
    let ns = NamespaceIdent::new(CONTROL_NAMESPACE.to_string());
    if !remote.catalog.namespace_exists(&ns).await? {
        if let Err(e) = remote.catalog.create_namespace(&ns, HashMap::new()).await {
            if !remote.catalog.namespace_exists(&ns).await? {
                return Err(e.into());
            }
        }
    }
    let creation = TableCreation::builder()
        .name(CONTROL_TABLE.to_string())
        .schema(control_schema()?)
        .format_version(FormatVersion::V2)
        .properties(HashMap::from([(
            "comment".to_string(),
            "pipeline run records (one row per published run) and the pending publish".to_string(),
        )]))
        .build();
    let created = remote.catalog.create_table(&ns, creation).await;
    match (remote.current(&name).await?, created) {
        (Some(current), _) => Ok(current),
        (None, Err(e)) => Err(Error::table(
            &name,
            "cannot create the control table (run records and pending publishes) of this catalog",
            e,
        )),
        (None, Ok(_)) => Err(Error::table_msg(&name, "created, but cannot be loaded")),
    }
}

fn intent_of(metadata: &TableMetadata) -> Result<Option<Intent>> {
    metadata
        .properties()
        .get(INTENT_KEY)
        .map(|text| {
            serde_json::from_str(text).map_err(|e| {
                Error::table_msg(
                    control_name(),
                    format!("unreadable pending publish in property {INTENT_KEY}: {e}"),
                )
            })
        })
        .transpose()
}

/// The control table's next version: the intent set (`Some`) or cleared (`None`), and
/// `record` appended as a row.
async fn stage_control(
    remote: &RemoteCatalog,
    current: &super::remote::Current,
    intent: Option<&Intent>,
    record: Option<&RunRecord>,
) -> Result<TableMetadata> {
    let name = control_name();
    let target = TableTarget {
        table: name.clone(),
        base_location: Some(current.location.clone()),
        metadata: current.metadata.clone(),
        reshaped: false,
    };
    let mut files = Vec::new();
    let mut mode = WriteMode::Append;
    if let Some(record) = record {
        let mut writer = TableWriter::new(
            &name.to_string(),
            &current.metadata,
            remote.file_io.clone(),
            64 * 1024 * 1024,
            &format!("run-{}", record.run_id),
        )
        .await?;
        let json = serde_json::to_string(record)
            .map_err(|e| Error::Usage(format!("cannot encode the run record: {e}")))?;
        let column = |v: &str| Arc::new(StringArray::from(vec![v.to_string()])) as ArrayRef;
        let batch = RecordBatch::try_new(
            writer.schema().clone(),
            vec![
                column(&record.run_id),
                column(&record.pipeline),
                column(&record.kind),
                column(&record.started_at),
                column(&record.finished_at),
                column(&json),
            ],
        )?;
        writer.write(batch).await?;
        // One small file per run would pile up: past a few dozen, all records are rewritten
        // into one file with the new one.
        let live_files = current
            .metadata
            .current_snapshot()
            .and_then(|s| s.summary().additional_properties.get("total-data-files"))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        if live_files >= CONTROL_FILES_MAX {
            let table = iceberg::table::Table::builder()
                .metadata(Arc::new(current.metadata.clone()))
                .identifier(name.ident())
                .file_io(remote.file_io.clone())
                .runtime(iceberg::Runtime::try_current()?)
                .readonly(true)
                .build()?;
            let mut rows = table.scan().build()?.to_arrow().await?;
            while let Some(batch) = rows.try_next().await? {
                writer.write(batch).await?;
            }
            mode = WriteMode::Overwrite;
        }
        files = writer.close().await?;
    }
    let summary = HashMap::from([(
        "pipeline.control".to_string(),
        match (intent, record) {
            (Some(_), _) => "publish-intent",
            (None, Some(_)) => "run-record",
            (None, None) => "publish-cleared",
        }
        .to_string(),
    )]);
    let mut staged = stage_snapshot(target, files, &remote.file_io, summary, mode).await?;
    expire_snapshots(&mut staged, CONTROL_SNAPSHOTS_KEPT, &remote.file_io).await?;
    let mut builder = staged
        .published_metadata()?
        .into_builder(Some(current.location.clone()));
    builder = match intent {
        Some(intent) => builder.set_properties(HashMap::from([(
            INTENT_KEY.to_string(),
            serde_json::to_string(intent)
                .map_err(|e| Error::Usage(format!("cannot encode the publish intent: {e}")))?,
        )]))?,
        None if current.metadata.properties().contains_key(INTENT_KEY) => {
            builder.remove_properties(&[INTENT_KEY.to_string()])?
        }
        None => builder,
    };
    Ok(builder.build()?.metadata)
}

/// The control table now, and its next version with `record` appended (for a publisher that
/// commits it together with the run's tables).
pub(super) async fn control_with_record(
    remote: &RemoteCatalog,
    record: &RunRecord,
) -> Result<(super::remote::Current, TableMetadata)> {
    let mut control = control_table(remote).await?;
    // A publish left pending by a table-by-table publisher (e.g. another machine with
    // `transactions = false`) is resolved first, never silently dropped.
    if let Some(pending) = intent_of(&control.metadata)? {
        resolve(remote, &pending).await?;
        control = control_table(remote).await?;
    }
    let new = stage_control(remote, &control, None, Some(record)).await?;
    Ok((control, new))
}

/// Moves the control table one version on (see [`stage_control`]). `Swap::Conflict` when
/// another command changed it first.
async fn commit_control(
    remote: &RemoteCatalog,
    current: &super::remote::Current,
    intent: Option<&Intent>,
    record: Option<&RunRecord>,
) -> Result<Swap> {
    let new = stage_control(remote, current, intent, record).await?;
    let file = write_next(&remote.file_io, &current.location, &new).await?;
    remote
        .pointers
        .swap(
            &control_name(),
            &current.location,
            &current.metadata,
            &file,
            &new,
        )
        .await
}

/// Writes `metadata` as the version after `base_location`; returns its location.
async fn write_next(
    file_io: &FileIO,
    base_location: &str,
    metadata: &TableMetadata,
) -> Result<String> {
    let location = MetadataLocation::from_str(base_location)?
        .with_next_version()
        .with_new_metadata(metadata);
    metadata.write_to(file_io, &location).await?;
    Ok(location.to_string())
}

/// The publisher of remote catalogs without multi-table commits.
pub struct JournaledPublisher {
    pub remote: Arc<RemoteCatalog>,
}

#[async_trait]
impl Publisher for JournaledPublisher {
    async fn try_publish(&self, publication: &Publication) -> Result<PublishOutcome> {
        let remote = &self.remote;
        if publication.changes.is_empty() {
            // Nothing moves: only the record is written (one control-table commit).
            if let Some(record) = &publication.record {
                append_record(remote, record).await?;
            }
            return Ok(PublishOutcome::Published(Vec::new()));
        }
        // 1. New metadata files (invisible until a pointer moves to them).
        let mut entries = Vec::with_capacity(publication.changes.len());
        let mut news = Vec::with_capacity(publication.changes.len());
        for change in &publication.changes {
            let (base_location, base, new) = remote.versions_of(change).await?;
            let file = write_next(&remote.file_io, &base_location, &new).await?;
            entries.push(IntentEntry {
                table: change.table.to_string(),
                from_location: base_location,
                from_snapshot: base.current_snapshot_id(),
                to_snapshot: new.current_snapshot_id(),
                metadata_file: file,
            });
            news.push((base, new));
        }
        // 2. Every table must still be where the run found it.
        let mut conflicts = Vec::new();
        for (index, change) in publication.changes.iter().enumerate() {
            let current = remote.current(&change.table).await?;
            if current.map(|c| c.location) != change.expected_location {
                conflicts.push(index);
            }
        }
        if !conflicts.is_empty() {
            return Ok(PublishOutcome::Conflicts(conflicts));
        }
        // 3. The intent, durably.
        let intent = Intent {
            // Fresh for every attempt: a resolver of an earlier attempt never matches it.
            id: uuid::Uuid::new_v4().to_string(),
            started_at: chrono::Utc::now().to_rfc3339(),
            entries,
            record: publication.record.clone(),
        };
        set_intent(remote, &intent).await?;
        // 4. Each table, by compare-and-set.
        let mut moved: Vec<String> = Vec::new();
        for (index, (entry, (base, new))) in intent.entries.iter().zip(&news).enumerate() {
            let table = &publication.changes[index].table;
            match remote
                .pointers
                .swap(table, &entry.from_location, base, &entry.metadata_file, new)
                .await?
            {
                Swap::Moved(location) => moved.push(location),
                Swap::AlreadyThere => {
                    let now = remote.current(table).await?;
                    moved.push(now.map(|c| c.location).unwrap_or_default());
                }
                Swap::Conflict => {
                    if !is_pending(remote, &intent).await? {
                        // Another command resolved this publish meanwhile (a recovery that
                        // found it pending): its outcome is ours.
                        return outcome_of(remote, &intent, publication, index).await;
                    }
                    // Another writer got in between the check and the move: resolve our
                    // publish (forward if the table is at our target after all, else back) and
                    // report what it became.
                    tracing::warn!(table = %table, "table moved during publish; resolving");
                    let recovery = resolve(remote, &intent).await?;
                    if recovery.completed {
                        return outcome_of(remote, &intent, publication, index).await;
                    }
                    return Ok(PublishOutcome::Conflicts(vec![index]));
                }
            }
            crate::fault::pause_point("publishing");
        }
        // 5. Done: clear the intent and append the record.
        if !finish(remote, &intent, true).await? {
            return outcome_of(remote, &intent, publication, 0).await;
        }
        Ok(PublishOutcome::Published(moved))
    }
}

/// Sets `intent` on the control table, first resolving another command's pending one.
async fn set_intent(remote: &RemoteCatalog, intent: &Intent) -> Result<()> {
    for _ in 0..20 {
        let control = control_table(remote).await?;
        if let Some(pending) = intent_of(&control.metadata)? {
            tracing::warn!(run = %pending.id, "another command left a publish pending; resolving it first");
            resolve(remote, &pending).await?;
            continue;
        }
        if let Swap::Moved(_) | Swap::AlreadyThere =
            commit_control(remote, &control, Some(intent), None).await?
        {
            return Ok(());
        }
    }
    Err(Error::Conflict {
        table: control_name().to_string(),
        message: "the control table kept changing while this command tried to record its publish"
            .into(),
    })
}

/// Appends `record` alone (a run that changed no table), after any pending publish.
async fn append_record(remote: &RemoteCatalog, record: &RunRecord) -> Result<()> {
    for _ in 0..20 {
        let control = control_table(remote).await?;
        if let Some(pending) = intent_of(&control.metadata)? {
            resolve(remote, &pending).await?;
            continue;
        }
        if let Swap::Moved(_) | Swap::AlreadyThere =
            commit_control(remote, &control, None, Some(record)).await?
        {
            return Ok(());
        }
    }
    Err(Error::Conflict {
        table: control_name().to_string(),
        message: "the control table kept changing while this command tried to record its run"
            .into(),
    })
}

/// Whether `intent` is still the control table's pending publish.
async fn is_pending(remote: &RemoteCatalog, intent: &Intent) -> Result<bool> {
    let control = control_table(remote).await?;
    Ok(intent_of(&control.metadata)?.is_some_and(|p| p.id == intent.id))
}

/// The outcome of a publish another command resolved: published if its run record exists,
/// otherwise (rolled back) a conflict on change `index`.
async fn outcome_of(
    remote: &RemoteCatalog,
    intent: &Intent,
    publication: &Publication,
    index: usize,
) -> Result<PublishOutcome> {
    let recorded = match &intent.record {
        Some(record) => run_records(remote)
            .await?
            .iter()
            .any(|r| r.run_id == record.run_id),
        None => false,
    };
    if !recorded {
        tracing::warn!(run = %intent.id, "another command rolled this publish back");
        return Ok(PublishOutcome::Conflicts(vec![index]));
    }
    tracing::info!(run = %intent.id, "another command completed this publish");
    Ok(PublishOutcome::Published(
        remote.locations(&publication.changes).await?,
    ))
}

/// Clears `intent` (if it is still the pending one) and, when `completed`, appends its record.
/// `false` when another command had already resolved it.
async fn finish(remote: &RemoteCatalog, intent: &Intent, completed: bool) -> Result<bool> {
    for _ in 0..20 {
        let control = control_table(remote).await?;
        match intent_of(&control.metadata)? {
            Some(pending) if pending.id == intent.id => {}
            // Someone else (a recovery) resolved it already.
            _ => return Ok(false),
        }
        let record = if completed {
            intent.record.as_ref()
        } else {
            None
        };
        if let Swap::Moved(_) | Swap::AlreadyThere =
            commit_control(remote, &control, None, record).await?
        {
            return Ok(true);
        }
    }
    Err(Error::Catalog {
        catalog: remote.identity.clone(),
        message: format!(
            "the control table {} kept changing while this command finished the publish of run {}; every table has moved, and the next run, backfill or rollback records it",
            control_name(),
            run_of(intent)
        ),
    })
}

/// Where one table of an intent stands.
enum Position {
    AtBase,
    AtTarget,
    Elsewhere,
}

async fn position(remote: &RemoteCatalog, entry: &IntentEntry) -> Result<(TableName, Position)> {
    let table = TableName::parse(&entry.table).ok_or_else(|| {
        Error::Usage(format!(
            "publish record names a bad table `{}`",
            entry.table
        ))
    })?;
    let position = match remote.current(&table).await? {
        Some(c) if c.location == entry.from_location => Position::AtBase,
        Some(c)
            if c.location == entry.metadata_file
                || (remote.kind == "rest"
                    && c.metadata.current_snapshot_id() == entry.to_snapshot
                    && c.metadata.current_snapshot_id() != entry.from_snapshot) =>
        {
            Position::AtTarget
        }
        _ => Position::Elsewhere,
    };
    Ok((table, position))
}

/// The version that undoes a move from `old` to `target`: `target` with `main`, the current
/// schema and the default partition spec back where `old` had them, and the snapshots the
/// move added removed. Snapshots the move expired stay expired (a REST server cannot take
/// them back); their file ledger lives on in `target`'s checkpoint, which is kept, so no
/// source file is ever loaded twice after the undo.
fn moved_back(
    target: &TableMetadata,
    old: &TableMetadata,
    target_location: &str,
) -> Result<TableMetadata> {
    let added: Vec<i64> = target
        .snapshots()
        .map(|s| s.snapshot_id())
        .filter(|id| old.snapshot_by_id(*id).is_none())
        .collect();
    let mut builder = target
        .clone()
        .into_builder(Some(target_location.to_string()))
        .set_current_schema(old.current_schema_id())?
        .set_default_partition_spec(old.default_partition_spec_id())?;
    builder = match old.current_snapshot_id() {
        Some(id) => builder.set_ref(
            MAIN_BRANCH,
            SnapshotReference::new(id, SnapshotRetention::branch(None, None, None)),
        )?,
        None => builder.remove_ref(MAIN_BRANCH),
    };
    Ok(builder.remove_snapshots(&added).build()?.metadata)
}

/// The run an intent publishes (its record's run id), for messages.
fn run_of(intent: &Intent) -> String {
    intent
        .record
        .as_ref()
        .map(|r| r.run_id.clone())
        .unwrap_or_else(|| intent.id.clone())
}

/// Completes `intent` (every table still at its base moves on) or, when a table is elsewhere,
/// moves the tables that reached their target back; then clears it. Returns what it did.
async fn resolve(remote: &RemoteCatalog, intent: &Intent) -> Result<Recovery> {
    let mut positions = Vec::new();
    for entry in &intent.entries {
        positions.push(position(remote, entry).await?);
    }
    let conflicting = positions
        .iter()
        .any(|(_, p)| matches!(p, Position::Elsewhere));
    let mut tables = Vec::new();
    for (entry, (table, position)) in intent.entries.iter().zip(&positions) {
        match (conflicting, position) {
            (false, Position::AtBase) => {
                let base = remote.read_metadata(&entry.from_location).await?;
                let new = remote.read_metadata(&entry.metadata_file).await?;
                match remote
                    .pointers
                    .swap(table, &entry.from_location, &base, &entry.metadata_file, &new)
                    .await?
                {
                    Swap::Moved(_) | Swap::AlreadyThere => tables.push(entry.table.clone()),
                    Swap::Conflict => {
                        return Err(Error::Catalog {
                            catalog: remote.identity.clone(),
                            message: format!(
                                "table {} moved while this command completed the pending publish of run {}; the publish is still pending: run the command again to finish or undo it",
                                entry.table,
                                run_of(intent)
                            ),
                        })
                    }
                }
            }
            (true, Position::AtTarget) => {
                // Back to the old version, but only from our target (never over a commit made
                // since), and as a fresh metadata file: a stale forward move expecting the old
                // location then fails instead of redoing the publish.
                let target = remote.read_metadata(&entry.metadata_file).await?;
                let old = remote.read_metadata(&entry.from_location).await?;
                let back = moved_back(&target, &old, &entry.metadata_file)?;
                let fresh = write_next(&remote.file_io, &entry.metadata_file, &back).await?;
                match remote
                    .pointers
                    .swap(table, &entry.metadata_file, &target, &fresh, &back)
                    .await?
                {
                    Swap::Moved(_) | Swap::AlreadyThere => tables.push(entry.table.clone()),
                    Swap::Conflict => tracing::warn!(
                        table = %table,
                        "moved by another writer while rolling back; left as that writer put it"
                    ),
                }
            }
            _ => {}
        }
    }
    finish(remote, intent, !conflicting).await?;
    Ok(Recovery {
        run_id: run_of(intent),
        completed: !conflicting,
        tables,
    })
}

/// Resolves the publish a previous command left pending, if any (see the module doc).
pub async fn recover(remote: &RemoteCatalog) -> Result<Option<Recovery>> {
    let name = control_name();
    let Some(control) = remote.current(&name).await? else {
        return Ok(None);
    };
    let Some(intent) = intent_of(&control.metadata)? else {
        return Ok(None);
    };
    let recovery = resolve(remote, &intent).await?;
    tracing::info!("{recovery}");
    Ok(Some(recovery))
}

/// Every run record in the control table, oldest first.
pub async fn run_records(remote: &RemoteCatalog) -> Result<Vec<RunRecord>> {
    let name = control_name();
    let Some(_) = remote.current(&name).await? else {
        return Ok(Vec::new());
    };
    let table = remote
        .catalog
        .load_table(&name.ident())
        .await
        .map_err(|e| Error::table(&name, "cannot load the control table", e))?;
    if table.metadata().current_snapshot().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = table.scan().select(["record"]).build()?.to_arrow().await?;
    let mut out = Vec::new();
    while let Some(batch) = stream.try_next().await? {
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| Error::table_msg(&name, "column `record` is not a string"))?;
        for text in column.iter().flatten() {
            out.push(
                serde_json::from_str::<RunRecord>(text)
                    .map_err(|e| Error::table_msg(&name, format!("unreadable run record: {e}")))?,
            );
        }
    }
    out.sort_by(|a, b| (&a.finished_at, &a.run_id).cmp(&(&b.finished_at, &b.run_id)));
    Ok(out)
}
