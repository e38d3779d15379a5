//! `pipeline run --env NAME`: every table the run changes is written to its Iceberg branch
//! NAME; `main` does not move (its snapshots, its rows as PyIceberg reads them); the branch is
//! read back by PyIceberg by name; a second run in the environment finds it up to date (it
//! reads the branch), a run on `main` finds `main` as it was; maintenance on `main` keeps the
//! branch's files.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::common::{repo, Project};

const TABLES: [&str; 9] = [
    "bronze.pos_orders",
    "bronze.web_orders",
    "bronze.customers",
    "silver.orders",
    "silver.customers",
    "gold.fact_orders",
    "gold.customer_metrics",
    "gold.monthly_revenue",
    "gold.repeat_buyers",
];

pub(crate) fn main_snapshots(p: &Project) -> BTreeMap<&'static str, i64> {
    TABLES.iter().map(|t| (*t, p.current_snapshot(t))).collect()
}

/// PyIceberg's values of `column` of `table` on `main` and on branch `branch`.
fn pyiceberg(p: &Project, table: &str, branch: &str, column: &str) -> Value {
    let warehouse = p.path().join("warehouse");
    let out = Command::new("python3")
        .arg(repo().join("tests/interop/read_branch.py"))
        .arg(warehouse.join("catalog.db"))
        .arg(&warehouse)
        .args(["default", table, branch, column])
        .output()
        .expect("python3 must be installed (see tests/run-all.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// silver_customers.sql on disk lower-cases countries instead of upper-casing them; returns
/// the original text, for [`set_customers_sql`].
pub(crate) fn lower_case_countries(p: &Project) -> String {
    let original = std::fs::read_to_string(customers_sql(p)).unwrap();
    let changed = original.replace("upper(trim(country))", "lower(trim(country))");
    assert_ne!(changed, original);
    set_customers_sql(p, &changed);
    original
}

fn customers_sql(p: &Project) -> std::path::PathBuf {
    p.path().join("sql/retail/silver_customers.sql")
}

fn set_customers_sql(p: &Project, text: &str) {
    std::fs::write(customers_sql(p), text).unwrap();
}

/// The tables a run report says wrote a snapshot, sorted.
pub(crate) fn written(report: &Value) -> Vec<String> {
    crate::common::written_tables(report).into_iter().collect()
}

#[test]
fn a_run_in_an_environment_writes_branches_and_leaves_main_untouched() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let before = main_snapshots(&p);
    let original = lower_case_countries(&p);

    let report = p.json(&["run", "retail", "--env", "dev"]);
    // The changed table and everything downstream of it (fact_orders is recomputed whole,
    // so its readers follow), on the branch.
    assert_eq!(
        written(&report),
        [
            "gold.customer_metrics",
            "gold.fact_orders",
            "gold.monthly_revenue",
            "gold.repeat_buyers",
            "silver.customers"
        ]
    );
    assert_eq!(main_snapshots(&p), before, "main moved");
    let countries = pyiceberg(&p, "silver.customers", "dev", "country");
    let main: Vec<&str> = countries["main"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let dev: Vec<&str> = countries["branch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(main.iter().all(|c| *c == c.to_uppercase()), "{main:?}");
    assert!(dev.iter().all(|c| *c == c.to_lowercase()), "{dev:?}");
    assert_eq!(main.len(), dev.len());
    let upper: Vec<String> = dev.iter().map(|c| c.to_uppercase()).collect();
    assert_eq!(upper, main);
    // A table the run did not change has no branch: it is read from main.
    assert!(pyiceberg(&p, "silver.orders", "dev", "order_id")["branch"].is_null());

    // The environment is read back as its branch: nothing left to do there.
    let again = p.json(&["run", "retail", "--env", "dev"]);
    assert!(written(&again).is_empty(), "{again}");
    // Main, with the SQL it was built with, is as it was: nothing to do either.
    set_customers_sql(&p, &original);
    let on_main = p.json(&["run", "retail"]);
    assert!(written(&on_main).is_empty(), "{on_main}");

    // The record says where it wrote; there is nothing on main to undo.
    let runs = p.json(&["runs"]);
    let dev_run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["env"] == "dev" && !r["tables"].as_array().unwrap().is_empty())
        .expect("the dev run's record");
    let (code, message) = p.fails(&["rollback", dev_run["run_id"].as_str().unwrap()]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("wrote to environment `dev`"), "{message}");

    // Maintenance of main keeps every file the branch needs.
    p.json(&["maintain", "retail"]);
    let after = pyiceberg(&p, "silver.customers", "dev", "country");
    assert_eq!(after["branch"], countries["branch"]);
    let metrics = pyiceberg(&p, "gold.customer_metrics", "dev", "country");
    assert!(!metrics["branch"].as_array().unwrap().is_empty());

    // The environment is listed with the five tables that have its branch, then dropped in
    // one recorded publish; main stays where it was.
    let listed = p.json(&["env", "list", "retail"]);
    assert_eq!(listed[0]["env"], "dev", "{listed}");
    assert_eq!(
        listed[0]["tables"].as_object().unwrap().len(),
        5,
        "{listed}"
    );
    let main_now = main_snapshots(&p);
    let dropped = p.json(&["env", "drop", "retail", "dev", "--reason", "merged"]);
    assert_eq!(dropped["tables"].as_array().unwrap().len(), 5, "{dropped}");
    assert_eq!(main_snapshots(&p), main_now);
    assert!(pyiceberg(&p, "silver.customers", "dev", "country")["branch"].is_null());
    assert_eq!(p.json(&["env", "list", "retail"]), serde_json::json!([]));
    let (code, message) = p.fails(&["env", "drop", "retail", "dev"]);
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("no table of pipeline `retail` has environment `dev`; environments: none"),
        "{message}"
    );
    let (code, message) = p.fails(&["env", "drop", "retail", "../x"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("is not an environment name"), "{message}");
}

#[test]
fn an_environment_name_must_be_a_name_and_not_main() {
    let p = Project::retail();
    for bad in ["main", "a b", "../x", "-x"] {
        let (code, message) = p.fails(&["run", "retail", &format!("--env={bad}")]);
        assert_eq!(code, 2, "{bad}: {message}");
        assert!(
            message.contains("is not an environment name"),
            "{bad}: {message}"
        );
    }
}

/// The rows of `sql`, as text.
fn rows(p: &Project, sql: &str) -> Vec<Vec<Option<String>>> {
    p.query(sql)
}

#[test]
fn publishing_an_environment_moves_main_at_once_and_rollback_undoes_it() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let before = main_snapshots(&p);
    let countries = "SELECT DISTINCT country FROM silver.customers ORDER BY 1";
    let upper = rows(&p, countries);
    lower_case_countries(&p);
    p.json(&["run", "retail", "--env", "dev"]);
    let heads = p.json(&["env", "list", "retail"])[0]["tables"].clone();

    // The diff: every customer row differs in country only, so each is added and removed;
    // the count is main's own; exit 1 (they differ).
    let customers = rows(&p, "SELECT count(*) FROM silver.customers")[0][0]
        .clone()
        .unwrap();
    let diff = p.json_failing(&[
        "env",
        "diff",
        "retail",
        "dev",
        "--tables",
        "silver.customers",
    ]);
    let table = &diff[0];
    assert_eq!(table["table"], "silver.customers", "{diff}");
    assert_eq!(table["added"].to_string(), customers, "{diff}");
    assert_eq!(table["removed"].to_string(), customers, "{diff}");
    assert_eq!(table["main_rows"], table["env_rows"], "{diff}");
    assert!(table["schema"].as_array().unwrap().is_empty(), "{diff}");
    let country = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "country")
        .unwrap();
    for row in table["sample_added"].as_array().unwrap() {
        let c = row[country].as_str().unwrap();
        assert_eq!(c, c.to_lowercase(), "{diff}");
    }

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
    let lower: Vec<Vec<Option<String>>> = upper
        .iter()
        .map(|r| vec![r[0].as_ref().map(|c| c.to_lowercase())])
        .collect();
    assert_eq!(rows(&p, countries), lower);
    // Publishing again finds nothing to move; main and the environment are equal (exit 0).
    let again = p.json(&["env", "publish", "retail", "dev"]);
    assert!(again["run_id"].is_null(), "{again}");
    assert_eq!(
        p.json(&["env", "diff", "retail", "dev"]),
        serde_json::json!([])
    );

    // One rollback puts main back, every table at once.
    p.json(&["rollback", published["run_id"].as_str().unwrap()]);
    assert_eq!(main_snapshots(&p), before);
    assert_eq!(rows(&p, countries), upper);
}

