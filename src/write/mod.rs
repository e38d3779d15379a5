//! Arrow record batches -> partitioned Parquet data files, through iceberg's rolling writers.
//! Files roll at the job's target size; Parquet is ZSTD-compressed, dictionaries are kept small
//! ([`DICTIONARY_PAGE_BYTES`]); every batch is cast to the
//! table's schema (with its field ids) before it is written. Nothing is committed here.

mod calendar;
mod conform;
mod drain;
mod fanout;
mod keys;
mod layout;
mod normalize;
mod split;
mod tagged;
mod time_key;

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::io::FileIO;
use iceberg::spec::{DataFile, DataFileFormat, TableMetadata};
use iceberg::writer::base_writer::data_file_writer::{DataFileWriter, DataFileWriterBuilder};
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

pub use calendar::days_from_civil;
use conform::Conform;
pub use drain::{drain, Destination, Written};
use fanout::Fanout;
pub use keys::partition_keys;
pub use layout::FileLayout;
pub use normalize::iceberg_compatible_schema;
use split::PartitionSplitter;
pub use tagged::split_tagged;

use crate::error::{Error, Result};

type Builder =
    DataFileWriterBuilder<ParquetWriterBuilder, DefaultLocationGenerator, DefaultFileNameGenerator>;

enum Inner {
    Unpartitioned(
        Box<
            DataFileWriter<
                ParquetWriterBuilder,
                DefaultLocationGenerator,
                DefaultFileNameGenerator,
            >,
        >,
    ),
    Partitioned(Box<(Fanout<Builder>, PartitionSplitter)>),
}

/// Writes the data files of one table version. Call [`write`](Self::write) per batch, then
/// [`close`](Self::close) to get the files to commit.
pub struct TableWriter {
    inner: Inner,
    schema: SchemaRef,
    conform: Conform,
    rows: u64,
}

/// Rows per Parquet row group: bounds the memory of each open partition writer.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// A column chunk's dictionary may grow to this size before the column falls back to plain
/// encoding: columns with few distinct values (statuses, products, dates; up to about 8k
/// distinct 8-byte values in a row group) stay dictionary-encoded, near-unique ones (ids,
/// timestamps, e-mails) stop hashing every value into a dictionary that saves nothing. At
/// Parquet's default of 1 MiB, a 128k-row group of unique ids never falls back: measured on
/// the retail run at 5M orders, 64 KiB writes 31 % smaller tables (241 -> 167 MB) and takes
/// 15 % less CPU.
const DICTIONARY_PAGE_BYTES: usize = 64 * 1024;

impl TableWriter {
    /// A writer for the current schema and default partition spec of `metadata`. File names
    /// start with `prefix` (unique per run and job), so concurrent runs never collide.
    pub async fn new(
        table: &str,
        metadata: &TableMetadata,
        file_io: FileIO,
        target_file_size: usize,
        prefix: &str,
    ) -> Result<TableWriter> {
        let layout = FileLayout::of(metadata)?;
        TableWriter::with_layout(table, &layout, file_io, target_file_size, prefix).await
    }

    /// A writer of files laid out as `layout` says (see [`TableWriter::new`]).
    pub async fn with_layout(
        table: &str,
        layout: &FileLayout,
        file_io: FileIO,
        target_file_size: usize,
        prefix: &str,
    ) -> Result<TableWriter> {
        let iceberg_schema = Arc::new(layout.schema.clone());
        let schema = Arc::new(schema_to_arrow_schema(&iceberg_schema)?);
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(1).map_err(|e| Error::table(table, "parquet settings", e))?,
            ))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES)
            .build();
        let parquet = ParquetWriterBuilder::new(props, iceberg_schema.clone());
        let rolling = RollingFileWriterBuilder::new(
            parquet,
            target_file_size,
            file_io,
            DefaultLocationGenerator::with_data_location(layout.data_location.clone()),
            DefaultFileNameGenerator::new(prefix.to_string(), None, DataFileFormat::Parquet),
        );
        let builder = DataFileWriterBuilder::new(rolling);
        let spec = &layout.spec;
        let inner = if spec.is_unpartitioned() {
            Inner::Unpartitioned(Box::new(builder.build(None).await?))
        } else {
            let splitter = PartitionSplitter::new(iceberg_schema, spec.clone())?;
            Inner::Partitioned(Box::new((Fanout::new(builder), splitter)))
        };
        let sources = spec.fields().iter().map(|f| f.source_id).collect();
        Ok(TableWriter {
            inner,
            conform: Conform::new(table, schema.clone(), &layout.schema, &sources),
            schema,
            rows: 0,
        })
    }

    /// The Arrow schema (with Iceberg field ids) that written batches are cast to.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Casts `batch` column by column to the table schema (see the `conform` module) and writes it.
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let batch = self.conform.apply(batch)?;
        self.rows += batch.num_rows() as u64;
        match &mut self.inner {
            Inner::Unpartitioned(w) => w.write(batch).await?,
            Inner::Partitioned(parts) => {
                let (w, splitter) = parts.as_mut();
                for (key, part) in splitter.split(&batch)? {
                    w.write(key, part).await?;
                }
            }
        }
        Ok(())
    }

    /// Finishes every open file and returns the data files written.
    pub async fn close(self) -> Result<Vec<DataFile>> {
        Ok(match self.inner {
            Inner::Unpartitioned(mut w) => w.close().await?,
            Inner::Partitioned(parts) => parts.0.close().await?,
        })
    }
}
