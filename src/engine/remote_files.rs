//! Which planned files of a table on S3 the native Parquet scan reads, and the name its object
//! store is registered under. The rules are those of local files: no delete files to apply,
//! Parquet, a plain path, and present with the size its metadata records. The sizes are
//! checked with `HEAD`s through the table's FileIO, [`CHECKS_AT_ONCE`] at a time; a file
//! missing or of another size fails the scan with an error naming it, before any row is read.

use futures::stream::{self, StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::scan::FileScanTask;
use sha2::{Digest, Sha256};

use super::native_files::{plain_parquet, plain_path};
use crate::error::StorageProblem;

/// How many files' sizes are asked for at once.
pub const CHECKS_AT_ONCE: usize = 16;

/// The URL scheme of `location` when its files are read through the table's FileIO by the
/// native scan: S3 (`s3://`, `s3a://`).
pub fn remote_scheme(location: &str) -> Option<&'static str> {
    ["s3", "s3a"].into_iter().find(|s| {
        location
            .strip_prefix(s)
            .is_some_and(|r| r.starts_with("://"))
    })
}

/// The object store URL (`fileio://HASH`) a table at `location` is read under: one per table
/// location, so that a session reading many tables keeps one store per table (each with the
/// FileIO, and so the credentials, of its own table).
pub fn store_name(location: &str) -> String {
    let digest = Sha256::digest(location.as_bytes());
    let hex: String = digest[..10].iter().map(|b| format!("{b:02x}")).collect();
    format!("fileio://t{hex}")
}

/// The object paths (`BUCKET/KEY`, in the order of `tasks`) of the tasks' files when
/// DataFusion's Parquet reader reads them exactly as Iceberg would; `Ok(None)` when iceberg's
/// reader reads them (delete files to apply, not Parquet, not under `scheme://` or not a plain
/// path: said in the debug log). A file missing from storage, or not of the size the metadata
/// records, is an error naming it (a [`StorageProblem`], as on local files).
pub async fn remote_files(
    file_io: &FileIO,
    scheme: &str,
    tasks: &[FileScanTask],
) -> iceberg::Result<Option<Vec<String>>> {
    let prefix = format!("{scheme}://");
    let mut paths = Vec::with_capacity(tasks.len());
    for task in tasks {
        let file = &task.data_file_path;
        let path = plain_parquet(task).and_then(|()| {
            file.strip_prefix(&prefix)
                .filter(|p| plain_path(p))
                .ok_or_else(|| format!("{file} is not a plain path under {prefix}"))
        });
        match path {
            Ok(path) => paths.push(path.to_string()),
            Err(why) => {
                tracing::debug!("read by iceberg: {why}");
                return Ok(None);
            }
        }
    }
    let mut files: Vec<(String, u64)> = tasks
        .iter()
        .map(|t| (t.data_file_path.clone(), t.file_size_in_bytes))
        .collect();
    files.sort_unstable();
    files.dedup();
    stream::iter(files)
        .map(|(file, size)| async move { check_size(file_io, &file, size).await })
        .buffer_unordered(CHECKS_AT_ONCE)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(Some(paths))
}

/// Whether `file` is in storage with `size` bytes: an error naming it when it is not.
async fn check_size(file_io: &FileIO, file: &str, size: u64) -> iceberg::Result<()> {
    let found = match file_io.new_input(file)?.metadata().await {
        Ok(found) => found.size,
        Err(e) if not_found(&e) => return Err(damaged(file, "no such file".into())),
        Err(e) => return Err(e),
    };
    if found == size {
        Ok(())
    } else {
        let problem = format!("{found} bytes, the table's metadata records {size}");
        Err(damaged(file, problem))
    }
}

/// Whether storage answered that the object does not exist.
fn not_found(e: &iceberg::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = next {
        if let Some(o) = e.downcast_ref::<opendal::Error>() {
            return o.kind() == opendal::ErrorKind::NotFound;
        }
        next = e.source();
    }
    false
}

fn damaged(file: &str, problem: String) -> iceberg::Error {
    let problem = StorageProblem {
        path: file.to_string(),
        problem,
        refused_write: false,
    };
    iceberg::Error::new(iceberg::ErrorKind::DataInvalid, problem.to_string()).with_source(problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_locations_are_read_natively_and_named_per_table() {
        assert_eq!(remote_scheme("s3://b/w/t"), Some("s3"));
        assert_eq!(remote_scheme("s3a://b/w/t"), Some("s3a"));
        assert_eq!(remote_scheme("s3x://b/w/t"), None);
        assert_eq!(remote_scheme("gs://b/w/t"), None);
        assert_eq!(remote_scheme("/tmp/w/t"), None);
        let one = store_name("s3://b/w/t");
        assert!(one.starts_with("fileio://t"), "{one}");
        assert_eq!(one, store_name("s3://b/w/t"));
        assert_ne!(one, store_name("s3://b/w/u"));
        assert!(datafusion::execution::object_store::ObjectStoreUrl::parse(&one).is_ok());
    }
}
