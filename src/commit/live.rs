//! Every file of a catalog that something may still read, as the one deletion path
//! (`deletion.rs`) must know before it deletes anything:
//!
//! - for every table the catalog lists: its metadata file and the earlier ones in its log, its
//!   ledger checkpoint, and for every snapshot (of every branch and tag, and those no ref
//!   reaches) its manifest list, its manifests and every data file they list as added or
//!   existing (a DELETED entry records that the snapshot no longer reads the file; the
//!   snapshots that do read it list it as added or existing, so while one of them is kept,
//!   the file is live);
//! - for every table a rollback dropped and that the catalog does not list again: the same,
//!   from the metadata file the rollback recorded (its undo registers the table back from it);
//! - tables that cannot be read: their locations, under which nothing may be deleted.
//!
//! Manifests are immutable, so each is read once however many snapshots share it; tables and
//! manifests are read concurrently.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;

use super::ledger::CHECKPOINT_KEY;
use super::manifests::manifest_lists;
use crate::catalog::PipelineCatalog;
use crate::error::{Error, Result};
use crate::spec::TableName;

/// A table's location and the files it reaches.
type TableFiles = (String, HashSet<String>);

/// Manifests and tables read at once.
const CONCURRENCY: usize = 8;

/// A table whose files are live, and where it keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveTable {
    pub table: TableName,
    /// The table's location (`file:` prefix removed).
    pub location: String,
    /// Dropped by a rollback, kept for its undo: the catalog does not list it.
    pub dropped: bool,
}

/// A table whose metadata or manifests cannot be read: what it references is unknown.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadableTable {
    pub table: TableName,
    pub problem: String,
    /// Where its files are, as far as known (its default folder, or its metadata's).
    pub locations: Vec<String>,
}

/// Every live file of a catalog (see the module doc).
#[derive(Debug, Default)]
pub struct LiveFiles {
    files: HashSet<String>,
    pub tables: Vec<LiveTable>,
    pub unreadable: Vec<UnreadableTable>,
}

impl LiveFiles {
    /// Reads every table of `catalog`, and the tables rollbacks dropped (see the module doc).
    pub async fn of_catalog(catalog: &PipelineCatalog) -> Result<LiveFiles> {
        let mut live = LiveFiles::default();
        let names = catalog.list_tables().await?;
        let read: Vec<(TableName, Result<TableFiles>)> =
            futures::stream::iter(names.iter().cloned())
                .map(|name| async move {
                    let read = async {
                        let table = catalog.load_existing(&name).await?;
                        let location = table.metadata_location_result()?.to_string();
                        let files =
                            referenced(table.file_io(), table.metadata(), &location).await?;
                        Ok((table.metadata().location().to_string(), files))
                    }
                    .await;
                    (name, read)
                })
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
        for (table, read) in read {
            match read {
                Ok((location, files)) => {
                    live.files.extend(files);
                    live.tables.push(LiveTable {
                        table,
                        location: plain(&location).to_string(),
                        dropped: false,
                    });
                }
                Err(e) => {
                    // Its default folder, and the folder its recorded metadata file lies in.
                    let mut locations: Vec<String> =
                        catalog.local_table_location(&table).into_iter().collect();
                    if let Ok(Some(metadata)) = catalog.recorded_metadata_location(&table).await {
                        locations.extend(table_folder_of(&metadata));
                    }
                    live.unreadable.push(UnreadableTable {
                        table,
                        problem: e.to_string(),
                        locations,
                    });
                }
            }
        }
        live.add_dropped(catalog, &names).await?;
        live.tables.sort_by(|a, b| a.table.cmp(&b.table));
        Ok(live)
    }

