//! File access for the embedded catalog's local warehouse: reads, writes and deletes on the
//! local file system, with errors a person can act on. Unlike a store reached over a network,
//! a local disk fails for reasons a retry does not cure (full, read-only, permission denied,
//! a file missing or cut short), so nothing is retried: the first failure ends the command,
//! naming the file by its whole path. Files are synced to disk when closed, before any
//! pointer can move to them.

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory,
};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use crate::error::StorageProblem;

/// Builds [`LocalStorage`] (the embedded catalog's storage).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LocalStorageFactory;

#[typetag::serde]
impl StorageFactory for LocalStorageFactory {
    fn build(&self, _config: &StorageConfig) -> iceberg::Result<Arc<dyn Storage>> {
        Ok(Arc::new(LocalStorage))
    }
}

/// The local file system, without retries (see the module doc).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LocalStorage;

/// Whether `path` lies inside the folder `root` (given resolved): its existing part resolved
/// by the file system (a symbolic link or a `..` on the way may lead outside), the rest plain
/// names.
pub fn lies_inside(root: &Path, path: &Path) -> bool {
    if !path.is_absolute() {
        return false;
    }
    // The longest part that exists is resolved by the file system (links and `..` alike);
    // what does not exist yet must be plain names.
    let mut existing = path;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => return false,
        }
    }
    let Ok(resolved) = std::fs::canonicalize(existing) else {
        return false;
    };
    let rest = path.strip_prefix(existing).unwrap_or(Path::new(""));
    let plain_rest = rest
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    plain_rest && resolved.join(rest).starts_with(root)
}

/// A path as the warehouse writes it (`/abs/path` or `file:/abs/path`), as a local path.
fn local(path: &str) -> PathBuf {
    let path = path
        .strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path);
    if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        PathBuf::from(format!("/{path}"))
    }
}

/// An I/O failure on `path` as an `iceberg::Error` whose source says what went wrong.
fn failure(path: &Path, e: std::io::Error, writing: bool) -> iceberg::Error {
    use std::io::ErrorKind as K;
    let (problem, refused_write) = match e.kind() {
        K::NotFound => ("no such file".to_string(), false),
        K::StorageFull => ("no space left on device".to_string(), writing),
        K::ReadOnlyFilesystem => ("read-only file system".to_string(), writing),
        K::PermissionDenied => ("permission denied".to_string(), writing),
        K::QuotaExceeded => ("disk quota exceeded".to_string(), writing),
        _ => (e.to_string(), false),
    };
    let problem = StorageProblem {
        path: path.display().to_string(),
        problem,
        refused_write,
    };
    iceberg::Error::new(iceberg::ErrorKind::Unexpected, problem.to_string()).with_source(problem)
}

async fn blocking<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    writing: bool,
) -> iceberg::Result<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|e| failure(path, e, writing)),
        Err(e) => Err(iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            format!("{}: the file task failed: {e}", path.display()),
        )),
    }
}

#[async_trait]
#[typetag::serde]
impl Storage for LocalStorage {
    async fn exists(&self, path: &str) -> iceberg::Result<bool> {
        let path = local(path);
        let p = path.clone();
        blocking(&path, move || p.try_exists(), false).await
    }

    async fn metadata(&self, path: &str) -> iceberg::Result<FileMetadata> {
        let path = local(path);
        let p = path.clone();
        let meta = blocking(&path, move || std::fs::metadata(p), false).await?;
        Ok(FileMetadata { size: meta.len() })
    }

    async fn read(&self, path: &str) -> iceberg::Result<Bytes> {
        let path = local(path);
        let p = path.clone();
        Ok(Bytes::from(
            blocking(&path, move || std::fs::read(p), false).await?,
        ))
    }

    async fn reader(&self, path: &str) -> iceberg::Result<Box<dyn FileRead>> {
        let path = local(path);
        let p = path.clone();
        let file = blocking(&path, move || std::fs::File::open(p), false).await?;
        Ok(Box::new(LocalRead {
            file: Arc::new(file),
            path,
        }))
    }

    async fn write(&self, path: &str, bs: Bytes) -> iceberg::Result<()> {
        let path = local(path);
        let p = path.clone();
        blocking(
            &path,
            move || {
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let file = std::fs::File::create(&p)?;
                let mut file = std::io::BufWriter::new(file);
                std::io::Write::write_all(&mut file, &bs)?;
                file.into_inner()?.sync_all()
            },
            true,
        )
        .await
    }

    async fn writer(&self, path: &str) -> iceberg::Result<Box<dyn FileWrite>> {
        let path = local(path);
        let p = path.clone();
        let file = blocking(
            &path,
            move || {
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::File::create(&p)
            },
            true,
        )
        .await?;
        Ok(Box::new(LocalWrite {
            file: Some(tokio::fs::File::from_std(file)),
            path,
        }))
    }

