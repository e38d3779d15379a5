//! Crash safety: the engine is killed with SIGKILL at each phase of a run (while writing bronze
//! files, after staging, in the middle of the publish transaction). Afterwards no table shows
//! any part of the dead run, a re-run finishes and gives exactly what a clean run gives with no
//! row duplicated, and the dead run's files are found by `pipeline orphans` and deleting them
//! changes nothing any table reads.

use crate::common::Project;

const LATE: &str = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
                    3001,1,2026-01-20 10:00:00,Tea,4,5.00,shipped\n\
                    3002,2,2026-04-02 11:00:00,Mug,1,7.50,placed\n";

/// Starts `pipeline run retail`, paused at `point`, and kills it there with SIGKILL.
fn kill_at(p: &Project, point: &str) {
    p.start_paused(&["run", "retail"], point, None).kill();
}

type Rows = Vec<Vec<Option<String>>>;

/// Every table's current snapshot and full contents (without the load time and run id).
fn state(p: &Project) -> Vec<(String, i64, Rows)> {
    p.tables()
        .into_iter()
        .map(|t| {
            let snapshot = p.current_snapshot(&t);
            let rows = p.contents_without(&t, &["_ingested_at", "_run_id"]);
            (t, snapshot, rows)
        })
        .collect()
}

/// Compares table by table, naming the first table that differs.
fn assert_same_contents(
    actual: &[(String, i64, Rows)],
    expected: &[(String, i64, Rows)],
    when: &str,
) {
    let names = |s: &[(String, i64, Rows)]| s.iter().map(|t| t.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(actual), names(expected), "{when}");
    for (a, e) in actual.iter().zip(expected) {
        assert!(a.2 == e.2, "{when}: {} differs from a clean run", a.0);
    }
}

/// Bronze rows are unique by source file and line: nothing was loaded twice.
fn assert_no_duplicates(p: &Project) {
    for t in ["bronze.pos_orders", "bronze.web_orders", "bronze.customers"] {
        let r = p.query(&format!(
            "SELECT count(*), count(DISTINCT concat(_source_file, ':', CAST(_source_line AS VARCHAR))) FROM {t}"
        ));
        assert_eq!(r[0][0], r[0][1], "{t} has duplicated rows");
    }
}

fn orphans(p: &Project) -> Vec<String> {
    p.json(&["orphans", "--older-than", "0"])["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_run_killed_at_any_phase_leaves_no_trace_in_tables_and_a_rerun_matches_a_clean_run() {
    // What a clean run computes from the sample plus the late file.
    let clean = Project::retail();
    clean.write("sample-data/retail/orders/pos_late.csv", LATE);
    clean.json(&["run", "retail"]);
    let expected = state(&clean);

    for point in ["bronze-files-written", "staged", "publishing"] {
        let p = Project::retail();
        p.json(&["run", "retail"]);
        let before = state(&p);
        assert!(orphans(&p).is_empty());
        p.write("sample-data/retail/orders/pos_late.csv", LATE);

        kill_at(&p, point);
        // No table shows any part of the dead run; it left no run record.
        let after = state(&p);
        for (a, b) in after.iter().zip(&before) {
            assert!(a == b, "killed at {point}: {} moved or changed", a.0);
        }
        assert_eq!(after.len(), before.len());
        assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), 1, "{point}");
        // Its files are identified as unreferenced.
        let dead = orphans(&p);
        assert!(!dead.is_empty(), "killed at {point}: no orphan files found");

        // The lock died with the process: a re-run starts at once and finishes.
        let out = p.run(&["run", "retail", "--no-wait"]);
        assert!(
            out.status.success(),
            "{point}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_same_contents(&state(&p), &expected, &format!("killed at {point}"));
        assert_no_duplicates(&p);

        // Deleting the dead run's files changes nothing any table reads.
        assert_eq!(orphans(&p), dead, "{point}");
        p.json(&["orphans", "--older-than", "0", "--delete", "--force"]);
        assert!(dead.iter().all(|f| !std::path::Path::new(f).exists()));
        assert_same_contents(&state(&p), &expected, &format!("{point}, orphans deleted"));
        let readers = p.independent_readers();
        assert_eq!(readers["silver.orders"]["pyiceberg"]["rows"], 41, "{point}");
        assert_eq!(readers["silver.orders"]["duckdb"]["rows"], 41, "{point}");
    }
}

#[test]
fn a_first_run_killed_while_publishing_creates_no_table() {
    let p = Project::retail();
    kill_at(&p, "publishing");
    assert!(p.tables().is_empty(), "a table of the dead run is visible");
    let dead = orphans(&p);
    assert!(
        dead.iter().any(|f| f.contains("/silver/orders/")),
        "{dead:?}"
    );
    p.json(&["orphans", "--older-than", "0", "--delete", "--force"]);
    p.json(&["run", "retail"]);
    assert_eq!(p.tables().len(), 12);
    assert_no_duplicates(&p);
}
