//! The one path through which files of a catalog's tables are deleted: by `pipeline
//! maintain` (what expired snapshots and killed runs left), `pipeline orphans --delete` and
//! `pipeline erase --purge`. A [`Deleter`] is made only with the run lock of every pipeline of
//! the project held ([`AllLocks`]), so no run is staging files meanwhile; it knows every live
//! file of the catalog ([`LiveFiles`]: every snapshot of every table, the tables rollbacks
//! dropped and their undo can register back), and it deletes a file only when
//!
//! - no publish is in progress on the catalog (a remote catalog's pending intent names new
//!   metadata that is no table's current one yet);
//! - nothing live references it;
//! - it lies inside a table folder: for the embedded catalog, a `NAMESPACE/TABLE/` folder of
//!   the warehouse root (the project's `warehouse/`, symbolic links resolved), never the
//!   catalog database or a folder of a table whose metadata cannot be read; for a remote
//!   catalog, the location of one of its tables.
//!
//! A copied project's catalog points at the original's files (Iceberg locations are
//! absolute): they lie outside the copy's root, so the copy never deletes them, and
//! [`Deleter::outside_root`] names those tables. No other code of the engine removes a file.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::live::{canonical, plain, LiveFiles, LiveTable};
use super::publish::publish_in_progress;
use crate::catalog::{lies_inside as inside, PipelineCatalog};
use crate::error::{Error, Result};
use crate::records::lock::AllLocks;

/// Files nothing references are deleted by `maintain` and listed by `orphans` once this old:
/// a younger one may belong to a writer the project's locks do not hold off (a run of
/// another project on the same warehouse, another machine). `orphans --force` goes below it.
pub const UNREFERENCED_MIN_AGE: Duration = Duration::from_secs(3600);

/// A file found unreferenced by a listing.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Unlisted {
    pub path: String,
    pub bytes: u64,
}

/// A file the deleter would not delete, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Kept {
    pub path: String,
    pub why: String,
}

/// What one [`Deleter::delete`] did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Deletion {
    /// Files removed (a file already gone counts: it is not there any more).
    pub deleted: u64,
    /// Files refused by the rules in the module doc.
    pub kept: Vec<Kept>,
    /// Files the storage failed to remove (left to a later `maintain` or `orphans`).
    pub failed: Vec<Kept>,
}

/// The one deletion path (see the module doc): a [`Survey`] of the catalog, taken with every
/// pipeline's run lock held, and the deletions it allows.
pub struct Deleter<'a> {
    catalog: &'a PipelineCatalog,
    _locks: &'a AllLocks,
    survey: Survey,
}

impl<'a> Deleter<'a> {
    /// Surveys `catalog`; `locks` must hold every pipeline of the project.
    pub async fn new(catalog: &'a PipelineCatalog, locks: &'a AllLocks) -> Result<Deleter<'a>> {
        Ok(Deleter {
            catalog,
            _locks: locks,
            survey: Survey::of(catalog).await?,
        })
    }

    /// What the deleter knows of the catalog.
    pub fn survey(&self) -> &Survey {
        &self.survey
    }

    /// Deletes each of `paths` that the rules allow; says what it kept and why.
    pub async fn delete(&self, paths: &[String]) -> Deletion {
        let mut out = Deletion::default();
        for path in paths {
            if let Some(why) = self.survey.refusal(path) {
                tracing::warn!(file = %path, %why, "not deleted");
                out.kept.push(Kept {
                    path: path.clone(),
                    why,
                });
                continue;
            }
            match self.catalog.file_io().delete(path).await {
                Ok(()) => out.deleted += 1,
                Err(e) => {
                    tracing::warn!(file = %path, error = %e, "could not delete a file nothing references");
                    out.failed.push(Kept {
                        path: path.clone(),
                        why: e.to_string(),
                    });
                }
            }
        }
        out
    }
}

/// What is live in a catalog and where its tables keep their files: what deleting needs to
/// know, and what `pipeline orphans` lists without deleting (no lock needed to look).
pub struct Survey {
    live: LiveFiles,
    /// The embedded catalog's warehouse folder, symbolic links resolved.
    root: Option<PathBuf>,
    /// Why nothing may be deleted now.
    blocked: Option<String>,
}

