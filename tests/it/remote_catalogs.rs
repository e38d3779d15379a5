//! The engine on production catalogs, against real local servers: AWS S3 Tables (moto) and
//! an Iceberg REST catalog (rustberg, warehouse on moto's S3). The same retail spec, run with
//! `--catalog remote`, must give exactly the tables the embedded catalog gives, through a run,
//! a backfill and a rollback; conflicts behave as on the embedded catalog; a publish killed
//! half way is completed by the next command; PyIceberg reads what the engine wrote.

use crate::common::{action, Project};
use crate::remote::{Rustberg, SECRET};

/// Columns that differ between two projects or runs by nature (paths, times, run ids).
const VOLATILE: [&str; 4] = ["_source_file", "_ingested_at", "_run_id", "source_file"];

fn contents_of_all(p: &Project) -> Vec<(String, Vec<Vec<Option<String>>>)> {
    p.tables()
        .into_iter()
        .filter(|t| !t.starts_with("pipeline_meta."))
        .map(|t| {
            let rows = p.contents_without(&t, &VOLATILE);
            (t, rows)
        })
        .collect()
}

/// Runs, backfills February and rolls the backfill back on `remote` and on the embedded
/// catalog; every table must be equal after each step.
pub(crate) fn retail_backfill_rollback(remote: &Project) {
    let local = Project::retail();
    for p in [&local, remote] {
        // The plan of the first run names every job, as the embedded catalog's does; after
        // the run, none would write.
        let writes = |plan: &serde_json::Value| {
            let jobs = plan.as_array().unwrap();
            jobs.iter().filter(|j| j["runs"] == true).count()
        };
        assert_eq!(writes(&p.json(&["run", "retail", "--plan"])), 9);
        let report = p.json(&["run", "retail"]);
        assert_eq!(report["jobs"].as_array().unwrap().len(), 9);
        assert_eq!(writes(&p.json(&["run", "retail", "--plan"])), 0);
    }
    let expected = contents_of_all(&local);
    assert_eq!(expected.len(), 12, "{expected:?}");
    assert_eq!(contents_of_all(remote), expected);

    let backfill = [
        "backfill",
        "retail",
        "--from",
        "2026-02-01",
        "--to",
        "2026-02-28",
    ];
    let mut backfills = Vec::new();
    for p in [&local, remote] {
        backfills.push(p.json(&backfill));
    }
    let action = |report: &serde_json::Value| {
        report["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["table"] == "gold.fact_orders")
            .unwrap()["action"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        action(&backfills[1]),
        "replace month(order_date) in 2026-02"
    );
    assert_eq!(action(&backfills[0]), action(&backfills[1]));
    let before_rollback = remote.current_snapshot("gold.fact_orders");
    assert_eq!(contents_of_all(remote), expected);

    for (p, report) in [&local, remote].iter().zip(&backfills) {
        p.json(&["rollback", report["run_id"].as_str().unwrap()]);
    }
    assert_ne!(remote.current_snapshot("gold.fact_orders"), before_rollback);
    assert_eq!(contents_of_all(remote), expected);
    let runs = remote.json(&["runs"]);
    let kinds: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["run", "backfill", "rollback"]);
    // Undo commands name the catalog they ran on.
    let undo = runs[0]["undo"].as_str().unwrap();
    assert!(
        undo.ends_with("--pipeline retail --catalog remote"),
        "{undo}"
    );
}

/// The retail pipeline's gold tables.
pub(crate) const GOLD: [&str; 4] = [
    "gold.fact_orders",
    "gold.customer_metrics",
    "gold.monthly_revenue",
    "gold.repeat_buyers",
];

/// PyIceberg's row counts and sums agree with the engine's for the gold tables.
fn pyiceberg_agrees(p: &Project, rest: Option<&Rustberg>) {
    gold_agrees(p, &p.pyiceberg_remote(rest, &GOLD));
}

/// `read` (PyIceberg's row counts and sums of the gold tables) agrees with the engine's.
pub(crate) fn gold_agrees(p: &Project, read: &serde_json::Value) {
    for t in GOLD {
        let engine = p.query(&format!("SELECT count(*) FROM {t}"));
        assert_eq!(
            read[t]["rows"].as_u64().map(|n| n.to_string()),
            engine[0][0],
            "{t}"
        );
        for (column, sum) in read[t]["sums"].as_object().unwrap() {
            let engine = p.query(&format!("SELECT sum(\"{column}\") FROM {t}"));
            assert_eq!(sum.as_str(), engine[0][0].as_deref(), "{t}.{column}");
        }
    }
}

#[test]
fn s3tables_retail_backfill_and_rollback_match_the_embedded_catalog() {
    let p = Project::retail().on_s3tables();
    retail_backfill_rollback(&p);
    pyiceberg_agrees(&p, None);
    // Table metadata lives in the table bucket's own storage.
    let location = p.json(&["describe", "gold.fact_orders"])["metadata_location"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(location.starts_with("s3://"), "{location}");
    assert!(location.contains("--table-s3/metadata/"), "{location}");
}

/// Erase with --purge on S3 Tables (moto): the same tables as on the embedded catalog, with
/// quarantined lines and recomputed totals; every older snapshot of the erased tables
/// expired; the receipt says that S3 Tables deletes the files itself.
#[test]
fn s3tables_erase_with_purge_matches_the_embedded_catalog() {
    let local = crate::erase_reach::project();
    let remote = crate::erase_reach::project().on_s3tables();
    let mut receipts = Vec::new();
    for p in [&local, &remote] {
        p.json(&["run", "retail"]);
        p.json(&["run", "retail", "--full-refresh"]);
        let done = p.json(&[
            "erase",
            "retail",
            "--where",
            "customer_id = 5",
            "--reason",
            "GDPR-121",
            "--purge",
        ]);
        assert_eq!(done["erase"]["record"]["kind"], "erase");
        receipts.push(done);
    }
    assert_eq!(contents_of_all(&remote), contents_of_all(&local));
    assert_eq!(
        remote.query(
            "SELECT count(*) FROM bronze.pos_orders__quarantine WHERE raw LIKE '%Dana Widget%'"
        ),
        vec![vec![Some("0".to_string())]]
    );
    pyiceberg_agrees(&remote, None);
    let (here, there) = (&receipts[0]["erase"], &receipts[1]["erase"]);
    // The same rows and files per table (bytes differ: file names are written into them).
    let counts = |receipt: &serde_json::Value| -> Vec<String> {
        receipt["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{} {} {}/{}",
                    t["table"], t["rows"], t["files_rewritten"], t["files_in_table"]
                )
            })
            .collect()
    };
    assert_eq!(counts(here), counts(there));
    let history = there["history"].as_str().unwrap();
    assert!(history.contains("S3 Tables deletes the files"), "{history}");
    // Only the erase's snapshot is left of each erased table (two runs made two before).
    for table in ["bronze.customers", "silver.orders", "gold.fact_orders"] {
        let snapshots = remote.json(&["history", table]);
        assert_eq!(
            snapshots.as_array().unwrap().len(),
            1,
            "{table}: {snapshots}"
        );
    }
    let purged = receipts[1]["purge"]["tables"].as_array().unwrap();
    assert!(purged
        .iter()
        .all(|t| t["note"].as_str().is_none_or(|n| n.contains("S3 Tables"))));
    // The purge's records say what S3 Tables is left to delete: the data files the expired
    // snapshots alone referenced, as many as the embedded catalog deleted.
    let freed = |p: &Project, receipt: &serde_json::Value| -> u64 {
        let erase_run = receipt["erase"]["record"]["run_id"].as_str().unwrap();
        p.json(&["run-info", erase_run])["purged_by"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["tables"].as_array().unwrap().clone())
            .filter_map(|t| t["expired"]["data_files"].as_u64())
            .sum()
    };
    let (here, there) = (freed(&local, &receipts[0]), freed(&remote, &receipts[1]));
    assert!(here > 0);
    assert_eq!(there, here);
}

