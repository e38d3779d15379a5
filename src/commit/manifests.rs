//! Reading a snapshot's manifest list (the entry point to its data files), and many manifest
//! lists or manifests at once: on object storage each is a request of tens of milliseconds,
//! so they are read concurrently (at most [`CONCURRENCY`] at a time), never one after another.

use futures::{StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::spec::{Manifest, ManifestFile, ManifestList, Snapshot, SnapshotRef, TableMetadata};

use crate::error::Result;

/// Manifest lists or manifests read at once.
pub const CONCURRENCY: usize = 8;

/// Reads a snapshot's manifest list.
pub async fn manifest_list(
    file_io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
) -> Result<ManifestList> {
    let bytes = file_io.new_input(snapshot.manifest_list())?.read().await?;
    Ok(ManifestList::parse_with_version(
        &bytes,
        metadata.format_version(),
    )?)
}

/// The manifest lists of `snapshots` (read under `metadata`'s format version), concurrently,
/// in the order given.
pub async fn manifest_lists(
    file_io: &FileIO,
    metadata: &TableMetadata,
    snapshots: Vec<SnapshotRef>,
) -> Result<Vec<ManifestList>> {
    futures::stream::iter(snapshots)
        .map(|snapshot| async move { manifest_list(file_io, metadata, &snapshot).await })
        .buffered(CONCURRENCY)
        .try_collect()
        .await
}

/// The manifests `files` name, concurrently, in the order given.
pub async fn load_manifests(
    file_io: &FileIO,
    files: impl IntoIterator<Item = ManifestFile>,
) -> Result<Vec<(ManifestFile, Manifest)>> {
    futures::stream::iter(files)
        .map(|file| async move {
            let manifest = file.load_manifest(file_io).await?;
            Ok((file, manifest))
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await
}