impl Survey {
    /// Reads what is live in `catalog` (see `commit::live`).
    pub async fn of(catalog: &PipelineCatalog) -> Result<Survey> {
        let blocked = publish_in_progress(catalog).await?.map(|run| {
            format!("the publish of run {run} is in progress; nothing is deleted until it is done")
        });
        let live = LiveFiles::of_catalog(catalog).await?;
        let root = catalog
            .local_warehouse()
            .map(|w| std::fs::canonicalize(w).unwrap_or_else(|_| w.to_path_buf()));
        Ok(Survey {
            live,
            root,
            blocked,
        })
    }

    /// What is live in the catalog.
    pub fn live(&self) -> &LiveFiles {
        &self.live
    }

    /// The warehouse root of the embedded catalog (nothing outside it is deleted).
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The tables whose location lies outside the warehouse root: a copied (or moved)
    /// project's catalog pointing at another warehouse. Their files are never deleted here.
    pub fn outside_root(&self) -> Vec<&LiveTable> {
        match &self.root {
            Some(root) => self
                .live
                .tables
                .iter()
                .filter(|t| !inside(root, Path::new(&t.location)))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Why `path` may not be deleted (see the module doc), or `None` when it may.
    pub fn refusal(&self, path: &str) -> Option<String> {
        if let Some(why) = &self.blocked {
            return Some(why.clone());
        }
        if self.live.contains(path) {
            return Some(
                "a snapshot, a rollback point or a dropped table's undo references it".into(),
            );
        }
        let local = Path::new(plain(path));
        let under = |location: &str| {
            local.starts_with(plain(location)) && local != Path::new(plain(location))
        };
        if let Some(unknown) = self.live.unknown_locations().find(|l| under(l)) {
            return Some(format!(
                "it lies in {unknown}, a table whose metadata cannot be read"
            ));
        }
        match &self.root {
            Some(root) => {
                if !in_table_folder(root, local) {
                    return Some(format!(
                        "it is not inside a table folder (NAMESPACE/TABLE/) of the warehouse {}",
                        root.display()
                    ));
                }
                None
            }
            None => {
                let owner = self
                    .live
                    .tables
                    .iter()
                    .any(|t| !t.dropped && under(&format!("{}/", t.location)));
                (!owner).then(|| "it is not inside the location of a table of this catalog".into())
            }
        }
    }

    /// The files under `location` (a table folder of the embedded warehouse) that nothing
    /// live references and that were last modified at least `min_age` ago (a younger file
    /// may belong to a writer this project's locks do not hold off), sorted. Nothing for a
    /// remote catalog, whose storage this engine does not list, or a folder outside the root.
    pub fn unreferenced_under(&self, location: &str, min_age: Duration) -> Result<Vec<Unlisted>> {
        Ok(self
            .unreferenced_with_age(location)?
            .into_iter()
            .filter(|(_, age)| *age >= min_age)
            .map(|(file, _)| file)
            .collect())
    }

    /// Every file under `location` that nothing live references, with how long ago it was
    /// last modified (zero when that is unknown or in the future), sorted by path; as
    /// [`Survey::unreferenced_under`] finds them.
    pub fn unreferenced_with_age(&self, location: &str) -> Result<Vec<(Unlisted, Duration)>> {
        let Some(root) = &self.root else {
            return Ok(Vec::new());
        };
        let folder = PathBuf::from(plain(location));
        if !inside(root, &folder) {
            return Ok(Vec::new());
        }
        let now = SystemTime::now();
        let mut files = Vec::new();
        walk(&folder, &mut files)?;
        let mut out = Vec::new();
        for path in files {
            let text = path.to_string_lossy().to_string();
            if self.live.contains(&text) {
                continue;
            }
            let meta = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
            let age = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or(Duration::ZERO);
            let file = Unlisted {
                path: text,
                bytes: meta.len(),
            };
            out.push((file, age));
        }
        out.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        Ok(out)
    }

    /// Folders of the warehouse laid out as a table (`NAMESPACE/TABLE/data` or `.../metadata`)
    /// that belong to no table, live or dropped (by location or by name): what a killed first
    /// run of a table leaves. As `namespace.table` and folder.
    pub fn unknown_table_folders(&self) -> Result<Vec<(String, PathBuf)>> {
        let Some(root) = &self.root else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for ns_dir in subfolders(root)? {
            for table_dir in subfolders(&ns_dir)? {
                let looks_like_table =
                    table_dir.join("data").is_dir() || table_dir.join("metadata").is_dir();
                let name = format!(
                    "{}.{}",
                    ns_dir.file_name().unwrap_or_default().to_string_lossy(),
                    table_dir.file_name().unwrap_or_default().to_string_lossy()
                );
                // A table's own folder by name counts too: a copied project's catalog names
                // its tables but locates them in the original's warehouse.
                let known =
                    self.live.tables.iter().any(|t| {
                        t.table.to_string() == name || canonical(&t.location) == table_dir
                    });
                let unreadable = self.live.unreadable.iter().any(|u| {
                    u.table.to_string() == name
                        || u.locations.iter().any(|l| canonical(l) == table_dir)
                });
                if looks_like_table && !known && !unreadable {
                    out.push((name, table_dir));
                }
            }
        }
        Ok(out)
    }
}

/// Replaces a landing file with its rewritten version (`pipeline erase --rewrite-sources`),
/// or removes the rewritten version when it is not to be used: the only other place a file is
/// removed, outside the warehouse, by the command that wrote it.
pub fn replace_landing_file(rewritten: &Path, original: &Path, keep: bool) -> Result<()> {
    if keep {
        std::fs::rename(rewritten, original).map_err(|e| Error::io(original, e))
    } else {
        match std::fs::remove_file(rewritten) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(rewritten, e)),
            _ => Ok(()),
        }
    }
}

