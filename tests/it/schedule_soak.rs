//! Two `schedule run` daemons on two "hosts" (each its own temp folder, so its own lock
//! folder) serve one pipeline on one REST catalog through thirty ticks of a six-second cron,
//! while host A's daemon is killed (SIGKILL) and restarted twice: every tick is served exactly
//! once (one run record each, no gap), no scheduler reports a failure or a missed tick, and
//! `schedule status` on each host names the scheduler holding a tick.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::common::Project;
use crate::remote::Rustberg;
use crate::schedule_faults::{self, Daemon};
use crate::two_hosts::on_host;

/// Seconds between ticks: longer than a tick's run on a loaded machine.
const EVERY: i64 = 6;
const TICKS: usize = 30;

/// Starts `schedule run --json` as host `dir`.
fn daemon(p: &mut Project, dir: &tempfile::TempDir) -> Daemon {
    on_host(p, dir);
    Daemon::start(p, &["schedule", "run", "--json"], &[])
}

/// The pid of the scheduler a status report names as the claim's holder, if any.
fn holder_pid(status: &Value) -> Option<u32> {
    let holder = status["lease_holder"].as_str()?;
    let pid = holder.split(" pid ").nth(1)?.split(' ').next()?;
    Some(pid.parse().unwrap_or_else(|_| panic!("{status}")))
}

fn tick_of(report: &Value) -> DateTime<Utc> {
    report["tick"].as_str().unwrap().parse().unwrap()
}

/// Everything the daemons said, and which host's status has named a live holder.
struct Soak {
    reports: Vec<Value>,
    named_on: [bool; 2],
}

impl Soak {
    fn collect(&mut self, daemon: &Daemon) -> Vec<Value> {
        let new = daemon.reports_so_far();
        self.reports.extend(new.iter().cloned());
        new
    }

    /// The distinct ticks reported `ran` so far.
    fn ran(&self) -> BTreeSet<DateTime<Utc>> {
        self.reports
            .iter()
            .filter(|r| r["result"] == "ran")
            .map(tick_of)
            .collect()
    }

    /// Asks host `host`'s status (until it has once named a live holder).
    fn look(&mut self, p: &mut Project, dirs: &[&tempfile::TempDir; 2], pids: [u32; 2]) {
        for (host, dir) in dirs.iter().enumerate() {
            if self.named_on[host] {
                continue;
            }
            on_host(p, dir);
            let status = p.json(&["schedule", "status"])[0].clone();
            if let Some(pid) = holder_pid(&status) {
                assert!(pids.contains(&pid), "{status} names neither {pids:?}");
                self.named_on[host] = true;
            }
        }
    }
}

#[test]
fn two_daemons_on_two_hosts_serve_thirty_ticks_once_through_two_restarts() {
    let server = Rustberg::start();
    let mut p =
        schedule_faults::scheduled(&format!("cron = \"*/{EVERY} * * * * *\"\nlease = \"5s\""))
            .on_rest(&server, true);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = daemon(&mut p, &dir_a);
    let b = daemon(&mut p, &dir_b);
    let mut soak = Soak {
        reports: Vec::new(),
        named_on: [false, false],
    };
    let deadline = Instant::now() + Duration::from_secs(EVERY as u64 * (TICKS as u64 + 12));
    let mut restarts = 0;
    while soak.ran().len() < TICKS || soak.named_on != [true, true] {
        assert!(
            Instant::now() < deadline,
            "the soak did not finish in time: {:?}\nA: {}\nB: {}",
            soak.reports,
            a.stderr_so_far(),
            b.stderr_so_far()
        );
        soak.collect(&b);
        let from_a = soak.collect(&a);
        // A is killed right after it reported a tick (between its runs), after a third and
        // after two thirds of the ticks, and started again at once.
        if !from_a.is_empty() && restarts < 2 && soak.ran().len() >= TICKS * (restarts + 1) / 3 {
            a.kill();
            a = daemon(&mut p, &dir_a);
            restarts += 1;
        }
        soak.look(&mut p, &[&dir_a, &dir_b], [a.pid(), b.pid()]);
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(restarts, 2, "A was not restarted twice: {:?}", soak.reports);
    let (stderr_a, stderr_b) = (a.stderr_so_far(), b.stderr_so_far());
    assert!(a.stop().success() && b.stop().success());
    for stderr in [&stderr_a, &stderr_b] {
        assert!(!stderr.contains("trying again"), "{stderr}");
    }
    for report in &soak.reports {
        assert!(
            ["ran", "already_served", "busy"].contains(&report["result"].as_str().unwrap()),
            "{report}"
        );
        assert_eq!(report["missed"], serde_json::json!([]), "{report}");
    }
    // Each tick reported ran once, by one daemon.
    let ran: Vec<DateTime<Utc>> = soak
        .reports
        .iter()
        .filter(|r| r["result"] == "ran")
        .map(tick_of)
        .collect();
    assert_eq!(ran.len(), soak.ran().len(), "a tick ran twice: {ran:?}");
    // One record per tick, every tick from the first to the last.
    let mut recorded: Vec<DateTime<Utc>> = p
        .json(&["runs"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tick"].is_string())
        .map(tick_of)
        .collect();
    recorded.sort();
    let (first, last) = (recorded[0], *recorded.last().unwrap());
    let every = (last - first).num_seconds() / EVERY + 1;
    assert_eq!(
        recorded.len() as i64,
        every,
        "a gap or a double: {recorded:?}"
    );
    assert!(recorded.len() >= TICKS, "{recorded:?}");
    assert!(
        recorded
            .windows(2)
            .all(|w| (w[1] - w[0]).num_seconds() == EVERY),
        "{recorded:?}"
    );
    assert_eq!(p.query("SELECT sum(n) FROM bronze.t"), [[Some("7".into())]]);
}