    /// The tables rollbacks dropped that the catalog does not list now: their last metadata
    /// (as each rollback recorded it: every such drop can still be undone) and what it
    /// references stay, for the undo. A drop whose metadata file is gone protects nothing (its
    /// undo cannot work); one whose files cannot be read now protects its whole folder.
    async fn add_dropped(&mut self, catalog: &PipelineCatalog, listed: &[TableName]) -> Result<()> {
        let mut seen: HashSet<String> = HashSet::new();
        for record in catalog.dropping_runs().await? {
            for t in record.tables {
                let (Some(location), Some(table)) =
                    (t.dropped_metadata, TableName::parse(&t.table))
                else {
                    continue;
                };
                if listed.contains(&table) || !seen.insert(location.clone()) {
                    continue;
                }
                let file_io = catalog.file_io();
                if !file_io.exists(&location).await.unwrap_or(true) {
                    tracing::debug!(%table, %location, "a dropped table's metadata is gone");
                    continue;
                }
                let read = async {
                    let metadata = TableMetadata::read_from(file_io, &location).await?;
                    let files = referenced(file_io, &metadata, &location).await?;
                    Ok::<_, Error>((metadata.location().to_string(), files))
                }
                .await;
                match read {
                    Ok((table_location, files)) => {
                        self.files.extend(files);
                        self.tables.push(LiveTable {
                            table,
                            location: plain(&table_location).to_string(),
                            dropped: true,
                        });
                    }
                    Err(e) => self.unreadable.push(UnreadableTable {
                        table,
                        problem: format!(
                            "dropped by a rollback, and its files cannot be read: {e}"
                        ),
                        locations: table_folder_of(&location).into_iter().collect(),
                    }),
                }
            }
        }
        Ok(())
    }

    /// How many live files there are.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is live.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether `path` is a live file (written with a `file:` scheme or without).
    pub fn contains(&self, path: &str) -> bool {
        self.files.contains(plain(path))
    }

    /// Every location under which nothing may be deleted because what is there is unknown.
    pub fn unknown_locations(&self) -> impl Iterator<Item = &str> {
        self.unreadable
            .iter()
            .flat_map(|u| u.locations.iter().map(String::as_str))
    }
}

/// `path` without a `file:` or `file://` scheme.
pub fn plain(path: &str) -> &str {
    path.strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path)
}

/// A local path with its symbolic links and `..` resolved where it exists (as written
/// otherwise): two spellings of one folder compare equal.
pub fn canonical(path: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(plain(path));
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The table folder of a metadata file (`T/metadata/00001-x.metadata.json` -> `T`).
fn table_folder_of(metadata_file: &str) -> Option<String> {
    let path = std::path::Path::new(plain(metadata_file));
    let folder = path.parent()?.parent()?;
    Some(folder.display().to_string())
}

/// Every file `metadata` (read from `location`) reaches: itself, the earlier metadata files in
/// its log, the ledger checkpoint, and for every snapshot its manifest list, its manifests and
/// every data file they list alive (added or existing), as snapshot expiry counts them.
pub async fn referenced(
    file_io: &FileIO,
    metadata: &TableMetadata,
    location: &str,
) -> Result<HashSet<String>> {
    let mut files: HashSet<String> = HashSet::new();
    files.insert(plain(location).to_string());
    for log in metadata.metadata_log() {
        files.insert(plain(&log.metadata_file).to_string());
    }
    if let Some(checkpoint) = metadata.properties().get(CHECKPOINT_KEY) {
        files.insert(plain(checkpoint).to_string());
    }
    // Statistics files other engines write (Puffin), table-wide and per partition.
    for stats in metadata.statistics_iter() {
        files.insert(plain(&stats.statistics_path).to_string());
    }
    for stats in metadata.partition_statistics_iter() {
        files.insert(plain(&stats.statistics_path).to_string());
    }
    let mut manifests: Vec<iceberg::spec::ManifestFile> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let snapshots: Vec<_> = metadata.snapshots().cloned().collect();
    let lists = manifest_lists(file_io, metadata, snapshots.clone()).await?;
    for (snapshot, list) in snapshots.iter().zip(&lists) {
        files.insert(plain(snapshot.manifest_list()).to_string());
        for manifest in list.entries() {
            if seen.insert(manifest.manifest_path.clone()) {
                manifests.push(manifest.clone());
            }
        }
    }
    let listed: Vec<Vec<String>> = futures::stream::iter(manifests)
        .map(|manifest| async move {
            let loaded = manifest.load_manifest(file_io).await?;
            let mut paths: Vec<String> = loaded
                .entries()
                .iter()
                .filter(|e| e.is_alive())
                .map(|e| plain(e.file_path()).to_string())
                .collect();
            paths.push(plain(&manifest.manifest_path).to_string());
            Ok::<_, Error>(paths)
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await?;
    files.extend(listed.into_iter().flatten());
    Ok(files)
}
