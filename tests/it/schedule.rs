//! Scheduled runs: ticks from a cron expression in a time zone, each run at most once (the run
//! record holds its tick), missed ticks by the catchup policy, retries of transient failures,
//! failures recorded and reported, a scheduler that stops cleanly. The clock is injected with
//! `--now`, so a month of ticks passes in seconds.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::Project;

/// A pipeline `p` loading `data/*.csv` into `bronze.t` and summing it into `silver.s`, on
/// `schedule` (TOML lines of its `[schedule]`).
fn scheduled(schedule: &str) -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n\n[schedule]\n{schedule}\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = {{ day = \"date\", n = \"long\" }}\n\n[[transform]]\ntable = \"silver.s\"\nsql = \"sql/s.sql\"\n"
        ),
    );
    p.write(
        "sql/s.sql",
        "SELECT count(*) AS days, sum(n) AS total FROM bronze.t\n",
    );
    p
}

fn day_file(p: &Project, day: u32) {
    p.write(
        &format!("data/2026-03-{day:02}.csv"),
        &format!("day,n\n2026-03-{day:02},{day}\n"),
    );
}

fn tick(p: &Project, now: &str) -> Value {
    p.json(&["schedule", "tick", "--now", now])[0].clone()
}

/// Every scheduled run record of pipeline `p`: (tick, error).
fn served(p: &Project) -> Vec<(String, Option<String>)> {
    p.json(&["runs"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tick"].is_string())
        .map(|r| {
            (
                r["tick"].as_str().unwrap().to_string(),
                r["error"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn schedule_settings_are_checked_at_spec_load() {
    for (schedule, at, says) in [
        (
            "cron = \"0 2 * *\"",
            "pipelines/p.toml:5:8",
            "it has 4 fields",
        ),
        (
            "cron = \"0 25 * * *\"",
            "pipelines/p.toml:5:8",
            "not a valid cron expression",
        ),
        (
            "cron = \"0 2 * * *\"\ntimezone = \"Mars/Olympus\"",
            "pipelines/p.toml:6:12",
            "unknown time zone",
        ),
        (
            "cron = \"0 2 * * *\"\ncatchup = \"all\"",
            "pipelines/p.toml:6:11",
            "unknown catchup",
        ),
        (
            "cron = \"0 2 * * *\"\nretry_delay = \"soon\"",
            "pipelines/p.toml:6:15",
            "not a duration",
        ),
        (
            "cron = \"0 2 * * *\"\non_failure = []",
            "pipelines/p.toml:6:14",
            "on_failure needs a command",
        ),
        (
            "cron = \"0 2 * * *\"\nevery = \"day\"",
            "pipelines/p.toml:6:1",
            "unknown field `every`",
        ),
    ] {
        let p = scheduled(schedule);
        let (code, message) = p.fails(&["validate", "p"]);
        assert_eq!(code, 2, "{schedule}: {message}");
        assert!(
            message.starts_with(&format!("error: {at}: ")),
            "{schedule}: {message}"
        );
        assert!(message.contains(says), "{schedule}: {message}");
    }
}

#[test]
fn a_month_of_daily_ticks_passes_in_seconds_each_run_once() {
    let p = scheduled("cron = \"0 2 * * *\"\ntimezone = \"UTC\"");
    for day in 1..=30 {
        day_file(&p, day);
        let now = format!("2026-03-{day:02}T02:05:00Z");
        let t = tick(&p, &now);
        assert_eq!(t["result"], "ran", "day {day}: {t}");
        assert_eq!(t["tick"], format!("2026-03-{day:02}T02:00:00Z"));
        if day % 10 == 0 {
            // The same moment again (cron calling twice): nothing more runs.
            let again = tick(&p, &format!("2026-03-{day:02}T02:09:00Z"));
            assert_eq!(again["result"], "not_due", "{again}");
            assert_eq!(again["next"], format!("2026-03-{:02}T02:00:00Z", day + 1));
        }
    }
    let ticks: Vec<String> = served(&p).into_iter().map(|(t, _)| t).collect();
    assert_eq!(ticks.len(), 30);
    assert_eq!(ticks.iter().collect::<BTreeSet<_>>().len(), 30);
    // 1 + 2 + ... + 30, loaded once each.
    assert_eq!(
        p.query("SELECT days, total FROM silver.s"),
        vec![vec![Some("30".into()), Some("465".into())]]
    );
}

#[test]
fn missed_ticks_follow_the_catchup_policy() {
    let p = scheduled("cron = \"0 2 * * *\"\ncatchup = \"latest\"");
    day_file(&p, 1);
    tick(&p, "2026-03-01T02:01:00Z");
    // Nothing ran for four days: the latest tick runs (late), the three before are missed.
    let t = tick(&p, "2026-03-05T09:00:00Z");
    assert_eq!(t["result"], "ran");
    assert_eq!(t["tick"], "2026-03-05T02:00:00Z");
    assert_eq!(
        t["missed"],
        serde_json::json!([
            "2026-03-02T02:00:00Z",
            "2026-03-03T02:00:00Z",
            "2026-03-04T02:00:00Z"
        ])
    );

    let p = scheduled("cron = \"0 2 * * *\"\ncatchup = \"none\"");
    day_file(&p, 1);
    tick(&p, "2026-03-01T02:01:00Z");
    let t = tick(&p, "2026-03-05T09:00:00Z");
    assert_eq!(t["result"], "not_due", "{t}");
    assert_eq!(t["missed"].as_array().unwrap().len(), 4);
    let t = tick(&p, "2026-03-06T02:10:00Z");
    assert_eq!(t["result"], "ran");
    assert_eq!(t["tick"], "2026-03-06T02:00:00Z");
}

#[test]
fn two_ticks_at_once_run_the_tick_once() {
    let p = scheduled("cron = \"0 2 * * *\"");
    day_file(&p, 1);
    let start = || {
        p.command(&[
            "schedule",
            "tick",
            "--now",
            "2026-03-01T02:03:00Z",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
    };
    let (a, b) = (start(), start());
    let results: Vec<String> = [a, b]
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success());
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            v[0]["result"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        results.iter().filter(|r| *r == "ran").count(),
        1,
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .all(|r| ["ran", "already_served", "busy"].contains(&r.as_str())),
        "{results:?}"
    );
    assert_eq!(served(&p).len(), 1);
}

#[test]
fn a_scheduler_stopped_mid_run_finishes_it_and_a_killed_one_runs_the_tick_once_later() {
    let p = scheduled("cron = \"0 2 * * *\"");
    day_file(&p, 1);
    // SIGTERM while the run is staged: it publishes, then the scheduler exits.
    let gate = p.path().join("gate");
    let daemon = p.start_paused(
        &["schedule", "run", "--now", "2026-03-01T02:00:30Z"],
        "staged",
        Some(gate),
    );
    daemon.terminate();
    let (ok, log) = daemon.release();
    assert!(ok, "{log}");
    assert_eq!(served(&p).len(), 1, "{log}");

    // SIGKILL mid-run: nothing published; the tick is still due and runs once.
    day_file(&p, 2);
    let daemon = p.start_paused(
        &["schedule", "run", "--now", "2026-03-02T02:00:30Z"],
        "staged",
        None,
    );
    daemon.kill();
    assert_eq!(served(&p).len(), 1);
    let t = tick(&p, "2026-03-02T02:20:00Z");
    assert_eq!(t["result"], "ran");
    assert_eq!(t["tick"], "2026-03-02T02:00:00Z");
    assert_eq!(tick(&p, "2026-03-02T02:21:00Z")["result"], "not_due");
    assert_eq!(served(&p).len(), 2);
}

#[test]
fn schedulers_and_cron_ticks_side_by_side_serve_every_tick_once() {
    // A tick every 2 seconds, two schedulers and a cron-like loop of `tick` for ~7 seconds.
    let p = scheduled("cron = \"*/2 * * * * *\"");
    day_file(&p, 1);
    let daemon = || {
        p.command(&["schedule", "run"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (daemon(), daemon());
    let until = std::time::Instant::now() + Duration::from_secs(7);
    while std::time::Instant::now() < until {
        assert!(p.run(&["schedule", "tick"]).status.success());
        std::thread::sleep(Duration::from_millis(300));
    }
    for d in [&mut a, &mut b] {
        // SAFETY: signals a child this test started.
        unsafe {
            libc::kill(d.id() as i32, libc::SIGTERM);
        }
    }
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let ticks: Vec<String> = served(&p).into_iter().map(|(t, _)| t).collect();
    assert!(ticks.len() >= 2, "{ticks:?}");
    assert_eq!(
        ticks.iter().collect::<BTreeSet<_>>().len(),
        ticks.len(),
        "a tick ran twice: {ticks:?}"
    );
}

#[test]
fn a_failed_tick_is_recorded_reported_and_not_run_again() {
    let p = scheduled(
        "cron = \"0 2 * * *\"\nretries = 3\nretry_delay = \"1s\"\non_failure = [\"sh\", \"-c\", \"echo \\\"$PIPELINE_NAME|$PIPELINE_RUN_ID|$PIPELINE_TICK|$PIPELINE_ERROR\\\" > failure.txt\"]",
    );
    // A failed expectation is not transient: no retry.
    let spec = std::fs::read_to_string(p.path().join("pipelines/p.toml")).unwrap();
    p.write(
        "pipelines/p.toml",
        &format!("{spec}\n[[expect]]\ntable = \"silver.s\"\ncheck = \"row_count\"\nmin = 5\n"),
    );
    day_file(&p, 1);
    let out = p.run(&[
        "schedule",
        "tick",
        "--now",
        "2026-03-01T02:01:00Z",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["result"], "failed");
    assert_eq!(report[0]["attempts"], 1);
    let run_id = report[0]["run_id"].as_str().unwrap();
    let failure = std::fs::read_to_string(p.path().join("failure.txt")).unwrap();
    let fields: Vec<&str> = failure.trim().splitn(4, '|').collect();
    assert_eq!(fields[0], "p");
    assert_eq!(fields[1], run_id);
    assert_eq!(fields[2], "2026-03-01T02:00:00Z");
    assert!(
        fields[3].contains("expectation `row_count` on silver.s failed"),
        "{failure}"
    );
    // Recorded as the tick's run, with no tables; the tick is not run again.
    let records = served(&p);
    assert_eq!(records.len(), 1);
    assert!(records[0].1.as_ref().unwrap().contains("row_count"));
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
    assert_eq!(tick(&p, "2026-03-01T03:00:00Z")["result"], "not_due");
    let status = p.json(&["schedule", "status", "--now", "2026-03-01T03:00:00Z"]);
    assert_eq!(status[0]["last"]["result"], "failed");
    assert_eq!(status[0]["last"]["run_id"], run_id);
}

#[test]
fn a_transient_conflict_is_retried() {
    // `q` writes silver.s too; it commits while p's scheduled run is staged: p's overwrite
    // conflicts (transient), and its retry publishes.
    let p = scheduled("cron = \"0 2 * * *\"\nretries = 2\nretry_delay = \"1s\"");
    p.write(
        "pipelines/q.toml",
        "[pipeline]\nname = \"q\"\n\n[[transform]]\ntable = \"silver.s\"\nsql = \"sql/s.sql\"\n",
    );
    day_file(&p, 1);
    p.json(&["run", "p"]);
    day_file(&p, 2);
    let gate = p.path().join("gate");
    let paused = p.start_paused(
        &[
            "schedule",
            "tick",
            "p",
            "--now",
            "2026-03-02T02:01:00Z",
            "--json",
        ],
        "staged",
        Some(gate),
    );
    p.json(&["run", "q", "--full-refresh"]);
    let (ok, log) = paused.release();
    assert!(ok, "{log}");
    assert!(log.contains("transient failure, retrying"), "{log}");
    let records = served(&p);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].1, None);
    assert_eq!(
        p.query("SELECT days FROM silver.s"),
        vec![vec![Some("2".into())]]
    );
}

#[test]
fn status_shows_the_last_tick_the_next_ones_and_the_lock() {
    let p = scheduled("cron = \"30 2 * * *\"\ntimezone = \"Europe/Berlin\"");
    day_file(&p, 1);
    tick(&p, "2026-03-01T01:31:00Z");
    let status = p.json(&["schedule", "status", "--now", "2026-03-01T12:00:00Z"]);
    let s = &status[0];
    assert_eq!(s["cron"], "30 2 * * *");
    assert_eq!(s["timezone"], "Europe/Berlin");
    assert_eq!(s["last"]["tick"], "2026-03-01T01:30:00Z");
    assert_eq!(s["last"]["result"], "published");
    assert_eq!(s["due"], Value::Null);
    assert_eq!(s["next"][0]["utc"], "2026-03-02T01:30:00Z");
    assert_eq!(s["next"][0]["local"], "2026-03-02T02:30:00+01:00");
    assert_eq!(s["lock_holder"], Value::Null);

    day_file(&p, 2);
    let paused = p.start_paused(
        &["schedule", "tick", "--now", "2026-03-02T01:31:00Z"],
        "staged",
        None,
    );
    let status = p.json(&["schedule", "status", "--now", "2026-03-02T01:32:00Z"]);
    assert!(
        status[0]["lock_holder"]
            .as_str()
            .unwrap()
            .starts_with("pid "),
        "{status}"
    );
    paused.kill();
}

/// `schedule status` right after `[schedule]` was added says why a past tick is due and what
/// it would load; a scheduler says when it looks next.
#[test]
fn status_explains_a_first_due_tick_and_a_scheduler_says_when_it_looks_next() {
    let p = scheduled("cron = \"0 2 * * *\"");
    day_file(&p, 1);
    day_file(&p, 2);
    let out = p.run(&["schedule", "status", "--now", "2026-03-01T03:00:00Z"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("due now:    2026-03-01T02:00:00Z (it has passed and no tick was served yet"),
        "{text}"
    );
    assert!(
        text.contains("would load: bronze.t: 2 new file(s), "),
        "{text}"
    );
    let status = p.json(&["schedule", "status", "--now", "2026-03-01T03:00:00Z"]);
    assert_eq!(
        status[0]["would_load"].as_array().unwrap().len(),
        1,
        "{status}"
    );

    let log = p.path().join("daemon.log");
    let mut daemon = p
        .command(&["schedule", "run", "--now", "2026-03-01T02:00:30Z"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let said = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("next look at") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // SAFETY: signals a child this test started.
    unsafe {
        libc::kill(daemon.id() as i32, libc::SIGTERM);
    }
    assert!(daemon.wait().unwrap().success());
    assert!(
        said.contains("p: next look at 2026-03-02T02:00:00Z (in 23h5"),
        "{said}"
    );
    assert_eq!(served(&p).len(), 1);
}
