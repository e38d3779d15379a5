//! Dealing a batch's rows to the table partitions they belong to.
//!
//! iceberg's own `RecordBatchPartitionSplitter` turns every row's partition value into an
//! Iceberg `Struct` literal, hashes it, and filters the whole batch once per partition found:
//! a heap allocation or two per row, and `rows x partitions` work, 13 % of a retail run's CPU.
//! Here partition values stay Arrow arrays: they are compared in Arrow's row format, rows are
//! grouped by index, and each group is taken from the batch once. A literal is built once per
//! partition of a batch. A batch whose rows all fall into one partition (a daily source file,
//! a month of a transform's output) passes through without a copy.
//!
//! Partition values of identity and time transforms (`year`, `month`, `day`, `hour`) of
//! top-level columns are computed here by integer arithmetic ([`super::time_key`]), the values
//! iceberg's transforms give; iceberg's calculator, which goes through a calendar type per row
//! (1.7 % of a retail run's CPU), computes every other spec.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Date32Array, StructArray, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::{DataType, Fields};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use iceberg::arrow::{arrow_struct_to_literal, PartitionValueCalculator};
use iceberg::spec::{
    Literal, PartitionKey, PartitionSpec, PrimitiveType, SchemaRef, StructType, Transform, Type,
};

use super::time_key::{keys, TimeUnitKey};
use crate::error::{Error, Result};

/// How one partition field's values are computed here: from the batch's column `column`,
/// as it is (`unit` None: identity) or as a time transform's key.
struct FastField {
    column: usize,
    unit: Option<TimeUnitKey>,
}

/// Splits batches by a table's partition spec into `(partition, rows)` pairs.
pub struct PartitionSplitter {
    calculator: PartitionValueCalculator,
    /// Set when every partition field is computed here (see the module's doc).
    fast: Option<(Vec<FastField>, Fields)>,
    partition_type: StructType,
    spec: PartitionSpec,
    schema: SchemaRef,
    converter: RowConverter,
}

