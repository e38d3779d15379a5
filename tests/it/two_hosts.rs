//! Schedulers on two hosts serving one pipeline against the same remote catalog. Their run
//! locks are per machine (under each one's temp folder) and do not see each other, so both
//! may run a tick; but a run's record holds its tick, and a publish checks the tick in the very
//! control-table version it moves from by compare-and-set. So only one run of a tick is ever
//! published, on a multi-table REST commit as on S3 Tables' table-by-table journal, and the
//! other scheduler reports the tick served by that run, having published nothing.

use serde_json::Value;

use crate::common::Project;
use crate::remote::Rustberg;

const NOW: &str = "2026-03-01T02:03:00Z";

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
            "[pipeline]\nname = \"p\"\n\n[schedule]\ncron = \"0 2 * * *\"\n\n[[ingest]]\ntable = \"bronze.t\"\n\
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

/// Host A stages the tick and waits; host B (another temp folder, so another lock folder)
/// serves the same tick meanwhile; then A tries to publish.
fn two_hosts_serve_one_tick(mut p: Project, summed: bool) {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = ["schedule", "tick", "--now", NOW, "--json"];
    p.env
        .push(("TMPDIR".into(), dir_a.path().display().to_string()));
    let gate = p.path().join("release-a");
    let a = p.start_paused_piped(&args, "staged", gate);
    p.env.pop();
    p.env
        .push(("TMPDIR".into(), dir_b.path().display().to_string()));
    let b = p.json(&args[..4])[0].clone();
    p.env.pop();
    assert_eq!(b["result"], "ran", "{b}");
    assert!(
        dir_a.path().join("pipeline-locks").is_dir()
            && dir_b.path().join("pipeline-locks").is_dir(),
        "each host locked in its own folder"
    );

    let (ok, log, stdout) = a.release_with_stdout();
    assert!(ok, "{log}\n{}", p.json(&["runs"]));
    let a: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(a[0]["result"], "already_served", "{stdout}\n{log}");
    assert_eq!(a[0]["run_id"], b["run_id"], "{stdout}");

    // The tick's data once, one record holding the tick.
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
    assert_eq!(ticks[0]["run_id"], b["run_id"]);
}

#[test]
fn two_hosts_on_a_rest_catalog_publish_a_tick_once() {
    let server = Rustberg::start();
    two_hosts_serve_one_tick(scheduled(false).on_rest(&server, true), false);
}

#[test]
fn two_hosts_on_s3tables_publish_a_tick_once() {
    two_hosts_serve_one_tick(scheduled(true).on_s3tables(), true);
    two_hosts_serve_one_tick(scheduled(false).on_s3tables(), false);
}
