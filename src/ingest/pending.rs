//! Which source files of an ingest job its table has not loaded: the one comparison with the
//! file ledger that a run loads by and that `pipeline run --plan` reports. Nothing is written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::discover::discover_files;
use crate::catalog::PipelineCatalog;
use crate::commit::ledger::{self, LoadedFile};
use crate::error::{Error, Result};
use crate::spec::{display_path_in, IngestJob};

/// A source file the ledger does not hold as it is now.
pub(crate) struct Unloaded {
    pub path: PathBuf,
    /// Its fingerprint now.
    pub print: LoadedFile,
    /// When the table loaded it before with other content: that entry and its snapshot.
    pub loaded_as: Option<(LoadedFile, i64)>,
}

/// The files of `files` whose content `ledger` does not hold, in their order: files recorded
/// with the same size and modification time are taken as loaded without reading them; the
/// others are fingerprinted (on a blocking thread) and compared by SHA-256.
pub(crate) async fn unloaded_files(
    ledger: &HashMap<String, (LoadedFile, i64)>,
    project_dir: &Path,
    files: &[PathBuf],
) -> Result<Vec<Unloaded>> {
    let mut to_check = Vec::new();
    for path in files {
        let shown = display_path_in(project_dir, path)
            .to_string_lossy()
            .replace('\\', "/");
        let (size, modified) = ledger::stat(path)?;
        let known = ledger
            .get(&shown)
            .is_some_and(|(old, _)| ledger::unchanged(old, size, &modified));
        if !known {
            to_check.push((path.clone(), shown));
        }
    }
    let found = to_check.clone();
    let fingerprints = tokio::task::spawn_blocking(move || {
        found
            .iter()
            .map(|(p, shown)| ledger::fingerprint(p, shown))
            .collect::<Result<Vec<_>>>()
    })
    .await
    .map_err(|e| Error::Internal(format!("fingerprinting failed: {e}")))??;
    let mut out = Vec::new();
    for ((path, _), print) in to_check.into_iter().zip(fingerprints) {
        let loaded_as = ledger.get(&print.path).cloned();
        if loaded_as
            .as_ref()
            .is_some_and(|(old, _)| old.sha256 == print.sha256)
        {
            continue;
        }
        out.push(Unloaded {
            path,
            print,
            loaded_as,
        });
    }
    Ok(out)
}

/// What the next run of an ingest job would load.
#[derive(Debug, Clone, Default)]
pub struct PendingFiles {
    /// Files never loaded: their path as the ledger names them, and bytes.
    pub new: Vec<(String, u64)>,
    /// Files loaded before whose content changed (the run stops on them unless
    /// `--reload-changed`): path and bytes now.
    pub changed: Vec<(String, u64)>,
    /// Files matched and already loaded as they are.
    pub already_loaded: usize,
    /// Whether the job's table exists yet.
    pub table_exists: bool,
}

/// The files `job`'s next run would load from `project_dir` into its table on `catalog`.
pub async fn pending_files(
    catalog: &PipelineCatalog,
    project_dir: &Path,
    job: &IngestJob,
) -> Result<PendingFiles> {
    let (files, _unmatched) = discover_files(job, project_dir)?;
    let live = catalog.load(&job.table).await?;
    let ledger = match &live {
        Some(table) => {
            ledger::loaded_files_with_checkpoint(table.metadata(), catalog.file_io()).await?
        }
        None => HashMap::new(),
    };
    let unloaded = unloaded_files(&ledger, project_dir, &files).await?;
    let mut pending = PendingFiles {
        already_loaded: files.len() - unloaded.len(),
        table_exists: live.is_some(),
        ..PendingFiles::default()
    };
    for u in unloaded {
        let entry = (u.print.path, u.print.size);
        match u.loaded_as {
            None => pending.new.push(entry),
            Some(_) => pending.changed.push(entry),
        }
    }
    Ok(pending)
}
