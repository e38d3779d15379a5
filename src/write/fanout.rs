//! One open writer per table partition a table version's rows fall in, as iceberg's
//! `FanoutWriter`, but closed several at a time: closing a writer encodes its last row group
//! and, on S3, uploads the file (a `PUT`, or the end of a multipart upload), so a result
//! spread over many partitions closes in about the time of the slowest few, not the sum of
//! all (a month-partitioned year of orders is 12 files or more).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use futures::stream::{self, StreamExt, TryStreamExt};
use iceberg::spec::{DataFile, PartitionKey, Struct};
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use iceberg::Result;

/// Files closed at once.
const CLOSING_AT_ONCE: usize = 8;

/// Writers by partition, made by `builder` as rows of a new partition arrive.
pub struct Fanout<B: IcebergWriterBuilder> {
    builder: B,
    writers: HashMap<Struct, B::R>,
}

impl<B: IcebergWriterBuilder> Fanout<B> {
    pub fn new(builder: B) -> Fanout<B> {
        Fanout {
            builder,
            writers: HashMap::new(),
        }
    }

    /// Writes `batch`, every row of which belongs to partition `key`.
    pub async fn write(
        &mut self,
        key: PartitionKey,
        batch: arrow::array::RecordBatch,
    ) -> Result<()> {
        let writer = match self.writers.entry(key.data().clone()) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(new) => new.insert(self.builder.build(Some(key)).await?),
        };
        writer.write(batch).await
    }

    /// Closes every partition's files, [`CLOSING_AT_ONCE`] writers at a time; the data files
    /// written, in no particular order.
    pub async fn close(self) -> Result<Vec<DataFile>> {
        let closed: Vec<Vec<DataFile>> = stream::iter(self.writers.into_values())
            .map(|mut writer| async move { writer.close().await })
            .buffer_unordered(CLOSING_AT_ONCE)
            .try_collect()
            .await?;
        Ok(closed.into_iter().flatten().collect())
    }
}
