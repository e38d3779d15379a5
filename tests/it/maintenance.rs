//! `pipeline maintain` (compaction, manifest rewrite, snapshot expiry with file deletion),
//! `[maintenance] after_run`, and `pipeline orphans --delete` next to a live run. Expected
//! rows are the tables' own rows before maintenance, and PyIceberg's and DuckDB's readings.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::{action, Project};

const HEADER: &str = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n";

/// One small POS file with one order of `month` (2026-MM) loaded by its own run: one more
/// small data file in that month's partition of bronze.pos_orders.
fn small_load(p: &Project, pipeline: &str, name: &str, id: u32, month: u32) {
    p.write(
        &format!("sample-data/retail/orders/{name}.csv"),
        &format!("{HEADER}{id},1,2026-{month:02}-12 10:00:00,Mug,1,9.50,shipped\n"),
    );
    p.json(&["run", pipeline]);
}

/// The live data files of `table` per partition label.
fn files_per_partition(p: &Project, table: &str) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for f in p.json(&["files", table]).as_array().unwrap() {
        *out.entry(f["partition"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    out
}

fn table_report<'a>(report: &'a Value, table: &str) -> &'a Value {
    report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table)
        .unwrap_or_else(|| panic!("no {table} in {report}"))
}

fn every_table(p: &Project) -> Vec<(String, Vec<Vec<Option<String>>>)> {
    p.tables()
        .into_iter()
        .map(|t| {
            let rows = p.contents(&t);
            (t, rows)
        })
        .collect()
}

