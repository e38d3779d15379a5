//! Which planned files of a table on S3 the native Parquet scan reads, and the name its object
//! store is registered under. The rules are those of local files: no delete files to apply,
//! Parquet, a plain path. Whether each is present with the size its metadata records is
//! found out by reading it: a file missing or of another size fails the read with an error
//! naming it ([`super::file_io_store`]), at no request's cost when all is well.

use iceberg::scan::FileScanTask;
use sha2::{Digest, Sha256};

use super::native_files::{plain_parquet, plain_path};

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
/// DataFusion's Parquet reader reads them exactly as Iceberg would; `None` when iceberg's
/// reader reads them (delete files to apply, not Parquet, not under `scheme://` or not a plain
/// path: said in the debug log).
pub fn remote_files(scheme: &str, tasks: &[FileScanTask]) -> Option<Vec<String>> {
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
                return None;
            }
        }
    }
    Some(paths)
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
