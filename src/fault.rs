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
//! - `version-token-read NS.TABLE` (S3 Tables): the table's version token is read and the
//!   move that uses it not yet sent.
//!
//! With `PIPELINE_PAUSE_UNTIL=<file>` as well, the pause ends when that file exists (so a
//! test can let another writer commit in between). Unset (always, outside tests), a pause
//! point costs one environment lookup.

use std::time::Duration;

/// The environment variable naming the point to pause at.
pub const PAUSE_AT: &str = "PIPELINE_PAUSE_AT";

/// The environment variable naming a file whose creation ends the pause.
pub const PAUSE_UNTIL: &str = "PIPELINE_PAUSE_UNTIL";

/// Stops this thread if `PIPELINE_PAUSE_AT` names `point`: forever, or until the file named by
/// `PIPELINE_PAUSE_UNTIL` exists.
pub fn pause_point(point: &str) {
    if std::env::var(PAUSE_AT).is_ok_and(|v| v == point) {
        eprintln!("pipeline: paused at {point} ({PAUSE_AT})");
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