#[test]
fn compaction_keeps_every_row_for_every_reader_and_later_runs_stay_incremental() {
    let p = Project::retail().maintained_by_hand();
    p.json(&["run", "retail"]);
    for k in 0..5 {
        small_load(&p, "retail", &format!("mar_{k}"), 7000 + k, 3);
    }
    let march = "order_ts_month=2026-03";
    let before_files = files_per_partition(&p, "bronze.pos_orders");
    assert_eq!(before_files[march], 6, "{before_files:?}");
    let before = every_table(&p);
    let readers_before = p.independent_readers();
    let snapshot = p.current_snapshot("bronze.pos_orders");

    // The plan changes nothing.
    let plan = p.json(&["maintain", "retail", "--plan"]);
    let planned = table_report(&plan, "bronze.pos_orders");
    let groups = planned["compaction"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{plan}");
    assert_eq!(groups[0]["partition"], march);
    assert_eq!(groups[0]["files"].as_array().unwrap().len(), 6);
    assert_eq!(plan["run_id"], Value::Null);
    assert_eq!(p.current_snapshot("bronze.pos_orders"), snapshot);

    let done = p.json(&["maintain", "retail"]);
    let t = table_report(&done, "bronze.pos_orders");
    assert_eq!(
        (t["files_in"].as_u64(), t["files_out"].as_u64()),
        (Some(6), Some(1))
    );
    let after_files = files_per_partition(&p, "bronze.pos_orders");
    assert_eq!(after_files[march], 1);
    for (partition, n) in &before_files {
        if partition != march {
            assert_eq!(after_files[partition], *n, "{partition} was not compacted");
        }
    }
    // Same rows, in our engine and in PyIceberg and DuckDB.
    assert_eq!(every_table(&p), before);
    assert_eq!(p.independent_readers(), readers_before);
    let history = p.json(&["history", "bronze.pos_orders"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["operation"], "replace", "{last}");
    assert_eq!(
        last["total_records"],
        history.as_array().unwrap()[history.as_array().unwrap().len() - 2]["total_records"]
    );
    let runs = p.json(&["runs"]);
    let record = runs.as_array().unwrap().last().unwrap().clone();
    assert_eq!(record["kind"], "maintain");
    assert_eq!(record["run_id"], done["run_id"]);
    assert_eq!(
        p.json(&["check"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| !t["problems"].as_array().unwrap().is_empty())
            .count(),
        0
    );

    // The compaction changed no row: the next run recomputes only the month with new rows,
    // and a transform whose inputs were only compacted is up to date.
    let quiet = p.json(&["run", "retail"]);
    for job in quiet["jobs"].as_array().unwrap() {
        if job["job"] == "transform" {
            assert!(
                job["action"].as_str().unwrap().contains("up to date"),
                "{job}"
            );
        }
    }
    p.write(
        "sample-data/retail/orders/jan_late2.csv",
        &format!("{HEADER}7101,2,2026-01-13 10:00:00,Tea,2,4.00,shipped\n"),
    );
    let run = p.json(&["run", "retail"]);
    assert_eq!(
        action(&run, "silver.orders"),
        "replace month(order_date) in 2026-01",
        "{run}"
    );
    assert!(
        action(&run, "silver.customers").contains("up to date"),
        "{run}"
    );

    // The maintenance is undone like a run, but not after a later run moved the table.
    let (code, message) = p.fails(&["rollback", done["run_id"].as_str().unwrap()]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.contains("roll back the later runs first"),
        "{message}"
    );
}

#[test]
fn a_compaction_is_undone_and_expiry_deletes_only_what_no_kept_snapshot_needs() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &format!("{spec}\n[maintenance]\nafter_run = false\n"),
    );
    p.json(&["run", "retail"]);
    for k in 0..5 {
        small_load(&p, "retail", &format!("mar_{k}"), 7000 + k, 3);
    }
    let before = every_table(&p);
    let small: BTreeSet<String> = p.files("bronze.pos_orders").into_keys().collect();

    // Undo of a compaction: the small files are back, the rows the same.
    let done = p.json(&["maintain", "retail"]);
    let record = p.json(&["rollback", done["run_id"].as_str().unwrap()]);
    assert_eq!(record["kind"], "rollback");
    let back: BTreeSet<String> = p.files("bronze.pos_orders").into_keys().collect();
    assert_eq!(back, small);
    assert_eq!(every_table(&p), before);

    // With the default 5 days nothing expires; the last run can still be rolled back.
    let planned = p.json(&["maintain", "retail", "--plan"]);
    for t in planned["tables"].as_array().unwrap() {
        assert_eq!(t["expired_snapshots"], 0, "{t}");
    }

    // Expire everything older than now: the compaction's first maintenance keeps the
    // snapshot it started from (its undo needs it); the next one frees the small files.
    p.write(
        "pipelines/retail.toml",
        &format!(
            "{spec}\n[maintenance]\nafter_run = false\nexpire_older_than = \"0s\"\nkeep_runs = 0\n"
        ),
    );
    let history_before = p
        .json(&["history", "bronze.pos_orders"])
        .as_array()
        .unwrap()
        .len();
    let first = p.json(&["maintain", "retail"]);
    assert!(
        table_report(&first, "bronze.pos_orders")["expired_snapshots"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        small.iter().all(|f| Path::new(f).exists()),
        "the undo point is kept"
    );
    let again = p.json(&["maintain", "retail"]);
    assert_eq!(
        table_report(&again, "bronze.pos_orders")["expired_snapshots"],
        0,
        "silver.orders' next run reads from the snapshot before the compaction"
    );
    // The next run of silver.orders reads bronze as it is now; then the small files go.
    small_load(&p, "retail", "apr", 7600, 4);
    let before = every_table(&p);
    let second = p.json(&["maintain", "retail"]);
    let t = table_report(&second, "bronze.pos_orders");
    assert!(t["deleted_data_files"].as_u64().unwrap() >= 6, "{t}");
    let live: BTreeSet<String> = p.files("bronze.pos_orders").into_keys().collect();
    for f in &small {
        assert_eq!(Path::new(f).exists(), live.contains(f), "{f}");
    }
    assert!(small.iter().filter(|f| !live.contains(*f)).count() >= 6);
    assert!(
        p.json(&["history", "bronze.pos_orders"])
            .as_array()
            .unwrap()
            .len()
            < history_before
    );
    // Every table still reads, the same for every reader; nothing is missing.
    assert_eq!(every_table(&p), before);
    let readers = p.independent_readers();
    for (table, by) in readers.as_object().unwrap() {
        assert_eq!(by["pyiceberg"], by["duckdb"], "{table}");
    }
    for t in p.json(&["check"]).as_array().unwrap() {
        assert!(t["problems"].as_array().unwrap().is_empty(), "{t}");
    }
    // Maintenance leaves nothing behind: every file under the tables is referenced.
    let left = p.json(&["orphans", "--older-than", "0"]);
    assert_eq!(left["orphans"], serde_json::json!([]), "{left}");
    // Undoing an expiry is refused with the reason.
    let (code, message) = p.fails(&["rollback", second["run_id"].as_str().unwrap()]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("cannot be undone"), "{message}");
}

#[test]
fn rows_deleted_from_a_table_are_physically_gone_after_expiry() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let file = "sample-data/retail/orders/pos_2026-03-05.csv";
    let original = std::fs::read_to_string(p.path().join(file)).unwrap();
    let holding: BTreeSet<String> = p.files("bronze.pos_orders").into_keys().collect();
    // The corrected file drops every row but the first: its old rows are rewritten away.
    let corrected: String = original.lines().take(2).map(|l| format!("{l}\n")).collect();
    p.write(file, &corrected);
    p.json(&["run", "retail", "--reload-changed"]);
    let live: BTreeSet<String> = p.files("bronze.pos_orders").into_keys().collect();
    let rewritten: Vec<&String> = holding.difference(&live).collect();
    assert!(!rewritten.is_empty(), "the reload rewrote files");

    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &format!("{spec}\n[maintenance]\nexpire_older_than = \"0s\"\nkeep_runs = 0\n"),
    );
    p.json(&["maintain", "retail", "--expire-protected"]);
    for f in &rewritten {
        assert!(!Path::new(f).exists(), "{f} (old rows) still on disk");
    }
    // On disk, the table's data folder holds exactly its live files now.
    let mut on_disk = BTreeSet::new();
    let data = p.path().join("warehouse/bronze/pos_orders/data");
    let mut stack = vec![data];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                on_disk.insert(path.to_string_lossy().to_string());
            }
        }
    }
    assert_eq!(on_disk, live);
}

