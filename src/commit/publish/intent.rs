//! The durable intent of a table-by-table publish, kept on the control table of the remote
//! catalog (`pipeline_meta.runs`, see `catalog/control.rs`): its table property
//! `pipeline.publishing` names which snapshot each table moves to, from which metadata version.
//! Every change of the control table is a new snapshot moved by compare-and-set, so only one
//! intent can be pending at a time. A finished publish clears the intent and appends its run
//! record as a row, in one control-table commit.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use futures::TryStreamExt;
use iceberg::io::FileIO;
use iceberg::spec::{DataFile, TableMetadata};
use iceberg::{MetadataLocation, TableUpdate};
use serde::{Deserialize, Serialize};

use crate::catalog::{Current, RemoteCatalog, Swap};
use crate::commit::expire::expire_snapshots;
use crate::commit::produce::stage_snapshot;
use crate::commit::staged::WriteMode;
use crate::commit::summary;
use crate::commit::target::TableTarget;
use crate::error::{Error, Result};
use crate::records::{control_name, control_table, tick_served_in, RunRecord};
use crate::write::TableWriter;

/// Table property of the control table holding the pending publish (JSON).
pub(super) const INTENT_KEY: &str = "pipeline.publishing";
/// Run records are compacted into one file when the control table holds this many.
const CONTROL_FILES_MAX: u64 = 32;
/// Snapshots of the control table kept (older ones expire: nobody time-travels it).
const CONTROL_SNAPSHOTS_KEPT: usize = 16;

/// One table's planned move.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct IntentEntry {
    pub(super) table: String,
    /// The metadata version the change was staged on.
    pub(super) from_location: String,
    pub(super) from_snapshot: Option<i64>,
    /// The branch the move is about, whose heads `from_snapshot` and `to_snapshot` are:
    /// `main` when absent, else an environment's branch (only it moves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) branch: Option<String>,
    /// The branch's head after the move (`None`: removed; on `main`, the table is emptied).
    pub(super) to_snapshot: Option<i64>,
    /// The new metadata, already written (S3 Tables); empty where the catalog writes its own
    /// file (REST).
    pub(super) metadata_file: String,
    /// What moves the table from its base to its target, where the catalog takes changes and
    /// not files (REST): how a recovery completes the move without a file of ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) updates: Option<Vec<TableUpdate>>,
}

/// A publish in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Intent {
    pub(super) id: String,
    pub(super) started_at: String,
    pub(super) entries: Vec<IntentEntry>,
    pub(super) record: Option<RunRecord>,
}

