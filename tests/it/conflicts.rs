//! Optimistic concurrency between writers of the same table (two pipelines, so the per-pipeline
//! lock does not serialize them). A run is paused after staging while the other writer
//! commits; then at publish an append rebases onto the other writer's snapshot, a replace of
//! other partitions rebases too, and a replace of the same partitions fails with a conflict
//! naming the table and partitions, publishing nothing.

use crate::common::{Paused, Project};

pub(crate) const HEADER: &str = "id,ts,amount\n";

/// A project with two pipelines loading into bronze.events, and two that both write
/// silver.daily (by day, replace_partitions).
pub(crate) fn project() -> Project {
    let p = Project::empty();
    let ingest = |name: &str, folder: &str, transform: bool| {
        let mut spec = format!(
            "[pipeline]\nname = \"{name}\"\n\n[[ingest]]\ntable = \"bronze.events\"\nformat = \"csv\"\n\
             path = \"sample-data/{folder}/*.csv\"\nschema = {{ id = \"long\", ts = \"timestamp\", amount = \"decimal(10,2)\" }}\n\
             partition_by = [\"day(ts)\"]\n"
        );
        if transform {
            spec.push_str(DAILY);
        }
        spec
    };
    p.write("pipelines/load_a.toml", &ingest("load_a", "a", true));
    p.write("pipelines/load_b.toml", &ingest("load_b", "b", false));
    p.write(
        "pipelines/other.toml",
        &format!("[pipeline]\nname = \"other\"\n{DAILY}"),
    );
    p.write(
        "sql/daily.sql",
        "SELECT id, ts, CAST(ts AS DATE) AS day, amount FROM bronze.events\n",
    );
    p.write(
        "sample-data/a/a1.csv",
        &format!("{HEADER}1,2026-01-01 10:00:00,10.00\n2,2026-01-02 10:00:00,20.00\n"),
    );
    p
}

const DAILY: &str = "\n[[transform]]\ntable = \"silver.daily\"\nsql = \"sql/daily.sql\"\n\
                     partition_by = [\"day(day)\"]\nmode = \"replace_partitions\"\n\
                     incremental_by = { \"bronze.events\" = \"ts\" }\n";

/// Starts `pipeline ARGS` paused after staging, until [`Paused::release`].
pub(crate) fn start_paused(p: &Project, args: &[&str]) -> Paused {
    let gate = p.path().join(format!("release-{}", args.join("-")));
    p.start_paused(args, "staged", Some(gate))
}

#[test]
fn an_append_rebases_onto_a_concurrent_append() {
    let p = project();
    p.json(&["run", "load_a"]);
    p.write(
        "sample-data/a/a2.csv",
        &format!("{HEADER}3,2026-01-03 10:00:00,30.00\n"),
    );
    p.write(
        "sample-data/b/b1.csv",
        &format!("{HEADER}4,2026-01-04 10:00:00,40.00\n5,2026-01-04 11:00:00,50.00\n"),
    );
    let a = start_paused(&p, &["run", "load_a"]);
    let b = p.json(&["run", "load_b"]);
    let theirs = crate::common::id(&b["jobs"][0]["snapshot_id"]).unwrap();
    let (ok, log) = a.release();
    assert!(ok, "{log}");
    assert!(
        log.contains("bronze.events: another writer committed first; rebasing"),
        "{log}"
    );

    // Both appends are there, ours on top of theirs.
    assert_eq!(
        p.query("SELECT count(*), sum(amount) FROM bronze.events"),
        vec![vec![Some("5".into()), Some("150.00".into())]]
    );
    let history = p.json(&["history", "bronze.events"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(crate::common::id(&last["parent_id"]), Some(theirs));
    assert_eq!(last["total_records"], 5);
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["bronze.events"][reader]["rows"], 5, "{reader}");
    }
    // silver.daily was computed from what run A read: a later run brings it up to date.
    p.json(&["run", "load_a"]);
    assert_eq!(
        p.query("SELECT count(*) FROM silver.daily")[0][0].as_deref(),
        Some("5")
    );
}

#[test]
fn a_replace_of_the_same_partitions_conflicts_and_of_other_partitions_rebases() {
    let p = project();
    p.json(&["run", "load_a"]);
    p.json(&["run", "other"]);
    let before = p.current_snapshot("silver.daily");

    // Same day: the paused backfill conflicts and publishes nothing.
    let a = start_paused(
        &p,
        &[
            "backfill",
            "load_a",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
        ],
    );
    let b = p.json(&[
        "backfill",
        "other",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-01",
    ]);
    let theirs = crate::common::id(&b["jobs"][0]["snapshot_id"]).unwrap();
    assert_ne!(theirs, before);
    let (ok, log) = a.release();
    assert!(!ok, "the conflicting backfill succeeded:\n{log}");
    assert!(
        log.contains(
            "error: commit conflict on table silver.daily: another writer changed partitions \
             day(day) in 2026-01-01 after this run read them"
        ),
        "{log}"
    );
    assert!(log.contains("nothing of this run was published"), "{log}");
    assert_eq!(p.current_snapshot("silver.daily"), theirs);
    let (published, failed) = p.runs_by_outcome();
    let load_a = |records: &[serde_json::Value]| {
        records.iter().filter(|r| r["pipeline"] == "load_a").count()
    };
    assert_eq!(
        load_a(&published),
        1,
        "the failed backfill published a record"
    );
    assert_eq!(
        load_a(&failed),
        1,
        "the failed backfill is recorded as failed"
    );

    // Another day: the paused backfill rebases onto the other writer's replace.
    let a = start_paused(
        &p,
        &[
            "backfill",
            "load_a",
            "--from",
            "2026-01-02",
            "--to",
            "2026-01-02",
        ],
    );
    let b = p.json(&[
        "backfill",
        "other",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-01",
    ]);
    let theirs = crate::common::id(&b["jobs"][0]["snapshot_id"]).unwrap();
    let (ok, log) = a.release();
    assert!(ok, "{log}");
    assert!(
        log.contains("silver.daily: another writer committed first; rebasing"),
        "{log}"
    );
    let history = p.json(&["history", "silver.daily"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(crate::common::id(&last["parent_id"]), Some(theirs));
    assert_eq!(last["total_records"], 2);
    let files = p.files("silver.daily");
    let mut days: Vec<&str> = files.values().map(|(part, _)| part.as_str()).collect();
    days.sort();
    assert_eq!(days, vec!["day_day=2026-01-01", "day_day=2026-01-02"]);
    assert_eq!(
        p.query("SELECT count(*), sum(amount) FROM silver.daily"),
        vec![vec![Some("2".into()), Some("30.00".into())]]
    );
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["silver.daily"][reader]["rows"], 2, "{reader}");
    }
}
