//! Time-range predicates: `col >= start AND col < end` (one per span, OR-ed) on a date or
//! timestamp column, with literals of the column's own type so DataFusion pushes them into the
//! Iceberg scan unchanged (where they prune manifests and files by partition and column bounds).

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::logical_expr::{lit, Expr};

use crate::error::{Error, Result};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The predicate selecting rows whose `column` (in `schema`) is NULL: the rows no time range
/// selects.
pub fn null_predicate(schema: &DFSchema, column: &str) -> Result<Expr> {
    Ok(column_of(schema, column)?.0.is_null())
}

/// `column` of `schema` as an expression, with its type.
fn column_of(schema: &DFSchema, column: &str) -> Result<(Expr, DataType)> {
    let (qualifier, field) = schema
        .qualified_field_with_unqualified_name(column)
        .map_err(|_| Error::Usage(format!("no column `{column}` to filter by time range")))?;
    let expr = Expr::Column(Column::new(qualifier.cloned(), field.name()));
    Ok((expr, field.data_type().clone()))
}

/// The predicate selecting rows of `column` (in `schema`) within any of `spans` (half-open,
/// microseconds since the epoch). Errors when the column is missing or not a date/timestamp.
pub fn range_predicate(schema: &DFSchema, column: &str, spans: &[(i64, i64)]) -> Result<Expr> {
    let (column_expr, data_type) = column_of(schema, column)?;
    let literal = |micros: i64, round_up: bool| -> Result<ScalarValue> {
        Ok(match &data_type {
            DataType::Date32 => {
                let days = if round_up {
                    (micros + MICROS_PER_DAY - 1).div_euclid(MICROS_PER_DAY)
                } else {
                    micros.div_euclid(MICROS_PER_DAY)
                };
                ScalarValue::Date32(Some(days as i32))
            }
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                ScalarValue::TimestampMicrosecond(Some(micros), tz.clone())
            }
            DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
                ScalarValue::TimestampNanosecond(Some(micros.saturating_mul(1000)), tz.clone())
            }
            DataType::Timestamp(TimeUnit::Millisecond, tz) => {
                ScalarValue::TimestampMillisecond(Some(micros.div_euclid(1000)), tz.clone())
            }
            other => {
                return Err(Error::Usage(format!(
                    "column `{column}` is {other}; a time range needs a date or timestamp column"
                )))
            }
        })
    };
    let mut predicate: Option<Expr> = None;
    for &(start, end) in spans {
        let one = column_expr
            .clone()
            .gt_eq(lit(literal(start, false)?))
            .and(column_expr.clone().lt(lit(literal(end, true)?)));
        predicate = Some(match predicate {
            None => one,
            Some(p) => p.or(one),
        });
    }
    // No span: select nothing (a constant false still plans and prunes everything).
    Ok(predicate.unwrap_or_else(|| lit(false)))
}