#[test]
fn an_environment_whose_main_moved_is_not_published() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let original = lower_case_countries(&p);
    p.json(&["run", "retail", "--env", "dev"]);
    // Meanwhile main moves (the original SQL, recomputed whole).
    set_customers_sql(&p, &original);
    p.json(&["run", "retail", "--full-refresh"]);
    let before = main_snapshots(&p);
    let (code, message) = p.fails(&["env", "publish", "retail", "dev"]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.contains("main moved since environment `dev` was made, in "),
        "{message}"
    );
    assert!(message.contains("silver.customers"), "{message}");
    assert!(message.contains("nothing was published"), "{message}");
    assert!(message.contains("--rebase"), "{message}");
    assert_eq!(main_snapshots(&p), before);

    // --rebase: the environment (its SQL in the project again) runs on top of main's new
    // state, then publishes; main has the environment's rows, built on main's history.
    let upper = rows(
        &p,
        "SELECT DISTINCT country FROM silver.customers ORDER BY 1",
    );
    lower_case_countries(&p);
    let published = p.json(&["env", "publish", "retail", "dev", "--rebase"]);
    assert_eq!(
        published["tables"].as_array().unwrap().len(),
        5,
        "{published}"
    );
    let lower: Vec<Vec<Option<String>>> = upper
        .iter()
        .map(|r| vec![r[0].as_ref().map(|c| c.to_lowercase())])
        .collect();
    assert_eq!(
        rows(
            &p,
            "SELECT DISTINCT country FROM silver.customers ORDER BY 1"
        ),
        lower
    );
    let now = main_snapshots(&p);
    assert_eq!(now["silver.orders"], before["silver.orders"]);
    assert_ne!(now["silver.customers"], before["silver.customers"]);
    // The new heads descend from main as it was: the publish was a fast-forward.
    let history = p.json(&["history", "silver.customers"]);
    let ids: Vec<i64> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|s| crate::common::id(&s["snapshot_id"]).unwrap())
        .collect();
    assert!(ids.contains(&before["silver.customers"]), "{history}");
}

