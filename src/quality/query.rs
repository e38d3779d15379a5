//! Small queries of the audits: one value, or a few rows, every value as its display string.

use datafusion::prelude::SessionContext;

use crate::engine::{query, Entry};
use crate::error::Error;
use crate::output::batches_to_rows;

/// The first column of the first row of `sql`, as a string.
pub(super) async fn scalar(
    session: &SessionContext,
    sql: &str,
) -> std::result::Result<Option<String>, Error> {
    Ok(scalar_rows(session, sql)
        .await?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten()))
}

/// The rows of a small result (aggregates, a few samples), every value as its display string.
/// The SQL passes the SQL gate as an expectation's does.
pub(super) async fn scalar_rows(
    session: &SessionContext,
    sql: &str,
) -> std::result::Result<Vec<Vec<Option<String>>>, Error> {
    let df = query(session, sql, Entry::Expectation)
        .await
        .map_err(|r| Error::Failed(r.with_line()))?;
    let schema = df.schema().as_arrow().clone();
    let batches = df.collect().await?;
    Ok(batches_to_rows(&schema, &batches)?.rows)
}
