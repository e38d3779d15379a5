//! Assembles parsed rows into Arrow record batches of a bronze table's schema: the declared
//! columns, then the lineage columns `_source_file`, `_source_line`, `_ingested_at`, `_run_id`.

use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
    Float64Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;

use super::values::Parsed;
use crate::error::Result;

/// Rows per record batch handed to the writer.
pub const BATCH_ROWS: usize = 8192;

enum Column {
    Bool(BooleanBuilder),
    I32(Int32Builder),
    I64(Int64Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Dec(Decimal128Builder, DataType),
    Str(StringBuilder),
    Date(Date32Builder),
    Ts(TimestampMicrosecondBuilder, DataType),
}

impl Column {
    fn for_type(dt: &DataType) -> Column {
        match dt {
            DataType::Boolean => Column::Bool(BooleanBuilder::new()),
            DataType::Int32 => Column::I32(Int32Builder::new()),
            DataType::Int64 => Column::I64(Int64Builder::new()),
            DataType::Float32 => Column::F32(Float32Builder::new()),
            DataType::Float64 => Column::F64(Float64Builder::new()),
            DataType::Decimal128(_, _) => Column::Dec(Decimal128Builder::new(), dt.clone()),
            DataType::Date32 => Column::Date(Date32Builder::new()),
            DataType::Timestamp(_, _) => Column::Ts(TimestampMicrosecondBuilder::new(), dt.clone()),
            _ => Column::Str(StringBuilder::new()),
        }
    }

    /// Appends one value; the value's kind was produced for this column's type.
    fn push(&mut self, value: Parsed, text: &str) {
        match (self, value) {
            (Column::Bool(b), Parsed::Bool(v)) => b.append_value(v),
            (Column::I32(b), Parsed::I32(v)) => b.append_value(v),
            (Column::I64(b), Parsed::I64(v)) => b.append_value(v),
            (Column::F32(b), Parsed::F32(v)) => b.append_value(v),
            (Column::F64(b), Parsed::F64(v)) => b.append_value(v),
            (Column::Dec(b, _), Parsed::Dec(v)) => b.append_value(v),
            (Column::Date(b), Parsed::Date(v)) => b.append_value(v),
            (Column::Ts(b, _), Parsed::Ts(v)) => b.append_value(v),
            (Column::Str(b), Parsed::Str) => b.append_value(text),
            (c, _) => c.push_null(),
        }
    }

    fn push_null(&mut self) {
        match self {
            Column::Bool(b) => b.append_null(),
            Column::I32(b) => b.append_null(),
            Column::I64(b) => b.append_null(),
            Column::F32(b) => b.append_null(),
            Column::F64(b) => b.append_null(),
            Column::Dec(b, _) => b.append_null(),
            Column::Str(b) => b.append_null(),
            Column::Date(b) => b.append_null(),
            Column::Ts(b, _) => b.append_null(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Bool(b) => b.len(),
            Column::I32(b) => b.len(),
            Column::I64(b) => b.len(),
            Column::F32(b) => b.len(),
            Column::F64(b) => b.len(),
            Column::Dec(b, _) => b.len(),
            Column::Str(b) => b.len(),
            Column::Date(b) => b.len(),
            Column::Ts(b, _) => b.len(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Column::Bool(b) => Arc::new(b.finish()),
            Column::I32(b) => Arc::new(b.finish()),
            Column::I64(b) => Arc::new(b.finish()),
            Column::F32(b) => Arc::new(b.finish()),
            Column::F64(b) => Arc::new(b.finish()),
            Column::Dec(b, dt) => Arc::new(b.finish().with_data_type(dt.clone())),
            Column::Str(b) => Arc::new(b.finish()),
            Column::Date(b) => Arc::new(b.finish()),
            Column::Ts(b, dt) => Arc::new(b.finish().with_data_type(dt.clone())),
        }
    }
}

/// Builds batches of one schema row by row. The last four schema columns are the lineage
/// columns, filled from the constructor arguments and the line number of each row.
pub struct BatchAssembler {
    schema: SchemaRef,
    data: Vec<Column>,
    source_file: StringBuilder,
    source_line: Int64Builder,
    ingested_at: Column,
    run_id: StringBuilder,
    file: String,
    ingested_at_micros: i64,
    run: String,
}

impl BatchAssembler {
    /// `schema`: the bronze table's Arrow schema (declared columns + 4 lineage columns).
    pub fn new(schema: SchemaRef, ingested_at_micros: i64, run: &str) -> BatchAssembler {
        let n = schema.fields().len() - 4;
        let data = schema.fields()[..n]
            .iter()
            .map(|f| Column::for_type(f.data_type()))
            .collect();
        let ingested_at = Column::for_type(schema.field(n + 2).data_type());
        BatchAssembler {
            schema,
            data,
            source_file: StringBuilder::new(),
            source_line: Int64Builder::new(),
            ingested_at,
            run_id: StringBuilder::new(),
            file: String::new(),
            ingested_at_micros,
            run: run.to_string(),
        }
    }

    /// Sets the `_source_file` value of the rows that follow.
    pub fn set_file(&mut self, file: &str) {
        self.file = file.to_string();
    }

    /// Appends one row. `text(i)` returns the source text of string column `i`.
    pub fn push<'a>(&mut self, values: &[Parsed], line: u64, text: impl Fn(usize) -> &'a str) {
        for (i, (col, v)) in self.data.iter_mut().zip(values).enumerate() {
            match v {
                Parsed::Null => col.push_null(),
                Parsed::Str => col.push(*v, text(i)),
                _ => col.push(*v, ""),
            }
        }
        self.source_file.append_value(&self.file);
        self.source_line.append_value(line as i64);
        self.ingested_at
            .push(Parsed::Ts(self.ingested_at_micros), "");
        self.run_id.append_value(&self.run);
    }

    /// Rows appended since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.source_line.len()
    }

