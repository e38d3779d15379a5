//! DataFusion's object store interface over a table's Iceberg [`FileIO`], so that the native
//! Parquet scan reads remote warehouses (S3, S3 Tables) with exactly the storage settings and
//! credentials the catalog gave the table: endpoint, region, path style, static keys, the AWS
//! chain or vended `storage-credentials` (one configuration for both stacks; the requests are
//! made by opendal, never by a client of ours).
//!
//! The store only reads: writes, listings, copies and deletions are refused (the engine writes
//! through iceberg, and every deletion goes through its one path). Object paths are
//! `BUCKET/KEY` (`KEY` in a store of one bucket); the store puts its scheme (`s3`, `s3a`), and
//! its bucket, in front to name the file to FileIO.
//! Sizes recorded by the table's metadata spare a `HEAD` per read (a file of unknown size is
//! asked for its size once per read, unless the read is of a bounded range). They are checked only when a read fails or comes back
//! short: then a `HEAD` tells whether the file is missing or of another size than the metadata
//! records, and the error names the file and says which (a [`StorageProblem`]: damage, as on
//! local files), so a healthy scan costs no request beyond its reads.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    Attributes, CopyOptions, Error, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};
use futures::stream::{self, BoxStream, StreamExt};
use iceberg::io::FileIO;

use crate::error::StorageProblem;

const STORE: &str = "iceberg FileIO";

/// A read-only object store reading `SCHEME://PATH` through a table's FileIO.
pub struct FileIoStore {
    /// What an object path is put behind to name the file to FileIO: `s3://`, or
    /// `s3://BUCKET/` for a store of one bucket.
    root: String,
    file_io: FileIO,
    sizes: HashMap<String, u64>,
}

impl FileIoStore {
    /// A store reading `{scheme}://{path}` with `file_io`; `sizes` maps paths (`BUCKET/KEY`)
    /// to their sizes in bytes where they are known.
    pub fn new(scheme: &str, file_io: FileIO, sizes: HashMap<String, u64>) -> FileIoStore {
        FileIoStore {
            root: format!("{scheme}://"),
            file_io,
            sizes,
        }
    }

    /// A store of one bucket, as DataFusion registers stores for `s3://BUCKET` URLs: it
    /// reads `{scheme}://{bucket}/{path}` with `file_io`, sizes unknown.
    pub fn bucket(scheme: &str, bucket: &str, file_io: FileIO) -> FileIoStore {
        FileIoStore {
            root: format!("{scheme}://{bucket}/"),
            file_io,
            sizes: HashMap::new(),
        }
    }

    fn url(&self, location: &Path) -> String {
        format!("{}{}", self.root, location.as_ref())
    }

    async fn size(&self, location: &Path) -> Result<u64> {
        if let Some(size) = self.sizes.get(location.as_ref()) {
            return Ok(*size);
        }
        let url = self.url(location);
        let input = self.file_io.new_input(&url).map_err(|e| failed(&url, e))?;
        Ok(input.metadata().await.map_err(|e| failed(&url, e))?.size)
    }

    /// The bytes of `range`, all of them, or an error saying why not.
    async fn read(&self, location: &Path, range: Range<u64>) -> Result<Bytes> {
        let url = self.url(location);
        let read = async {
            let input = self.file_io.new_input(&url)?;
            input.reader().await?.read(range.clone()).await
        }
        .await;
        match read {
            Ok(bytes) if bytes.len() as u64 == range.end - range.start => Ok(bytes),
            Ok(bytes) => {
                let short = format!("{url}: {} bytes read of {range:?}", bytes.len());
                Err(self.explain(location, &url, short).await)
            }
            Err(e) => Err(self.explain(location, &url, format!("{url}: {e}")).await),
        }
    }

    /// Why a read of `location` failed (`answer`): the file is missing, or not of the size the
    /// table's metadata records (a [`StorageProblem`]), else what storage answered.
    async fn explain(&self, location: &Path, url: &str, answer: String) -> Error {
        let found = match self.file_io.new_input(url) {
            Ok(input) => input.metadata().await,
            Err(e) => Err(e),
        };
        let problem = match (found, self.sizes.get(location.as_ref())) {
            (Err(e), _) if not_found(&e) => Some("no such file".to_string()),
            (Ok(found), Some(&size)) if found.size != size => Some(format!(
                "{} bytes, the table's metadata records {size}",
                found.size
            )),
            _ => None,
        };
        let source: Box<dyn std::error::Error + Send + Sync> = match problem {
            Some(problem) => Box::new(StorageProblem {
                path: url.to_string(),
                problem,
                refused_write: false,
            }),
            None => answer.into(),
        };
        Error::Generic {
            store: STORE,
            source,
        }
    }
}

