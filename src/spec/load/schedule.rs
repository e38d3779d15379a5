//! `[schedule]`: a cron expression (parsed by `croner`), a time zone (IANA name), and how
//! missed ticks and failures are handled.

use std::str::FromStr;
use std::time::Duration;

use chrono_tz::Tz;
use croner::Cron;
use toml::Spanned;

use super::position::Positions;
use super::raw::RawSchedule;
use crate::error::Result;
use crate::spec::expect::parse_duration_micros;
use crate::spec::schedule::{Catchup, Schedule};

/// Most attempts after the first that a schedule may ask for.
const MAX_RETRIES: u32 = 20;

pub(super) fn schedule(at: &Positions, raw: &RawSchedule) -> Result<Schedule> {
    let text = raw.cron.get_ref().trim();
    let fields = text.split_whitespace().count();
    if !(5..=6).contains(&fields) {
        return Err(at.error(
            raw.cron.span(),
            format!("`{text}` is not a cron expression: it has {fields} fields"),
            Some("write 5 fields (minute hour day-of-month month day-of-week), e.g. cron = \"0 2 * * *\" for 02:00 every day; a 6th field in front gives seconds".into()),
        ));
    }
    let cron = Cron::from_str(text).map_err(|e| {
        at.error(
            raw.cron.span(),
            format!("`{text}` is not a valid cron expression: {e}"),
            Some("e.g. \"0 2 * * *\" (02:00 daily), \"*/15 * * * *\" (every 15 minutes), \"0 6 * * MON-FRI\"".into()),
        )
    })?;
    let timezone = match &raw.timezone {
        None => Tz::UTC,
        Some(tz) => Tz::from_str(tz.get_ref().trim()).map_err(|_| {
            at.error(
                tz.span(),
                format!("unknown time zone `{}`", tz.get_ref()),
                Some("an IANA name, e.g. \"Europe/Berlin\", \"America/New_York\", \"UTC\"".into()),
            )
        })?,
    };
    let catchup =
        match raw.catchup.as_ref().map(|c| (c, c.get_ref().as_str())) {
            None | Some((_, "latest")) => Catchup::Latest,
            Some((_, "none")) => Catchup::None,
            Some((c, other)) => return Err(at.error(
                c.span(),
                format!("unknown catchup `{other}`"),
                Some(
                    "\"latest\" (run the latest missed tick once) or \"none\" (skip missed ticks)"
                        .into(),
                ),
            )),
        };
    let retries = retries(at, raw)?;
    let retry_delay = duration(at, &raw.retry_delay)?.unwrap_or(Duration::from_secs(300));
    let timeout = duration(at, &raw.timeout)?;
    let lease = lease(at, raw)?;
    let on_failure = on_failure(at, raw)?;
    Ok(Schedule {
        cron,
        cron_text: text.to_string(),
        timezone,
        catchup,
        retries,
        retry_delay,
        timeout,
        on_failure,
        lease,
        origin: at.origin(raw.cron.span()),
    })
}

/// `lease`: at least [`Schedule::MIN_LEASE`] (a renewal is several round trips to the
/// catalog, three per lease).
fn lease(at: &Positions, raw: &RawSchedule) -> Result<Duration> {
    let Some(lease) = duration(at, &raw.lease)? else {
        return Ok(Schedule::LEASE);
    };
    if lease < Schedule::MIN_LEASE {
        let span = raw
            .lease
            .as_ref()
            .map(|l| l.span())
            .unwrap_or(raw.cron.span());
        return Err(at.error(
            span,
            format!(
                "lease = {}s is too short: a scheduler renews its claim every third of it, and a renewal is several round trips to the catalog",
                lease.as_secs_f64()
            ),
            Some(format!(
                "at least {}s; the default is {}m",
                Schedule::MIN_LEASE.as_secs(),
                Schedule::LEASE.as_secs() / 60
            )),
        ));
    }
    Ok(lease)
}

/// `retries`: at most `MAX_RETRIES`.
fn retries(at: &Positions, raw: &RawSchedule) -> Result<u32> {
    Ok(match &raw.retries {
        None => 0,
        Some(r) if *r.get_ref() > MAX_RETRIES => {
            return Err(at.error(
                r.span(),
                format!(
                    "retries = {} is too many (at most {MAX_RETRIES})",
                    r.get_ref()
                ),
                None,
            ))
        }
        Some(r) => *r.get_ref(),
    })
}

/// `on_failure`: a command and its arguments, never empty.
fn on_failure(at: &Positions, raw: &RawSchedule) -> Result<Vec<String>> {
    Ok(match &raw.on_failure {
        None => Vec::new(),
        Some(cmd) if cmd.get_ref().is_empty() || cmd.get_ref()[0].trim().is_empty() => {
            return Err(at.error(
                cmd.span(),
                "on_failure needs a command: [\"program\", \"arg\", ...]".into(),
                None,
            ))
        }
        Some(cmd) => cmd.get_ref().clone(),
    })
}

fn duration(at: &Positions, raw: &Option<Spanned<String>>) -> Result<Option<Duration>> {
    let Some(text) = raw else {
        return Ok(None);
    };
    match parse_duration_micros(text.get_ref()) {
        Some(micros) if micros > 0 => Ok(Some(Duration::from_micros(micros as u64))),
        _ => Err(at.error(
            text.span(),
            format!("`{}` is not a duration", text.get_ref()),
            Some("write a number and a unit: 45s, 90m, 2h, 1d".into()),
        )),
    }
}
