//! Schedulers on two hosts serving one pipeline against the same remote catalog. Their run
//! locks are per machine (under each one's temp folder) and do not see each other.
//! - A scheduler claims a tick with a lease in the control table: another host finds the tick
//!   claimed (`busy`, naming the holder) and leaves it; a crashed holder's lease lapses and the
//!   tick is taken over.
//! - The lease only saves work. A holder frozen past its lease (SIGSTOP: a VM pause, a long
//!   GC) may wake after another host served the tick; its publish checks the tick in the very
//!   control-table version it moves from by compare-and-set, so only one run of a tick is ever
//!   published (a multi-table REST commit, S3 Tables' table-by-table journal) and the late one
//!   reports the tick served by the other, having published nothing.

use serde_json::Value;

use std::time::Duration;

use crate::common::Project;
use crate::remote::Rustberg;
use crate::schedule_faults::{self, Daemon};

const NOW: &str = "2026-03-01T02:03:00Z";

/// Longer than the schedules' lease (5 s): a frozen or crashed holder's claim has expired by
/// then (and the taker still watches it for a lease before taking it over).
const LAPSE: Duration = Duration::from_millis(5500);

/// Pipeline `p`: a daily tick appending `data/*.csv` to `bronze.t`, with `summed` also summed
/// into `silver.s` (a full refresh, which cannot be rebased). Without the tick's check the
/// second publish fails (the append is rebased, then refused by the loaded-files ledger or the
/// full refresh) and records a failed run of a tick that was served.
fn scheduled(summed: bool) -> Project {
    let p = Project::empty();
    let transform = if summed {
        "\n[[transform]]\ntable = \"silver.s\"\nsql = \"sql/s.sql\"\n"
    } else {
        ""
    };
    p.write(
        "pipelines/p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n\n[schedule]\ncron = \"0 2 * * *\"\nlease = \"5s\"\n\n[[ingest]]\ntable = \"bronze.t\"\n\
             format = \"csv\"\npath = \"data/*.csv\"\nschema = {{ day = \"date\", n = \"long\" }}\n{transform}"
        ),
    );
    p.write(
        "sql/s.sql",
        "SELECT count(*) AS days, sum(n) AS total FROM bronze.t\n",
    );
    p.write("data/2026-03-01.csv", "day,n\n2026-03-01,7\n");
    p
}

/// `pipeline schedule tick --now NOW` as host `dir` (its temp folder, so its lock folder).
pub fn on_host(p: &mut Project, dir: &tempfile::TempDir) {
    p.env.retain(|(k, _)| k != "TMPDIR");
    p.env
        .push(("TMPDIR".into(), dir.path().display().to_string()));
}

const ARGS: [&str; 5] = ["schedule", "tick", "--now", NOW, "--json"];