    async fn delete(&self, path: &str) -> iceberg::Result<()> {
        let path = local(path);
        let p = path.clone();
        blocking(
            &path,
            move || match std::fs::remove_file(&p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
            true,
        )
        .await
    }

    async fn delete_prefix(&self, path: &str) -> iceberg::Result<()> {
        let path = local(path);
        let p = path.clone();
        blocking(
            &path,
            move || match std::fs::remove_dir_all(&p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
            true,
        )
        .await
    }

    async fn delete_stream(&self, mut paths: BoxStream<'static, String>) -> iceberg::Result<()> {
        while let Some(path) = paths.next().await {
            self.delete(&path).await?;
        }
        Ok(())
    }

    fn new_input(&self, path: &str) -> iceberg::Result<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> iceberg::Result<OutputFile> {
        Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
    }
}

/// Reads byte ranges of one file (positional reads: no shared cursor).
struct LocalRead {
    file: Arc<std::fs::File>,
    path: PathBuf,
}

#[async_trait]
impl FileRead for LocalRead {
    async fn read(&self, range: Range<u64>) -> iceberg::Result<Bytes> {
        let file = self.file.clone();
        let wanted = range.clone();
        let result = tokio::task::spawn_blocking(move || {
            let mut buf = vec![0u8; (wanted.end - wanted.start) as usize];
            file.read_exact_at(&mut buf, wanted.start).map(|()| buf)
        })
        .await;
        match result {
            Ok(Ok(buf)) => Ok(Bytes::from(buf)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                // The table's metadata promised more bytes than the file holds.
                let size = self.file.metadata().map(|m| m.len()).unwrap_or(0);
                let problem = StorageProblem {
                    path: self.path.display().to_string(),
                    problem: format!(
                        "cut short: the file has {size} bytes, reading bytes {}..{} was asked",
                        range.start, range.end
                    ),
                    refused_write: false,
                };
                Err(
                    iceberg::Error::new(iceberg::ErrorKind::DataInvalid, problem.to_string())
                        .with_source(problem),
                )
            }
            Ok(Err(e)) => Err(failure(&self.path, e, false)),
            Err(e) => Err(iceberg::Error::new(
                iceberg::ErrorKind::Unexpected,
                format!("{}: the read task failed: {e}", path_text(&self.path)),
            )),
        }
    }
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

/// Writes one file; synced to disk when closed.
struct LocalWrite {
    file: Option<tokio::fs::File>,
    path: PathBuf,
}

#[async_trait]
impl FileWrite for LocalWrite {
    async fn write(&mut self, bs: Bytes) -> iceberg::Result<()> {
        let file = self.file.as_mut().ok_or_else(|| {
            iceberg::Error::new(
                iceberg::ErrorKind::Unexpected,
                format!("{}: written after it was closed", path_text(&self.path)),
            )
        })?;
        file.write_all(&bs)
            .await
            .map_err(|e| failure(&self.path, e, true))
    }

    async fn close(&mut self) -> iceberg::Result<()> {
        let mut file = self.file.take().ok_or_else(|| {
            iceberg::Error::new(
                iceberg::ErrorKind::Unexpected,
                format!("{}: closed twice", path_text(&self.path)),
            )
        })?;
        file.flush()
            .await
            .map_err(|e| failure(&self.path, e, true))?;
        file.sync_all()
            .await
            .map_err(|e| failure(&self.path, e, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_round_trip_and_failures_name_the_whole_path() {
        let dir = tempfile::tempdir().unwrap();
        let storage = LocalStorage;
        let path = format!("{}/t/metadata/a.json", dir.path().display());
        storage
            .write(&path, Bytes::from_static(b"hello"))
            .await
            .unwrap();
        assert_eq!(
            storage.read(&path).await.unwrap(),
            Bytes::from_static(b"hello")
        );
        assert_eq!(storage.metadata(&path).await.unwrap().size, 5);
        let reader = storage.reader(&format!("file:{path}")).await.unwrap();
        assert_eq!(reader.read(1..3).await.unwrap(), Bytes::from_static(b"el"));

        let cut = reader.read(2..9).await.expect_err("cut short").to_string();
        assert!(
            cut.contains(&format!("{path}: cut short: the file has 5 bytes")),
            "{cut}"
        );

        let missing = format!("{}/gone.parquet", dir.path().display());
        let e = storage.read(&missing).await.expect_err("missing");
        assert!(
            e.to_string().contains(&format!("{missing}: no such file")),
            "{e}"
        );
        let problem = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<StorageProblem>())
            .expect("the problem is the source");
        assert_eq!(problem.path, missing);
        assert!(!problem.refused_write);

        storage.delete(&path).await.unwrap();
        assert!(!storage.exists(&path).await.unwrap());
    }

    #[tokio::test]
    async fn a_full_disk_is_a_refused_write_not_retried() {
        // /dev/full answers every write with ENOSPC.
        let mut writer = LocalWrite {
            file: Some(tokio::fs::File::from_std(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )),
            path: PathBuf::from("/dev/full"),
        };
        let clock = std::time::Instant::now();
        let error = async {
            writer.write(Bytes::from(vec![0u8; 1 << 16])).await?;
            writer.close().await
        }
        .await
        .expect_err("disk full");
        assert!(clock.elapsed() < std::time::Duration::from_millis(900));
        assert!(
            error
                .to_string()
                .contains("/dev/full: no space left on device"),
            "{error}"
        );
        let problem = std::error::Error::source(&error)
            .and_then(|s| s.downcast_ref::<StorageProblem>())
            .expect("the problem is the source");
        assert!(problem.refused_write);
    }
}
