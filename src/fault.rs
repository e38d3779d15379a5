//! Crash-test hooks. With `PIPELINE_PAUSE_AT=<point>` in its environment, the process stops
//! for good when it reaches that point of a run and says so on stderr
//! (`pipeline: paused at <point>`), so a test can SIGKILL it exactly there. Points:
//!
//! - `bronze-files-written`: an ingest lane has written its Parquet data files;
//! - `staged`: every job's snapshot is staged, nothing is published;
//! - `publishing`: inside the publish transaction, after the first table pointer moved and
//!   before the commit.
//!
//! Unset (always, outside tests), a pause point costs one environment lookup.

use std::time::Duration;

/// The environment variable naming the point to pause at.
pub const PAUSE_AT: &str = "PIPELINE_PAUSE_AT";

/// Stops this thread forever if `PIPELINE_PAUSE_AT` names `point`.
pub fn pause_point(point: &str) {
    if std::env::var(PAUSE_AT).is_ok_and(|v| v == point) {
        eprintln!("pipeline: paused at {point} ({PAUSE_AT})");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}
