//! The file ledger that makes ingest exactly-once. Every bronze snapshot records, in its
//! summary and so in the same commit as the rows, the source files it loaded (path, size,
//! modification time, SHA-256). A run loads only files that no snapshot on the table's `main`
//! ancestry recorded; a recorded file whose content changed stops the run. A recorded file
//! whose size and modification time both match its entry is taken as unchanged without being
//! read again (as make and rsync do), so a run's cost does not grow with the files already
//! loaded; any other recorded file is hashed and compared.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use iceberg::spec::TableMetadata;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::summary::LOADED_FILES;
use crate::error::{Error, Result};

/// One loaded source file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadedFile {
    /// As matched, relative to the project.
    pub path: String,
    pub size: u64,
    /// RFC 3339, when the file system tells.
    pub modified: Option<String>,
    pub sha256: String,
}

/// Size and modification time (as recorded in the ledger) of a file, without reading it.
pub fn stat(path: &Path) -> Result<(u64, Option<String>)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    Ok((meta.len(), modified_text(&meta)))
}

fn modified_text(meta: &std::fs::Metadata) -> Option<String> {
    meta.modified().ok().map(|t| {
        chrono::DateTime::<chrono::Utc>::from(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    })
}

/// True when `entry` surely describes the file as it is now (same size and modification time).
pub fn unchanged(entry: &LoadedFile, size: u64, modified: &Option<String>) -> bool {
    entry.size == size && entry.modified.is_some() && &entry.modified == modified
}

/// Fingerprints a source file (reads it once).
pub fn fingerprint(path: &Path, shown: &str) -> Result<LoadedFile> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    // At most 1 MiB, no more than the file (and its end) needs: a buffer is zeroed per file.
    let mut buf = vec![0u8; meta.len().saturating_add(1).clamp(8 << 10, 1 << 20) as usize];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let digest = hasher.finalize();
    Ok(LoadedFile {
        path: shown.to_string(),
        size: meta.len(),
        modified: modified_text(&meta),
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// Every file recorded on the `main` ancestry of `metadata`, with the snapshot that loaded it.
pub fn loaded_files(metadata: &TableMetadata) -> HashMap<String, (LoadedFile, i64)> {
    let mut out = HashMap::new();
    let mut next = metadata.current_snapshot().cloned();
    while let Some(snapshot) = next {
        if let Some(text) = snapshot.summary().additional_properties.get(LOADED_FILES) {
            if let Ok(files) = serde_json::from_str::<Vec<LoadedFile>>(text) {
                for f in files {
                    out.entry(f.path.clone())
                        .or_insert((f, snapshot.snapshot_id()));
                }
            }
        }
        next = snapshot
            .parent_snapshot_id()
            .and_then(|id| metadata.snapshot_by_id(id).cloned());
    }
    out
}

/// Table property naming the ledger checkpoint: a JSON file with the ledger entries of
/// snapshots that were on `main` when they were expired (so exactly-once survives expiry).
pub const CHECKPOINT_KEY: &str = "pipeline.ledger-checkpoint";

/// One checkpointed ledger entry: the file and the (expired) snapshot that loaded it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointEntry {
    pub file: LoadedFile,
    pub snapshot: i64,
}

/// Every file recorded on the `main` ancestry of `metadata`, plus those of the table's ledger
/// checkpoint (snapshots expired from `main`'s history).
pub async fn loaded_files_with_checkpoint(
    metadata: &TableMetadata,
    file_io: &iceberg::io::FileIO,
) -> Result<HashMap<String, (LoadedFile, i64)>> {
    let mut out = loaded_files(metadata);
    for entry in read_checkpoint(metadata, file_io).await? {
        out.entry(entry.file.path.clone())
            .or_insert((entry.file, entry.snapshot));
    }
    Ok(out)
}

/// The entries of the table's ledger checkpoint (none when it has none).
pub async fn read_checkpoint(
    metadata: &TableMetadata,
    file_io: &iceberg::io::FileIO,
) -> Result<Vec<CheckpointEntry>> {
    let Some(path) = metadata.properties().get(CHECKPOINT_KEY) else {
        return Ok(Vec::new());
    };
    let bytes = file_io.new_input(path)?.read().await?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Input {
        path: path.into(),
        message: format!("the table's file ledger checkpoint is unreadable: {e}"),
    })
}

/// Writes a checkpoint holding `entries` next to the table's metadata; returns its path.
pub async fn write_checkpoint(
    metadata: &TableMetadata,
    file_io: &iceberg::io::FileIO,
    entries: &[CheckpointEntry],
) -> Result<String> {
    let path = format!(
        "{}/metadata/ledger-{}.json",
        metadata.location(),
        uuid::Uuid::new_v4()
    );
    let bytes = serde_json::to_vec(entries)
        .map_err(|e| Error::Internal(format!("cannot encode the file ledger: {e}")))?;
    file_io.new_output(&path)?.write(bytes.into()).await?;
    Ok(path)
}
