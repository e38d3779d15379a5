//! Landing files rewritten without an erase's subject (`pipeline erase --rewrite-sources`):
//! written beside the originals with their new ledger entries, moved over them once the erase
//! is published, removed if it is not.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::commit::ledger::{fingerprint, LoadedFile};
use crate::commit::replace_landing_file;
use crate::error::{Error, Result};
use crate::ingest::rewrite_without;
use crate::spec::{IngestJob, Pipeline};

/// Landing files rewritten without the subject's records, next to the originals until the
/// erase is published ([`RewrittenSources::commit`] moves them over); removed if it is not.
#[derive(Default)]
pub(crate) struct RewrittenSources {
    /// (new file, the file it replaces).
    pub pending: Vec<(PathBuf, PathBuf)>,
}

impl RewrittenSources {
    /// Writes `path` (as recorded, relative to the project) without the records starting on
    /// `lines`, next to it; returns its ledger entry as it will be once moved into place.
    pub fn rewrite(
        &mut self,
        pipeline: &Pipeline,
        job: &IngestJob,
        path: &str,
        lines: &BTreeSet<u64>,
        run_id: &str,
    ) -> Result<LoadedFile> {
        let original = pipeline.project_dir.join(path);
        if !original.is_file() {
            return Err(Error::Input {
                path: original,
                message: "--rewrite-sources: the landing file is gone; erase without --rewrite-sources (the receipt names the file)".into(),
            });
        }
        let mut name = original.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".erase-{run_id}"));
        let rewritten = original.with_file_name(name);
        self.pending.push((rewritten.clone(), original.clone()));
        let removed = rewrite_without(job, &original, &rewritten, lines)?;
        if removed != lines.len() as u64 {
            return Err(Error::Input {
                path: original,
                message: format!(
                    "--rewrite-sources: {} of the subject's records should start on lines {:?}, {removed} did; the file changed since it was loaded",
                    lines.len(),
                    lines
                ),
            });
        }
        // Renaming keeps the modification time: the entry matches the file once in place.
        fingerprint(&rewritten, path)
    }

    /// Moves every rewritten file over its original.
    pub fn commit(mut self) -> Result<()> {
        for (rewritten, original) in std::mem::take(&mut self.pending) {
            replace_landing_file(&rewritten, &original, true)?;
        }
        Ok(())
    }
}

impl Drop for RewrittenSources {
    fn drop(&mut self) {
        for (rewritten, original) in &self.pending {
            let _ = replace_landing_file(rewritten, original, false);
        }
    }
}
