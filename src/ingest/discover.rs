//! Which source files an ingest job's path patterns match.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spec::IngestJob;

/// Lists the files an ingest job's patterns match, sorted, each once, and the patterns that
/// match nothing.
pub fn discover_files(job: &IngestJob, project_dir: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let mut unmatched = Vec::new();
    let mut files = Vec::new();
    for pattern in &job.paths {
        let full = project_dir.join(pattern);
        let full_text = full.to_string_lossy();
        let matches = glob::glob(&full_text).map_err(|e| Error::Pipeline {
            file: job.origin.file.clone(),
            message: format!(
                "line {}: ingest into {}: invalid path pattern `{pattern}`: {e}",
                job.origin.line, job.table
            ),
            hint: None,
        })?;
        let before = files.len();
        for m in matches {
            let path = m.map_err(|e| {
                Error::io(e.path().to_path_buf(), std::io::Error::other(e.to_string()))
            })?;
            if path.is_file() {
                files.push(path);
            }
        }
        if files.len() == before {
            unmatched.push(pattern.clone());
        }
    }
    files.sort();
    files.dedup();
    Ok((files, unmatched))
}

/// The error for a pattern of `job` that matches no file on the table's first load.
pub fn no_files_error(job: &IngestJob, project_dir: &Path, pattern: &str) -> Error {
    Error::Pipeline {
        file: job.origin.file.clone(),
        message: format!(
            "line {}: ingest into {}: no files match `{pattern}`",
            job.origin.line, job.table
        ),
        hint: Some(format!(
            "paths are relative to the project directory {}",
            project_dir.display()
        )),
    }
}
