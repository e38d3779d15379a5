//! What snapshot expiry frees: the files that only expired snapshots referenced. A file is
//! still referenced when a kept snapshot reaches it: its manifest list, its manifests, and the
//! live (added or existing) data files they list. Only files under the table's own location
//! are ever named, so a table that points at files elsewhere never loses them.
//!
//! Cheap enough to run after every nightly run: manifest lists and manifests are read
//! concurrently, each once, and the kept snapshots' manifests are read only when the expired
//! snapshots' own manifests name data files that may be freed (an expired append whose
//! manifests later snapshots carry over frees its manifest list only).

use std::collections::HashSet;

use iceberg::io::FileIO;
use iceberg::spec::{ManifestFile, TableMetadata};
use serde::Serialize;

use crate::commit::{load_manifests, manifest_lists, Expired};
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
    let kept_lists = manifest_lists(file_io, kept, kept.snapshots().cloned().collect()).await?;
    let mut kept_manifests: Vec<ManifestFile> = Vec::new();
    let mut kept_paths: HashSet<String> = HashSet::new();
    for manifest in kept_lists.iter().flat_map(|l| l.entries()) {
        if kept_paths.insert(manifest.manifest_path.clone()) {
            kept_manifests.push(manifest.clone());
        }
    }
    let inside = |path: &str| path.starts_with(&format!("{}/", kept.location()));
    let kept_list_paths: HashSet<&str> = kept.snapshots().map(|s| s.manifest_list()).collect();
    let mut out = Unreferenced::default();
    let mut seen: HashSet<String> = HashSet::new();
    // The expired snapshots' manifest lists and the manifests no kept snapshot lists. (An
    // expired snapshot is no longer in `kept`: its list is read with the metadata it was
    // written under, of which only the format version matters.)
    let expired_lists = manifest_lists(file_io, kept, expired.snapshots.clone()).await?;
    let mut freed: Vec<ManifestFile> = Vec::new();
    for (snapshot, list) in expired.snapshots.iter().zip(&expired_lists) {
        let path = snapshot.manifest_list();
        if !kept_list_paths.contains(path) && inside(path) && seen.insert(path.to_string()) {
            out.files.push(path.to_string());
        }
        for manifest in list.entries() {
            let path = &manifest.manifest_path;
            if !kept_paths.contains(path) && inside(path) && seen.insert(path.clone()) {
                out.files.push(path.clone());
                freed.push(manifest.clone());
            }
        }
    }
    // The data files those manifests name, freed unless a kept manifest lists them alive.
    let mut candidates: Vec<(String, u64)> = Vec::new();
    for (_, manifest) in load_manifests(file_io, freed).await? {
        for entry in manifest.entries() {
            let path = entry.file_path();
            if inside(path) && !seen.contains(path) {
                candidates.push((path.to_string(), entry.file_size_in_bytes()));
            }
        }
    }
    if !candidates.is_empty() {
        let mut live: HashSet<String> = HashSet::new();
        for (_, manifest) in load_manifests(file_io, kept_manifests).await? {
            for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
                live.insert(entry.file_path().to_string());
            }
        }
        for (path, bytes) in candidates {
            if !live.contains(&path) && seen.insert(path.clone()) {
                out.files.push(path);
                out.data_files += 1;
                out.data_bytes += bytes;
            }
        }
    }
    if let Some(checkpoint) = &expired.old_checkpoint {
        if inside(checkpoint) && seen.insert(checkpoint.clone()) {
            out.files.push(checkpoint.clone());
        }
    }
    out.files.sort();
    Ok(out)
}
