//! The object stores of a cluster node (`pipeline scheduler`, `pipeline executor`): DataFusion's
//! defaults (the local file system), and for `s3://BUCKET` and `s3a://BUCKET` URLs a read-only
//! store of that bucket over the node's own S3 FileIO ([`FileIoStore::bucket`]), made when a
//! plan first names the bucket and kept for the node's life (one per bucket).

use std::sync::Arc;

use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::object_store::ObjectStore;
use iceberg::io::FileIO;
use url::Url;

use super::file_io_store::FileIoStore;
use super::remote_files::remote_scheme;

/// DataFusion's registry, knowing S3 buckets through `s3`.
pub struct NodeStores {
    stores: DefaultObjectStoreRegistry,
    s3: FileIO,
}

impl NodeStores {
    /// The registry of a node whose S3 requests go through `s3`.
    pub fn new(s3: FileIO) -> NodeStores {
        NodeStores {
            stores: DefaultObjectStoreRegistry::new(),
            s3,
        }
    }
}

// The FileIO holds credentials: never printed.
impl std::fmt::Debug for NodeStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeStores")
    }
}

impl ObjectStoreRegistry for NodeStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.stores.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.stores.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.stores.get_store(url) {
            return Ok(store);
        }
        let (Some(scheme), Some(bucket)) = (remote_scheme(url.as_str()), url.host_str()) else {
            return self.stores.get_store(url);
        };
        let store: Arc<dyn ObjectStore> =
            Arc::new(FileIoStore::bucket(scheme, bucket, self.s3.clone()));
        let base = Url::parse(&format!("{scheme}://{bucket}"))
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        self.stores.register_store(&base, store.clone());
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gets_one_store_and_local_files_the_default() {
        let stores = NodeStores::new(FileIO::new_with_fs());
        let a = Url::parse("s3://bucket-a/w/t/data/x.parquet").unwrap();
        let first = stores.get_store(&a).unwrap();
        let again = stores
            .get_store(&Url::parse("s3://bucket-a").unwrap())
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(first.to_string(), "iceberg FileIO (s3://bucket-a/)");
        let b = stores
            .get_store(&Url::parse("s3a://bucket-b/k").unwrap())
            .unwrap();
        assert_eq!(b.to_string(), "iceberg FileIO (s3a://bucket-b/)");
        assert!(stores
            .get_store(&Url::parse("file:///tmp").unwrap())
            .is_ok());
        assert!(stores
            .get_store(&Url::parse("gs://bucket/k").unwrap())
            .is_err());
    }
}
