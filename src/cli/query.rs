//! The bounds of a query a reader wrote: a memory ceiling on the process (`memory_cap`), the
//! query engine's spill budget kept below it, and a deadline. `pipeline query` runs within
//! them in its own process; so does each MCP `query` call, in the child process the server
//! starts (`pipeline agent-query`).

use std::future::Future;
use std::io::Read;
use std::time::Duration;

use super::export::{export, Target};
use super::print;
use super::query_args::{QueryArgs, QueryFormat};
use crate::catalog::PipelineCatalog;
use crate::engine::{memory_limit_mb, set_memory_limit_mb, MAX_SQL_BYTES};
use crate::error::{Error, Result};
use crate::inspect;
use crate::mcp::{capped_rows, Limits};

/// What `pipeline query` says at its ceiling, after "narrow it".
pub const CLI_HINT: &str = "or raise --max-memory-mb";
/// What an agent's query says at its ceiling (the agent cannot raise it).
pub const AGENT_HINT: &str = "the server's --query-memory-mb sets the ceiling";

/// The least ceiling: what opening a catalog and planning need, with room for a query.
const LEAST_MB: usize = 256;

/// The ceiling of `pipeline query`: `asked`, else 2048 MiB, or the spill budget + 1024 MiB
/// when that is more (so raising `PIPELINE_MEMORY_LIMIT_MB` alone keeps working).
pub fn default_ceiling_mb(asked: Option<usize>) -> usize {
    asked.unwrap_or_else(|| 2048.max(memory_limit_mb() + 1024))
}

/// Puts this process under a ceiling of `mb` MiB, with the query engine's spill budget at
/// most half of it (sorts and aggregations spill before the ceiling strikes). Call before the
/// first query of the process.
pub fn ceiling(mb: usize, hint: &str) -> Result<()> {
    if mb < LEAST_MB {
        return Err(Error::Usage(format!(
            "--max-memory-mb {mb}: a query needs at least {LEAST_MB} MiB"
        )));
    }
    set_memory_limit_mb(memory_limit_mb().min(mb / 2));
    crate::memory_cap::set(
        mb << 20,
        &format!(
            "stopped: the query needed more than {mb} MiB of memory; narrow it (a WHERE on a partition column, fewer columns, a LIMIT), {hint}"
        ),
    );
    Ok(())
}

/// `pipeline query`: the rows of `args.sql` over `catalog` (as of a snapshot), stopped after
/// `--timeout` seconds when given: printed as a table or a JSON document, or streamed out as
/// CSV, JSON Lines or Parquet (`--format`, `--out`).
pub async fn answer(catalog: &PipelineCatalog, args: &QueryArgs, json: bool) -> Result<()> {
    let implied = args.out.as_deref().and_then(QueryFormat::of_file);
    let format = match (args.format, &args.out) {
        (Some(format), _) => format,
        (None, Some(out)) => implied.ok_or_else(|| {
            Error::Usage(format!(
                "--out {}: say the format with --format csv|json|parquet (the file name does not end in .csv, .json, .jsonl or .parquet)",
                out.display()
            ))
        })?,
        (None, None) => QueryFormat::Table,
    };
    if format == QueryFormat::Table {
        if let Some(out) = &args.out {
            return Err(Error::Usage(format!(
                "--out {}: a file is written as csv, json or parquet (--format)",
                out.display()
            )));
        }
        let (schema, batches) =
            within(args.timeout, inspect::query(catalog, &args.sql, args.as_of))
                .await
                .map_err(blame_the_query)?;
        return print::query(&schema, &batches, json);
    }
    let target = Target {
        format,
        out: args.out.as_deref(),
        force: args.force,
    };
    let exported = within(args.timeout, export(catalog, &args.sql, args.as_of, target))
        .await
        .map_err(blame_the_query)?;
    if let Some(exported) = exported {
        super::print_files::exported(&exported, json);
    }
    Ok(())
}

/// A query that fails on its own values (a division by zero, an overflow, a cast or parse
/// that cannot be made) is bad input, like a query that does not parse: exit status 2.
/// Failures to read the lake stay what they are.
fn blame_the_query(e: Error) -> Error {
    use arrow::error::ArrowError as A;
    use datafusion::error::DataFusionError as D;
    let of_values = |a: &A| {
        matches!(
            a,
            A::DivideByZero
                | A::ArithmeticOverflow(_)
                | A::CastError(_)
                | A::ParseError(_)
                | A::InvalidArgumentError(_)
                | A::ComputeError(_)
        )
    };
    let blamed = match &e {
        Error::Arrow(a) => of_values(a),
        Error::DataFusion(d) => match d.find_root() {
            D::ArrowError(a, _) => of_values(a),
            _ => false,
        },
        _ => false,
    };
    match blamed {
        true => Error::Usage(format!("query: {e}")),
        false => e,
    }
}

/// `pipeline agent-query`: the SQL on stdin over `catalog`, its capped rows printed as JSON.
pub async fn agent_query(
    catalog: &PipelineCatalog,
    as_of: Option<i64>,
    limits: Limits,
) -> Result<()> {
    let sql = sql_from_stdin()?;
    let rows = capped_rows(catalog, &sql, as_of, limits).await?;
    print::json(&rows);
    Ok(())
}

/// `work`, stopped after `timeout` seconds when one is given.
async fn within<T>(timeout: Option<u64>, work: impl Future<Output = Result<T>>) -> Result<T> {
    let Some(seconds) = timeout else {
        return work.await;
    };
    tokio::time::timeout(Duration::from_secs(seconds), work)
        .await
        .unwrap_or_else(|_| {
            Err(Error::Usage(format!(
                "query: stopped after the {seconds} s timeout (--timeout); narrow it (a WHERE on a partition column, a LIMIT)"
            )))
        })
}

/// The SQL of an agent's query, from stdin (at most the gate's 1 MiB and one byte, so the
/// gate says what is wrong with a longer one).
fn sql_from_stdin() -> Result<String> {
    let mut sql = String::new();
    std::io::stdin()
        .take(MAX_SQL_BYTES as u64 + 1)
        .read_to_string(&mut sql)
        .map_err(|e| Error::Usage(format!("the query on stdin is not UTF-8 text: {e}")))?;
    Ok(sql)
}