#[test]
fn another_writer_during_compaction_is_rebased_and_a_rewrite_of_its_files_skips_that_partition() {
    let p = Project::retail().maintained_by_hand();
    // A writer outside this project (so its locks do not hold it off): a pipeline of another
    // project loading late files into the same bronze table of the same catalog.
    let other = Project::empty();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    let ingest_start = spec.find("[[ingest]]").unwrap();
    let ingest_end = spec[ingest_start + 1..].find("[[ingest]]").unwrap() + ingest_start + 1;
    let late = spec[ingest_start..ingest_end].replace(
        "path = [\"sample-data/retail/orders/*.csv\"]",
        "path = [\"sample-data/late/*.csv\"]",
    );
    let warehouse = p.path().join("warehouse");
    other.write(
        "pipelines/late.toml",
        &format!(
            "[pipeline]\nname = \"late\"\n\n[catalog]\ntype = \"sql\"\nuri = \"sqlite://{0}/catalog.db\"\nwarehouse = \"{0}\"\n\n{late}",
            warehouse.display()
        ),
    );
    let other = other.maintained_by_hand();
    p.json(&["run", "retail"]);
    for k in 0..5 {
        small_load(&p, "retail", &format!("feb_{k}"), 7000 + k, 2);
        other.write(
            &format!("sample-data/late/mar_{k}.csv"),
            &format!(
                "{HEADER}{},3,2026-03-14 10:00:00,Pen,2,1.50,shipped\n",
                7200 + k
            ),
        );
        other.json(&["run", "late"]);
    }
    let rows = |p: &Project| p.query("SELECT count(*), sum(quantity) FROM bronze.pos_orders");
    let start = rows(&p);

    // 1. An append (a new month) lands while maintenance has written its files.
    let gate = p.path().join("gate-1");
    let paused = p.start_paused(
        &["maintain", "retail", "--json"],
        "maintain-written",
        Some(gate),
    );
    other.write(
        "sample-data/late/apr.csv",
        &format!("{HEADER}7300,3,2026-04-02 10:00:00,Pen,5,1.50,shipped\n"),
    );
    other.json(&["run", "late"]);
    let (ok, log) = paused.release();
    assert!(ok, "{log}");
    assert!(log.contains("rebasing"), "{log}");
    let files = files_per_partition(&p, "bronze.pos_orders");
    assert_eq!(files["order_ts_month=2026-02"], 1, "{files:?}");
    assert_eq!(files["order_ts_month=2026-03"], 1, "{files:?}");
    assert_eq!(files["order_ts_month=2026-04"], 1, "{files:?}");
    let appended = rows(&p);
    assert_eq!(
        appended[0][0].as_deref().unwrap().parse::<u64>().unwrap(),
        start[0][0].as_deref().unwrap().parse::<u64>().unwrap() + 1
    );

    // 2. Another writer rewrites a file being compacted: that partition is skipped and
    // reported, the other one is compacted.
    for k in 0..5 {
        small_load(&p, "retail", &format!("feb_more_{k}"), 7400 + k, 2);
        other.write(
            &format!("sample-data/late/mar_more_{k}.csv"),
            &format!(
                "{HEADER}{},3,2026-03-15 10:00:00,Pen,1,1.50,shipped\n",
                7500 + k
            ),
        );
        other.json(&["run", "late"]);
    }
    let gate = p.path().join("gate-2");
    let paused = p.start_paused_piped(&["maintain", "retail", "--json"], "maintain-written", gate);
    // Corrected: the last late March file now holds 4 pens.
    other.write(
        "sample-data/late/mar_more_4.csv",
        &format!("{HEADER}7504,3,2026-03-15 10:00:00,Pen,4,1.50,shipped\n"),
    );
    other.json(&["run", "late", "--reload-changed"]);
    let (ok, log, stdout) = paused.release_with_stdout();
    assert!(ok, "{log}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let t = table_report(&report, "bronze.pos_orders");
    assert_eq!(
        t["skipped_partitions"],
        serde_json::json!(["order_ts_month=2026-03"]),
        "{t}"
    );
    let files = files_per_partition(&p, "bronze.pos_orders");
    assert_eq!(files["order_ts_month=2026-02"], 1, "{files:?}");
    assert!(files["order_ts_month=2026-03"] > 1, "{files:?}");
    // Every row is there once: 10 more orders, the corrected one with 4 pens (not 1).
    let end = rows(&p);
    let count = |r: &Vec<Vec<Option<String>>>| r[0][0].as_deref().unwrap().parse::<u64>().unwrap();
    let sum = |r: &Vec<Vec<Option<String>>>| r[0][1].as_deref().unwrap().parse::<u64>().unwrap();
    assert_eq!(count(&end), count(&appended) + 10);
    assert_eq!(sum(&end), sum(&appended) + 5 + 5 + 3);
    for t in p.json(&["check"]).as_array().unwrap() {
        assert!(t["problems"].as_array().unwrap().is_empty(), "{t}");
    }
}

#[test]
fn orphans_delete_waits_for_a_live_run_and_never_deletes_its_files() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p.write(
        "sample-data/retail/orders/pos_2026-04-02.csv",
        &format!("{HEADER}3001,1,2026-04-01 10:00:00,Tea,4,5.00,shipped\n"),
    );
    let gate = p.path().join("gate");
    let run = p.start_paused(&["run", "retail"], "staged", Some(gate));

    // Below an hour, deleting needs --force.
    let (code, message) = p.fails(&["orphans", "--older-than", "0", "--delete"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("--force"), "{message}");

    // With --force it waits for the run, and deletes nothing the run publishes.
    let mut orphans = p
        .command(&[
            "orphans",
            "--older-than",
            "0",
            "--delete",
            "--force",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        orphans.try_wait().unwrap().is_none(),
        "orphans must wait for the run"
    );
    let (ok, log) = run.release();
    assert!(ok, "{log}");
    let out = orphans.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("waiting"));
    let deleted: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        deleted["orphans"].as_array().unwrap().is_empty(),
        "{deleted}"
    );
    for t in p.json(&["check"]).as_array().unwrap() {
        assert!(t["problems"].as_array().unwrap().is_empty(), "{t}");
    }
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders WHERE order_id = 3001")[0][0].as_deref(),
        Some("1")
    );
}

