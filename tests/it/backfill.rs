//! Incremental runs and backfill: a partition range is recomputed from the inputs as they are
//! and replaces exactly those partitions. Every other partition's data files stay referenced
//! and byte-for-byte identical; the result equals a clean full run on the same inputs; and
//! PyIceberg and DuckDB read what the engine reads.

use std::collections::BTreeMap;

use crate::common::{action, Project};

type Files = BTreeMap<String, (String, String)>;

/// Files of `partition` and of every other partition.
fn split(files: &Files, partition: &str) -> (Files, Files) {
    files
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(_, (p, _))| p == partition)
}

const TRANSFORMS: [&str; 6] = [
    "silver.orders",
    "silver.customers",
    "gold.fact_orders",
    "gold.customer_metrics",
    "gold.monthly_revenue",
    "gold.repeat_buyers",
];

#[test]
fn backfill_replaces_exactly_the_selected_month_and_leaves_other_files_untouched() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let contents: Vec<_> = TRANSFORMS.iter().map(|t| p.contents(t)).collect();
    let feb_rows = p.query(
        "SELECT count(*) FROM silver.orders WHERE order_date >= '2026-02-01' AND order_date < '2026-03-01'",
    )[0][0]
        .clone()
        .unwrap();
    let before: Vec<Files> = ["silver.orders", "gold.fact_orders"]
        .iter()
        .map(|t| p.files(t))
        .collect();

    let report = p.json(&[
        "backfill",
        "retail",
        "--from",
        "2026-02-01",
        "--to",
        "2026-02-28",
    ]);
    let actions: BTreeMap<&str, &str> = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["table"].as_str().unwrap(), j["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions["silver.orders"],
        "replace month(order_date) in 2026-02"
    );
    assert_eq!(
        actions["gold.fact_orders"],
        "replace month(order_date) in 2026-02"
    );
    // No ingest job runs in a backfill, and silver.customers is not downstream of the selection.
    assert!(!actions.contains_key("bronze.pos_orders"));
    assert!(!actions.contains_key("silver.customers"));

    for (table, old) in ["silver.orders", "gold.fact_orders"].iter().zip(&before) {
        let new = p.files(table);
        let (old_feb, old_rest) = split(old, "order_date_month=2026-02");
        let (new_feb, new_rest) = split(&new, "order_date_month=2026-02");
        // January and March: the very same files, still referenced, byte-for-byte unchanged.
        assert!(!old_rest.is_empty());
        assert_eq!(
            new_rest, old_rest,
            "{table}: files outside February changed"
        );
        // February: every old file replaced by new ones.
        assert!(!new_feb.is_empty() && !old_feb.is_empty());
        assert!(new_feb.keys().all(|k| !old_feb.contains_key(k)), "{table}");
    }
    // Same inputs, same results.
    for (t, c) in TRANSFORMS.iter().zip(&contents) {
        assert_eq!(&p.contents(t), c, "{t}");
    }

    // The snapshot is a replace with honest counts, and the run record says which partitions.
    let history = p.json(&["history", "silver.orders"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["operation"], "overwrite");
    assert_eq!(last["added_records"].to_string(), feb_rows);
    assert_eq!(last["deleted_records"].to_string(), feb_rows);
    assert_eq!(last["total_records"], 39);
    let info = p.json(&["run-info", report["run_id"].as_str().unwrap()]);
    assert_eq!(info["kind"], "backfill");
    let orders = info["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "silver.orders")
        .unwrap()
        .clone();
    assert_eq!(orders["operation"], "replace_partitions");
    assert_eq!(orders["partitions"], "month(order_date) in 2026-02");

    // Independent readers see the replace, not old and new February together.
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["silver.orders"][reader]["rows"], 39, "{reader}");
        assert_eq!(readers["gold.fact_orders"][reader]["rows"], 39, "{reader}");
        assert_eq!(
            readers["gold.fact_orders"][reader]["sums"]["amount"],
            p.query("SELECT sum(amount) FROM gold.fact_orders")[0][0]
                .clone()
                .unwrap()
                .as_str(),
            "{reader}"
        );
    }

    // And it is undone like any run.
    p.json(&["rollback", report["run_id"].as_str().unwrap()]);
    assert_eq!(p.files("silver.orders"), before[0]);
}

#[test]
fn backfill_plan_reads_one_month_and_changes_nothing() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let tables = p.tables();
    let snapshots: Vec<i64> = tables.iter().map(|t| p.current_snapshot(t)).collect();
    let plan = p.json(&[
        "backfill",
        "retail",
        "--from",
        "2026-01-10",
        "--to",
        "2026-01-20",
        "--tables",
        "silver.orders",
        "--plan",
    ]);
    let plan = plan.as_array().unwrap();
    let names: Vec<&str> = plan.iter().map(|t| t["table"].as_str().unwrap()).collect();
    // silver.orders and everything downstream of it, in dependency order.
    assert_eq!(names[0], "silver.orders");
    assert_eq!(names.len(), 5);
    assert!(!names.contains(&"silver.customers"));
    // A range inside January replaces the whole month partition.
    assert_eq!(plan[0]["action"], "replace month(order_date) in 2026-01");
    let pos = plan[0]["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["table"] == "bronze.pos_orders")
        .unwrap();
    assert_eq!(pos["read"], "range");
    // Only January's bronze files are read: fewer files and bytes than the whole table.
    let all_pos = p.files("bronze.pos_orders");
    let january = all_pos
        .values()
        .filter(|(part, _)| part == "order_ts_month=2026-01")
        .count();
    assert_eq!(pos["files"].as_u64().unwrap() as usize, january);
    assert!(january > 0 && january < all_pos.len());
    assert_eq!(plan[1]["table"], "gold.fact_orders");
    assert_eq!(plan[1]["action"], "replace month(order_date) in 2026-01");

    let after: Vec<i64> = tables.iter().map(|t| p.current_snapshot(t)).collect();
    assert_eq!(after, snapshots, "--plan changed a table");
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), 1);
}

