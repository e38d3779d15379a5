//! What a cluster's writer tasks send back: not rows, but one row per data file written (its
//! Iceberg entry as JSON: path, partition values, record count, column sizes, value and null
//! counts, bounds, all read from the file's own Parquet footer as it was closed) and the rows
//! dropped by `drop` expectations. The driver turns them back into the entries it commits.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use iceberg::spec::{deserialize_data_file_from_json, serialize_data_file_to_json, DataFile};

use crate::error::{Error, Result};
use crate::write::{Destination, FileLayout, Written};

const TABLE: &str = "table";
const QUARANTINE: &str = "quarantine";
const DROPPED: &str = "dropped";

/// The schema of a writer task's output: `target` (`table`, `quarantine` or `dropped`),
/// `entry` (a data file's entry as JSON, or the dropped counts as JSON), `rows`.
pub fn written_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("target", DataType::Utf8, false),
        Field::new("entry", DataType::Utf8, false),
        Field::new("rows", DataType::UInt64, false),
    ]))
}

fn entry_json(file: DataFile, layout: &FileLayout) -> Result<String> {
    let partition_type = layout.partition_type()?;
    Ok(serialize_data_file_to_json(
        file,
        &partition_type,
        layout.format_version,
    )?)
}

fn entry(json: &str, layout: &FileLayout) -> Result<DataFile> {
    let partition_type = layout.partition_type()?;
    Ok(deserialize_data_file_from_json(
        json,
        layout.spec.spec_id(),
        &partition_type,
        &layout.schema,
    )?)
}

/// What one writer task wrote into `destination`, as one batch of [`written_schema`].
pub fn written_batch(written: Written, destination: &Destination) -> Result<RecordBatch> {
    let mut targets = Vec::new();
    let mut entries = Vec::new();
    let mut rows = Vec::new();
    for file in written.files {
        targets.push(TABLE);
        rows.push(file.record_count());
        entries.push(entry_json(file, &destination.layout)?);
    }
    if let Some((_, layout)) = &destination.quarantine {
        for file in written.quarantine_files {
            targets.push(QUARANTINE);
            rows.push(file.record_count());
            entries.push(entry_json(file, layout)?);
        }
    }
    if !written.dropped.is_empty() {
        targets.push(DROPPED);
        rows.push(written.dropped.values().sum());
        entries.push(
            serde_json::to_string(&written.dropped)
                .map_err(|e| Error::Internal(format!("cannot encode dropped counts: {e}")))?,
        );
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(targets)),
        Arc::new(StringArray::from(entries)),
        Arc::new(UInt64Array::from(rows)),
    ];
    Ok(RecordBatch::try_new(written_schema(), columns)?)
}

/// Adds the files and counts one batch of [`written_schema`] describes to `written`.
pub fn read_written(
    batch: &RecordBatch,
    destination: &Destination,
    written: &mut Written,
) -> Result<()> {
    let text = |i: usize| {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| Error::Internal("a writer task answered in another shape".into()))
    };
    let (targets, entries) = (text(0)?, text(1)?);
    for i in 0..batch.num_rows() {
        let json = entries.value(i);
        match (targets.value(i), &destination.quarantine) {
            (TABLE, _) => written.files.push(entry(json, &destination.layout)?),
            (QUARANTINE, Some((_, layout))) => written.quarantine_files.push(entry(json, layout)?),
            (DROPPED, _) => {
                let counts: std::collections::BTreeMap<String, u64> = serde_json::from_str(json)
                    .map_err(|e| {
                        Error::Internal(format!("a writer task sent bad dropped counts: {e}"))
                    })?;
                written.absorb(Written {
                    dropped: counts,
                    ..Written::default()
                });
            }
            (other, _) => {
                return Err(Error::Internal(format!(
                    "a writer task sent an entry for `{other}`"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow::array::{Date32Array, Int64Array};
    use iceberg::io::FileIOBuilder;
    use iceberg::spec::{
        FormatVersion, NestedField, PrimitiveType, Schema as IcebergSchema, TableMetadataBuilder,
        Transform, Type, UnboundPartitionSpec,
    };
    use iceberg::TableCreation;

    use super::*;
    use iceberg::spec::TableMetadata;

    use crate::catalog::LocalStorageFactory;
    use crate::write::TableWriter;

    /// A table `(id long, day date)` partitioned by `month(day)` under `dir`.
    fn metadata(dir: &std::path::Path) -> TableMetadata {
        let schema = IcebergSchema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "day", Type::Primitive(PrimitiveType::Date)).into(),
            ])
            .build()
            .unwrap();
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "day_month", Transform::Month)
            .unwrap()
            .build();
        let creation = TableCreation::builder()
            .name("t".to_string())
            .location(dir.join("t").display().to_string())
            .schema(schema)
            .partition_spec(spec)
            .format_version(FormatVersion::V2)
            .build();
        TableMetadataBuilder::from_table_creation(creation)
            .unwrap()
            .build()
            .unwrap()
            .metadata
    }

    #[tokio::test]
    async fn written_files_come_back_as_the_entries_the_writer_made() {
        let dir = tempfile::tempdir().unwrap();
        let metadata = metadata(dir.path());
        let file_io = FileIOBuilder::new(Arc::new(LocalStorageFactory)).build();
        let mut writer = TableWriter::new("ns.t", &metadata, file_io, 1 << 20, "test")
            .await
            .unwrap();
        // Days 0..59 since 1970: January (31 days) and February (28), two files.
        let batch = RecordBatch::try_new(
            writer.schema().clone(),
            vec![
                Arc::new(Int64Array::from((0..59).collect::<Vec<i64>>())),
                Arc::new(Date32Array::from((0..59).collect::<Vec<i32>>())),
            ],
        )
        .unwrap();
        writer.write(batch).await.unwrap();
        let files = writer.close().await.unwrap();
        assert_eq!(files.len(), 2);
        let destination = Destination {
            table: "ns.t".into(),
            layout: FileLayout::of(&metadata).unwrap(),
            quarantine: None,
            target_file_size: 1 << 20,
        };
        // The layout sent to executors puts files where iceberg's generator would.
        let data = dir.path().join("t").join("data").display().to_string();
        assert_eq!(destination.layout.data_location, data);
        assert!(files.iter().all(|f| f.file_path().starts_with(&data)));
        let dropped = BTreeMap::from([("positive".to_string(), 3u64)]);
        let sent = Written {
            files: files.clone(),
            quarantine_files: Vec::new(),
            dropped: dropped.clone(),
        };
        let batch = written_batch(sent, &destination).unwrap();
        assert_eq!(batch.schema(), written_schema());
        assert_eq!(batch.num_rows(), 3);
        let mut back = Written::default();
        read_written(&batch, &destination, &mut back).unwrap();
        assert_eq!(back.files, files);
        assert_eq!(back.dropped, dropped);
        let rows: u64 = back.files.iter().map(|f| f.record_count()).sum();
        assert_eq!(rows, 59);
        // A quarantine entry for a table without a quarantine table is refused.
        let odd = RecordBatch::try_new(
            written_schema(),
            vec![
                Arc::new(StringArray::from(vec![QUARANTINE])),
                Arc::new(StringArray::from(vec!["{}"])),
                Arc::new(UInt64Array::from(vec![0u64])),
            ],
        )
        .unwrap();
        assert!(read_written(&odd, &destination, &mut back).is_err());
    }
}
