//! `drop` expectations, applied while a transform writes its table: each output row is tagged
//! with the first `drop` expectation it violates; untagged rows go to the table, tagged ones to
//! `<table>__quarantine` with the expectation's name and the run id (`write::split_tagged`).
//! One pass over the query, streamed batch by batch.

use std::sync::Arc;

use datafusion::datasource::ViewTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use iceberg::spec::{PrimitiveType, Type};

use crate::commit::DesiredColumn;
use crate::engine::{query, register_table, Entry};
use crate::error::{Error, Result};
use crate::spec::{
    quote_ident as quote, violation_predicate, Check, Expectation, TableName,
    DROP_QUARANTINE_COLUMNS,
};

/// The view holding a transform's output while its rows are tagged (a two-part name, as the
/// SQL gate admits only `namespace.table`; no spec table starts with `__`).
fn output_view() -> TableName {
    TableName {
        namespace: "__pipeline".into(),
        name: "output".into(),
    }
}
/// Name of the tag column (the violated expectation, NULL for rows kept).
const TAG: &str = "__pipeline_dropped_by";

/// The columns of a transform's quarantine table: the table's columns, then `_expectation`
/// (the name of the `drop` expectation the row violated) and `_dropped_in_run` (the run id).
pub fn quarantine_columns(columns: &[DesiredColumn]) -> Vec<DesiredColumn> {
    let mut out = columns.to_vec();
    for name in DROP_QUARANTINE_COLUMNS {
        out.push(DesiredColumn {
            name: name.into(),
            ty: Type::Primitive(PrimitiveType::String),
            required: false,
        });
    }
    out
}

/// `plan` with one more column: the name of the first of `drops` each row violates, or NULL.
/// Tables that `relationships` checks read must be registered in `session`.
pub async fn tag_violations(
    session: &SessionContext,
    plan: LogicalPlan,
    drops: &[Expectation],
) -> Result<LogicalPlan> {
    let names: Vec<String> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| format!("o.{}", quote(f.name())))
        .collect();
    register_table(
        session,
        &output_view(),
        Arc::new(ViewTable::new(plan, None)),
    )?;
    // A lookup (relationships) joins the looked-up values, built from the lookup (the small
    // side) while the output streams through; each join adds its key column, NULL when the
    // value is missing. Joins nest as subqueries, one per lookup.
    let mut from = output_view().quoted();
    let mut case = String::from("CASE");
    for (i, e) in drops.iter().enumerate() {
        let key = quote(&format!("__k{i}"));
        let predicate = match &e.check {
            Check::Relationships {
                column,
                to_table,
                to_column,
            } => {
                from = format!(
                    "(SELECT o.*, r.{key} FROM (SELECT DISTINCT {1} AS {key} FROM {2} WHERE {1} IS NOT NULL) r RIGHT JOIN {from} o ON o.{0} = r.{key})",
                    quote(column),
                    quote(to_column),
                    to_table.quoted()
                );
                format!("o.{0} IS NOT NULL AND o.{key} IS NULL", quote(column))
            }
            check => violation_predicate(check).ok_or_else(|| {
                Error::Internal(format!("expectation `{}` cannot drop rows", e.name))
            })?,
        };
        case.push_str(&format!(
            " WHEN coalesce(({predicate}), false) THEN '{}'",
            e.name.replace('\'', "''")
        ));
    }
    case.push_str(" END");
    let sql = format!(
        "SELECT {}, {case} AS {} FROM {from} o",
        names.join(", "),
        quote(TAG)
    );
    let tagged = query(session, &sql, Entry::Expectation)
        .await
        .map_err(|e| Error::Pipeline {
            file: drops[0].origin.file.clone(),
            message: format!(
                "the drop expectations on {} (lines {}) do not apply to its rows: {}",
                drops[0].table,
                drops
                    .iter()
                    .map(|d| d.origin.line.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                e.with_line()
            ),
            hint: Some(
                "check the columns they name: the table's output columns, and for relationships the looked-up table's column".into(),
            ),
        })?
        .into_unoptimized_plan();
    Ok(tagged)
}
