//! `pipeline schedule tick | run | status`: which pipelines, which clock, and what to print.

use std::path::Path;
use std::sync::Arc;

use super::args::ScheduleAction;
use super::progress::Progress;
use crate::error::{Error, Result};
use crate::output::render_table;
use crate::schedule::{
    run_daemon, serve, status, Clock, ScheduleStatus, TickObserver, TickReport, TickResult,
};
use crate::spec::{list_pipelines, load_with_catalog, Pipeline};

/// Runs one `pipeline schedule` action.
pub async fn execute(
    project: &Path,
    catalog: Option<&str>,
    action: &ScheduleAction,
    as_json: bool,
) -> Result<()> {
    let (names, now) = match action {
        ScheduleAction::Tick { pipelines, now }
        | ScheduleAction::Run { pipelines, now }
        | ScheduleAction::Status { pipelines, now } => (pipelines, now),
    };
    let clock = match now {
        Some(t) => Clock::starting_at(t)?,
        None => Clock::wall(),
    };
    let specs = scheduled(project, names, catalog)?;
    match action {
        ScheduleAction::Tick { .. } => tick(&specs, &clock, as_json).await,
        ScheduleAction::Run { .. } => {
            let names = specs.iter().map(|s| s.name.clone()).collect();
            tell!(
                "  scheduler for {} (SIGTERM or Ctrl-C: finish the run in progress, then stop)",
                specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            run_daemon(
                project,
                names,
                catalog.map(str::to_string),
                clock,
                Arc::new(Progress::stderr()),
                Arc::new(PrintTicks { as_json }),
            )
            .await
        }
        ScheduleAction::Status { .. } => {
            let mut all = Vec::new();
            for spec in &specs {
                all.push(status(spec, clock.now()).await?);
            }
            if as_json {
                say!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
                return Ok(());
            }
            for s in &all {
                print_status(s);
            }
            Ok(())
        }
    }
}

/// `schedule tick`: serves each pipeline's due tick once (one pipeline that cannot be served
/// does not keep the others from theirs), prints every report, and fails when any scheduled
/// run failed or any schedule could not be served.
async fn tick(specs: &[Pipeline], clock: &Clock, as_json: bool) -> Result<()> {
    let mut reports = Vec::new();
    for spec in specs {
        let report = match serve(spec, clock.now(), Arc::new(Progress::stderr())).await {
            Ok(report) => report,
            Err(e) => TickReport {
                pipeline: spec.name.clone(),
                result: TickResult::Error {
                    error: crate::secrets::redact(&e.to_string()).into_owned(),
                },
                missed: Vec::new(),
            },
        };
        reports.push(report);
    }
    print_ticks(&reports, as_json);
    let named = |failed: fn(&TickResult) -> bool| -> Vec<&str> {
        reports
            .iter()
            .filter(|r| failed(&r.result))
            .map(|r| r.pipeline.as_str())
            .collect()
    };
    let failed = named(|r| matches!(r, TickResult::Failed { .. }));
    let unserved = named(|r| matches!(r, TickResult::Error { .. }));
    let mut said = Vec::new();
    if !failed.is_empty() {
        said.push(format!(
            "scheduled run(s) failed: {} (recorded; `pipeline runs` shows the error)",
            failed.join(", ")
        ));
    }
    if !unserved.is_empty() {
        said.push(format!(
            "could not serve the schedule of {} (nothing run or recorded; the next tick tries again)",
            unserved.join(", ")
        ));
    }
    match said.is_empty() {
        true => Ok(()),
        false => Err(Error::Failed(said.join("; "))),
    }
}

/// One pipeline's `schedule status` as text: its schedule, last tick, what is due or
/// missed, the next ticks and who holds its lock.
fn print_status(s: &ScheduleStatus) {
    say!(
        "{} ({}, {}, catchup {})",
        s.pipeline,
        s.cron,
        s.timezone,
        s.catchup
    );
    match &s.last {
        Some(l) => say!(
            "  last tick:  {} -> {} by run {} at {}{}",
            l.tick,
            l.result,
            l.run_id,
            l.finished_at,
            l.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
        None => say!("  last tick:  (none served yet)"),
    }
    match (&s.due, &s.last) {
        (None, _) => say!("  due now:    (nothing)"),
        (Some(due), None) => say!(
            "  due now:    {due} (it has passed and no tick was served yet, as when [schedule] was just added: `pipeline schedule tick` serves it now, a scheduler as soon as it starts)"
        ),
        (Some(due), Some(_)) => say!("  due now:    {due}"),
    }
    for load in &s.would_load {
        say!("  would load: {load}");
    }
    if !s.missed.is_empty() {
        say!("  missed:     {} ({})", s.missed.len(), s.missed.join(", "));
    }
    for (i, t) in s.next.iter().enumerate() {
        let label = if i == 0 {
            "next ticks: "
        } else {
            "            "
        };
        say!("  {label}{} (UTC {})", t.local, t.utc);
    }
    say!(
        "  lock:       {} (this host, {})",
        s.lock_holder
            .as_deref()
            .unwrap_or("free: no run of it in progress here"),
        s.host
    );
    match (&s.lease_holder, s.remote) {
        (Some(lease), _) => say!("  claimed by: {lease}"),
        (None, true) => say!("  claimed by: no scheduler on any host serves a tick now"),
        (None, false) => {}
    }
    for d in &s.maintenance_due {
        say!(
            "  maintenance due: {}: {}; run `{}`",
            d.table,
            d.why.join(", "),
            d.command
        );
    }
}

/// The pipelines named (default: every pipeline of the project with a `[schedule]`), loaded.
fn scheduled(project: &Path, names: &[String], catalog: Option<&str>) -> Result<Vec<Pipeline>> {
    if !names.is_empty() {
        return names
            .iter()
            .map(|n| load_with_catalog(project, n, catalog))
            .collect();
    }
    let mut specs = Vec::new();
    for name in list_pipelines(project) {
        let spec = load_with_catalog(project, &name, catalog)?;
        if spec.schedule.is_some() {
            specs.push(spec);
        }
    }
    if specs.is_empty() {
        return Err(Error::Usage(format!(
            "no pipeline in {}/pipelines has a [schedule] (e.g. `[schedule]` with `cron = \"0 2 * * *\"`)",
            project.display()
        )));
    }
    Ok(specs)
}

fn line(report: &TickReport) -> Vec<String> {
    let (tick, what) = match &report.result {
        TickResult::NotDue { next } => (
            String::new(),
            format!("not due (next tick {})", next.as_deref().unwrap_or("none")),
        ),
        TickResult::Ran {
            tick,
            run_id,
            tables,
            attempts,
        } => (
            tick.clone(),
            format!(
                "ran: run {run_id}, {tables} tables published{}",
                if *attempts > 1 {
                    format!(" (attempt {attempts})")
                } else {
                    String::new()
                }
            ),
        ),
        TickResult::AlreadyServed { tick, run_id } => {
            (tick.clone(), format!("already served by run {run_id}"))
        }
        TickResult::Busy {
            tick,
            holder,
            by: "lock",
        } => (
            tick.clone(),
            format!(
                "left for later: another run on this host holds the pipeline's lock ({holder})"
            ),
        ),
        TickResult::Busy { tick, holder, .. } => (
            tick.clone(),
            format!("left to another scheduler, which claims the tick: {holder}"),
        ),
        TickResult::Lost { tick, error } => (tick.clone(), format!("STOPPED: {error}")),
        TickResult::Failed {
            tick,
            run_id,
            error,
            attempts,
        } => (
            tick.clone(),
            format!("FAILED after {attempts} attempt(s), recorded as run {run_id}: {error}"),
        ),
        TickResult::Error { error } => (
            String::new(),
            format!("NOT SERVED (nothing run or recorded): {error}"),
        ),
    };
    let missed = if report.missed.is_empty() {
        String::new()
    } else {
        format!("{} missed", report.missed.len())
    };
    vec![report.pipeline.clone(), tick, what, missed]
}

fn print_ticks(reports: &[TickReport], as_json: bool) {
    if as_json {
        say!(
            "{}",
            serde_json::to_string_pretty(reports).unwrap_or_default()
        );
        return;
    }
    let rows: Vec<Vec<String>> = reports.iter().map(line).collect();
    let header: Vec<String> = ["pipeline", "tick", "result", "missed"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    say_raw!("{}", render_table(&header, &rows));
}

/// The daemon's report of each tick: a line on stdout (JSON with `--json`).
struct PrintTicks {
    as_json: bool,
}

impl TickObserver for PrintTicks {
    fn served(&self, report: &TickReport) {
        if matches!(report.result, TickResult::NotDue { .. }) && report.missed.is_empty() {
            return;
        }
        if self.as_json {
            say!("{}", serde_json::to_string(report).unwrap_or_default());
        } else {
            say!("{}", line(report).join("  ").trim_end());
        }
    }

    fn failed_to_serve(&self, pipeline: &str, error: &Error) {
        tell!("  schedule  {pipeline}: {error} (trying again shortly)");
    }

    fn waiting(
        &self,
        pipeline: &str,
        until: chrono::DateTime<chrono::Utc>,
        wait: std::time::Duration,
    ) {
        tell!(
            "  schedule  {pipeline}: next look at {} (in {})",
            until.format("%Y-%m-%dT%H:%M:%SZ"),
            in_words(wait)
        );
    }
}

/// A span as people say it: `21h37m`, `4m`, `12s`.
fn in_words(span: std::time::Duration) -> String {
    let s = span.as_secs();
    match (s / 3600, (s % 3600) / 60) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h{m:02}m"),
    }
}
