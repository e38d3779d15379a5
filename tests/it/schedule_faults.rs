//! Schedules when things go wrong: a pipeline that cannot be served does not keep the others
//! from theirs; a run that outlasts a tick's interval is followed by that tick, not by a skip;
//! a run that panics is a recorded failure and the scheduler goes on (its lease ends with it);
//! a failure after the publish (a timeout during maintenance) reports the tick as served.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Project;

/// A pipeline `p` loading `data/*.csv` into `bronze.t`, on `schedule` (TOML lines of its
/// `[schedule]`), with one day of data.
pub fn scheduled(schedule: &str) -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n\n[schedule]\n{schedule}\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = {{ day = \"date\", n = \"long\" }}\n"
        ),
    );
    p.write("data/2026-03-01.csv", "day,n\n2026-03-01,7\n");
    p
}

/// `pipeline schedule run --json` in the background: its report lines as they come.
pub struct Daemon {
    child: Child,
    lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl Daemon {
    /// Starts `pipeline ARGS` with `env` added to the project's environment.
    pub fn start(p: &Project, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut command = p.command(args);
        command
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let (tx, stderr) = std::sync::mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Daemon {
            child,
            lines,
            stderr,
        }
    }

    /// The next report line, within `limit` (the daemon's stderr in the panic message).
    pub fn next_report(&mut self, limit: Duration) -> Value {
        match self.lines.recv_timeout(limit) {
            Ok(line) => serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")),
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no report within {limit:?}; stderr:\n{}",
                    self.stderr_so_far()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().unwrap();
                panic!(
                    "the daemon ended ({status}); stderr:\n{}",
                    self.stderr_so_far()
                )
            }
        }
    }

    /// Waits until the daemon says it paused at `point` (its stderr), within a minute.
    pub fn wait_for_pause(&mut self, point: &str) {
        let until = Instant::now() + Duration::from_secs(60);
        let mut seen = String::new();
        while Instant::now() < until {
            match self.stderr.recv_timeout(Duration::from_millis(200)) {
                Ok(line) if line.contains(&format!("paused at {point}")) => return,
                Ok(line) => seen.push_str(&format!("{line}\n")),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("the daemon did not pause at {point}:\n{seen}");
    }

    /// The report lines printed so far (without waiting).
    pub fn reports_so_far(&self) -> Vec<Value> {
        self.lines
            .try_iter()
            .map(|line| serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and waits for it to end.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn stderr_so_far(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// SIGTERM, then the exit status (within a minute, else killed and the test fails).
    pub fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: signals a child this test started and has not reaped.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill().unwrap();
        panic!("the daemon did not stop within a minute of SIGTERM");
    }
}

#[test]
fn schedule_tick_serves_every_pipeline_when_one_cannot_be_served() {
    let p = scheduled("cron = \"0 2 * * *\"");
    // Sorted first, on a catalog that does not answer.
    p.write(
        "pipelines/aaa_first.toml",
        "[pipeline]\nname = \"aaa_first\"\n\n[catalog]\ntype = \"rest\"\nuri = \"http://127.0.0.1:9\"\n\n\
         [schedule]\ncron = \"0 2 * * *\"\n\n[[ingest]]\ntable = \"bronze.u\"\nformat = \"csv\"\n\
         path = \"data/*.csv\"\nschema = { day = \"date\", n = \"long\" }\n",
    );
    let out = p.run(&[
        "schedule",
        "tick",
        "--now",
        "2026-03-01T02:05:00Z",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |name: &str| {
        reports
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["pipeline"] == name)
            .unwrap_or_else(|| panic!("no report for {name}: {reports}"))
            .clone()
    };
    let first = by_name("aaa_first");
    assert_eq!(first["result"], "error", "{first}");
    assert!(
        first["error"].as_str().unwrap().contains("127.0.0.1:9"),
        "{first}"
    );
    let served = by_name("p");
    assert_eq!(served["result"], "ran", "{served}");
    assert_eq!(served["tick"], "2026-03-01T02:00:00Z");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("could not serve the schedule of aaa_first"),
        "{stderr}"
    );
    // The text table names both too.
    let out = p.run(&["schedule", "tick", "--now", "2026-03-01T02:06:00Z"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("NOT SERVED"), "{text}");
    assert!(text.contains("not due"), "{text}");
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.t"),
        [[Some("1".into())]]
    );
}

#[test]
fn a_tick_that_fell_due_during_a_long_run_is_served_right_after_it() {
    // Hourly in spirit: a tick every minute, and a run (paused) that outlasts one.
    let p = scheduled("cron = \"0 * * * * *\"");
    let gate = p.path().join("gate");
    let gate_text = gate.display().to_string();
    let mut daemon = Daemon::start(
        &p,
        &["schedule", "run", "--now", "2026-03-01T02:00:50Z", "--json"],
        &[
            ("PIPELINE_PAUSE_AT", "staged"),
            ("PIPELINE_PAUSE_UNTIL", &gate_text),
        ],
    );
    daemon.wait_for_pause("staged");
    // The daemon's clock passes 02:01:00 while the 02:00 tick's run goes on.
    std::thread::sleep(Duration::from_secs(12));
    std::fs::write(&gate, "").unwrap();
    let first = daemon.next_report(Duration::from_secs(60));
    assert_eq!(first["result"], "ran", "{first}");
    assert_eq!(first["tick"], "2026-03-01T02:00:00Z");
    // The 02:01 tick runs at once, not skipped for 02:02 (a minute later).
    let second = daemon.next_report(Duration::from_secs(30));
    assert_eq!(second["result"], "ran", "{second}");
    assert_eq!(second["tick"], "2026-03-01T02:01:00Z", "{second}");
    assert_eq!(second["missed"], serde_json::json!([]), "{second}");
    assert!(daemon.stop().success());
}

#[test]
fn a_timeout_after_the_publish_reports_the_tick_served_not_failed() {
    // The run publishes, then stalls (as in slow after-run maintenance) past the timeout.
    let p = scheduled(
        "cron = \"0 2 * * *\"\ntimeout = \"5s\"\non_failure = [\"sh\", \"-c\", \"touch failure-hook-ran\"]",
    );
    let out = p
        .command(&[
            "schedule",
            "tick",
            "--now",
            "2026-03-01T02:01:00Z",
            "--json",
        ])
        .env("PIPELINE_PAUSE_AT", "published")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["result"], "ran", "{report}\n{stderr}");
    let runs = p.json(&["runs"]);
    let ticked: Vec<&Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tick"].is_string())
        .collect();
    assert_eq!(ticked.len(), 1, "{runs}");
    assert_eq!(ticked[0]["run_id"], report[0]["run_id"]);
    assert!(ticked[0]["error"].is_null(), "{runs}");
    assert!(!p.path().join("failure-hook-ran").exists());
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.t"),
        [[Some("1".into())]]
    );
}
