//! Each `query` call of the MCP server runs in a child process of its own (`pipeline
//! agent-query`, the same binary), under a memory ceiling and a wall-clock deadline. A query
//! that would take the machine's memory stops that child alone, at the ceiling, with one
//! sentence (`memory_cap`); one that runs too long is killed at the deadline. Either way the
//! call is answered with that error, and the server, which holds only the child's capped
//! answer, serves the next call as before.
//!
//! The SQL goes to the child on stdin (a command line holds at most 128 KiB per argument),
//! the answer comes back on stdout (read up to a cap), the child's last line of stderr is its
//! error.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::capped::Limits;
use crate::error::{Error, Result};

/// The most of the child's stderr kept (its error is the last line).
const STDERR_KEPT: u64 = 64 * 1024;

/// Runs `sql` in a child `pipeline agent-query` over the project's catalog within `limits`;
/// returns its capped result as JSON.
pub async fn query_in_child(
    project: &Path,
    catalog: Option<&str>,
    sql: &str,
    as_of: Option<i64>,
    limits: Limits,
) -> Result<Value> {
    let mut child = command(project, catalog, as_of, limits)?
        .spawn()
        .map_err(|e| Error::Internal(format!("cannot start the query process: {e}")))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let (stdout, stderr) = (
        child.stdout.take().expect("stdout is piped"),
        child.stderr.take().expect("stderr is piped"),
    );
    let sql = sql.to_string();
    let feed = async move {
        // A child that stops early closes its stdin: its own error tells why.
        let _ = stdin.write_all(sql.as_bytes()).await;
    };
    let answer_cap = (limits.max_bytes as u64).saturating_mul(2) + (1 << 20);
    let run = async {
        let ((), out, err, status) = tokio::join!(
            feed,
            read_up_to(stdout, answer_cap),
            read_up_to(stderr, STDERR_KEPT),
            child.wait()
        );
        (out, err, status)
    };
    match tokio::time::timeout(limits.timeout, run).await {
        Err(_) => Err(Error::Usage(format!(
            "query: stopped after the {} s timeout; narrow it (a WHERE on a partition column, a LIMIT)",
            limits.timeout.as_secs()
        ))),
        Ok((out, err, status)) => {
            let status =
                status.map_err(|e| Error::Internal(format!("waiting for the query process: {e}")))?;
            outcome(status, &out?, &err?, limits)
        }
    }
}

/// The child's command line: the same binary, project and catalog; the SQL on stdin.
fn command(
    project: &Path,
    catalog: Option<&str>,
    as_of: Option<i64>,
    limits: Limits,
) -> Result<Command> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Internal(format!("cannot find this program's path: {e}")))?;
    let mut command = Command::new(exe);
    command.arg("--project").arg(project);
    if let Some(catalog) = catalog {
        command.args(["--catalog", catalog]);
    }
    command
        .arg("agent-query")
        .args(["--max-rows", &limits.max_rows.to_string()])
        .args(["--max-bytes", &limits.max_bytes.to_string()])
        .args(["--max-memory-mb", &limits.max_memory_mb.to_string()]);
    if let Some(snapshot) = as_of {
        command.args(["--as-of", &snapshot.to_string()]);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Killed when the call is dropped: at the deadline, or when the server stops.
        .kill_on_drop(true);
    Ok(command)
}

/// What the call answers, from how the child ended and what it wrote.
fn outcome(
    status: std::process::ExitStatus,
    out: &[u8],
    err: &[u8],
    limits: Limits,
) -> Result<Value> {
    if status.success() {
        return serde_json::from_slice(out).map_err(|e| {
            Error::Internal(format!(
                "the query process answered something else than JSON: {e}"
            ))
        });
    }
    let text = String::from_utf8_lossy(err);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let message = last.strip_prefix("error: ").unwrap_or(last).to_string();
    match status.code() {
        Some(2) => Err(Error::Usage(message)),
        Some(4) => Err(Error::Busy(message)),
        Some(5) => Err(Error::Damaged(message)),
        Some(_) => Err(Error::Failed(message)),
        None => Err(Error::Usage(format!(
            "query: stopped: the query process was ended by the system ({}), most likely for memory; narrow it (a WHERE on a partition column, fewer columns, a LIMIT); the ceiling is {} MiB",
            signal_of(&status),
            limits.max_memory_mb
        ))),
    }
}

fn signal_of(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(n) => format!("signal {n}"),
        None => "no exit code".into(),
    }
}

/// Up to `cap` bytes of `reader`; the rest is read and dropped so the child never blocks on a
/// full pipe.
async fn read_up_to(mut reader: impl AsyncRead + Unpin, cap: u64) -> Result<Vec<u8>> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = reader
            .read(&mut chunk)
            .await
            .map_err(|e| Error::Internal(format!("reading the query process: {e}")))?;
        if n == 0 {
            return Ok(kept);
        }
        let room = cap.saturating_sub(kept.len() as u64) as usize;
        kept.extend_from_slice(&chunk[..n.min(room)]);
    }
}
