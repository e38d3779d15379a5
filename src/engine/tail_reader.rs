//! Reading a Parquet file on S3 in as few requests as its layout allows. A scan reads a file's
//! tail first (its footer, metadata and page index: at least [`REMOTE_TAIL`], 1 MiB, or
//! DataFusion's metadata size hint when larger); [`TailReader`] keeps those bytes for the
//! file's life in the scan and serves every later read that falls inside them from memory. A
//! file no larger than that (most files of a daily increment) is read in one request; a larger
//! one in one request for its tail and one per run of nearby column chunks (coalesced by the
//! object store), where DataFusion's own reader asks again for the page index and for data it
//! already received with the tail. A request to S3 costs tens of milliseconds before its
//! first byte; a megabyte more in the same request costs about ten.
//!
//! A read that fails keeps its cause as the error's source, so a file missing or of another
//! size than its metadata records is still damage, named, as the store reports it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetFileMetrics;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::future::{self, BoxFuture};
use futures::FutureExt;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

/// The least of a file's tail read first.
pub const REMOTE_TAIL: usize = 1024 * 1024;

/// Makes a [`TailReader`] per file of a scan, reading from `store`.
#[derive(Debug)]
pub struct TailReaderFactory {
    store: Arc<dyn ObjectStore>,
}

impl TailReaderFactory {
    pub fn new(store: Arc<dyn ObjectStore>) -> TailReaderFactory {
        TailReaderFactory { store }
    }
}

impl ParquetFileReaderFactory for TailReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::error::Result<Box<dyn AsyncFileReader + Send>> {
        let location = file.object_meta.location.clone();
        Ok(Box::new(TailReader {
            metrics: ParquetFileMetrics::new(partition_index, location.as_ref(), metrics),
            store: self.store.clone(),
            location,
            size: file.object_meta.size,
            tail_len: metadata_size_hint.unwrap_or(0).max(REMOTE_TAIL) as u64,
            tail: None,
        }))
    }
}

/// One file of a scan, its tail kept once read.
pub struct TailReader {
    metrics: ParquetFileMetrics,
    store: Arc<dyn ObjectStore>,
    location: Path,
    size: u64,
    tail_len: u64,
    /// Where the kept tail starts, and its bytes.
    tail: Option<(u64, Bytes)>,
}

/// A storage error as Parquet's, its cause kept as the source.
fn external(e: datafusion::object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl TailReader {
    /// `range` from the kept tail, when it lies inside it.
    fn kept(&self, range: &Range<u64>) -> Option<Bytes> {
        let (start, bytes) = self.tail.as_ref()?;
        let end = start + bytes.len() as u64;
        (range.start >= *start && range.end <= end)
            .then(|| bytes.slice((range.start - start) as usize..(range.end - start) as usize))
    }

    /// Reads the file's tail, once.
    async fn read_tail(&mut self) -> Result<(), ParquetError> {
        if self.tail.is_none() {
            let start = self.size.saturating_sub(self.tail_len);
            let bytes = self
                .store
                .get_range(&self.location, start..self.size)
                .await
                .map_err(external)?;
            self.tail = Some((start, bytes));
        }
        Ok(())
    }
}

impl AsyncFileReader for TailReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        self.metrics
            .bytes_scanned
            .add((range.end - range.start) as usize);
        if let Some(bytes) = self.kept(&range) {
            return future::ready(Ok(bytes)).boxed();
        }
        let (store, location) = (self.store.clone(), self.location.clone());
        async move { store.get_range(&location, range).await.map_err(external) }.boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        self.metrics.bytes_scanned.add(total as usize);
        let kept: Vec<Option<Bytes>> = ranges.iter().map(|r| self.kept(r)).collect();
        let missing: Vec<Range<u64>> = ranges
            .iter()
            .zip(&kept)
            .filter(|(_, k)| k.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        let (store, location) = (self.store.clone(), self.location.clone());
        async move {
            let mut fetched = if missing.is_empty() {
                Vec::new()
            } else {
                store
                    .get_ranges(&location, &missing)
                    .await
                    .map_err(external)?
            }
            .into_iter();
            kept.into_iter()
                .map(|k| {
                    k.or_else(|| fetched.next()).ok_or_else(|| {
                        ParquetError::General("storage answered fewer ranges than asked".into())
                    })
                })
                .collect()
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            self.read_tail().await?;
            let mut reader = ParquetMetaDataReader::new()
                .with_metadata_options(options.map(|o| o.metadata_options().clone()));
            if let Some(o) = options {
                if o.column_index_policy() != PageIndexPolicy::Skip
                    || o.offset_index_policy() != PageIndexPolicy::Skip
                {
                    reader = reader
                        .with_column_index_policy(o.column_index_policy())
                        .with_offset_index_policy(o.offset_index_policy());
                }
            }
            let size = self.size;
            Ok(Arc::new(reader.load_and_finish(self, size).await?))
        }
        .boxed()
    }
}

impl Drop for TailReader {
    fn drop(&mut self) {
        self.metrics
            .scan_efficiency_ratio
            .add_part(self.metrics.bytes_scanned.value());
        self.metrics
            .scan_efficiency_ratio
            .set_total(self.size as usize);
    }
}
