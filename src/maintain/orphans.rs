//! Files in table folders that no table references: what a failed or killed run leaves behind.
//!
//! A file counts as referenced when something may still read it (`commit::live`): every
//! snapshot of every table, and the tables a rollback dropped while its undo can register them
//! back. Folders of the warehouse that look like a table (`NS/TABLE/data` or `NS/TABLE/metadata`)
//! but are no table's (a killed first run of a table) are orphans whole. Only files older than
//! a minimum age are reported. Deleting takes the run lock of every pipeline of the project
//! (by `[pipeline] name`) first and goes through the one deletion path (`commit::deletion`),
//! so files a run is writing right now, or has staged and not yet published, are never
//! touched, and nothing outside the warehouse root is: a table whose location lies outside it
//! (a copied project pointing at the original's files) is named, never searched.

use std::time::Duration;

use serde::Serialize;

use crate::catalog::PipelineCatalog;
use crate::commit::{Deleter, Kept, Survey};
use crate::error::{Error, Result};
use crate::records::lock::{acquire_all, LockWait};

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
    /// Tables skipped because their location lies outside the warehouse root.
    pub outside: Vec<OutsideTable>,
    /// Orphans found but not deleted, and why (`--delete` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Kept>,
}

/// A table whose location lies outside the catalog's warehouse root: nothing under it is
/// searched or deleted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutsideTable {
    pub table: String,
    pub location: String,
}

/// Lists unreferenced files older than `min_age` under every table's folder (no lock is
/// taken: nothing is deleted). A table that cannot be read is reported as damaged and skipped
/// (none of its files is listed); the others are listed all the same.
pub async fn find_orphans(catalog: &PipelineCatalog, min_age: Duration) -> Result<Orphans> {
    local_only(catalog)?;
    list(&Survey::of(catalog).await?, min_age)
}

/// Lists and deletes the orphans older than `min_age`, safely next to live runs: the run lock
/// of every pipeline in `pipelines` (`[pipeline] name`s: every spec of the project) is taken
/// first (waiting as `wait` says for a run in progress to publish or fail, `on_wait(pipeline,
/// holder)` told), so no file a run has staged but not yet published is listed; the files go
/// through the one deletion path. Returns what was found, and what was kept and why.
pub async fn delete_orphans_safely(
    catalog: &PipelineCatalog,
    pipelines: &[String],
    min_age: Duration,
    wait: LockWait,
    on_wait: &(dyn Fn(&str, &str) + Sync),
) -> Result<Orphans> {
    local_only(catalog)?;
    let anchor = catalog.lock_anchor()?;
    let locks = acquire_all(&anchor, pipelines, wait, on_wait)?;
    let deleter = Deleter::new(catalog, &locks).await?;
    let mut found = list(deleter.survey(), min_age)?;
    let paths: Vec<String> = found.orphans.iter().map(|o| o.path.clone()).collect();
    let done = deleter.delete(&paths).await;
    found.kept = done.kept;
    found.kept.extend(done.failed);
    Ok(found)
}

fn local_only(catalog: &PipelineCatalog) -> Result<()> {
    match catalog.local_warehouse() {
        Some(_) => Ok(()),
        None => Err(Error::Usage(format!(
            "`orphans` lists the embedded catalog's local warehouse; a {} catalog's storage is not listed by this engine (S3 Tables removes unreferenced files itself; for REST, use the catalog's or the storage's own cleanup)",
            catalog.kind()
        ))),
    }
}

/// The orphans a survey shows (see the module doc).
fn list(survey: &Survey, min_age: Duration) -> Result<Orphans> {
    let mut out = Vec::new();
    for (name, folder) in survey.unknown_table_folders()? {
        for file in survey.unreferenced_under(&folder.to_string_lossy(), min_age)? {
            out.push(Orphan {
                table: format!("{name} (not in the catalog)"),
                path: file.path,
                bytes: file.bytes,
            });
        }
    }
    let outside = survey.outside_root();
    for table in &survey.live().tables {
        if outside.contains(&table) {
            continue;
        }
        let label = if table.dropped {
            format!("{} (dropped by a rollback)", table.table)
        } else {
            table.table.to_string()
        };
        for file in survey.unreferenced_under(&table.location, min_age)? {
            out.push(Orphan {
                table: label.clone(),
                path: file.path,
                bytes: file.bytes,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(Orphans {
        orphans: out,
        damaged: survey
            .live()
            .unreadable
            .iter()
            .map(|u| DamagedTable {
                table: u.table.to_string(),
                problem: u.problem.clone(),
            })
            .collect(),
        outside: outside
            .iter()
            .map(|t| OutsideTable {
                table: t.table.to_string(),
                location: t.location.clone(),
            })
            .collect(),
        kept: Vec::new(),
    })
}
