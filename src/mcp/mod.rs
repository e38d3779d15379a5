//! `pipeline mcp`: the lake for AI agents, as a Model Context Protocol server (the official
//! Rust SDK, `rmcp`). It is a third face over the same library calls as the command line:
//! the catalog, lineage, plans, run records and quality results the engine already keeps.
//!
//! Read tools are annotated read-only. Write tools (`run`, `backfill`, `rollback`) exist only
//! with `--allow-write`: otherwise they are absent from the tool list and refused if called.
//! Each requires a `reason`, recorded in the run's receipt with the client's name and version.
//! Queries are one SELECT, verified read-only by DataFusion's `SQLOptions`, over catalog
//! tables only, with a row cap, a byte cap and a timeout ([`Limits`]). Every call is logged
//! (stderr, `tracing`: tool, arguments, outcome, time).

mod capped;
mod read;
mod server;
mod write;

pub use capped::Limits;
pub use server::Lake;

use rmcp::ServiceExt;

use crate::error::{Error, Result};

/// Serves `lake` on stdin/stdout until the client closes the connection.
pub async fn serve_stdio(lake: Lake) -> Result<()> {
    let service = lake
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::Internal(format!("MCP handshake on stdio failed: {e}")))?;
    service
        .waiting()
        .await
        .map_err(|e| Error::Internal(format!("MCP server stopped: {e}")))?;
    Ok(())
}
