//! A query's result for an agent: at most `max_rows` rows and `max_bytes` bytes of JSON, read
//! from the stream until either cap (the rest is never computed); the result says when and
//! why it was cut. The call runs in a child process within `timeout` and `max_memory_mb`
//! (`isolated.rs`).

use std::time::Duration;

use arrow::datatypes::DataType;
use futures::StreamExt;
use rmcp::schemars;
use serde::{Deserialize, Serialize};

use crate::catalog::PipelineCatalog;
use crate::error::{Error, Result};
use crate::inspect::query_stream;
use crate::output::batches_to_json;

/// Bounds on what one `query` call may return and how long it may run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_rows: usize,
    pub max_bytes: usize,
    pub timeout: Duration,
    /// The memory ceiling of the query's process, in MiB.
    pub max_memory_mb: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: 1000,
            max_bytes: 1024 * 1024,
            timeout: Duration::from_secs(60),
            max_memory_mb: 2048,
        }
    }
}

/// The rows of a capped query: what the `query` tool returns as its structured content.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CappedResult {
    /// The result's columns, in order, with their SQL types.
    pub columns: Vec<ResultColumn>,
    /// One array per row, values in column order: numbers (decimals exactly), booleans,
    /// null, and text for every other type (dates, timestamps, strings).
    pub rows: Vec<serde_json::Value>,
    /// Whether rows were left out, and why (`row cap 1000`, `byte cap 1048576`).
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub truncated_by: Option<String>,
}

/// A column of a query result.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResultColumn {
    pub name: String,
    /// Its SQL type: `bigint`, `decimal(22,2)`, `date`, `varchar`, `timestamp`, ...
    #[serde(rename = "type")]
    pub ty: String,
}

/// The SQL name of an Arrow type, as DataFusion's SQL spells it.
fn sql_type(ty: &DataType) -> String {
    match ty {
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 => "smallint".into(),
        DataType::Int32 => "int".into(),
        DataType::Int64 => "bigint".into(),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            format!("{ty}").to_lowercase()
        }
        DataType::Float32 => "real".into(),
        DataType::Float64 => "double".into(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("decimal({p},{s})"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "varchar".into(),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Timestamp(_, None) => "timestamp".into(),
        DataType::Timestamp(_, Some(_)) => "timestamptz".into(),
        other => other.to_string().to_lowercase(),
    }
}

/// The capped rows of `sql`, read from its stream until a cap: what the child process of
/// one MCP `query` call (`pipeline agent-query`) prints.
pub async fn capped_rows(
    catalog: &PipelineCatalog,
    sql: &str,
    as_of: Option<i64>,
    limits: Limits,
) -> Result<CappedResult> {
    let (schema, mut stream) = query_stream(catalog, sql, as_of).await?;
    let columns: Vec<ResultColumn> = schema
        .fields()
        .iter()
        .map(|f| ResultColumn {
            name: f.name().clone(),
            ty: sql_type(f.data_type()),
        })
        .collect();
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
