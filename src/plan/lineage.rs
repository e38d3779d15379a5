//! The column lineage of a whole pipeline as its next run would write it: the spec and SQL
//! planned against the schemas its tables will have. Nothing is run or written.

use super::validate::validate;
use crate::error::{Error, Result};
use crate::lineage::{pipeline_lineage, PipelineLineage};
use crate::spec::{ColumnRef, Pipeline, TableName};

/// The lineage of every column `pipeline` writes (see [`crate::lineage`]).
pub async fn lineage_of(pipeline: &Pipeline) -> Result<PipelineLineage> {
    let validated = validate(pipeline).await?;
    Ok(pipeline_lineage(
        pipeline,
        &validated.ingests,
        &validated.lineage,
    ))
}

/// The columns a lineage question starts from: `ns.table.column`, or every column of
/// `ns.table`. Errors name what exists when the table or column does not.
pub fn lineage_roots(
    lineage: &PipelineLineage,
    pipeline: &str,
    target: &str,
) -> Result<Vec<ColumnRef>> {
    let (table, column) = lineage_target(target)?;
    let columns = lineage
        .tables
        .get(&table)
        .ok_or_else(|| Error::Usage(format!("pipeline {pipeline} does not write {table}")))?;
    Ok(match column {
        Some(c) if columns.contains(&c) => vec![ColumnRef::new(&table, &c)],
        Some(c) => {
            return Err(Error::Usage(format!(
                "{table} has no column `{c}`; its columns: {}",
                columns.join(", ")
            )))
        }
        None => columns.iter().map(|c| ColumnRef::new(&table, c)).collect(),
    })
}

/// `ns.table` or `ns.table.column`.
pub fn lineage_target(text: &str) -> Result<(TableName, Option<String>)> {
    if let Some(table) = TableName::parse(text) {
        return Ok((table, None));
    }
    ColumnRef::parse(text)
        .map(|c| (c.table, Some(c.column)))
        .ok_or_else(|| {
            Error::Usage(format!(
                "`{text}` is neither namespace.table nor namespace.table.column, e.g. gold.fact_orders.customer_name"
            ))
        })
}
