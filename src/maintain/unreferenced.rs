//! What snapshot expiry frees: the files that only expired snapshots referenced. A file is
//! still referenced when a kept snapshot reaches it: its manifest list, its manifests, and the
//! live (added or existing) data files they list. Only files under the table's own location
//! are ever named, so a table that points at files elsewhere never loses them.

use std::collections::HashSet;

use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;
use serde::Serialize;

use crate::commit::{manifest_list, Expired};
use crate::error::Result;

/// Files no kept snapshot references, ready to delete once the expiry is published.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Unreferenced {
    /// Every such file (data files, manifests, manifest lists, an old ledger checkpoint).
    pub files: Vec<String>,
    /// How many of them are data files, and their bytes (as the manifests record them).
    pub data_files: u64,
    pub data_bytes: u64,
}

/// The files that only the snapshots `expired` removed from the table referenced, given the
/// metadata `kept` that the table is published with.
pub async fn unreferenced_files(
    file_io: &FileIO,
    kept: &TableMetadata,
    expired: &Expired,
) -> Result<Unreferenced> {
    let mut live: HashSet<String> = HashSet::new();
    let mut kept_manifests: HashSet<String> = HashSet::new();
    for snapshot in kept.snapshots() {
        live.insert(snapshot.manifest_list().to_string());
        let list = manifest_list(file_io, kept, snapshot).await?;
        for manifest_file in list.entries() {
            if !kept_manifests.insert(manifest_file.manifest_path.clone()) {
                continue;
            }
            let manifest = manifest_file.load_manifest(file_io).await?;
            for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
                live.insert(entry.file_path().to_string());
            }
        }
    }
    let inside = |path: &str| path.starts_with(&format!("{}/", kept.location()));
    let mut out = Unreferenced::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut free = |path: &str, out: &mut Unreferenced| -> bool {
        let fresh = !live.contains(path) && !kept_manifests.contains(path) && inside(path);
        fresh && seen.insert(path.to_string()) && {
            out.files.push(path.to_string());
            true
        }
    };
    for snapshot in &expired.snapshots {
        free(snapshot.manifest_list(), &mut out);
        // The expired snapshot is no longer in `kept`: its manifest list is read with the
        // metadata it was written under (only its format version matters).
        let list = manifest_list(file_io, kept, snapshot).await?;
        for manifest_file in list.entries() {
            if kept_manifests.contains(&manifest_file.manifest_path)
                || !free(&manifest_file.manifest_path, &mut out)
            {
                continue;
            }
            let manifest = manifest_file.load_manifest(file_io).await?;
            for entry in manifest.entries() {
                if free(entry.file_path(), &mut out) {
                    out.data_files += 1;
                    out.data_bytes += entry.file_size_in_bytes();
                }
            }
        }
    }
    if let Some(checkpoint) = &expired.old_checkpoint {
        free(checkpoint, &mut out);
    }
    out.files.sort();
    Ok(out)
}
