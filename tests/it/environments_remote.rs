//! Environments on the production catalogs, against real local servers: on a REST catalog
//! (rustberg; one multi-table commit, and table by table) and on S3 Tables (moto; the
//! journal), a run in `dev` writes the changed tables' branch `dev` and leaves `main` where
//! it was; the engine (`query --env`) and PyIceberg (the branch by name) read the branch;
//! `env list`, `env diff`, `env publish` (one publish, undone by `rollback`) and `env drop`
//! work as on the embedded catalog.

use crate::common::Project;
use crate::environments::{lower_case_countries, main_snapshots, written};
use crate::remote::Rustberg;

const COUNTRIES: &str = "SELECT DISTINCT country FROM silver.customers ORDER BY 1";

fn lowered(rows: &[Vec<Option<String>>]) -> Vec<Vec<Option<String>>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|c| c.as_ref().map(|c| c.to_lowercase()))
                .collect()
        })
        .collect()
}

fn env_round_trip(p: &Project, rest: Option<&Rustberg>) {
    p.json(&["run", "retail"]);
    let before = main_snapshots(p);
    let upper = p.query(COUNTRIES);
    lower_case_countries(p);

    let report = p.json(&["run", "retail", "--env", "dev"]);
    let changed = [
        "gold.customer_metrics",
        "gold.fact_orders",
        "gold.monthly_revenue",
        "gold.repeat_buyers",
        "silver.customers",
    ];
    assert_eq!(written(&report), changed);
    assert_eq!(main_snapshots(p), before, "main moved");
    assert_eq!(p.query(COUNTRIES), upper);
    let on_dev = p.query_result(&["query", COUNTRIES, "--env", "dev"]).1;
    assert_eq!(on_dev, lowered(&upper));
    assert_ne!(on_dev, upper);

    // PyIceberg finds the branch by name, with the engine's rows; a table the run did not
    // change has no branch.
    let read = p.pyiceberg_branch(rest, &["gold.customer_metrics", "silver.orders"], "dev");
    assert!(read["silver.orders"].is_null(), "{read}");
    let engine = p.query_result(&[
        "query",
        "SELECT count(*) FROM gold.customer_metrics",
        "--env",
        "dev",
    ]);
    assert_eq!(
        read["gold.customer_metrics"]["rows"]
            .as_u64()
            .map(|n| n.to_string()),
        engine.1[0][0]
    );
    // The environment reads its branch back: nothing left to do there.
    let again = p.json(&["run", "retail", "--env", "dev"]);
    assert!(written(&again).is_empty(), "{again}");

    let listed = p.json(&["env", "list", "retail"]);
    assert_eq!(listed[0]["env"], "dev", "{listed}");
    let heads = listed[0]["tables"].clone();
    assert_eq!(heads.as_object().unwrap().len(), 5, "{listed}");
    let diff = p.json_failing(&[
        "env",
        "diff",
        "retail",
        "dev",
        "--tables",
        "silver.customers",
    ]);
    assert_eq!(diff[0]["main_rows"], diff[0]["env_rows"], "{diff}");
    assert_eq!(diff[0]["added"], diff[0]["main_rows"], "{diff}");

    let published = p.json(&["env", "publish", "retail", "dev", "--reason", "reviewed"]);
    assert_eq!(
        published["tables"].as_array().unwrap().len(),
        5,
        "{published}"
    );
    for (table, head) in heads.as_object().unwrap() {
        assert_eq!(
            Some(p.current_snapshot(table)),
            crate::common::id(head),
            "{table}"
        );
    }
    assert_eq!(p.query(COUNTRIES), lowered(&upper));
    p.json(&["rollback", published["run_id"].as_str().unwrap()]);
    assert_eq!(main_snapshots(p), before);
    assert_eq!(p.query(COUNTRIES), upper);

    let dropped = p.json(&["env", "drop", "retail", "dev", "--reason", "done"]);
    assert_eq!(dropped["tables"].as_array().unwrap().len(), 5, "{dropped}");
    assert_eq!(p.json(&["env", "list", "retail"]), serde_json::json!([]));
    assert_eq!(main_snapshots(p), before);
    let read = p.pyiceberg_branch(rest, &["gold.customer_metrics"], "dev");
    assert!(read["gold.customer_metrics"].is_null(), "{read}");
}

#[test]
fn rest_environments_with_one_multi_table_commit() {
    let server = Rustberg::start();
    env_round_trip(&Project::retail().on_rest(&server, true), Some(&server));
}

#[test]
fn rest_environments_table_by_table() {
    let server = Rustberg::start();
    env_round_trip(&Project::retail().on_rest(&server, false), Some(&server));
}

/// A schema change in an environment on REST: the server takes the environment's schema
/// without making it the table's, until the publish.
#[test]
fn rest_a_column_added_in_an_environment_is_not_seen_on_main_until_published() {
    let server = Rustberg::start();
    crate::environments::column_added_in_an_environment(&Project::retail().on_rest(&server, true));
}

#[test]
fn s3tables_environments() {
    env_round_trip(&Project::retail().on_s3tables(), None);
}

/// On S3 Tables (the journal), a run in an environment and an environment's publish killed
/// after their first table moved are completed by the next command: all tables or none, as
/// for runs; main untouched by the run, and moved whole by the publish.
#[test]
fn s3tables_environment_run_and_publish_killed_half_way_are_completed() {
    let p = Project::retail().on_s3tables();
    p.json(&["run", "retail"]);
    let before = main_snapshots(&p);
    let upper = p.query(COUNTRIES);
    lower_case_countries(&p);

    p.start_paused(&["run", "retail", "--env", "dev"], "publishing", None)
        .kill();
    // One table's branch moved before the kill (listing reads; it does not recover).
    let half = p.json(&["env", "list", "retail"]);
    assert_eq!(half[0]["tables"].as_object().unwrap().len(), 1, "{half}");
    let report = p.json(&["run", "retail", "--env", "dev"]);
    assert!(
        written(&report).is_empty(),
        "the recovery completed the killed run: {report}"
    );
    let listed = p.json(&["env", "list", "retail"]);
    let heads = listed[0]["tables"].clone();
    assert_eq!(heads.as_object().unwrap().len(), 5, "{listed}");
    assert_eq!(main_snapshots(&p), before);
    assert_eq!(p.query(COUNTRIES), upper);

    p.start_paused(&["env", "publish", "retail", "dev"], "publishing", None)
        .kill();
    let moved = heads
        .as_object()
        .unwrap()
        .iter()
        .filter(|(table, head)| Some(p.current_snapshot(table)) == crate::common::id(head))
        .count();
    assert_eq!(moved, 1, "one table's main moved before the kill");
    let run = p.run(&["run", "retail"]);
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{log}");
    for (table, head) in heads.as_object().unwrap() {
        assert_eq!(
            Some(p.current_snapshot(table)),
            crate::common::id(head),
            "{table}"
        );
    }
    assert_eq!(p.query(COUNTRIES), lowered(&upper));
    let runs = p.json(&["runs"]);
    let published = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "env" && r["tables"].as_array().unwrap().len() == 5)
        .count();
    assert_eq!(published, 1, "{runs}");
}
