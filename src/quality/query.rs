//! Small queries of the audits: one value, or a few rows, every value as its display string.

use datafusion::prelude::{DataFrame, SessionContext};
use futures::StreamExt;

use crate::engine::{query, Entry};
use crate::error::Error;
use crate::output::batches_to_rows;
use crate::records::SampleRow;

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

/// The first `limit` rows of `df`, each column's value as its display text (`None` for a
/// null). They are the first rows of the query as it is: a LIMIT would change its plan (a
/// hash join with a fetch builds on its left side, however large).
pub(super) async fn sample_rows(
    df: DataFrame,
    limit: usize,
) -> std::result::Result<Vec<SampleRow>, Error> {
    let schema = df.schema().as_arrow().clone();
    let mut stream = df.execute_stream().await?;
    let (mut batches, mut seen) = (Vec::new(), 0);
    while seen < limit {
        let Some(batch) = stream.next().await else {
            break;
        };
        let batch = batch?;
        seen += batch.num_rows();
        batches.push(batch);
    }
    drop(stream);
    first_rows(&schema, &batches, limit)
}

/// The first `limit` rows of `batches`, each column's value as its display text.
fn first_rows(
    schema: &arrow::datatypes::Schema,
    batches: &[arrow::record_batch::RecordBatch],
    limit: usize,
) -> std::result::Result<Vec<SampleRow>, Error> {
    let rows = batches_to_rows(schema, batches)?;
    Ok(rows
        .rows
        .into_iter()
        .take(limit)
        .map(|row| SampleRow::Fields(rows.columns.iter().cloned().zip(row).collect()))
        .collect())
}

/// How many rows `df` has, and the first `limit` of them as [`sample_rows`] gives them: one
/// pass over the query, keeping no more than the batches that hold the sample.
pub(super) async fn counted_sample(
    df: DataFrame,
    limit: usize,
) -> std::result::Result<(u64, Vec<SampleRow>), Error> {
    let schema = df.schema().as_arrow().clone();
    let mut stream = df.execute_stream().await?;
    let (mut batches, mut kept, mut count) = (Vec::new(), 0, 0u64);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        count += batch.num_rows() as u64;
        if kept < limit && batch.num_rows() > 0 {
            kept += batch.num_rows();
            batches.push(batch);
        }
    }
    Ok((count, first_rows(&schema, &batches, limit)?))
}
