//! Crash-test hooks. With `PIPELINE_PAUSE_AT=<point>` in its environment, the process stops
//! for good when it reaches that point of a run and says so on stderr
//! (`pipeline: paused at <point>`), so a test can SIGKILL it exactly there. Points:
//!
//! - `bronze-files-written`: an ingest lane has written its Parquet data files;
//! - `staged`: every job's snapshot is staged, nothing is published;
//! - `maintain-written`: `pipeline maintain` wrote its compacted files, nothing is published;
//! - `maintain-published`: `pipeline maintain` published, nothing it frees is deleted yet;
//! - `publishing`: inside the publish transaction, after the first table pointer moved and
//!   before the commit (embedded); after the first table moved (S3 Tables, REST table by
//!   table); just before the multi-table commit is sent (REST with transactions);
//! - `intent-set` (S3 Tables, REST table by table): the publish's intent is recorded on the
//!   control table, no table has moved yet;
//! - `version-token-read NS.TABLE` (S3 Tables): the table's version token is read and the
//!   move that uses it not yet sent.
//!
//! - `transform-staged NS.TABLE` (async): a transform job is done (its table staged, or up
//!   to date), and the jobs that read it have not started;
//! - `transform-batch NS.TABLE N` (async): batch N (from 1) of a recompute in batches is
//!   about to run; the other batch in flight goes on;
//! - `published` (async): a run published its tables and record; its `after_run` maintenance
//!   has not started (a schedule's timeout may strike here).
//!
//! With `PIPELINE_PAUSE_UNTIL=<file>` as well, the pause ends when that file exists (so a
//! test can let another writer commit in between). With `PIPELINE_PANIC_AT=<point>`, the
//! first time the process reaches that point it panics instead (a bug in a job, as a
//! scheduler must survive it). Unset (always, outside tests), a pause point costs one
//! environment lookup.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The environment variable naming the point to pause at.
pub const PAUSE_AT: &str = "PIPELINE_PAUSE_AT";

/// The environment variable naming a file whose creation ends the pause.
pub const PAUSE_UNTIL: &str = "PIPELINE_PAUSE_UNTIL";

/// The environment variable that offsets this process's wall clock, in seconds (e.g. `600`
/// or `-600`), as a host whose clock is wrong: the schedulers' lease must not care. Every
/// time the engine writes follows it (snapshot timestamps, run records, maintenance's notion
/// of a snapshot's age), so a benchmark can live through a year of nightly runs in an hour.
pub const CLOCK_SKEW: &str = "PIPELINE_CLOCK_SKEW";

/// The wall clock, offset by `PIPELINE_CLOCK_SKEW` seconds when set: the one clock of every
/// timestamp the engine writes.
pub fn wall_now() -> chrono::DateTime<chrono::Utc> {
    let skew = std::env::var(CLOCK_SKEW)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(0);
    chrono::Utc::now() + chrono::Duration::seconds(skew)
}

/// The environment variable naming the point to panic at (once per process).
pub const PANIC_AT: &str = "PIPELINE_PANIC_AT";

/// Whether this process already panicked at its `PIPELINE_PANIC_AT` point.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Panics the first time `PIPELINE_PANIC_AT` names `point`.
fn panic_point(point: &str) {
    if std::env::var(PANIC_AT).is_ok_and(|v| v == point) && !PANICKED.swap(true, Ordering::SeqCst) {
        panic!("{PANIC_AT}: a deliberate panic at {point}");
    }
}

/// Stops this task (not its thread: other tasks and timers go on) if `PIPELINE_PAUSE_AT`
/// names `point`: forever, or until the file named by `PIPELINE_PAUSE_UNTIL` exists.
pub async fn pause_point_async(point: &str) {
    panic_point(point);
    if std::env::var(PAUSE_AT).is_ok_and(|v| v == point) {
        tell!("pipeline: paused at {point} ({PAUSE_AT})");
        let until = std::env::var_os(PAUSE_UNTIL).map(std::path::PathBuf::from);
        loop {
            match &until {
                Some(file) if file.exists() => return,
                Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                None => tokio::time::sleep(Duration::from_secs(3600)).await,
            }
        }
    }
}

/// Stops this thread if `PIPELINE_PAUSE_AT` names `point`: forever, or until the file named by
/// `PIPELINE_PAUSE_UNTIL` exists.
pub fn pause_point(point: &str) {
    panic_point(point);
    if std::env::var(PAUSE_AT).is_ok_and(|v| v == point) {
        tell!("pipeline: paused at {point} ({PAUSE_AT})");
        let until = std::env::var_os(PAUSE_UNTIL).map(std::path::PathBuf::from);
        loop {
            match &until {
                Some(file) if file.exists() => return,
                Some(_) => std::thread::sleep(Duration::from_millis(20)),
                None => std::thread::sleep(Duration::from_secs(3600)),
            }
        }
    }
}