#[test]
fn after_run_maintenance_keeps_partitions_small_on_a_schedule() {
    // No [maintenance] section: on the embedded catalog, runs maintain by default.
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &format!("{spec}\n[schedule]\ncron = \"0 2 * * *\"\n"),
    );
    for day in 1..=9u32 {
        p.write(
            &format!("sample-data/retail/orders/day_{day}.csv"),
            &format!(
                "{HEADER}{},1,2026-03-{day:02} 10:00:00,Mug,1,9.50,shipped\n",
                8000 + day
            ),
        );
        let now = format!("2026-03-{:02}T02:05:00Z", day + 1);
        let out = p.run(&["schedule", "tick", "--now", &now]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files = files_per_partition(&p, "bronze.pos_orders");
        assert!(files.values().all(|n| *n <= 4), "day {day}: {files:?}");
    }
    let runs = p.json(&["runs"]);
    let kinds: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "run").count(),
        9,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"maintain"), "{kinds:?}");
    // A maintenance only touches tables its run changed.
    let records = runs.as_array().unwrap();
    for (i, r) in records
        .iter()
        .enumerate()
        .filter(|(_, r)| r["kind"] == "maintain")
    {
        let run_tables: BTreeSet<&str> = records[i - 1]["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["table"].as_str().unwrap())
            .collect();
        for t in r["tables"].as_array().unwrap() {
            assert!(run_tables.contains(t["table"].as_str().unwrap()), "{r}");
        }
    }
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders WHERE order_id > 8000")[0][0].as_deref(),
        Some("9")
    );
}