#[test]
fn rest_retail_backfill_and_rollback_match_the_embedded_catalog() {
    let server = Rustberg::start();
    let p = Project::retail().on_rest(&server, true);
    retail_backfill_rollback(&p);
    pyiceberg_agrees(&p, Some(&server));
    let location = p.json(&["describe", "gold.fact_orders"])["metadata_location"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        location.starts_with(&format!("{}/gold/fact_orders/metadata/", server.warehouse)),
        "{location}"
    );
}

#[test]
fn rest_without_transactions_publishes_table_by_table_with_the_same_result() {
    let server = Rustberg::start();
    let p = Project::retail().on_rest(&server, false);
    let local = Project::retail();
    p.json(&["run", "retail"]);
    local.json(&["run", "retail"]);
    assert_eq!(contents_of_all(&p), contents_of_all(&local));
    pyiceberg_agrees(&p, Some(&server));
}

#[test]
fn secrets_named_in_the_spec_never_appear_in_output_even_at_debug_level() {
    let p = Project::retail().on_s3tables();
    for args in [
        vec!["-vv", "run", "retail"],
        vec!["-vv", "tables"],
        vec!["-vv", "runs"],
        vec!["-vv", "describe", "gold.fact_orders"],
    ] {
        let out = p.run(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains(SECRET), "{args:?} printed the secret");
        }
        assert!(
            !String::from_utf8_lossy(&out.stderr).is_empty(),
            "-vv logged nothing; the check would be empty"
        );
    }
    // A missing variable is named, and its value is never needed to say so.
    let mut q = Project::retail().on_s3tables();
    q.env.retain(|(k, _)| k != crate::remote::SECRET_ENV);
    let (code, message) = q.fails(&["run", "retail"]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.contains("environment variable PIPELINE_TEST_AWS_SECRET"),
        "{message}"
    );
}

