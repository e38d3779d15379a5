//! Files in table folders that no table references: what a failed or killed run leaves behind.
//!
//! A file counts as referenced when the table's current metadata reaches it: the metadata file
//! itself and every earlier one in its log, and for every snapshot its manifest list, its
//! manifests and every data file they list (DELETED entries included, since older snapshots
//! still read them). Folders of the warehouse that look like a table (`NS/TABLE/data` or
//! `NS/TABLE/metadata`) but that the catalog does not list (a killed first run of a table) are
//! orphans whole. Only files older than a minimum age are reported, and deleting takes the run
//! lock of every pipeline of the project first ([`delete_orphans_safely`]), so files a run is
//! writing right now, or has staged and not yet published, are never touched.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::catalog::lock::{self, LockWait};
use crate::catalog::PipelineCatalog;
use crate::commit::ledger::CHECKPOINT_KEY;
use crate::commit::manifest_list;
use crate::error::{Error, Result};

/// One unreferenced file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Orphan {
    pub table: String,
    pub path: String,
    pub bytes: u64,
}

/// A table `find_orphans` could not read, and why: nothing under it was listed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DamagedTable {
    pub table: String,
    pub problem: String,
}

/// What `find_orphans` found.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Orphans {
    pub orphans: Vec<Orphan>,
    /// Tables skipped because their metadata or manifests cannot be read.
    pub damaged: Vec<DamagedTable>,
}

/// Lists unreferenced files older than `min_age` under every table's folder. A table that
/// cannot be read is reported as damaged and skipped (none of its files is listed); the
/// others are listed all the same.
pub async fn find_orphans(catalog: &PipelineCatalog, min_age: Duration) -> Result<Orphans> {
    let now = SystemTime::now();
    let mut out = Vec::new();
    let old_enough = |path: &Path| -> Result<Option<u64>> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= min_age);
        Ok(old.then_some(meta.len()))
    };
    let Some(warehouse) = catalog.local_warehouse() else {
        return Err(Error::Usage(format!(
            "`orphans` lists the embedded catalog's local warehouse; a {} catalog's storage is not listed by this engine (S3 Tables removes unreferenced files itself; for REST, use the catalog's or the storage's own cleanup)",
            catalog.kind()
        )));
    };
    let tables = catalog.list_tables().await?;
    // Table folders the catalog does not know.
    for ns_dir in subfolders(warehouse)? {
        for table_dir in subfolders(&ns_dir)? {
            let looks_like_table =
                table_dir.join("data").is_dir() || table_dir.join("metadata").is_dir();
            let name = format!(
                "{}.{}",
                ns_dir.file_name().unwrap_or_default().to_string_lossy(),
                table_dir.file_name().unwrap_or_default().to_string_lossy()
            );
            if !looks_like_table || tables.iter().any(|t| t.to_string() == name) {
                continue;
            }
            let mut files = Vec::new();
            walk(&table_dir, &mut files)?;
            for path in files {
                if let Some(bytes) = old_enough(&path)? {
                    out.push(Orphan {
                        table: format!("{name} (not in the catalog)"),
                        path: path.to_string_lossy().to_string(),
                        bytes,
                    });
                }
            }
        }
    }
    let mut damaged = Vec::new();
    for name in tables {
        // A table whose metadata or manifests cannot be read: what it references is unknown,
        // so nothing under it is listed (or deleted).
        let read = match catalog.load_existing(&name).await {
            Ok(table) => referenced_files(&table).await.map(|r| (table, r)),
            Err(e) => Err(e),
        };
        let (table, referenced) = match read {
            Ok(read) => read,
            Err(e) => {
                damaged.push(DamagedTable {
                    table: name.to_string(),
                    problem: e.to_string(),
                });
                continue;
            }
        };
        let metadata = table.metadata();
        let root = PathBuf::from(metadata.location());
        let mut files = Vec::new();
        walk(&root, &mut files)?;
        for path in files {
            let text = path.to_string_lossy().to_string();
            if referenced.contains(&text) {
                continue;
            }
            if let Some(bytes) = old_enough(&path)? {
                out.push(Orphan {
                    table: name.to_string(),
                    path: text,
                    bytes,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Orphans {
        orphans: out,
        damaged,
    })
}

/// Every file the table's current metadata reaches: itself and the earlier metadata files in
/// its log, the ledger checkpoint, and for every snapshot its manifest list, its manifests and
/// every data file they list (DELETED entries included, since older snapshots still read them).
async fn referenced_files(table: &iceberg::table::Table) -> Result<HashSet<String>> {
    let metadata = table.metadata();
    let file_io = table.file_io();
    let mut referenced: HashSet<String> = HashSet::new();
    referenced.insert(table.metadata_location_result()?.to_string());
    for log in metadata.metadata_log() {
        referenced.insert(log.metadata_file.clone());
    }
    if let Some(checkpoint) = metadata.properties().get(CHECKPOINT_KEY) {
        referenced.insert(checkpoint.clone());
    }
    for snapshot in metadata.snapshots() {
        referenced.insert(snapshot.manifest_list().to_string());
        let list = manifest_list(file_io, metadata, snapshot).await?;
        for manifest_file in list.entries() {
            if !referenced.insert(manifest_file.manifest_path.clone()) {
                continue;
            }
            let manifest = manifest_file.load_manifest(file_io).await?;
            for entry in manifest.entries() {
                referenced.insert(entry.file_path().to_string());
            }
        }
    }
    Ok(referenced)
}

/// Lists and deletes the orphans older than `min_age`, safely next to live runs: the run lock
/// of every pipeline in `pipelines` is taken first (waiting as `wait` says for a run in
/// progress to publish or fail, `on_wait(pipeline, holder)` told), so no file a run has
/// staged but not yet published is listed. Returns what was found and deleted.
pub async fn delete_orphans_safely(
    catalog: &PipelineCatalog,
    pipelines: &[String],
    min_age: Duration,
    wait: LockWait,
    on_wait: &(dyn Fn(&str, &str) + Sync),
) -> Result<Orphans> {
    let anchor = catalog.lock_anchor()?;
    let mut held = Vec::with_capacity(pipelines.len());
    for pipeline in pipelines {
        held.push(lock::acquire(&anchor, pipeline, wait, |holder| {
            on_wait(pipeline, holder)
        })?);
    }
    let found = find_orphans(catalog, min_age).await?;
    delete_orphans(&found.orphans)?;
    drop(held);
    Ok(found)
}

/// Deletes the given orphans (as found by [`find_orphans`]).
pub fn delete_orphans(orphans: &[Orphan]) -> Result<()> {
    for o in orphans {
        std::fs::remove_file(&o.path).map_err(|e| Error::io(&o.path, e))?;
    }
    Ok(())
}

/// The folders directly inside `dir` (none if it does not exist).
fn subfolders(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry
            .file_type()
            .map_err(|e| Error::io(entry.path(), e))?
            .is_dir()
        {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if entry.file_type().map_err(|e| Error::io(&path, e))?.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}
