//! Which rows belong together when a result is written by several writers at once: the
//! table's partition fields as expressions over the rows, so that hashing them sends every
//! table partition to exactly one writer.

use datafusion::common::Column;
use datafusion::logical_expr::Expr;

use super::time_key::{time_key, TimeUnitKey};
use super::FileLayout;

/// The hash keys of `layout`'s partition spec: a time transform as its partition value (all
/// rows of one month hash alike; [`time_key`]), any other field as its source column (rows
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
            Some(match TimeUnitKey::of(&field.transform) {
                Some(unit) => time_key(unit).call(vec![column]),
                None => column,
            })
        })
        .collect();
    (!keys.is_empty()).then_some(keys)
}