/// Two late orders: one for January (an existing month), one for April (a new one).
const LATE: &str = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
                    3001,1,2026-01-20 10:00:00,Tea,4,5.00,shipped\n\
                    3002,2,2026-04-02 11:00:00,Mug,1,7.50,placed\n";

#[test]
fn late_rows_recompute_only_their_months_and_match_a_clean_run() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let before = p.files("silver.orders");
    p.write("sample-data/retail/orders/pos_late.csv", LATE);
    let report = p.json(&["run", "retail"]);
    let action = |t: &str| action(&report, t);
    assert_eq!(
        action("silver.orders"),
        "replace month(order_date) in 2026-01, 2026-04"
    );
    assert_eq!(
        action("gold.fact_orders"),
        "replace month(order_date) in 2026-01, 2026-04"
    );
    assert_eq!(action("silver.customers"), "up to date");
    assert_eq!(
        action("gold.monthly_revenue"),
        "replace month(month) in 2026-01, 2026-04"
    );
    assert!(action("gold.customer_metrics").starts_with("full refresh"));
    // February and March files are untouched.
    let after = p.files("silver.orders");
    for month in ["2026-02", "2026-03"] {
        let part = format!("order_date_month={month}");
        assert_eq!(split(&after, &part).0, split(&before, &part).0, "{month}");
    }

    // A clean project that gets every file in one run computes the same tables.
    let clean = Project::retail();
    clean.write("sample-data/retail/orders/pos_late.csv", LATE);
    clean.json(&["run", "retail"]);
    for t in TRANSFORMS {
        assert_eq!(p.contents(t), clean.contents(t), "{t}");
    }

    // A third run has nothing to do: no table moves.
    let snapshots: Vec<i64> = TRANSFORMS.iter().map(|t| p.current_snapshot(t)).collect();
    let third = p.json(&["run", "retail"]);
    assert!(third["tables"].as_array().unwrap().is_empty());
    let again: Vec<i64> = TRANSFORMS.iter().map(|t| p.current_snapshot(t)).collect();
    assert_eq!(again, snapshots);
}

#[test]
fn backfill_arguments_are_checked() {
    let p = Project::retail();
    let (code, err) = p.fails(&[
        "backfill",
        "retail",
        "--from",
        "2026-03-01",
        "--to",
        "2026-02-01",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--to 2026-02-01 is before --from 2026-03-01"),
        "{err}"
    );
    let (_, err) = p.fails(&[
        "backfill",
        "retail",
        "--from",
        "2026-03-01",
        "--to",
        "2026-03-31",
        "--tables",
        "silver.customers",
    ]);
    assert!(
        err.contains("--tables silver.customers: not a transform of `retail` partitioned by year, month, day or hour; those are: silver.orders, gold.fact_orders"),
        "{err}"
    );
    let (_, err) = p.fails(&[
        "backfill",
        "retail",
        "--from",
        "March",
        "--to",
        "2026-03-31",
    ]);
    assert!(
        err.contains("--from March: expected a date as YYYY-MM-DD"),
        "{err}"
    );
}

#[test]
fn a_month_whose_rows_disappear_is_deleted_by_partition() {
    let p = Project::retail();
    p.write(
        "sample-data/retail/orders/pos_april.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         3002,2,2026-04-02 11:00:00,Mug,1,7.50,placed\n",
    );
    p.json(&["run", "retail"]);
    let before = p.files("silver.orders");
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders WHERE order_date >= '2026-04-01'")[0][0]
            .as_deref(),
        Some("1")
    );
    // The April export is corrected to nothing: reloading it leaves April without orders.
    p.write(
        "sample-data/retail/orders/pos_april.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n",
    );
    let report = p.json(&["run", "retail", "--reload-changed"]);
    let action = |t: &str| action(&report, t);
    assert_eq!(
        action("silver.orders"),
        "replace month(order_date) in 2026-04"
    );
    assert_eq!(
        action("gold.monthly_revenue"),
        "replace month(month) in 2026-04"
    );
    for table in ["silver.orders", "gold.fact_orders", "gold.monthly_revenue"] {
        // A delete snapshot: April's files DELETED, nothing added, the rest untouched.
        let history = p.json(&["history", table]);
        let last = history.as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["operation"], "delete", "{table}");
        assert_eq!(last["added_records"], 0, "{table}");
        assert_eq!(last["deleted_records"], 1, "{table}");
        assert!(p
            .files(table)
            .values()
            .all(|(part, _)| !part.ends_with("=2026-04")));
    }
    let after = p.files("silver.orders");
    let kept: Files = before
        .into_iter()
        .filter(|(_, (part, _))| part != "order_date_month=2026-04")
        .collect();
    assert_eq!(after, kept);
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["silver.orders"][reader]["rows"], 39, "{reader}");
        assert_eq!(
            readers["gold.monthly_revenue"][reader]["rows"], 3,
            "{reader}"
        );
    }
    // Same as a clean run without the April file.
    let clean = Project::retail();
    clean.json(&["run", "retail"]);
    for t in TRANSFORMS {
        assert_eq!(p.contents(t), clean.contents(t), "{t}");
    }
}