pub(super) fn intent_of(metadata: &TableMetadata) -> Result<Option<Intent>> {
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
pub(super) async fn stage_control(
    remote: &RemoteCatalog,
    current: &Current,
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
    let (files, mode) = match record {
        Some(record) => record_files(remote, current, record).await?,
        None => (Vec::new(), WriteMode::Append),
    };
    let properties = HashMap::from([(
        summary::CONTROL.to_string(),
        match (intent, record) {
            (Some(_), _) => "publish-intent",
            (None, Some(_)) => "run-record",
            (None, None) => "publish-cleared",
        }
        .to_string(),
    )]);
    let mut staged = stage_snapshot(target, files, &remote.file_io, properties, mode).await?;
    expire_snapshots(&mut staged, CONTROL_SNAPSHOTS_KEPT, &remote.file_io).await?;
    let mut builder = staged
        .published_metadata()?
        .into_builder(Some(current.location.clone()));
    builder = match intent {
        Some(intent) => builder.set_properties(HashMap::from([(
            INTENT_KEY.to_string(),
            serde_json::to_string(intent)
                .map_err(|e| Error::Internal(format!("cannot encode the publish intent: {e}")))?,
        )]))?,
        None if current.metadata.properties().contains_key(INTENT_KEY) => {
            builder.remove_properties(&[INTENT_KEY.to_string()])?
        }
        None => builder,
    };
    Ok(builder.build()?.metadata)
}

/// The data files of the control table's next version: `record` as a new row, appended; past
/// `CONTROL_FILES_MAX` files, every record in one file, overwriting the others.
async fn record_files(
    remote: &RemoteCatalog,
    current: &Current,
    record: &RunRecord,
) -> Result<(Vec<DataFile>, WriteMode)> {
    let name = control_name();
    let mut mode = WriteMode::Append;
    let mut writer = TableWriter::new(
        &name.to_string(),
        &current.metadata,
        remote.file_io.clone(),
        64 * 1024 * 1024,
        &format!("run-{}", record.run_id),
    )
    .await?;
    let json = serde_json::to_string(record)
        .map_err(|e| Error::Internal(format!("cannot encode the run record: {e}")))?;
    let column = |v: &str| Arc::new(StringArray::from(vec![v.to_string()])) as ArrayRef;
    let batch = RecordBatch::try_new(
        writer.schema().clone(),
        vec![
            column(&record.run_id),
            column(&record.pipeline),
            column(record.kind.name()),
            column(&record.started_at),
            column(&record.finished_at),
            column(&json),
        ],
    )?;
    writer.write(batch).await?;
    // One small file per run would pile up: past a few dozen, all records are rewritten
    // into one file with the new one.
    let live_files = summary::total(
        current.metadata.current_snapshot(),
        summary::TOTAL_DATA_FILES,
    );
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
    Ok((writer.close().await?, mode))
}

/// Moves the control table one version on (see `stage_control`). `Swap::Conflict` when
/// another command changed it first.
pub(super) async fn commit_control(
    remote: &RemoteCatalog,
    current: &Current,
    intent: Option<&Intent>,
    record: Option<&RunRecord>,
) -> Result<Swap> {
    let new = stage_control(remote, current, intent, record).await?;
    move_control(remote, current, &new).await
}

/// Moves the control table from `current` to `new` by compare-and-set (its metadata file
/// written first).
async fn move_control(
    remote: &RemoteCatalog,
    current: &Current,
    new: &TableMetadata,
) -> Result<Swap> {
    let file = written_if_taken(remote, &current.location, new).await?;
    remote
        .pointers
        .swap(
            &control_name(),
            &current.location,
            &current.metadata,
            &file,
            new,
        )
        .await
}

/// Writes `metadata` as the version after `base_location` when the catalog moves tables to
/// the engine's files (S3 Tables); returns its location, or `""` where the catalog writes its
/// own (REST).
pub(super) async fn written_if_taken(
    remote: &RemoteCatalog,
    base_location: &str,
    metadata: &TableMetadata,
) -> Result<String> {
    if remote.takes_metadata_files() {
        write_next(&remote.file_io, base_location, metadata).await
    } else {
        Ok(String::new())
    }
}

/// Writes `metadata` as the version after `base_location`; returns its location.
pub(super) async fn write_next(
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

/// Whether `intent` is still the control table's pending publish.
pub(super) async fn is_pending(remote: &RemoteCatalog, intent: &Intent) -> Result<bool> {
    let control = control_table(remote).await?;
    Ok(intent_of(&control.metadata)?.is_some_and(|p| p.id == intent.id))
}

/// Clears `intent` (if it is still the pending one) and, when `completed`, appends its record.
/// `false` when another command had already resolved it.
pub(super) async fn finish(
    remote: &RemoteCatalog,
    intent: &Intent,
    completed: bool,
) -> Result<bool> {
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

/// The run an intent publishes (its record's run id), for messages.
pub(super) fn run_of(intent: &Intent) -> String {
    intent
        .record
        .as_ref()
        .map(|r| r.run_id.clone())
        .unwrap_or_else(|| intent.id.clone())
}

/// Sets (`Some`) or removes (`None`) the control table's property `key` by compare-and-set:
/// `Swap::Conflict` when another command changed the table first. The change is a snapshot of
/// its own (no rows), so that REST servers, which compare snapshots and not properties, refuse
/// a stale one too. For small shared state kept beside the run records (a scheduler's claim on
/// a tick); never the pending publish, which `commit_control` owns.
pub async fn set_control_property(
    remote: &RemoteCatalog,
    current: &Current,
    key: &str,
    value: Option<&str>,
) -> Result<Swap> {
    if key == INTENT_KEY {
        return Err(Error::Internal(
            "the pending publish is changed by the publisher only".into(),
        ));
    }
    let target = TableTarget {
        table: control_name(),
        base_location: Some(current.location.clone()),
        metadata: current.metadata.clone(),
        reshaped: false,
    };
    let properties = HashMap::from([(summary::CONTROL.to_string(), key.to_string())]);
    let mut staged = stage_snapshot(
        target,
        Vec::new(),
        &remote.file_io,
        properties,
        WriteMode::Append,
    )
    .await?;
    expire_snapshots(&mut staged, CONTROL_SNAPSHOTS_KEPT, &remote.file_io).await?;
    let builder = staged
        .published_metadata()?
        .into_builder(Some(current.location.clone()));
    let builder = match value {
        Some(v) => builder.set_properties(HashMap::from([(key.to_string(), v.to_string())]))?,
        None => builder.remove_properties(&[key.to_string()])?,
    };
    let new = builder.build()?.metadata;
    move_control(remote, current, &new).await
}

/// Fails with [`Error::TickServed`] when the control table's version `control` (the one the
/// caller is about to move from by compare-and-set) already holds a run of `record`'s pipeline
/// for `record`'s scheduled tick: so a tick is published at most once even when schedulers on
/// two hosts, whose run locks do not see each other, serve it together.
pub(super) async fn refuse_a_served_tick(
    remote: &RemoteCatalog,
    control: &Current,
    record: &RunRecord,
) -> Result<()> {
    match tick_served_in(remote, control, record).await? {
        Some(run_id) => Err(Error::TickServed {
            pipeline: record.pipeline.clone(),
            tick: record.tick.clone().unwrap_or_default(),
            run_id,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::fixture::Warehouse;

    fn with_property(value: &str) -> TableMetadata {
        Warehouse::new()
            .new_table("pipeline_meta", "runs")
            .metadata
            .into_builder(None)
            .set_properties(HashMap::from([(INTENT_KEY.to_string(), value.to_string())]))
            .expect("property")
            .build()
            .expect("metadata")
            .metadata
    }

    #[test]
    fn a_pending_intent_is_read_back_from_the_control_table() {
        let intent = Intent {
            id: "i-1".into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            entries: vec![IntentEntry {
                table: "silver.orders".into(),
                from_location: "m/00001-a.metadata.json".into(),
                from_snapshot: None,
                branch: None,
                to_snapshot: Some(7),
                metadata_file: "m/00002-b.metadata.json".into(),
                updates: None,
            }],
            record: None,
        };
        let metadata = with_property(&serde_json::to_string(&intent).expect("json"));
        let read = intent_of(&metadata).expect("readable").expect("pending");
        assert_eq!(read.id, "i-1");
        assert_eq!(run_of(&read), "i-1");
        assert_eq!(read.entries.len(), 1);
        assert_eq!(read.entries[0].to_snapshot, Some(7));
        assert_eq!(read.entries[0].from_snapshot, None);
        assert_eq!(read.entries[0].metadata_file, "m/00002-b.metadata.json");

        let none = Warehouse::new().new_table("pipeline_meta", "runs").metadata;
        assert!(intent_of(&none).expect("readable").is_none());
    }

    #[test]
    fn a_damaged_intent_is_an_error_naming_the_control_table() {
        let message = intent_of(&with_property("{not json"))
            .expect_err("refused")
            .to_string();
        assert!(message.contains("pipeline_meta.runs"), "{message}");
        assert!(message.contains(INTENT_KEY), "{message}");
    }
}