impl PartitionSplitter {
    /// A splitter for `spec` (partitioned) over `schema`.
    pub fn new(schema: SchemaRef, spec: PartitionSpec) -> Result<PartitionSplitter> {
        let calculator = PartitionValueCalculator::try_new(&spec, &schema)?;
        let partition_type = calculator.partition_type().clone();
        let arrow::datatypes::DataType::Struct(fields) = calculator.partition_arrow_type() else {
            return Err(Error::Internal(
                "a partition type that is not a struct".into(),
            ));
        };
        let converter = RowConverter::new(
            fields
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?;
        let fast = fast_fields(&schema, &spec).map(|f| (f, fields.clone()));
        Ok(PartitionSplitter {
            calculator,
            fast,
            partition_type,
            spec,
            schema,
            converter,
        })
    }

    /// The rows of `batch` grouped by partition, in the order their partitions first appear;
    /// within a group, rows keep their order. Every row lands in exactly one group.
    pub fn split(&self, batch: &RecordBatch) -> Result<Vec<(PartitionKey, RecordBatch)>> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(Vec::new());
        }
        let values = match &self.fast {
            Some((fields, types)) => fast_values(batch, fields, types)?,
            None => self.calculator.calculate(batch)?,
        };
        let columns = values.as_struct().columns().to_vec();
        let rows = self.converter.convert_columns(&columns)?;
        let first = rows.row(0);
        if (1..n).all(|i| rows.row(i) == first) {
            return Ok(vec![(self.key(&values, 0)?, batch.clone())]);
        }
        let mut group_of = HashMap::new();
        let mut groups: Vec<(usize, Vec<u32>)> = Vec::new();
        for i in 0..n {
            let g = *group_of.entry(rows.row(i)).or_insert_with(|| {
                groups.push((i, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(i as u32);
        }
        groups
            .into_iter()
            .map(|(first_row, indices)| {
                let part = take_record_batch(batch, &UInt32Array::from(indices))?;
                Ok((self.key(&values, first_row)?, part))
            })
            .collect()
    }

    /// The partition key of row `row` of the partition values `values`.
    fn key(&self, values: &Arc<dyn Array>, row: usize) -> Result<PartitionKey> {
        let literal = arrow_struct_to_literal(&values.slice(row, 1), &self.partition_type)?;
        match literal.into_iter().next() {
            Some(Some(Literal::Struct(data))) => Ok(PartitionKey::new(
                self.spec.clone(),
                self.schema.clone(),
                data,
            )),
            _ => Err(Error::Internal(
                "a row's partition value is not a struct".into(),
            )),
        }
    }
}

/// How every field of `spec` is computed here, or `None` when one is not an identity or time
/// transform of a top-level column of a type iceberg's transform takes.
fn fast_fields(schema: &SchemaRef, spec: &PartitionSpec) -> Option<Vec<FastField>> {
    let top = schema.as_struct().fields();
    spec.fields()
        .iter()
        .map(|pf| {
            let column = top.iter().position(|f| f.id == pf.source_id)?;
            let Type::Primitive(source) = top[column].field_type.as_ref() else {
                return None;
            };
            if pf.transform == Transform::Identity {
                return Some(FastField { column, unit: None });
            }
            let unit = TimeUnitKey::of(&pf.transform)?;
            // iceberg 0.10 has no hour of a date nor of a nanosecond timestamp.
            let takes = match source {
                PrimitiveType::Timestamp | PrimitiveType::Timestamptz => true,
                PrimitiveType::Date | PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs => {
                    unit != TimeUnitKey::Hour
                }
                _ => false,
            };
            takes.then_some(FastField {
                column,
                unit: Some(unit),
            })
        })
        .collect()
}

/// The partition values of every row of `batch` (a struct of `types`), as iceberg's
/// calculator gives them: a `day` as a date, `year`, `month` and `hour` as integers.
fn fast_values(batch: &RecordBatch, fields: &[FastField], types: &Fields) -> Result<ArrayRef> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.len());
    for (field, ty) in fields.iter().zip(types.iter()) {
        let source = batch.column(field.column);
        let Some(unit) = field.unit else {
            columns.push(source.clone());
            continue;
        };
        let values = keys(unit, source)?;
        columns.push(match ty.data_type() {
            DataType::Date32 => {
                let (_, values, nulls) = values.into_parts();
                Arc::new(Date32Array::new(values, nulls))
            }
            _ => Arc::new(values),
        });
    }
    Ok(Arc::new(StructArray::try_new(
        types.clone(),
        columns,
        None,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};
    use iceberg::arrow::schema_to_arrow_schema;
    use iceberg::spec::{NestedField, PrimitiveType, Schema, Transform, Type};

    fn schema() -> SchemaRef {
        Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "ts", Type::Primitive(PrimitiveType::Timestamp))
                        .into(),
                    NestedField::optional(3, "shop", Type::Primitive(PrimitiveType::String)).into(),
                ])
                .build()
                .unwrap(),
        )
    }

    fn spec(schema: &SchemaRef) -> PartitionSpec {
        PartitionSpec::builder(schema.clone())
            .add_partition_field("ts", "ts_month", Transform::Month)
            .unwrap()
            .add_partition_field("shop", "shop", Transform::Identity)
            .unwrap()
            .build()
            .unwrap()
    }

    const JAN: i64 = 1_735_689_600_000_000; // 2025-01-01T00:00:00Z
    const FEB: i64 = 1_738_368_000_000_000; // 2025-02-01T00:00:00Z

    fn batch(schema: &SchemaRef, ts: Vec<Option<i64>>, shop: Vec<Option<&str>>) -> RecordBatch {
        let arrow_schema = Arc::new(schema_to_arrow_schema(schema).unwrap());
        let ids = Int64Array::from_iter_values(0..ts.len() as i64);
        RecordBatch::try_new(
            arrow_schema,
            vec![
                Arc::new(ids),
                Arc::new(TimestampMicrosecondArray::from(ts)),
                Arc::new(StringArray::from(shop)),
            ],
        )
        .unwrap()
    }

    fn ids(b: &RecordBatch) -> Vec<i64> {
        b.column(0)
            .as_primitive::<arrow::datatypes::Int64Type>()
            .values()
            .to_vec()
    }

    #[test]
    fn groups_rows_by_every_partition_field_nulls_included() {
        let schema = schema();
        let splitter = PartitionSplitter::new(schema.clone(), spec(&schema)).unwrap();
        let b = batch(
            &schema,
            vec![Some(JAN), Some(FEB), Some(JAN + 5), None, Some(JAN), None],
            vec![
                Some("a"),
                Some("a"),
                Some("a"),
                Some("a"),
                Some("b"),
                Some("a"),
            ],
        );
        let parts = splitter.split(&b).unwrap();
        let got: Vec<(String, Vec<i64>)> = parts
            .iter()
            .map(|(k, rows)| (format!("{:?}", k.data()), ids(rows)))
            .collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].1, vec![0, 2]);
        assert_eq!(got[1].1, vec![1]);
        assert_eq!(got[2].1, vec![3, 5]);
        assert_eq!(got[3].1, vec![4]);
        // The keys are iceberg's own: months since 1970 and the shop, a null month as null.
        let expected = iceberg::arrow::RecordBatchPartitionSplitter::try_new_with_computed_values(
            schema.clone(),
            Arc::new(spec(&schema)),
        )
        .unwrap()
        .split(&b)
        .unwrap();
        for (key, rows) in &parts {
            let theirs = expected
                .iter()
                .find(|(k, _)| k.data() == key.data())
                .expect("iceberg's splitter has the same partition");
            assert_eq!(ids(&theirs.1), ids(rows));
        }
        assert_eq!(expected.len(), parts.len());
    }

    #[test]
    fn a_batch_of_one_partition_passes_whole() {
        let schema = schema();
        let splitter = PartitionSplitter::new(schema.clone(), spec(&schema)).unwrap();
        let b = batch(
            &schema,
            vec![Some(FEB), Some(FEB + 1), Some(FEB + 2)],
            vec![Some("x"); 3],
        );
        let parts = splitter.split(&b).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(ids(&parts[0].1), vec![0, 1, 2]);
        assert!(splitter.split(&b.slice(0, 0)).unwrap().is_empty());
    }

    /// Partition values computed here equal iceberg's calculator's for every time transform
    /// of every time type it takes (and identity), nulls and dates before 1970 included;
    /// other transforms are left to the calculator.
    #[test]
    fn computes_the_values_icebergs_calculator_computes() {
        use arrow::array::{Date32Array, TimestampNanosecondArray};
        let schema: SchemaRef = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "ts", Type::Primitive(PrimitiveType::Timestamp))
                        .into(),
                    NestedField::optional(2, "tz", Type::Primitive(PrimitiveType::Timestamptz))
                        .into(),
                    NestedField::optional(3, "d", Type::Primitive(PrimitiveType::Date)).into(),
                    NestedField::optional(4, "ns", Type::Primitive(PrimitiveType::TimestampNs))
                        .into(),
                    NestedField::optional(5, "shop", Type::Primitive(PrimitiveType::String)).into(),
                ])
                .build()
                .unwrap(),
        );
        let days: Vec<Option<i32>> = (-30_000..30_000)
            .step_by(61)
            .map(Some)
            .chain([None, Some(-1), Some(0), Some(59), Some(60)])
            .collect();
        let micros: Vec<Option<i64>> = days
            .iter()
            .map(|d| d.map(|d| i64::from(d) * 86_400_000_000 + i64::from(d % 7) * 3_600_000_001))
            .collect();
        let arrow_schema = Arc::new(schema_to_arrow_schema(&schema).unwrap());
        let b = RecordBatch::try_new(
            arrow_schema,
            vec![
                Arc::new(TimestampMicrosecondArray::from(micros.clone())),
                Arc::new(TimestampMicrosecondArray::from(micros.clone()).with_timezone("+00:00")),
                Arc::new(Date32Array::from(days.clone())),
                Arc::new(TimestampNanosecondArray::from(
                    micros
                        .iter()
                        .map(|m| m.map(|m| m * 1000 - 1))
                        .collect::<Vec<_>>(),
                )),
                Arc::new(StringArray::from_iter(
                    days.iter().map(|d| d.map(|d| format!("s{}", d % 3))),
                )),
            ],
        )
        .unwrap();
        let times = [
            Transform::Year,
            Transform::Month,
            Transform::Day,
            Transform::Hour,
        ];
        let mut fast = 0;
        for (source, transforms) in [
            ("ts", &times[..]),
            ("tz", &times[..]),
            ("d", &times[..3]),
            ("ns", &times[..3]),
        ] {
            for t in transforms {
                let spec = PartitionSpec::builder(schema.clone())
                    .add_partition_field(source, "p", *t)
                    .unwrap()
                    .add_partition_field("shop", "shop", Transform::Identity)
                    .unwrap()
                    .build()
                    .unwrap();
                let splitter = PartitionSplitter::new(schema.clone(), spec.clone()).unwrap();
                let (fields, types) = splitter.fast.as_ref().expect("computed here");
                let ours = fast_values(&b, fields, types).unwrap();
                let theirs = PartitionValueCalculator::try_new(&spec, &schema)
                    .unwrap()
                    .calculate(&b)
                    .unwrap();
                assert_eq!(ours.as_ref(), theirs.as_ref(), "{t} of {source}");
                fast += 1;
            }
        }
        assert_eq!(fast, 14);
        for (source, t) in [("shop", Transform::Bucket(4)), ("ts", Transform::Bucket(8))] {
            let spec = PartitionSpec::builder(schema.clone())
                .add_partition_field(source, "p", t)
                .unwrap()
                .build()
                .unwrap();
            let splitter = PartitionSplitter::new(schema.clone(), spec).unwrap();
            assert!(splitter.fast.is_none(), "{t} of {source} is iceberg's");
        }
    }
}