#[test]
fn maintenance_settings_are_checked_with_their_position() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    let line = spec.lines().count() + 3;
    for (bad, says) in [
        ("min_input_files = 1", "min_input_files must be at least 2"),
        ("expire_older_than = \"5 days\"", "is not a duration"),
        ("compact = true", "unknown field `compact`"),
    ] {
        p.write(
            "pipelines/retail.toml",
            &format!("{spec}\n[maintenance]\n{bad}\n"),
        );
        let (code, message) = p.fails(&["maintain", "retail", "--plan"]);
        assert_eq!(code, 2, "{message}");
        assert!(message.contains(says), "{message}");
        assert!(
            message.contains(&format!("retail.toml:{line}:")),
            "{message}"
        );
    }
    p.write("pipelines/retail.toml", &spec);
    let (code, message) = p.fails(&["maintain", "retail", "--tables", "gold.nope"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("does not write gold.nope"), "{message}");
}

#[test]
fn many_small_manifests_are_rewritten_into_one() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &format!(
            "{spec}\n[maintenance]\nafter_run = false\nmax_manifests = 2\nmin_input_files = 50\n"
        ),
    );
    p.json(&["run", "retail"]);
    for k in 0..3 {
        small_load(&p, "retail", &format!("jan_{k}"), 7000 + k, 1);
    }
    let before = every_table(&p);
    let readers = p.independent_readers();
    let plan = p.json(&["maintain", "retail", "--plan"]);
    let planned = table_report(&plan, "bronze.pos_orders");
    assert!(planned["manifests"].as_u64().unwrap() > 2, "{planned}");
    assert_eq!(planned["rewrite_manifests"], true);
    let done = p.json(&["maintain", "retail"]);
    assert_eq!(
        table_report(&done, "bronze.pos_orders")["rewrite_manifests"],
        true
    );
    let after = p.json(&["maintain", "retail", "--plan"]);
    assert_eq!(
        table_report(&after, "bronze.pos_orders")["manifests"],
        1,
        "{after}"
    );
    assert_eq!(every_table(&p), before);
    assert_eq!(p.independent_readers(), readers);
    let history = p.json(&["history", "bronze.pos_orders"]);
    let last = history.as_array().unwrap().last().unwrap();
    assert_eq!(last["operation"], "replace");
    assert_eq!(last["added_files"], 0);
    assert_eq!(last["deleted_files"], 0);
}

