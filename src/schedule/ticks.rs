//! Which tick of a schedule is due: the cron expression read in its time zone, against a clock
//! and the last tick a run record holds. Pure arithmetic: nothing here runs anything.

use chrono::{DateTime, Utc};
use croner::Cron;

use crate::spec::{Catchup, Schedule};

/// Ticks listed at most, for a schedule that fires very often.
pub const MAX_LISTED: usize = 100;

/// What is due for a schedule at a moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The tick to run now, if any.
    pub tick: Option<DateTime<Utc>>,
    /// Ticks that passed unserved and will not be run (oldest first, at most
    /// [`MAX_LISTED`]).
    pub missed: Vec<DateTime<Utc>>,
}

fn find(
    cron: &Cron,
    schedule: &Schedule,
    at: DateTime<Utc>,
    next: bool,
    inclusive: bool,
) -> Option<DateTime<Utc>> {
    let local = at.with_timezone(&schedule.timezone);
    let found = if next {
        cron.find_next_occurrence(&local, inclusive)
    } else {
        cron.find_previous_occurrence(&local, inclusive)
    };
    found.ok().map(|t| t.with_timezone(&Utc))
}

/// The latest tick at or before `now`.
pub fn latest(schedule: &Schedule, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    find(&schedule.cron, schedule, now, false, true)
}

/// The next `n` ticks after `after`.
pub fn next(schedule: &Schedule, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
    let mut out = Vec::with_capacity(n);
    let mut at = after;
    while out.len() < n {
        match find(&schedule.cron, schedule, at, true, false) {
            Some(t) => {
                out.push(t);
                at = t;
            }
            None => break,
        }
    }
    out
}

/// Ticks after `after` and before `before` (both excluded), oldest first, at most
/// [`MAX_LISTED`].
pub fn between(
    schedule: &Schedule,
    after: DateTime<Utc>,
    before: DateTime<Utc>,
) -> Vec<DateTime<Utc>> {
    let mut out = Vec::new();
    let mut at = after;
    while out.len() < MAX_LISTED {
        match find(&schedule.cron, schedule, at, true, false) {
            Some(t) if t < before => {
                out.push(t);
                at = t;
            }
            _ => break,
        }
    }
    out
}

/// What is due at `now` when the last tick served is `last_served`: the latest tick at or
/// before `now` unless it was served; the ticks between them are missed. With
/// `catchup = "none"` a tick more than [`Schedule::GRACE`] late is missed too, unless a
/// scheduler's lease claims it (`claimed`): a tick begun in time whose holder crashed is
/// finished by whoever takes the lease over, however late that is.
pub fn due(
    schedule: &Schedule,
    now: DateTime<Utc>,
    last_served: Option<DateTime<Utc>>,
    claimed: Option<DateTime<Utc>>,
) -> Due {
    let Some(latest) = latest(schedule, now) else {
        return Due {
            tick: None,
            missed: Vec::new(),
        };
    };
    if last_served.is_some_and(|served| served >= latest) {
        return Due {
            tick: None,
            missed: Vec::new(),
        };
    }
    let mut missed = match last_served {
        Some(served) => between(schedule, served, latest),
        None => Vec::new(),
    };
    let late = (now - latest).to_std().unwrap_or_default();
    let tick = match schedule.catchup {
        Catchup::Latest => Some(latest),
        Catchup::None if late <= Schedule::GRACE || claimed == Some(latest) => Some(latest),
        Catchup::None => {
            if missed.len() < MAX_LISTED {
                missed.push(latest);
            }
            None
        }
    };
    Due { tick, missed }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;
    use std::time::Duration;

    use chrono_tz::Tz;

    use super::*;
    use crate::spec::Origin;

    fn schedule(cron: &str, tz: &str, catchup: Catchup) -> Schedule {
        Schedule {
            cron: Cron::from_str(cron).unwrap(),
            cron_text: cron.into(),
            timezone: Tz::from_str(tz).unwrap(),
            catchup,
            retries: 0,
            retry_delay: Duration::from_secs(1),
            timeout: None,
            on_failure: Vec::new(),
            lease: Schedule::LEASE,
            origin: Origin {
                file: "p.toml".into(),
                line: 1,
            },
        }
    }

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_tick_is_due_once_and_missed_ticks_are_named() {
        let s = schedule("0 2 * * *", "UTC", Catchup::Latest);
        let now = at("2026-03-05T02:00:30Z");
        assert_eq!(
            due(&s, now, None, None).tick,
            Some(at("2026-03-05T02:00:00Z"))
        );
        // Served: nothing more until tomorrow.
        let served = Some(at("2026-03-05T02:00:00Z"));
        assert_eq!(due(&s, at("2026-03-05T23:59:59Z"), served, None).tick, None);
        // Three days without a scheduler: the latest runs, the two before are missed.
        let d = due(&s, at("2026-03-08T09:00:00Z"), served, None);
        assert_eq!(d.tick, Some(at("2026-03-08T02:00:00Z")));
        assert_eq!(
            d.missed,
            vec![at("2026-03-06T02:00:00Z"), at("2026-03-07T02:00:00Z")]
        );
        assert_eq!(
            next(&s, now, 2),
            vec![at("2026-03-06T02:00:00Z"), at("2026-03-07T02:00:00Z")]
        );
    }

    #[test]
    fn catchup_none_runs_only_a_current_tick() {
        let s = schedule("0 2 * * *", "UTC", Catchup::None);
        let served = Some(at("2026-03-04T02:00:00Z"));
        assert_eq!(
            due(&s, at("2026-03-05T02:10:00Z"), served, None).tick,
            Some(at("2026-03-05T02:00:00Z"))
        );
        let late = due(&s, at("2026-03-05T09:00:00Z"), served, None);
        assert_eq!(late.tick, None);
        assert_eq!(late.missed, vec![at("2026-03-05T02:00:00Z")]);
        // A scheduler claimed the tick in time and crashed: it is still due, however late.
        let claimed = Some(at("2026-03-05T02:00:00Z"));
        let taken_over = due(&s, at("2026-03-05T09:00:00Z"), served, claimed);
        assert_eq!(taken_over.tick, claimed);
        assert!(taken_over.missed.is_empty());
        // A claim of an older tick does not revive a late one.
        let old = Some(at("2026-03-04T02:00:00Z"));
        assert_eq!(due(&s, at("2026-03-05T09:00:00Z"), served, old).tick, None);
    }

    #[test]
    fn clock_times_are_read_in_the_time_zone_across_daylight_saving() {
        let s = schedule("30 2 * * *", "Europe/Berlin", Catchup::Latest);
        // 02:30 Berlin is 01:30 UTC in winter, 00:30 UTC in summer.
        assert_eq!(
            next(&s, at("2026-03-27T12:00:00Z"), 3),
            vec![
                at("2026-03-28T01:30:00Z"),
                // 2026-03-29: 02:00 -> 03:00, 02:30 does not exist: the first instant after
                // the gap, 03:00 CEST = 01:00 UTC.
                at("2026-03-29T01:00:00Z"),
                at("2026-03-30T00:30:00Z"),
            ]
        );
        // 2026-10-25: 03:00 -> 02:00, 02:30 happens twice: it runs once, at the first.
        assert_eq!(
            next(&s, at("2026-10-24T12:00:00Z"), 2),
            vec![at("2026-10-25T00:30:00Z"), at("2026-10-26T01:30:00Z")]
        );
    }
}