    /// True when no rows are pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pending rows as one batch.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        debug_assert!(self.data.iter().all(|c| c.len() == self.len()));
        let mut arrays: Vec<ArrayRef> = self.data.iter_mut().map(Column::finish).collect();
        arrays.push(Arc::new(self.source_file.finish()));
        arrays.push(Arc::new(self.source_line.finish()));
        arrays.push(self.ingested_at.finish());
        arrays.push(Arc::new(self.run_id.finish()));
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

/// Builds batches of a quarantine table: `source_file`, `line`, `raw`, `reason`, `column`,
/// `_ingested_at`, `_run_id`.
pub struct QuarantineAssembler {
    schema: SchemaRef,
    file: StringBuilder,
    line: Int64Builder,
    raw: StringBuilder,
    reason: StringBuilder,
    column: StringBuilder,
    ingested_at: Column,
    run_id: StringBuilder,
    ingested_at_micros: i64,
    run: String,
}

impl QuarantineAssembler {
    /// `schema`: the quarantine table's Arrow schema.
    pub fn new(schema: SchemaRef, ingested_at_micros: i64, run: &str) -> QuarantineAssembler {
        let ingested_at = Column::for_type(schema.field(5).data_type());
        QuarantineAssembler {
            schema,
            file: StringBuilder::new(),
            line: Int64Builder::new(),
            raw: StringBuilder::new(),
            reason: StringBuilder::new(),
            column: StringBuilder::new(),
            ingested_at,
            run_id: StringBuilder::new(),
            ingested_at_micros,
            run: run.to_string(),
        }
    }

    /// Appends one bad record.
    pub fn push(&mut self, file: &str, line: u64, raw: &str, reason: &str, column: Option<&str>) {
        self.file.append_value(file);
        self.line.append_value(line as i64);
        self.raw.append_value(raw);
        self.reason.append_value(reason);
        self.column.append_option(column);
        self.ingested_at
            .push(Parsed::Ts(self.ingested_at_micros), "");
        self.run_id.append_value(&self.run);
    }

    /// Records appended since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.line.len()
    }

    /// True when no records are pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pending records as one batch.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.file.finish()),
            Arc::new(self.line.finish()),
            Arc::new(self.raw.finish()),
            Arc::new(self.reason.finish()),
            Arc::new(self.column.finish()),
            self.ingested_at.finish(),
            Arc::new(self.run_id.finish()),
        ];
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}