/// Whether storage answered that the object does not exist.
fn not_found(e: &iceberg::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = next {
        if let Some(o) = e.downcast_ref::<opendal::Error>() {
            return o.kind() == opendal::ErrorKind::NotFound;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::NotFound;
        }
        next = e.source();
    }
    false
}

/// An error naming the file (its whole URL) and what storage answered.
fn failed(url: &str, e: iceberg::Error) -> Error {
    Error::Generic {
        store: STORE,
        source: format!("{url}: {e}").into(),
    }
}

fn refused(operation: &str) -> Error {
    Error::NotImplemented {
        operation: operation.to_string(),
        implementer: format!("{STORE} (the native Parquet scan only reads)"),
    }
}

// Credentials live in the FileIO: never printed.
impl fmt::Debug for FileIoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileIoStore({})", self.root)
    }
}

impl fmt::Display for FileIoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{STORE} ({})", self.root)
    }
}

#[async_trait]
impl ObjectStore for FileIoStore {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(refused("put"))
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        Err(refused("put_multipart"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let conditional = options.if_match.is_some()
            || options.if_none_match.is_some()
            || options.if_modified_since.is_some()
            || options.if_unmodified_since.is_some()
            || options.version.is_some();
        if conditional {
            return Err(refused("a conditional or versioned get"));
        }
        let size = match (
            self.sizes.get(location.as_ref()),
            &options.range,
            options.head,
        ) {
            (Some(size), _, _) => *size,
            // A read of a bounded range of a file of unknown size (a cluster node's, whose
            // reader knows the size from its plan) asks storage for nothing but the read: the
            // object is at least that long, which is what `meta.size` then says.
            (None, Some(GetRange::Bounded(r)), false) => r.end,
            _ => self.size(location).await?,
        };
        let meta = ObjectMeta {
            location: location.clone(),
            last_modified: chrono::DateTime::UNIX_EPOCH,
            size,
            e_tag: None,
            version: None,
        };
        let range: Range<u64> = match (&options.range, options.head) {
            (_, true) => 0..0,
            (Some(range), false) => range.as_range(size).map_err(|e| Error::Generic {
                store: STORE,
                source: format!("{}: {e}", self.url(location)).into(),
            })?,
            (None, false) => 0..size,
        };
        let bytes = if range.is_empty() {
            Bytes::new()
        } else {
            self.read(location, range.clone()).await?
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async { Ok(bytes) }).boxed()),
            meta,
            range,
            attributes: Attributes::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        locations.map(|_| Err(refused("delete"))).boxed()
    }

    fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        stream::once(async { Err(refused("list")) }).boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
        Err(refused("list"))
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(refused("copy"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::ObjectStoreExt;

    /// Reads ranges of a file through a FileIO (here the local one) with and without a
    /// recorded size; writes and listings are refused.
    #[tokio::test]
    async fn reads_ranges_through_file_io_and_refuses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.bin");
        std::fs::write(&file, b"0123456789").unwrap();
        let path = Path::from(file.display().to_string().trim_start_matches('/'));
        let unknown = FileIoStore::new("file", FileIO::new_with_fs(), HashMap::new());
        let sizes = HashMap::from([(path.as_ref().to_string(), 10)]);
        let known = FileIoStore::new("file", FileIO::new_with_fs(), sizes);
        for store in [&unknown, &known] {
            assert_eq!(store.get_range(&path, 2..5).await.unwrap(), "234");
            assert_eq!(store.head(&path).await.unwrap().size, 10);
            let all = store.get(&path).await.unwrap().bytes().await.unwrap();
            assert_eq!(all, "0123456789");
        }
        let missing = Path::from("nowhere/b.bin");
        let error = unknown.get_range(&missing, 0..1).await.unwrap_err();
        assert!(
            error.to_string().contains("file://nowhere/b.bin"),
            "{error}"
        );
        let put = known.put(&path, PutPayload::from_static(b"x")).await;
        assert!(put.is_err());
        assert!(known.list_with_delimiter(None).await.is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"0123456789");
    }
}
