//! Two runs of one pipeline never interleave: the second waits for the first (the default),
//! or fails at once with `--no-wait`. The lock is an OS file lock, so a killed run leaves no
//! stale lock: a lock file that nobody holds is simply taken.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::Project;

fn hold_lock(p: &Project) -> File {
    std::fs::create_dir_all(p.path().join("warehouse")).unwrap();
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(p.path().join("warehouse/catalog.db.retail.lock"))
        .unwrap();
    file.lock().unwrap();
    write!(file, "pid 4242 since 2026-11-30T00:00:00Z").unwrap();
    file
}

#[test]
fn a_second_run_waits_for_the_first_to_finish() {
    let p = Project::retail();
    let lock = hold_lock(&p);
    let child = Command::new(env!("CARGO_BIN_EXE_pipeline"))
        .args([
            "--project",
            p.path().to_str().unwrap(),
            "run",
            "retail",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        p.json(&["tables"]),
        serde_json::json!([]),
        "the waiting run publishes nothing yet"
    );
    drop(lock);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("waiting   another run of this pipeline is in progress (pid 4242 since 2026-11-30T00:00:00Z)"),
        "{stderr}"
    );
    assert_eq!(p.tables().len(), 12);
}

#[test]
fn no_wait_fails_at_once_and_a_timeout_gives_up() {
    let p = Project::retail();
    let _lock = hold_lock(&p);
    // Busy is not "fix your input" (2): it has exit code 4, "try again later".
    let (code, stderr) = p.fails(&["run", "retail", "--no-wait"]);
    assert_eq!(code, 4);
    // The message names the catalog the lock is held on (one lock per catalog).
    let database = p.path().join("warehouse/catalog.db");
    assert_eq!(
        stderr,
        format!(
            "error: pipeline retail is already running on the embedded catalog {} (pid 4242 since 2026-11-30T00:00:00Z); wait for it, or run without --no-wait to queue behind it",
            database.display()
        )
    );
    let (code, stderr) = p.fails(&["run", "retail", "--wait-timeout", "1"]);
    assert_eq!(code, 4);
    assert!(
        stderr.starts_with("error: pipeline retail is still running on the embedded catalog ")
            && stderr.contains("(pid 4242"),
        "{stderr}"
    );
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
}

#[test]
fn a_lock_file_left_by_a_dead_run_is_taken_over() {
    let p = Project::retail();
    // What a killed run leaves behind: the file, with nobody holding the lock.
    p.write(
        "warehouse/catalog.db.retail.lock",
        "pid 999999 since 2026-11-29T23:00:00Z",
    );
    p.json(&["run", "retail", "--no-wait"]);
    assert_eq!(p.tables().len(), 12);
}
