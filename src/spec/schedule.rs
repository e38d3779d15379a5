//! `[schedule]`: when a pipeline runs by itself (`pipeline schedule tick` / `schedule run`),
//! what happens to ticks missed while nothing ran, and how failures are retried and reported.

use std::time::Duration;

use chrono_tz::Tz;
use croner::Cron;

use super::table::Origin;

/// What happens to ticks that passed while no scheduler ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catchup {
    /// Run once for the latest tick that is due, however late (the ticks before it are
    /// skipped, and reported as missed).
    Latest,
    /// Run a tick only while it is current (at most [`Schedule::GRACE`] late); a tick missed by
    /// more is skipped, and the next one awaited.
    None,
}

impl Catchup {
    pub fn name(self) -> &'static str {
        match self {
            Catchup::Latest => "latest",
            Catchup::None => "none",
        }
    }
}

/// A pipeline's `[schedule]`.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The cron expression (5 fields, or 6 with seconds first), parsed.
    pub cron: Cron,
    /// The expression as written.
    pub cron_text: String,
    /// The time zone the expression's clock times are in (default UTC). A tick that falls into
    /// a spring-forward gap runs at the first instant after the gap; a tick in a fall-back
    /// overlap runs once, at the earlier instant.
    pub timezone: Tz,
    pub catchup: Catchup,
    /// Attempts after the first, for transient failures only (a conflict with another writer,
    /// a catalog server error); a spec or SQL error or a failed expectation is not retried.
    pub retries: u32,
    pub retry_delay: Duration,
    /// A run taking longer is stopped (nothing of it is published) and counts as failed.
    pub timeout: Option<Duration>,
    /// A command run after a tick failed for good, with `PIPELINE_NAME`, `PIPELINE_RUN_ID`,
    /// `PIPELINE_TICK` and `PIPELINE_ERROR` in its environment.
    pub on_failure: Vec<String>,
    /// How long a scheduler's claim on a tick lasts on a remote catalog without being renewed
    /// (default 10 minutes; renewed every third of it while the tick runs). A scheduler on
    /// another host leaves a claimed tick alone until the claim lapses (its holder crashed).
    pub lease: Duration,
    pub origin: Origin,
}

impl Schedule {
    /// How late a tick may be and still count as current (for `catchup = "none"`).
    pub const GRACE: Duration = Duration::from_secs(15 * 60);
    /// The shortest [`Schedule::lease`] a spec may ask for.
    pub const MIN_LEASE: Duration = Duration::from_secs(5);
    /// The default [`Schedule::lease`].
    pub const LEASE: Duration = Duration::from_secs(10 * 60);
}