/// The tick's data is there once, and one record holds the tick: `run_id`'s.
fn served_once(p: &Project, summed: bool, run_id: &Value) {
    assert_eq!(
        p.query("SELECT count(*), sum(n) FROM bronze.t"),
        [[Some("1".into()), Some("7".into())]]
    );
    if summed {
        assert_eq!(
            p.query("SELECT days, total FROM silver.s"),
            [[Some("1".into()), Some("7".into())]]
        );
    }
    let ticks: Vec<Value> = p
        .json(&["runs"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tick"].is_string())
        .cloned()
        .collect();
    assert_eq!(ticks.len(), 1, "{ticks:?}");
    assert_eq!(&ticks[0]["run_id"], run_id);
}

/// Host A stages the tick (or is about to send its commit: `point`), then freezes past its
/// lease; host B serves the same tick meanwhile; A thaws and tries to publish.
fn two_hosts_serve_one_tick(mut p: Project, summed: bool, point: &str) {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_host(&mut p, &dir_a);
    let gate = p.path().join("release-a");
    let _ = std::fs::remove_file(&gate);
    let a = p.start_paused_piped(&ARGS, point, gate);
    on_host(&mut p, &dir_b);
    let held = p.json(&ARGS[..4])[0].clone();
    assert_eq!(held["result"], "busy", "{held}");
    assert!(held["holder"].as_str().unwrap().contains(" pid "), "{held}");
    // Any host's status names the claim.
    let status = p.json(&["schedule", "status", "--now", NOW])[0].clone();
    let who = |v: &Value| {
        v.as_str()
            .unwrap_or_default()
            .split(" (serving")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        who(&status["lease_holder"]),
        who(&held["holder"]),
        "{status}"
    );
    assert!(
        status["lease_holder"]
            .as_str()
            .unwrap()
            .contains("serving tick 2026-03-01T02:00:00Z"),
        "{status}"
    );
    // A freezes whole (no renewal); its lease lapses and B takes the tick over.
    a.signal(libc::SIGSTOP);
    std::thread::sleep(LAPSE);
    let b = p.json(&ARGS[..4])[0].clone();
    assert_eq!(b["result"], "ran", "{b}");
    assert!(
        dir_a.path().join("pipeline-locks").is_dir()
            && dir_b.path().join("pipeline-locks").is_dir(),
        "each host locked in its own folder"
    );
    a.signal(libc::SIGCONT);
    let (ok, log, stdout) = a.release_with_stdout();
    assert!(ok, "{log}\n{}", p.json(&["runs"]));
    let a: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(a[0]["result"], "already_served", "{stdout}\n{log}");
    assert_eq!(a[0]["run_id"], b["run_id"], "{stdout}");
    served_once(&p, summed, &b["run_id"]);
}

#[test]
fn two_hosts_on_a_rest_catalog_publish_a_tick_once() {
    let server = Rustberg::start();
    two_hosts_serve_one_tick(scheduled(false).on_rest(&server, true), false, "staged");
}

#[test]
fn a_rest_commit_refused_because_another_host_served_the_tick_is_not_a_failure() {
    // A is frozen just before sending its multi-table commit; B serves the tick; A's commit
    // gets 409. A reports the tick served by B (no failure, no `on_failure`, exit 0).
    let server = Rustberg::start();
    two_hosts_serve_one_tick(scheduled(true).on_rest(&server, true), true, "publishing");
}

#[test]
fn two_hosts_on_s3tables_publish_a_tick_once() {
    two_hosts_serve_one_tick(scheduled(true).on_s3tables(), true, "staged");
    two_hosts_serve_one_tick(scheduled(false).on_s3tables(), false, "staged");
}

#[test]
fn a_crashed_schedulers_claim_lapses_and_another_host_takes_the_tick_over() {
    let server = Rustberg::start();
    let mut p = scheduled(true).on_rest(&server, true);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_host(&mut p, &dir_a);
    let a = p.start_paused(&ARGS[..4], "staged", None);
    a.kill();
    on_host(&mut p, &dir_b);
    let held = p.json(&ARGS[..4])[0].clone();
    assert_eq!(held["result"], "busy", "{held}");
    std::thread::sleep(LAPSE);
    let b = p.json(&ARGS[..4])[0].clone();
    assert_eq!(b["result"], "ran", "{b}");
    served_once(&p, true, &b["run_id"]);
    // The holder removed its lease when done: the next tick is nobody's.
    let status = p.json(&["schedule", "status", "--now", NOW])[0].clone();
    assert!(status["lease_holder"].is_null(), "{status}");
    let next = p.json(&["schedule", "tick", "--now", "2026-03-02T02:03:00Z"])[0].clone();
    assert_eq!(next["result"], "ran", "{next}");
}

#[test]
fn with_catchup_none_a_crashed_holders_tick_is_taken_over_however_late() {
    let server = Rustberg::start();
    let mut p =
        schedule_faults::scheduled("cron = \"0 2 * * *\"\ncatchup = \"none\"\nlease = \"5s\"")
            .on_rest(&server, true);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_host(&mut p, &dir_a);
    // A claims the 02:00 tick in time and crashes mid-run.
    p.start_paused(&ARGS[..4], "staged", None).kill();
    on_host(&mut p, &dir_b);
    std::thread::sleep(LAPSE);
    // B comes by long after the grace period (15 minutes): the claimed tick is still due.
    let late = "2026-03-01T02:40:00Z";
    let status = p.json(&["schedule", "status", "--now", late])[0].clone();
    assert_eq!(status["due"], "2026-03-01T02:00:00Z", "{status}");
    let b = p.json(&["schedule", "tick", "--now", late])[0].clone();
    assert_eq!(b["result"], "ran", "{b}");
    assert_eq!(b["tick"], "2026-03-01T02:00:00Z", "{b}");
    assert_eq!(b["missed"], serde_json::json!([]), "{b}");
    assert_eq!(p.query("SELECT sum(n) FROM bronze.t"), [[Some("7".into())]]);
}

#[test]
fn a_run_that_panics_is_a_recorded_failure_its_lease_ends_and_the_scheduler_goes_on() {
    let server = Rustberg::start();
    let p = schedule_faults::scheduled("cron = \"0 * * * * *\"\nlease = \"30s\"")
        .on_rest(&server, true);
    // The first run of this daemon panics once staged; the next tick's run does not.
    let mut daemon = Daemon::start(
        &p,
        &["schedule", "run", "--now", "2026-03-01T02:00:20Z", "--json"],
        &[("PIPELINE_PANIC_AT", "staged")],
    );
    let first = daemon.next_report(Duration::from_secs(60));
    assert_eq!(first["result"], "failed", "{first}");
    assert_eq!(first["tick"], "2026-03-01T02:00:00Z", "{first}");
    assert!(
        first["error"].as_str().unwrap().contains("panicked"),
        "{first}"
    );
    // Its lease ended with the run (not lapsed: it would last 30 s).
    let status = p.json(&["schedule", "status", "--now", "2026-03-01T02:00:40Z"])[0].clone();
    assert!(status["lease_holder"].is_null(), "{status}");
    assert_eq!(status["last"]["result"], "failed", "{status}");
    // The daemon still serves the pipeline: the 02:01 tick runs.
    let second = daemon.next_report(Duration::from_secs(90));
    assert_eq!(second["result"], "ran", "{second}");
    assert_eq!(second["tick"], "2026-03-01T02:01:00Z", "{second}");
    assert!(daemon.stop().success());
    assert_eq!(p.query("SELECT sum(n) FROM bronze.t"), [[Some("7".into())]]);
}

#[test]
fn a_host_whose_clock_runs_ahead_does_not_take_a_live_claim() {
    let server = Rustberg::start();
    let mut p = scheduled(false).on_rest(&server, true);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_host(&mut p, &dir_a);
    let gate = p.path().join("release-a");
    let a = p.start_paused_piped(&ARGS, "staged", gate);
    // B's clock is ten minutes ahead: by it, A's claim expired long ago. B watches the claim,
    // sees A renew it, and leaves the tick to A.
    on_host(&mut p, &dir_b);
    p.env.push(("PIPELINE_CLOCK_SKEW".into(), "600".into()));
    let b = p.json(&ARGS[..4])[0].clone();
    assert_eq!(b["result"], "busy", "{b}");
    assert_eq!(b["by"], "lease", "{b}");
    p.env.retain(|(k, _)| k != "PIPELINE_CLOCK_SKEW");
    let (ok, log, stdout) = a.release_with_stdout();
    assert!(ok, "{log}");
    let a: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(a[0]["result"], "ran", "{stdout}\n{log}");
    served_once(&p, false, &a[0]["run_id"]);
}

#[test]
fn a_scheduler_that_lost_its_claim_stops_before_publishing_and_records_nothing() {
    let server = Rustberg::start();
    let mut p = scheduled(true).on_rest(&server, true);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_host(&mut p, &dir_a);
    let a = p.start_paused_piped(&ARGS, "staged", p.path().join("release-a"));
    // A freezes past its lease; B takes the tick over and is still running it when A thaws.
    a.signal(libc::SIGSTOP);
    std::thread::sleep(LAPSE);
    on_host(&mut p, &dir_b);
    let b = p.start_paused_piped(&ARGS, "staged", p.path().join("release-b"));
    a.signal(libc::SIGCONT);
    let (ok, log, stdout) = a.release_with_stdout();
    assert!(ok, "{log}");
    let a: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(a[0]["result"], "lost", "{stdout}\n{log}");
    let error = a[0]["error"].as_str().unwrap();
    assert!(error.contains("lost its claim"), "{error}");
    assert!(error.contains("stopped before publishing"), "{error}");
    // Nothing of A's: no record, no data.
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.t"),
        [[Some("0".into())]],
        "A published"
    );
    let (ok, log, stdout) = b.release_with_stdout();
    assert!(ok, "{log}");
    let b: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(b[0]["result"], "ran", "{stdout}\n{log}");
    served_once(&p, true, &b[0]["run_id"]);
}

#[test]
fn schedule_status_only_reads_and_names_the_claim_of_another_host() {
    let server = Rustberg::start();
    let mut p = scheduled(false).on_rest(&server, true);
    // On a fresh catalog: status creates nothing (no control table, no namespace).
    let status = p.json(&["schedule", "status", "--now", NOW])[0].clone();
    assert_eq!(status["remote"], true, "{status}");
    assert!(status["lease_holder"].is_null(), "{status}");
    let namespaces = crate::remote::runtime().block_on(async {
        reqwest::get(format!("{}/v1/namespaces", server.uri))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    assert!(!namespaces.contains("pipeline_meta"), "{namespaces}");
    // Host A runs the tick: on host B the lock is free, and the claim names A.
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_host(&mut p, &dir_a);
    let a = p.start_paused_piped(&ARGS, "staged", p.path().join("release-a"));
    on_host(&mut p, &dir_b);
    let out = p.run(&["schedule", "status", "--now", NOW]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("free: no run of it in progress here (this host"),
        "{text}"
    );
    assert!(text.contains("claimed by: "), "{text}");
    assert!(text.contains(" pid "), "{text}");
    let busy = p.json(&ARGS[..4])[0].clone();
    assert_eq!(busy["by"], "lease", "{busy}");
    let out = p.run(&ARGS[..4]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("left to another scheduler, which claims the tick"),
        "{text}"
    );
    let (ok, log) = a.release();
    assert!(ok, "{log}");
}

#[test]
fn a_lease_shorter_than_five_seconds_is_refused_at_spec_load() {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        "[pipeline]\nname = \"p\"\n\n[schedule]\ncron = \"0 2 * * *\"\nlease = \"1s\"\n\n[[ingest]]\ntable = \"bronze.t\"\n\
         format = \"csv\"\npath = \"data/*.csv\"\nschema = { day = \"date\", n = \"long\" }\n",
    );
    let (code, err) = p.fails(&["validate", "p"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pipelines/p.toml:6:9"), "{err}");
    assert!(err.contains("lease = 1s is too short"), "{err}");
    assert!(err.contains("at least 5s"), "{err}");
}
