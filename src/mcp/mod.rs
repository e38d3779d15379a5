//! `pipeline mcp`: the lake for AI agents, as a Model Context Protocol server (the official
//! Rust SDK, `rmcp`). It is a third face over the same library calls as the command line:
//! the catalog, lineage, plans, run records and quality results the engine already keeps.
//!
//! Read tools are annotated read-only. Write tools (`run`, `backfill`, `rollback`) exist only
//! with `--allow-write`: otherwise they are absent from the tool list and refused if called.
//! Each requires a `reason`, recorded in the run's receipt with the client's name and version.
//! Queries are one SELECT, verified read-only by DataFusion's `SQLOptions`, over catalog
//! tables only, with a row cap, a byte cap, a timeout and a memory ceiling ([`Limits`]), each
//! in a child process of its own (`isolated.rs`). Every call is logged
//! (stderr, `tracing`: tool, arguments, outcome, time).

mod capped;
mod context;
mod isolated;
mod read;
mod server;
mod words;
mod write;

pub use capped::{capped_rows, CappedResult, Limits, ResultColumn};
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

/// Serves `lake` over MCP's streamable HTTP transport at `http://ADDR/mcp` until the process
/// is stopped. Requests must name a loopback host (`Host` checked against DNS rebinding)
/// unless `addr` is not a loopback address, in which case its own IP is allowed too.
pub async fn serve_http(lake: Lake, addr: std::net::SocketAddr) -> Result<()> {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let mut config = StreamableHttpServerConfig::default();
    if !addr.ip().is_loopback() {
        config.allowed_hosts.push(addr.ip().to_string());
    }
    let service = StreamableHttpService::new(
        move || Ok(lake.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Usage(format!("--http {addr}: cannot listen there: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::Internal(format!("listening address: {e}")))?;
    // The one line a supervisor (or a test) waits for, on stderr.
    tell!("pipeline mcp: serving MCP at http://{local}/mcp");
    loop {
        let (stream, _) = listener
            .accept()
            .await
            .map_err(|e| Error::Internal(format!("accepting a connection: {e}")))?;
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(target: "pipeline::mcp", "HTTP connection ended: {e}");
            }
        });
    }
}