/// Issue 32: `pipeline tables` and `schedule status` say which tables need maintenance, why,
/// and the command that does it; with runs maintaining their tables (the default) nothing is
/// due after them.
#[test]
fn tables_and_schedule_status_say_when_maintenance_is_due_and_how() {
    let by_hand = Project::retail();
    let spec = std::fs::read_to_string(by_hand.path().join("pipelines/retail.toml")).unwrap();
    let with_schedule = format!("{spec}\n[schedule]\ncron = \"0 2 * * *\"\n");
    by_hand.write(
        "pipelines/retail.toml",
        &format!("{with_schedule}\n[maintenance]\nafter_run = false\n"),
    );
    let by_default = Project::retail();
    by_default.write("pipelines/retail.toml", &with_schedule);
    for p in [&by_hand, &by_default] {
        p.json(&["run", "retail"]);
        for k in 0..6 {
            small_load(p, "retail", &format!("mar_{k}"), 7100 + k, 3);
        }
    }
    let due_of = |p: &Project| -> Vec<Value> {
        p.json(&["tables"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.get("maintenance_due").is_some())
            .cloned()
            .collect()
    };
    let due = due_of(&by_hand);
    assert_eq!(due.len(), 1, "{due:?}");
    assert_eq!(due[0]["table"], "bronze.pos_orders");
    assert_eq!(
        due[0]["maintenance_due"],
        serde_json::json!({"why": ["compact 1 partition (7 small files)"], "command": "pipeline maintain retail"})
    );
    let text = String::from_utf8(by_hand.run(&["tables"]).stdout).unwrap();
    assert!(
        text.contains("maintenance due: bronze.pos_orders: compact 1 partition (7 small files); run `pipeline maintain retail`"),
        "{text}"
    );
    let status = by_hand.json(&["schedule", "status", "--now", "2026-03-20T03:00:00Z"]);
    assert_eq!(
        status[0]["maintenance_due"][0]["table"], "bronze.pos_orders",
        "{status}"
    );

    // The command it names does it; then nothing is due.
    by_hand.json(&["maintain", "retail"]);
    assert!(due_of(&by_hand).is_empty());
    // Runs maintaining their tables (the default): nothing is due after them.
    assert!(due_of(&by_default).is_empty());
    let status = by_default.json(&["schedule", "status", "--now", "2026-03-20T03:00:00Z"]);
    assert_eq!(
        status[0]["maintenance_due"],
        serde_json::json!([]),
        "{status}"
    );
}

/// Issue 32: what the newest `keep_runs` runs can be rolled back to is never expired, however
/// old (a weekly pipeline keeps its last runs' undo); `keep_runs = 0` leaves only the window.
#[test]
fn the_newest_runs_stay_undoable_whatever_their_age() {
    for (keep_runs, undoable) in [("", true), ("keep_runs = 0\n", false)] {
        let p = Project::retail();
        let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
        p.write(
            "pipelines/retail.toml",
            &format!(
                "{spec}\n[maintenance]\nafter_run = false\nexpire_older_than = \"0s\"\n{keep_runs}"
            ),
        );
        p.json(&["run", "retail"]);
        small_load(&p, "retail", "mar_0", 7400, 3);
        let runs = p.json(&["runs"]);
        let newest = runs.as_array().unwrap().last().unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_string();
        let info = p.json(&["run-info", &newest]);
        let before = info["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == "bronze.pos_orders")
            .and_then(|t| crate::common::id(&t["snapshot_before"]))
            .unwrap();
        p.json(&["maintain", "retail"]);
        let history = p.json(&["history", "bronze.pos_orders"]);
        let kept = history
            .as_array()
            .unwrap()
            .iter()
            .any(|s| crate::common::id(&s["snapshot_id"]) == Some(before));
        assert_eq!(kept, undoable, "keep_runs {keep_runs:?}: {history}");
    }
}

/// Issue 32: a year of weekly ticks with no `[maintenance]` section (so maintenance after
/// every run, with the default window), the clock moved to each tick (PIPELINE_CLOCK_SKEW) so
/// that snapshots and run records age as over a real year. The table's history stays short
/// and its files few; the newest runs can still be rolled back, and the rollback restores
/// their rows; an old run's cannot, and the refusal names the maintenance that expired it.
#[test]
fn a_rollback_within_the_default_window_still_works_after_a_year_of_ticks() {
    use chrono::{Datelike, Duration as Days, Utc};
    let mut p = Project::empty();
    p.write(
        "pipelines/p.toml",
        "[pipeline]\nname = \"p\"\n\n[schedule]\ncron = \"0 2 * * 1\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = { day = \"date\", n = \"long\" }\n\n[[transform]]\ntable = \"silver.s\"\nsql = \"sql/s.sql\"\n",
    );
    p.write(
        "sql/s.sql",
        "SELECT count(*) AS weeks, sum(n) AS total FROM bronze.t\n",
    );
    // Mondays, from one at least a week ahead: every tick is in the future of the real clock.
    let first = Utc::now().date_naive() + Days::days(7);
    let first = first + Days::days((7 - first.weekday().num_days_from_monday() as i64) % 7);
    let weeks = 53;
    for week in 0..weeks {
        let day = first + Days::weeks(week);
        p.write(
            &format!("data/{day}.csv"),
            &format!("day,n\n{day},{}\n", week + 1),
        );
        let at = day.and_hms_opt(2, 5, 0).unwrap().and_utc();
        p.env = vec![(
            "PIPELINE_CLOCK_SKEW".into(),
            (at - Utc::now()).num_seconds().to_string(),
        )];
        let t = p.json(&["schedule", "tick", "--now", &at.to_rfc3339()])[0].clone();
        assert_eq!(t["result"], "ran", "week {week}: {t}");
    }
    let history = p.json(&["history", "bronze.t"]);
    let kept = history.as_array().unwrap().len();
    assert!(
        kept <= 25,
        "{kept} snapshots kept after {weeks} runs: {history}"
    );
    assert!(p.json(&["files", "bronze.t"]).as_array().unwrap().len() <= 4);
    let runs: Vec<Value> = p
        .json(&["runs"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "run")
        .cloned()
        .collect();
    assert_eq!(runs.len(), weeks as usize);
    // The second run's rollback point (the first run's snapshot) is a year old: expired.
    let snapshot_of = |run: &Value, key: &str| {
        run["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == "bronze.t")
            .and_then(|t| crate::common::id(&t[key]))
            .unwrap()
    };
    let in_history = |id: i64| {
        history
            .as_array()
            .unwrap()
            .iter()
            .any(|s| crate::common::id(&s["snapshot_id"]) == Some(id))
    };
    assert!(!in_history(snapshot_of(&runs[1], "snapshot_before")));
    // The tenth newest run's rollback point is kept, whatever its age (keep_runs = 10).
    for run in &runs[runs.len() - 10..] {
        let before = snapshot_of(run, "snapshot_before");
        assert!(in_history(before), "{before} not in {history}");
    }
    // The newest runs roll back, newest first (each after its own maintenance): the rows of
    // their weeks go.
    let total = |p: &Project| p.query("SELECT weeks, total FROM silver.s");
    let sum_to = |w: u64| (1..=w).sum::<u64>().to_string();
    let weeks = weeks as u64;
    assert_eq!(
        total(&p),
        vec![vec![Some(weeks.to_string()), Some(sum_to(weeks))]]
    );
    for back in 1..=3u64 {
        let run = runs[runs.len() - back as usize]["run_id"].as_str().unwrap();
        p.json(&["rollback", run]);
        assert_eq!(
            total(&p),
            vec![vec![
                Some((weeks - back).to_string()),
                Some(sum_to(weeks - back))
            ]],
            "after rolling back {back} run(s)"
        );
    }
}
