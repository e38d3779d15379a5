//! A query's result for an agent: at most `max_rows` rows and `max_bytes` bytes of JSON, read
//! from the stream until either cap (the rest is never computed), within `timeout`; the
//! result says when and why it was cut.

use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;

use crate::catalog::PipelineCatalog;
use crate::engine::WORKER_STACK_BYTES;
use crate::error::{Error, Result};
use crate::inspect::query_stream;
use crate::output::batches_to_json;

/// Bounds on what one `query` call may return and how long it may run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_rows: usize,
    pub max_bytes: usize,
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: 1000,
            max_bytes: 1024 * 1024,
            timeout: Duration::from_secs(60),
        }
    }
}

/// The rows of a capped query.
#[derive(Debug, Serialize)]
pub struct CappedResult {
    pub columns: Vec<String>,
    pub rows: Vec<serde_json::Value>,
    /// Whether rows were left out, and why (`row cap 1000`, `byte cap 1048576`).
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_by: Option<String>,
}

/// Runs `sql` (one SELECT) over `catalog` within `limits`, on a runtime of its own: when the
/// timeout strikes, the answer goes back at once and that runtime is abandoned (its tasks are
/// dropped at their next yield), so an operator busy inside one long step neither delays the
/// answer nor holds up the server or its exit.
pub async fn capped_query(
    catalog: PipelineCatalog,
    sql: String,
    as_of: Option<i64>,
    limits: Limits,
) -> Result<CappedResult> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("mcp-query".into())
        .stack_size(WORKER_STACK_BYTES)
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_stack_size(WORKER_STACK_BYTES)
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Some(Err(Error::Internal(format!(
                        "cannot start a query runtime: {e}"
                    )))));
                    return;
                }
            };
            let result = runtime.block_on(async {
                tokio::time::timeout(limits.timeout, collect(&catalog, &sql, as_of, limits)).await
            });
            let _ = tx.send(result.ok());
            runtime.shutdown_background();
        })
        .map_err(|e| Error::Internal(format!("cannot start a query thread: {e}")))?;
    let answer = tokio::time::timeout(limits.timeout, rx).await;
    match answer {
        Ok(Ok(Some(result))) => result,
        Ok(Err(_)) => Err(Error::Internal(
            "the query thread ended without an answer".into(),
        )),
        Ok(Ok(None)) | Err(_) => Err(Error::Usage(format!(
            "query: stopped after the {} s timeout; narrow it (a WHERE on a partition column, a LIMIT)",
            limits.timeout.as_secs()
        ))),
    }
}

/// The capped rows of `sql`, read from its stream until a cap.
async fn collect(
    catalog: &PipelineCatalog,
    sql: &str,
    as_of: Option<i64>,
    limits: Limits,
) -> Result<CappedResult> {
    let (schema, mut stream) = query_stream(catalog, sql, as_of).await?;
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut rows = Vec::new();
    let mut bytes = 0usize;
    let mut truncated_by = None;
    'batches: while let Some(batch) = stream.next().await {
        let batch = batch?;
        let text = batches_to_json(&schema, &[batch])?;
        let parsed: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::Internal(format!("query result as JSON: {e}")))?;
        let batch_rows = match parsed.get("rows") {
            Some(serde_json::Value::Array(r)) => r.clone(),
            _ => Vec::new(),
        };
        for row in batch_rows {
            if rows.len() == limits.max_rows {
                truncated_by = Some(format!("row cap {}", limits.max_rows));
                break 'batches;
            }
            let size = row.to_string().len() + 1;
            if bytes + size > limits.max_bytes {
                truncated_by = Some(format!("byte cap {}", limits.max_bytes));
                break 'batches;
            }
            bytes += size;
            rows.push(row);
        }
    }
    Ok(CappedResult {
        columns,
        rows,
        truncated: truncated_by.is_some(),
        truncated_by,
    })
}