/// Whether the file at `path` was named by a run of this engine: its name starts with a run
/// id (`20261130T031105Z-f678e367-`, as every data file this engine writes). A metadata file
/// or manifest (named by a UUID, as every Iceberg writer names them) does not qualify.
pub fn named_by_a_run(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).as_bytes();
    let digits = |r: std::ops::Range<usize>| name[r].iter().all(u8::is_ascii_digit);
    name.len() > 26
        && digits(0..8)
        && name[8] == b'T'
        && digits(9..15)
        && &name[15..17] == b"Z-"
        && name[17..25].iter().all(|b| b.is_ascii_hexdigit())
        && name[25] == b'-'
}

/// `path` lies inside `root` at least two folders down (`NAMESPACE/TABLE/...`).
fn in_table_folder(root: &Path, path: &Path) -> bool {
    if !inside(root, path) {
        return false;
    }
    let resolved = match path.parent().map(std::fs::canonicalize) {
        Some(Ok(parent)) => parent.join(path.file_name().unwrap_or_default()),
        _ => path.to_path_buf(),
    };
    resolved
        .strip_prefix(root)
        .map(|rest| rest.components().count() >= 3)
        .unwrap_or(false)
}

/// The folders directly inside `dir` (none if it does not exist), sorted.
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

/// Every file under `dir`, recursively (symbolic links are not followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if kind.is_file() {
            out.push(path);
        }
        // A symbolic link (to a folder on another disk, say) is never a file to delete.
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_files_are_known_by_their_names() {
        assert!(named_by_a_run(
            "/w/silver/orders/data/m=1/20261203T151309Z-43c7f958-5bbbab62-0-00002.parquet"
        ));
        for other in [
            "/w/silver/orders/metadata/04e691a4-bd42-4fdd-8a79-d93a05b023cc-m1.avro",
            "/w/silver/orders/data/00000-0-6a1c.parquet",
            "/w/x/20261203T151309Z-43c7f958",
            "/w/x/2026120xT151309Z-43c7f958-a.parquet",
        ] {
            assert!(!named_by_a_run(other), "{other}");
        }
    }

    #[test]
    fn only_plain_paths_inside_a_table_folder_of_the_root_qualify() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("silver/orders/data")).unwrap();
        let file = root.join("silver/orders/data/a.parquet");
        assert!(in_table_folder(&root, &file));
        assert!(!in_table_folder(&root, &root.join("catalog.db")));
        assert!(!in_table_folder(&root, &root.join("silver/x")));
        assert!(!in_table_folder(
            &root,
            &root.join("silver/orders/../../../etc/passwd")
        ));
        assert!(!in_table_folder(&root, Path::new("/etc/passwd")));
        // A folder that is a symbolic link to somewhere else leads outside.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(elsewhere.path().join("t/data")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join("gold")).unwrap();
        assert!(!in_table_folder(&root, &root.join("gold/t/data/a.parquet")));
    }
}
