//! Fitting a result's batches to the table schema before they are written.
//!
//! Every column is cast to its table field's type, with one exception: a string column that
//! arrives as `Utf8View` (what DataFusion's Parquet scans and string functions produce) is
//! handed to the Parquet writer as it is, because Parquet stores `Utf8View` and `Utf8` as the
//! same `BYTE_ARRAY` values (the Arrow schema in the file's footer stays the table's). Casting
//! copied every string of every transform's output once more: about 2 % of a retail run's CPU.
//! Columns that feed a partition field are always cast, so partition values are computed from
//! the table's own types.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use iceberg::spec::Schema as IcebergSchema;

use crate::error::{Error, Result};

/// Casts batches to one table's Arrow schema (see the module's doc).
pub(super) struct Conform {
    schema: SchemaRef,
    /// Per top-level column: a `Utf8View` column may be written without a cast.
    views: Vec<bool>,
    table: String,
}

impl Conform {
    /// For `schema` (the Arrow form of `iceberg`, in its field order), whose partition fields
    /// read the fields with ids `partition_sources`.
    pub(super) fn new(
        table: &str,
        schema: SchemaRef,
        iceberg: &IcebergSchema,
        partition_sources: &HashSet<i32>,
    ) -> Conform {
        let views = schema
            .fields()
            .iter()
            .zip(iceberg.as_struct().fields())
            .map(|(arrow, field)| {
                arrow.data_type() == &DataType::Utf8 && !partition_sources.contains(&field.id)
            })
            .collect();
        Conform {
            schema,
            views,
            table: table.to_string(),
        }
    }

    /// `batch` with every column of the table's type (or a `Utf8View` kept, see the module's
    /// doc); an error names the column that cannot be stored, or a NULL in a required one.
    pub(super) fn apply(&self, batch: RecordBatch) -> Result<RecordBatch> {
        if batch.num_columns() != self.schema.fields().len() {
            return Err(Error::table_msg(
                &self.table,
                format!(
                    "a batch has {} columns, the table has {}",
                    batch.num_columns(),
                    self.schema.fields().len()
                ),
            ));
        }
        let mut kept_views = false;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
        for ((col, field), view_ok) in batch
            .columns()
            .iter()
            .zip(self.schema.fields())
            .zip(&self.views)
        {
            if col.data_type() == field.data_type() {
                columns.push(col.clone());
            } else if *view_ok && col.data_type() == &DataType::Utf8View {
                kept_views = true;
                columns.push(col.clone());
            } else {
                columns.push(arrow::compute::cast(col, field.data_type()).map_err(|e| {
                    Error::table(
                        &self.table,
                        format!(
                            "column {} cannot be stored as {}",
                            field.name(),
                            field.data_type()
                        ),
                        e,
                    )
                })?);
            }
        }
        let schema = if kept_views {
            self.schema_of(&columns)
        } else {
            self.schema.clone()
        };
        RecordBatch::try_new(schema, columns).map_err(|e| {
            Error::table(
                &self.table,
                "rows do not fit the table schema (a NULL in a required column?)",
                e,
            )
        })
    }

    /// The table schema with each field typed as its column is (names, nullability and field
    /// ids unchanged).
    fn schema_of(&self, columns: &[ArrayRef]) -> SchemaRef {
        let fields: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .zip(columns)
            .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
            .collect();
        Arc::new(Schema::new_with_metadata(
            fields,
            self.schema.metadata().clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int32Array, StringArray, StringViewArray};
    use bytes::Bytes;
    use iceberg::arrow::schema_to_arrow_schema;
    use iceberg::spec::{NestedField, PrimitiveType, Type};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;

    fn table() -> (IcebergSchema, SchemaRef) {
        let iceberg = IcebergSchema::builder()
            .with_fields(vec![
                NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::required(3, "kind", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .unwrap();
        let arrow = Arc::new(schema_to_arrow_schema(&iceberg).unwrap());
        (iceberg, arrow)
    }

    fn batch(kind_nulls: bool) -> RecordBatch {
        let long_name = "a name longer than twelve bytes, kept out of line";
        let kind = if kind_nulls {
            StringViewArray::from(vec![Some("k1"), None, Some("k3")])
        } else {
            StringViewArray::from(vec!["k1", "k2", "k3"])
        };
        RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
            (
                "name",
                Arc::new(StringViewArray::from(vec![
                    Some("short"),
                    None,
                    Some(long_name),
                ])),
            ),
            ("kind", Arc::new(kind)),
        ])
        .unwrap()
    }

    /// A string column that is no partition source stays a view, one that is gets the table's
    /// type, other types are cast; names, field ids and nullability are the table's.
    #[test]
    fn keeps_views_only_where_no_partition_reads_them() {
        let (iceberg, arrow) = table();
        let conform = Conform::new("t", arrow.clone(), &iceberg, &HashSet::from([3]));
        let out = conform.apply(batch(false)).unwrap();
        let types: Vec<_> = out
            .columns()
            .iter()
            .map(|c| c.data_type().clone())
            .collect();
        assert_eq!(types, [DataType::Int64, DataType::Utf8View, DataType::Utf8]);
        for (ours, table) in out.schema().fields().iter().zip(arrow.fields()) {
            assert_eq!(ours.name(), table.name());
            assert_eq!(ours.is_nullable(), table.is_nullable());
            assert_eq!(ours.metadata(), table.metadata());
        }
        let without_partitions = Conform::new("t", arrow, &iceberg, &HashSet::new());
        let out = without_partitions.apply(batch(false)).unwrap();
        assert_eq!(out.column(2).data_type(), &DataType::Utf8View);
        let err = without_partitions.apply(batch(true)).unwrap_err();
        assert!(
            err.to_string().contains("a NULL in a required column"),
            "{err}"
        );
    }

    /// Parquet stores the kept views as the table's strings: the file's schema and the values
    /// read back are those of a batch cast to `Utf8` first.
    #[test]
    fn parquet_stores_kept_views_as_the_tables_strings() {
        let (iceberg, arrow) = table();
        let conform = Conform::new("t", arrow.clone(), &iceberg, &HashSet::new());
        let mut file = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut file, arrow.clone(), None).unwrap();
        writer.write(&conform.apply(batch(false)).unwrap()).unwrap();
        writer.close().unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file))
            .unwrap()
            .build()
            .unwrap();
        let read: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].schema().field(1).data_type(), &DataType::Utf8);
        let names = read[0]
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let expected = arrow::compute::cast(batch(false).column(1), &DataType::Utf8).unwrap();
        assert_eq!(names as &dyn Array, expected.as_ref());
        assert_eq!(names.null_count(), 1);
    }
}
