//! Which rows belong together when a result is written by several writers at once: the
//! table's partition fields as expressions over the rows, so that hashing them sends every
//! table partition to exactly one writer.

use datafusion::common::Column;
use datafusion::functions::datetime::expr_fn::date_trunc;
use datafusion::logical_expr::{lit, Expr};
use iceberg::spec::Transform;

use super::FileLayout;

/// The hash keys of `layout`'s partition spec: a time transform as `date_trunc` of
/// its column (all rows of one month hash alike), any other field as its source column (rows
/// of one value hash alike, so a bucket or truncation is never split more finely than by
/// value). `None` for an unpartitioned table.
pub fn partition_keys(layout: &FileLayout) -> Option<Vec<Expr>> {
    let schema = &layout.schema;
    let keys: Vec<Expr> = layout
        .spec
        .fields()
        .iter()
        .filter_map(|field| {
            let source = schema.name_by_field_id(field.source_id)?;
            let column = Expr::Column(Column::new_unqualified(source));
            let unit = match field.transform {
                Transform::Year => "year",
                Transform::Month => "month",
                Transform::Day => "day",
                Transform::Hour => "hour",
                _ => return Some(column),
            };
            Some(date_trunc(lit(unit), column))
        })
        .collect();
    (!keys.is_empty()).then_some(keys)
}