/// A row edit made in an environment is not in the SQL: --rebase, which would start the
/// branches again from main, refuses and changes nothing.
#[test]
fn rebase_refuses_to_lose_a_row_edit_made_in_the_environment() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let delete = "DELETE FROM silver.customers WHERE customer_id = 2";
    let edit = p.json(&["sql", delete, "--env", "dev"]);
    p.json(&["run", "retail", "--full-refresh"]);
    let before = main_snapshots(&p);
    let heads = p.json(&["env", "list", "retail"]);
    let (code, message) = p.fails(&["env", "publish", "retail", "dev", "--rebase"]);
    assert_eq!(code, 1, "{message}");
    assert!(message.contains("lose its row edits"), "{message}");
    assert!(
        message.contains(edit["record"]["run_id"].as_str().unwrap()),
        "{message}"
    );
    assert_eq!(main_snapshots(&p), before);
    assert_eq!(p.json(&["env", "list", "retail"]), heads);
}

#[test]
fn a_purge_is_refused_while_an_environment_still_holds_the_rows() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let original = lower_case_countries(&p);
    p.json(&["run", "retail", "--env", "dev"]);
    set_customers_sql(&p, &original);
    let before = main_snapshots(&p);
    let erase = [
        "erase",
        "retail",
        "--where",
        "customer_id = 5",
        "--reason",
        "request 7",
        "--purge",
    ];
    let (code, message) = p.fails(&erase);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("environment branches (dev)"), "{message}");
    assert!(message.contains("nothing was changed"), "{message}");
    assert_eq!(main_snapshots(&p), before);
    // An erase without purge changes main only: its receipt says the branches hold the rows.
    let plan = ["erase", "retail", "--where", "customer_id = 5", "--plan"];
    let planned = p.json(&plan);
    let history = planned["erase"]["history"].as_str().unwrap();
    assert!(
        history.contains("environment(s) dev still hold"),
        "{history}"
    );
    // Dropped, the purge goes through.
    p.json(&["env", "drop", "retail", "dev"]);
    let planned = p.json(&plan);
    let history = planned["erase"]["history"].as_str().unwrap();
    assert!(!history.contains("environment"), "{history}");
    p.json(&erase);
    assert_eq!(
        p.query("SELECT count(*) FROM silver.customers WHERE customer_id = 5")[0][0].as_deref(),
        Some("0")
    );
}

