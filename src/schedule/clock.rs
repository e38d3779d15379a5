//! The scheduler's clock: the wall clock, or (`--now TIME`, for tests and for replaying a
//! schedule) a clock that starts at TIME and runs at the wall clock's pace from there.

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};

/// Now, possibly shifted.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    offset: chrono::Duration,
}

impl Clock {
    /// The wall clock.
    pub fn wall() -> Clock {
        Clock {
            offset: chrono::Duration::zero(),
        }
    }

    /// A clock reading `start` now (then running on), from `--now` (RFC 3339, e.g.
    /// `2026-03-01T02:00:00Z` or `2026-03-01T03:00:00+01:00`).
    pub fn starting_at(start: &str) -> Result<Clock> {
        let start = DateTime::parse_from_rfc3339(start.trim()).map_err(|_| {
            Error::Usage(format!(
                "--now {start}: expected a time as RFC 3339, e.g. 2026-03-01T02:00:00Z"
            ))
        })?;
        Ok(Clock {
            offset: start.with_timezone(&Utc) - Utc::now(),
        })
    }

    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }
}
