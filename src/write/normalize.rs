//! Maps the Arrow types a DataFusion query produces to types Iceberg can store.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

/// The schema a query result is stored with: every column nullable, string views and large
/// strings as strings, small and unsigned integers widened, timestamps in microseconds.
/// Fails (naming the column) for types Iceberg cannot store, such as untyped NULL.
pub fn iceberg_compatible_schema(schema: &Schema) -> Result<Schema, String> {
    let fields = schema
        .fields()
        .iter()
        .map(|f| {
            let dt = compatible(f.data_type()).ok_or_else(|| {
                format!(
                    "column `{}` has type {} that Iceberg cannot store; CAST it in the SELECT",
                    f.name(),
                    f.data_type()
                )
            })?;
            Ok(Field::new(f.name(), dt, true))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Schema::new(fields))
}

fn compatible(dt: &DataType) -> Option<DataType> {
    use DataType::*;
    Some(match dt {
        Boolean | Int32 | Int64 | Float32 | Float64 | Date32 | Binary | Decimal128(_, _) => {
            dt.clone()
        }
        Int8 | Int16 | UInt8 | UInt16 => Int32,
        UInt32 | UInt64 => Int64,
        Float16 => Float32,
        Utf8 | Utf8View | LargeUtf8 => Utf8,
        BinaryView | LargeBinary => Binary,
        Date64 => Date32,
        Decimal32(p, s) | Decimal64(p, s) => Decimal128(*p, *s),
        Time32(_) | Time64(_) => Time64(TimeUnit::Microsecond),
        Timestamp(_, tz) => Timestamp(
            TimeUnit::Microsecond,
            tz.as_ref().map(|_| Arc::from("+00:00")),
        ),
        Dictionary(_, v) => compatible(v)?,
        _ => return None,
    })
}