/// `field` of every element of `list`, as strings.
fn each(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c[field].as_str().unwrap().to_string())
        .collect()
}

/// The names of `table`'s columns, as `describe` (the table's current schema) gives them.
fn columns(p: &Project, table: &str) -> Vec<String> {
    each(&p.json(&["describe", table])["columns"], "name")
}

/// A schema is the table's, not a branch's: a column an environment adds is not seen by
/// readers of `main` (the table's current schema stays), the environment reads it, finds
/// itself up to date, and its publish makes the schema the table's.
#[test]
fn a_column_added_in_an_environment_is_not_seen_on_main_until_published() {
    column_added_in_an_environment(&Project::retail());
}

/// The body of [`a_column_added_in_an_environment_is_not_seen_on_main_until_published`], on
/// any catalog.
pub(crate) fn column_added_in_an_environment(p: &Project) {
    p.json(&["run", "retail"]);
    let before = columns(p, "silver.customers");
    let original = std::fs::read_to_string(customers_sql(p)).unwrap();
    let changed = original.replace(
        "upper(trim(country)) AS country",
        "upper(trim(country)) AS country, 1 AS extra",
    );
    assert_ne!(changed, original);
    set_customers_sql(p, &changed);

    p.json(&["run", "retail", "--env", "dev"]);
    assert_eq!(columns(p, "silver.customers"), before);
    let sql = "SELECT extra, count(*) FROM silver.customers GROUP BY 1";
    let on_dev = p.query_result(&["query", sql, "--env", "dev"]).1;
    let customers = p.query("SELECT count(*) FROM silver.customers");
    assert_eq!(
        on_dev,
        [vec![Some("1".to_string()), customers[0][0].clone()]]
    );
    let again = p.json(&["run", "retail", "--env", "dev"]);
    assert!(written(&again).is_empty(), "{again}");
    let diff = p.json_failing(&[
        "env",
        "diff",
        "retail",
        "dev",
        "--tables",
        "silver.customers",
    ]);
    assert_eq!(
        diff[0]["schema"],
        serde_json::json!(["added extra long"]),
        "{diff}"
    );

    p.json(&["env", "publish", "retail", "dev"]);
    assert_eq!(columns(p, "silver.customers").len(), before.len() + 1);
    assert_eq!(p.query(sql), on_dev);
}

/// The rows an erase plan would take out of `table` (0 when it holds none).
fn erase_rows(plan: &Value, table: &str) -> u64 {
    plan["erase"]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table)
        .map(|t| t["rows"].as_u64().unwrap())
        .unwrap_or(0)
}

/// `pipeline sql --env dev` changes the table's branch `dev` only (recorded with its
/// environment, nothing on main to undo); `erase --plan --env dev` plans on what the
/// environment holds; an erase itself is on main only.
#[test]
fn a_row_change_and_an_erase_plan_in_an_environment() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let before = main_snapshots(&p);
    let count = "SELECT count(*) FROM silver.customers";
    let customers: u64 = p.query(count)[0][0].as_deref().unwrap().parse().unwrap();
    let delete = "DELETE FROM silver.customers WHERE customer_id = 2";
    let changed = p.json(&["sql", delete, "--env", "dev", "--reason", "try"]);
    assert_eq!(changed["rows"], 1, "{changed}");
    assert_eq!(changed["record"]["env"], "dev", "{changed}");
    assert_eq!(changed["record"]["undo"], "", "{changed}");
    assert_eq!(main_snapshots(&p), before);
    assert_eq!(p.query(count)[0][0], Some(customers.to_string()));
    let on_dev = p.query_result(&["query", count, "--env", "dev"]).1;
    assert_eq!(on_dev[0][0], Some((customers - 1).to_string()));
    let (code, message) = p.fails(&["rollback", changed["record"]["run_id"].as_str().unwrap()]);
    assert_eq!(code, 2, "{message}");

    let erase = ["erase", "retail", "--where", "customer_id = 2", "--plan"];
    let on_main = p.json(&erase);
    assert_eq!(erase_rows(&on_main, "silver.customers"), 1, "{on_main}");
    let mut in_dev = erase.to_vec();
    in_dev.extend(["--env", "dev"]);
    let planned = p.json(&in_dev);
    assert_eq!(erase_rows(&planned, "silver.customers"), 0, "{planned}");
    assert_eq!(
        erase_rows(&planned, "bronze.customers"),
        erase_rows(&on_main, "bronze.customers")
    );
    let (code, message) = p.fails(&[
        "erase",
        "retail",
        "--where",
        "customer_id = 2",
        "--env",
        "dev",
        "--reason",
        "x",
    ]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("--plan"), "{message}");
    assert_eq!(main_snapshots(&p), before);
}