#[test]
fn a_secret_written_into_the_spec_is_refused_with_the_line() {
    let p = Project::retail();
    let spec = p.path().join("pipelines/retail.toml");
    let mut text = std::fs::read_to_string(&spec).unwrap();
    text.push_str(
        "\n[catalogs.prod]\ntype = \"s3tables\"\n\
         table_bucket_arn = \"arn:aws:s3tables:us-east-1:111122223333:bucket/b\"\n\
         secret_access_key = \"abc\"\n",
    );
    std::fs::write(&spec, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("secret_access_key"))
        .unwrap()
        + 1;
    let (code, message) = p.fails(&["validate", "retail"]);
    assert_eq!(code, 2);
    assert!(
        message.contains(&format!("pipelines/retail.toml:{line}:21: `secret_access_key` must not be written in the spec file")),
        "{message}"
    );
    assert!(message.contains("secret_access_key_env"), "{message}");
    assert!(!message.contains("abc\""), "{message}");
}

/// Two writers on one table of a remote catalog: an append retries on top of the other
/// writer's snapshot; a replace of the same partitions fails and publishes nothing, not even
/// the run's other table.
fn conflicts(p: &Project, rest: bool) {
    use crate::conflicts::{start_paused, HEADER};
    p.json(&["run", "load_a"]);
    p.json(&["run", "other"]);

    // An append retries on top of a concurrent append.
    p.write(
        "sample-data/a/a2.csv",
        &format!("{HEADER}3,2026-01-03 10:00:00,30.00\n"),
    );
    p.write(
        "sample-data/b/b1.csv",
        &format!("{HEADER}4,2026-01-04 10:00:00,40.00\n"),
    );
    let a = start_paused(p, &["run", "load_a"]);
    let theirs = p.json(&["run", "load_b"])["jobs"][0]["snapshot_id"]
        .as_str()
        .unwrap()
        .parse::<i64>()
        .unwrap();
    let (ok, log) = a.release();
    assert!(ok, "{log}");
    assert!(
        log.contains("bronze.events: another writer committed first; rebasing"),
        "{log}"
    );
    let history = p.json(&["history", "bronze.events"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(crate::common::id(&last["parent_id"]), Some(theirs));
    assert_eq!(
        p.query("SELECT count(*), sum(amount) FROM bronze.events"),
        vec![vec![Some("4".into()), Some("100.00".into())]]
    );

    // A run appending to bronze.events and recomputing silver.daily (a full refresh: the
    // bronze snapshot its last run read was replaced by the rebase above), while another
    // writer replaces a day of silver.daily: the whole run fails, neither table moves.
    p.write(
        "sample-data/a/a3.csv",
        &format!("{HEADER}5,2026-01-01 12:00:00,50.00\n"),
    );
    let bronze_before = p.current_snapshot("bronze.events");
    let runs_before = p.runs_by_outcome().0.len();
    // (The first paused run's gate file is still there: remove it, or this run would not wait.)
    std::fs::remove_file(p.path().join("release-run-load_a")).unwrap();
    let a = start_paused(p, &["run", "load_a", "-v"]);
    let theirs = p.json(&[
        "backfill",
        "other",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-01",
    ])["jobs"][0]["snapshot_id"]
        .as_str()
        .unwrap()
        .parse::<i64>()
        .unwrap();
    let (ok, log) = a.release();
    assert!(!ok, "the conflicting run succeeded:\n{log}");
    if rest {
        // The server itself refused the commit (a failed assert-ref-snapshot-id).
        assert!(
            log.contains("the catalog rejected the multi-table commit, changing no table"),
            "{log}"
        );
    }
    assert!(
        log.contains("commit conflict on table silver.daily: another writer committed snapshot"),
        "{log}"
    );
    assert_eq!(p.current_snapshot("bronze.events"), bronze_before);
    assert_eq!(p.current_snapshot("silver.daily"), theirs);
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.events")[0][0].as_deref(),
        Some("4")
    );
    // The other writer's backfill published; the failed run is recorded as failed.
    let (published, failed) = p.runs_by_outcome();
    assert_eq!((published.len(), failed.len()), (runs_before + 1, 1));

    // Two backfills replacing the same day of silver.daily: the one that publishes second
    // fails, naming the partitions, and changes nothing.
    let a = start_paused(
        p,
        &[
            "backfill",
            "load_a",
            "--from",
            "2026-01-02",
            "--to",
            "2026-01-02",
        ],
    );
    let theirs = p.json(&[
        "backfill",
        "other",
        "--from",
        "2026-01-02",
        "--to",
        "2026-01-02",
    ])["jobs"][0]["snapshot_id"]
        .as_str()
        .unwrap()
        .parse::<i64>()
        .unwrap();
    let (ok, log) = a.release();
    assert!(!ok, "the conflicting backfill succeeded:\n{log}");
    assert!(
        log.contains(
            "commit conflict on table silver.daily: another writer changed partitions \
             day(day) in 2026-01-02 after this run read them"
        ),
        "{log}"
    );
    assert_eq!(p.current_snapshot("silver.daily"), theirs);
    let (published, failed) = p.runs_by_outcome();
    assert_eq!((published.len(), failed.len()), (runs_before + 2, 2));
    assert_eq!(failed[1]["kind"], "backfill", "{failed:?}");
}

#[test]
fn s3tables_appends_retry_and_conflicting_replaces_fail_whole() {
    conflicts(&crate::conflicts::project().on_s3tables(), false);
}

#[test]
fn rest_multi_table_commit_rejected_by_the_server_changes_no_table() {
    let server = Rustberg::start();
    conflicts(&crate::conflicts::project().on_rest(&server, true), true);
}

#[test]
fn s3tables_publish_killed_half_way_is_completed_by_the_next_command() {
    let p = Project::retail().on_s3tables();
    // Killed right after the first table moved.
    p.start_paused(&["run", "retail"], "publishing", None)
        .kill();
    let with_snapshot = |p: &Project| {
        p.tables()
            .iter()
            .filter(|t| !t.starts_with("pipeline_meta."))
            .filter(|t| !p.json(&["describe", t])["current_snapshot_id"].is_null())
            .count()
    };
    assert_eq!(
        with_snapshot(&p),
        1,
        "exactly one table moved before the kill"
    );
    assert!(p.json(&["runs"]).as_array().unwrap().is_empty());

    let out = p.run(&["run", "retail"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("recovered completed the publish of run"),
        "{log}"
    );
    assert_eq!(with_snapshot(&p), 12);
    // The killed run's record was written by the recovery; nothing was loaded twice.
    let runs = p.json(&["runs"]);
    let first = &runs.as_array().unwrap()[0];
    assert_eq!(first["kind"], "run");
    assert_eq!(first["tables"].as_array().unwrap().len(), 12);
    let local = Project::retail();
    local.json(&["run", "retail"]);
    assert_eq!(contents_of_all(&p), contents_of_all(&local));
    pyiceberg_agrees(&p, None);
}

#[test]
fn s3tables_stale_version_token_and_a_recovery_racing_the_publisher_converge() {
    use crate::conflicts::HEADER;
    let p = crate::conflicts::project().on_s3tables();
    p.json(&["run", "load_a"]);
    p.write(
        "sample-data/a/a2.csv",
        &format!("{HEADER}3,2026-01-03 10:00:00,30.00\n"),
    );
    p.write(
        "sample-data/b/b1.csv",
        &format!("{HEADER}4,2026-01-04 10:00:00,40.00\n"),
    );
    // Run A has recorded its publish and read bronze.events' version token, then stops.
    let gate = p.path().join("gate-token");
    let a = p.start_paused(
        &["-v", "run", "load_a"],
        "version-token-read bronze.events",
        Some(gate),
    );
    // Run B finds A's publish pending and completes it before its own work, then appends on
    // top of it: A's token is now stale.
    let b = p.run(&["run", "load_b"]);
    let b_log = String::from_utf8_lossy(&b.stderr);
    assert!(b.status.success(), "{b_log}");
    assert!(
        b_log.contains("recovered completed the publish of run"),
        "{b_log}"
    );
    // A's move with the stale token is refused by S3 Tables; A sees its publish completed.
    let (ok, log) = a.release();
    assert!(ok, "{log}");
    assert!(log.contains("version token is stale"), "{log}");
    assert!(
        log.contains("another command completed this publish"),
        "{log}"
    );
    assert_eq!(
        p.query("SELECT count(*), sum(amount) FROM bronze.events"),
        vec![vec![Some("4".into()), Some("100.00".into())]]
    );
    assert_eq!(
        p.query("SELECT count(*) FROM silver.daily")[0][0].as_deref(),
        Some("3")
    );
    let runs = p.json(&["runs"]);
    let pipelines: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pipeline"].as_str().unwrap())
        .collect();
    assert_eq!(pipelines, ["load_a", "load_a", "load_b"]);
}

#[test]
fn a_half_done_publish_is_rolled_back_when_another_writer_moved_one_of_its_tables() {
    use crate::conflicts::HEADER;
    let server = Rustberg::start();
    let p = crate::conflicts::project();
    // With retention, the killed run also expires old snapshots: undoing it must not bring
    // them back (a REST server refuses snapshots older than its last sequence number).
    let spec = p.path().join("pipelines/load_a.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("{text}\n[retention]\nmax_snapshots = 2\n")).unwrap();
    let p = p.on_rest(&server, false);
    p.json(&["run", "load_a"]);
    for day in 5..9 {
        p.write(
            &format!("sample-data/a/x{day}.csv"),
            &format!("{HEADER}{day}0,2026-01-0{day} 10:00:00,1.00\n"),
        );
        p.json(&["run", "load_a"]);
    }
    let bronze_before = p.current_snapshot("bronze.events");
    let rows_before = p.query("SELECT count(*), sum(amount) FROM bronze.events");
    assert_eq!(
        rows_before,
        vec![vec![Some("6".into()), Some("34.00".into())]]
    );
    p.write(
        "sample-data/a/a2.csv",
        &format!("{HEADER}3,2026-01-03 10:00:00,30.00\n"),
    );
    // Killed after bronze.events moved, before silver.daily did.
    p.start_paused(&["run", "load_a"], "publishing", None)
        .kill();
    assert_ne!(p.current_snapshot("bronze.events"), bronze_before);
    // Another tool commits to silver.daily meanwhile.
    let theirs = p.pyiceberg_append(&server, "silver.daily");
    assert_eq!(p.current_snapshot("silver.daily"), theirs);

    // The next run undoes the half-done publish (bronze.events back to where it was), then
    // does its own work: a2 is loaded once, silver.daily recomputed on top of the other
    // writer's snapshot.
    let out = p.run(&["run", "load_a"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("recovered rolled back the half-done publish of run")
            && log.contains("moved back: bronze.events"),
        "{log}"
    );
    let history = p.json(&["history", "bronze.events"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(crate::common::id(&last["parent_id"]), Some(bronze_before));
    assert_eq!(
        p.query("SELECT count(*), sum(amount) FROM bronze.events"),
        vec![vec![Some("7".into()), Some("64.00".into())]]
    );
    assert_eq!(
        p.query("SELECT count(*) FROM silver.daily")[0][0].as_deref(),
        Some("7")
    );
    let runs = p.json(&["runs"]);
    assert_eq!(runs.as_array().unwrap().len(), 6, "{runs}");
}

#[test]
fn the_control_table_stays_small_over_many_runs() {
    let p = Project::empty();
    p.write(
        "pipelines/tiny.toml",
        "[pipeline]\nname = \"tiny\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\n\
         path = \"data/*.csv\"\nschema = { id = \"long\" }\n",
    );
    p.write("data/one.csv", "id\n1\n2\n");
    let p = p.on_s3tables();
    for _ in 0..36 {
        p.json(&["run", "tiny"]);
    }
    let runs = p.json(&["runs"]);
    assert_eq!(runs.as_array().unwrap().len(), 36);
    // Every record is there once, oldest first, and only the first run loaded anything.
    let unique: std::collections::BTreeSet<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(unique.len(), 36);
    assert_eq!(runs[0]["tables"].as_array().unwrap().len(), 1);
    assert!(runs[35]["tables"].as_array().unwrap().is_empty());
    // Records were compacted into few files, old control snapshots expired.
    let files = p.json(&["files", "pipeline_meta.runs"]);
    assert!(files.as_array().unwrap().len() <= 8, "{files}");
    let history = p.json(&["history", "pipeline_meta.runs"]);
    assert!(history.as_array().unwrap().len() <= 20, "{history}");
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.t")[0][0].as_deref(),
        Some("2")
    );
}

#[test]
fn rest_with_a_bearer_token_named_in_the_spec() {
    const KEY: &str = "rb_pipelinetestkey0123456789";
    let server = Rustberg::start_with(Some(KEY));
    let mut p =
        Project::retail().on_rest_with(&server, "token_env = \"PIPELINE_TEST_REST_TOKEN\"\n");
    // Without the variable: the error names it.
    let (code, message) = p.fails(&["run", "retail"]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.contains("environment variable PIPELINE_TEST_REST_TOKEN"),
        "{message}"
    );
    // A wrong token: the server refuses, and the error says which setting to check.
    p.env.push((
        "PIPELINE_TEST_REST_TOKEN".into(),
        "rb_wrongkey000000000000000".into(),
    ));
    let (_, message) = p.fails(&["run", "retail"]);
    assert!(
        message.contains("refused this client's credentials (401 Unauthorized)")
            && message.contains("token_env"),
        "{message}"
    );
    // The right token: the run works, and the token never shows, even at debug level.
    p.env.retain(|(k, _)| k != "PIPELINE_TEST_REST_TOKEN");
    p.env.push(("PIPELINE_TEST_REST_TOKEN".into(), KEY.into()));
    let out = p.run(&["-vv", "run", "retail"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains(KEY), "the token was logged");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0],
        Some(crate::common::expected_retail()["counts"]["silver.orders"].to_string())
    );
}

#[test]
fn every_command_works_on_s3tables_as_on_the_embedded_catalog() {
    let remote = Project::retail().on_s3tables();
    let local = Project::retail();
    for p in [&local, &remote] {
        p.json(&["validate", "retail"]);
        p.json(&["run", "retail"]);
    }
    let first = remote.current_snapshot("silver.orders");
    let rows_before = remote.query("SELECT count(*) FROM silver.orders");

    // Late rows: an incremental run recomputes only their months, on both catalogs alike.
    let late = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
                3001,1,2026-01-20 10:00:00,Tea,4,5.00,shipped\n";
    let mut reports = Vec::new();
    for p in [&local, &remote] {
        p.write("sample-data/retail/orders/pos_late.csv", late);
        reports.push(p.json(&["run", "retail"]));
    }
    assert_eq!(
        action(&reports[1], "silver.orders"),
        "replace month(order_date) in 2026-01"
    );
    assert_eq!(
        action(&reports[0], "silver.orders"),
        action(&reports[1], "silver.orders")
    );
    // A corrected source file, reloaded in place.
    let corrected = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
                     1031,2,2026-03-01 09:15:00,Tea,3,4.75,placed\n";
    for p in [&local, &remote] {
        p.write("sample-data/retail/orders/pos_2026-03-05.csv", corrected);
        let report = p.json(&["run", "retail", "--reload-changed"]);
        assert!(
            action(&report, "bronze.pos_orders").contains("reload"),
            "{report}"
        );
    }
    assert_eq!(contents_of_all(&remote), contents_of_all(&local));

    // Time travel, history, files, run records, backfill plans.
    assert_eq!(
        remote.query_as_of("SELECT count(*) FROM silver.orders", first),
        rows_before
    );
    let history = remote.json(&["history", "silver.orders"]);
    assert_eq!(history.as_array().unwrap().len(), 3, "{history}");
    let files = remote.json(&["files", "gold.fact_orders"]);
    assert!(files
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["path"].as_str().unwrap().starts_with("s3://")));
    let runs = remote.json(&["runs"]);
    let last = runs.as_array().unwrap().last().unwrap().clone();
    let info = remote.json(&["run-info", last["run_id"].as_str().unwrap()]);
    assert_eq!(info["run_id"], last["run_id"]);
    let plan = [
        "backfill",
        "retail",
        "--from",
        "2026-01-10",
        "--to",
        "2026-01-20",
        "--plan",
    ];
    let (local_plan, remote_plan) = (local.json(&plan), remote.json(&plan));
    let shape = |plan: &serde_json::Value| -> Vec<(String, String)> {
        plan.as_array()
            .unwrap()
            .iter()
            .map(|t| (t["table"].to_string(), t["action"].to_string()))
            .collect()
    };
    assert_eq!(shape(&remote_plan), shape(&local_plan));

    // Orphan listing is for the embedded warehouse; on S3 Tables it says why not.
    let (code, message) = remote.fails(&["orphans"]);
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("S3 Tables removes unreferenced files itself"),
        "{message}"
    );
}

/// S3 Tables compacts and rewrites manifests on its own: here another process does it (a copy
/// of the pipeline under another name in another project on the same table bucket, so that
/// neither's locks hold the other off) while a run is staged. The
/// run's append, replace and overwrite snapshots are produced again on top of those `replace`
/// snapshots, and a rollback over a later compaction is allowed; every table ends as on the
/// embedded catalog without any maintenance.
#[test]
fn s3tables_a_run_meeting_another_process_compaction_rebases_over_it() {
    let header = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n";
    let local = Project::retail();
    let remote = Project::retail();
    let upkeep = Project::retail();
    let spec = std::fs::read_to_string(upkeep.path().join("pipelines/retail.toml")).unwrap();
    std::fs::remove_file(upkeep.path().join("pipelines/retail.toml")).unwrap();
    upkeep.write(
        "pipelines/upkeep.toml",
        &format!(
            "{}\n[maintenance]\nmin_input_files = 2\nmax_manifests = 1\n",
            spec.replace("name = \"retail\"", "name = \"upkeep\"")
        ),
    );
    let bucket = crate::remote::table_bucket();
    let remote = remote.on_s3tables_bucket(&bucket);
    let upkeep = upkeep.on_s3tables_bucket(&bucket);
    let steps: Vec<(String, String)> = (0..2)
        .map(|k| {
            (
                format!("sample-data/retail/orders/mar_{k}.csv"),
                format!(
                    "{header}{},1,2026-03-1{k} 10:00:00,Mug,1,9.50,shipped\n",
                    7000 + k
                ),
            )
        })
        .collect();
    for p in [&local, &remote] {
        p.json(&["run", "retail"]);
        for (file, text) in &steps {
            p.write(file, text);
            p.json(&["run", "retail"]);
        }
    }
    let late = format!("{header}7100,2,2026-03-20 10:00:00,Tea,3,4.00,shipped\n");
    local.write("sample-data/retail/orders/late.csv", &late);
    local.json(&["run", "retail", "--full-refresh"]);

    remote.write("sample-data/retail/orders/late.csv", &late);
    let gate = remote.path().join("gate");
    let run = remote.start_paused(&["run", "retail", "--full-refresh"], "staged", Some(gate));
    let upkept = upkeep.json(&["maintain", "upkeep"]);
    let compacted: Vec<&str> = upkept["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["files_in"].as_u64().unwrap() > 0 || t["rewrite_manifests"] == true)
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert!(compacted.contains(&"bronze.pos_orders"), "{upkept}");
    assert!(compacted.contains(&"silver.orders"), "{upkept}");
    let (ok, log) = run.release();
    assert!(ok, "{log}");
    assert!(log.contains("rebasing"), "{log}");
    assert_eq!(contents_of_all(&remote), contents_of_all(&local));

    // A compaction after a run does not stop its rollback.
    remote.write(
        "sample-data/retail/orders/mar_more.csv",
        &format!("{header}7200,1,2026-03-22 10:00:00,Mug,1,9.50,shipped\n"),
    );
    remote.json(&["run", "retail"]);
    let newest = remote.json(&["runs"]).as_array().unwrap().last().unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    upkeep.json(&["maintain", "upkeep"]);
    remote.json(&["rollback", &newest]);
    assert_eq!(contents_of_all(&remote), contents_of_all(&local));
}

/// `pipeline maintain` on a REST catalog (files on S3): compaction, then expiry deleting the
/// files only expired snapshots referenced; the tables stay equal to the embedded catalog's
/// and every file they need is there.
#[test]
fn rest_maintenance_compacts_and_deletes_what_expiry_frees() {
    let header = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n";
    let server = Rustberg::start();
    let local = Project::retail();
    let remote = Project::retail();
    for p in [&local, &remote] {
        let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
        p.write(
            "pipelines/retail.toml",
            &format!("{spec}\n[maintenance]\nafter_run = false\nexpire_older_than = \"0s\"\nkeep_runs = 0\n"),
        );
    }
    let remote = remote.on_rest(&server, true);
    let mut reports = Vec::new();
    for p in [&local, &remote] {
        p.json(&["run", "retail"]);
        for k in 0..5 {
            p.write(
                &format!("sample-data/retail/orders/mar_{k}.csv"),
                &format!(
                    "{header}{},1,2026-03-1{k} 10:00:00,Mug,1,9.50,shipped\n",
                    7000 + k
                ),
            );
            p.json(&["run", "retail"]);
        }
        let first = p.json(&["maintain", "retail"]);
        p.write(
            "sample-data/retail/orders/apr.csv",
            &format!("{header}7100,1,2026-04-02 10:00:00,Mug,1,9.50,shipped\n"),
        );
        p.json(&["run", "retail"]);
        let second = p.json(&["maintain", "retail"]);
        reports.push((first, second));
    }
    let pos = |report: &serde_json::Value| {
        report["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == "bronze.pos_orders")
            .unwrap()
            .clone()
    };
    let (first, second) = &reports[1];
    assert_eq!(pos(first)["files_in"], 6, "{first}");
    assert_eq!(pos(first)["files_out"], 1, "{first}");
    assert!(
        pos(second)["deleted_data_files"].as_u64().unwrap() >= 6,
        "{second}"
    );
    assert_eq!(pos(second)["undeleted_files"], 0, "{second}");
    assert_eq!(
        pos(&reports[0].1)["deleted_data_files"],
        pos(second)["deleted_data_files"]
    );
    assert_eq!(contents_of_all(&remote), contents_of_all(&local));
    for t in remote.json(&["check"]).as_array().unwrap() {
        assert!(t["problems"].as_array().unwrap().is_empty(), "{t}");
    }
    pyiceberg_agrees(&remote, Some(&server));
}