/// The table's data files on main, with their partitions.
fn files_by_partition(p: &Project, table: &str) -> Vec<String> {
    each(&p.json(&["files", table]), "partition")
}

/// One order changed in an environment: `env diff` pairs rows by the table's key (its
/// `unique` expectation, or `--key`), names the changed row and column with both values,
/// counts per partition, and reads only the files one side alone has (the other months'
/// files are shared and skipped). Without a key the same change is one row added and one
/// removed. A key column the table lacks is refused with the columns it has.
#[test]
fn env_diff_pairs_rows_by_key_per_partition_reading_only_what_changed() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let order = p.query("SELECT quantity, order_date FROM silver.orders WHERE order_id = 1017");
    let quantity: i64 = order[0][0].as_deref().unwrap().parse().unwrap();
    let month = &order[0][1].as_deref().unwrap()[..7];
    let partition = format!("order_date_month={month}");
    let update = "UPDATE silver.orders SET quantity = quantity + 1 WHERE order_id = 1017";
    p.json(&["sql", update, "--env", "dev"]);
    p.json(&["run", "retail", "--env", "dev"]);

    let tables = "silver.orders,gold.fact_orders";
    let diff = p.json_failing(&[
        "env",
        "diff",
        "retail",
        "dev",
        "--tables",
        tables,
        "--key",
        "gold.fact_orders:order_id",
    ]);
    for t in diff.as_array().unwrap() {
        let name = t["table"].as_str().unwrap();
        assert_eq!(t["key"], serde_json::json!(["order_id"]), "{t}");
        assert_eq!(
            (&t["added"], &t["removed"], &t["changed"]),
            (&0.into(), &0.into(), &1.into()),
            "{t}"
        );
        assert_eq!(
            t["changed_columns"],
            serde_json::json!({"quantity": 1}),
            "{t}"
        );
        let sample = &t["sample_changed"][0];
        assert_eq!(sample["key"], serde_json::json!(["1017"]), "{t}");
        assert_eq!(
            sample["changes"],
            serde_json::json!([{"column": "quantity", "main": quantity.to_string(), "env": (quantity + 1).to_string()}]),
            "{t}"
        );
        assert_eq!(
            t["partitions"],
            serde_json::json!([{"partition": partition, "added": 0, "removed": 0, "changed": 1}]),
            "{t}"
        );
        let files = files_by_partition(&p, name);
        let in_month = files.iter().filter(|f| **f == partition).count();
        assert_eq!(
            t["files_skipped"].as_u64(),
            Some((files.len() - in_month) as u64),
            "{t}"
        );
        assert!(t["files_skipped"].as_u64().unwrap() >= 2, "{t}");
        assert_eq!(t["files_read"].as_u64(), Some(2 * in_month as u64), "{t}");
    }

    let unkeyed = p.json_failing(&[
        "env",
        "diff",
        "retail",
        "dev",
        "--tables",
        "gold.fact_orders",
    ]);
    let t = &unkeyed[0];
    assert_eq!(t["key"], serde_json::json!([]), "{t}");
    assert_eq!(
        (&t["added"], &t["removed"], &t["changed"]),
        (&1.into(), &1.into(), &0.into()),
        "{t}"
    );

    let (code, message) = p.fails(&[
        "env",
        "diff",
        "retail",
        "dev",
        "--key",
        "gold.fact_orders:nope",
    ]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("key column `nope`"), "{message}");
    assert!(message.contains("gold.fact_orders"), "{message}");
}
