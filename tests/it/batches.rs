//! A full recompute of a transform with `incremental_by` whose query sorts all its rows (the
//! retail `silver.orders` dedup) runs in batches of adjacent months (`PIPELINE_BATCH_ROWS=1`
//! makes every month of the small sample a batch of its own). The tables hold exactly the
//! independent reference's rows, each partition is still one file, rows whose time column is
//! NULL are computed too (a batch of their own), `drop` expectations quarantine the same rows,
//! and a batch that fails publishes nothing.

use crate::common::{action, engine as engine_of, Project};

fn batched(p: &mut Project, rows: &str) {
    p.env.push(("PIPELINE_BATCH_ROWS".into(), rows.into()));
}

#[test]
fn a_full_recompute_in_batches_writes_the_reference_rows_one_file_per_partition() {
    let mut p = Project::retail();
    batched(&mut p, "1");
    let report = p.json(&["run", "retail"]);
    // Three months of orders, and a batch for the POS line without an order_ts.
    assert_eq!(engine_of(&report, "silver.orders"), "local in 4 batches");
    // A join streams: recomputed whole.
    assert_eq!(engine_of(&report, "gold.fact_orders"), "local");
    p.assert_retail_reference_rows();
    assert_eq!(p.assert_one_file_per_partition("silver.orders"), 3);

    // `--full-refresh` recomputes in batches again, to the same rows.
    let before = p.contents("silver.orders");
    let again = p.json(&["run", "retail", "--full-refresh"]);
    assert_eq!(engine_of(&again, "silver.orders"), "local in 4 batches");
    assert_eq!(p.contents("silver.orders"), before);
}

/// A transform that keeps the rows whose time column is NULL: the batches must compute them
/// too (the NULL batch), or they would be lost.
const KEEP_ALL: &str = r#"
[[transform]]
table = "silver.pos_copies"
sql = "sql/retail/silver_pos_copies.sql"
partition_by = ["month(order_ts)"]
mode = "replace_partitions"
incremental_by = { "bronze.pos_orders" = "order_ts" }
"#;

const KEEP_ALL_SQL: &str = "SELECT order_id, order_ts, _source_line,\n\
    row_number() OVER (PARTITION BY order_id ORDER BY _source_line) AS copy_no\n\
    FROM bronze.pos_orders";

#[test]
fn rows_whose_time_column_is_null_get_a_batch_of_their_own() {
    let mut runs = Vec::new();
    for rows in ["0", "1"] {
        let mut p = Project::retail();
        batched(&mut p, rows);
        p.append_to_retail_spec(KEEP_ALL);
        p.write("sql/retail/silver_pos_copies.sql", KEEP_ALL_SQL);
        let report = p.json(&["run", "retail"]);
        let engine = engine_of(&report, "silver.pos_copies");
        // Every bronze row comes out once, the NULL order_ts among them.
        let bronze = p.query("SELECT count(*), count(order_ts) FROM bronze.pos_orders");
        let out = p.query("SELECT count(*), count(order_ts) FROM silver.pos_copies");
        assert_eq!(out, bronze, "with PIPELINE_BATCH_ROWS={rows}");
        let (all, timed) = (bronze[0][0].clone(), bronze[0][1].clone());
        assert_ne!(all, timed, "the sample has a POS line without order_ts");
        let rows = p.query("SELECT * FROM silver.pos_copies ORDER BY _source_line, order_id");
        runs.push((engine, rows));
    }
    assert_eq!(runs[0].0, "local");
    assert_eq!(runs[1].0, "local in 4 batches");
    assert_eq!(runs[1].1, runs[0].1);
}

#[test]
fn batches_quarantine_the_same_rows_as_one_query() {
    let drop_cancelled = "\n[[expect]]\ntable = \"silver.orders\"\ncheck = \"accepted_values\"\n\
                          column = \"status\"\nvalues = [\"placed\", \"shipped\", \"delivered\"]\n\
                          action = \"drop\"\n";
    let mut runs = Vec::new();
    for rows in ["0", "1"] {
        let mut p = Project::retail();
        batched(&mut p, rows);
        p.append_to_retail_spec(drop_cancelled);
        let report = p.json(&["run", "retail"]);
        let engine = engine_of(&report, "silver.orders");
        let kept = p.query("SELECT count(*), sum(amount) FROM silver.orders");
        let quarantined = p.query(
            "SELECT order_id, status, _expectation FROM silver.orders__quarantine ORDER BY order_id",
        );
        assert!(!quarantined.is_empty());
        runs.push((engine, kept, quarantined));
    }
    assert_eq!(runs[0].0, "local");
    assert_eq!(runs[1].0, "local in 4 batches");
    assert_eq!(runs[1].1, runs[0].1);
    assert_eq!(runs[1].2, runs[0].2);
}

#[test]
fn a_failing_batch_publishes_nothing_and_names_the_sql_file() {
    let mut p = Project::retail();
    p.json(&["run", "retail"]);
    let before: Vec<_> = ["silver.orders", "gold.fact_orders"]
        .iter()
        .map(|t| p.current_snapshot(t))
        .collect();
    batched(&mut p, "1");
    // Only March's rows divide by zero: the first batches succeed, the last one fails.
    let sql = std::fs::read_to_string(p.path().join("sql/retail/silver_orders.sql")).unwrap();
    let broken = sql.replace(
        "WHERE copy_no = 1",
        "WHERE copy_no = 1\n  AND 1 / CASE WHEN order_ts >= TIMESTAMP '2026-03-01 00:00:00' THEN 0 ELSE 1 END = 1",
    );
    assert_ne!(broken, sql);
    p.write("sql/retail/silver_orders.sql", &broken);
    let (code, message) = p.fails(&["run", "retail", "--full-refresh"]);
    assert_ne!(code, 0);
    assert!(message.contains("silver_orders.sql"), "{message}");
    assert!(
        message.to_lowercase().contains("divide by zero"),
        "{message}"
    );
    let after: Vec<_> = ["silver.orders", "gold.fact_orders"]
        .iter()
        .map(|t| p.current_snapshot(t))
        .collect();
    assert_eq!(after, before, "a failed run published nothing");
}

#[test]
fn inputs_not_laid_out_by_time_run_whole_rather_than_once_per_batch() {
    let mut p = Project::retail();
    batched(&mut p, "1");
    // Unpartitioned bronze: each load's file spans every month, so each batch would read all.
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    let flat = spec.replace("partition_by = [\"month(order_ts)\"]\n", "");
    assert_ne!(flat, spec);
    p.write("pipelines/retail.toml", &flat);
    let report = p.json(&["run", "retail"]);
    assert_eq!(engine_of(&report, "silver.orders"), "local");
    p.assert_retail_reference_rows();
}

#[test]
fn a_backfill_of_several_months_runs_in_batches_inside_its_range() {
    let mut p = Project::retail();
    p.json(&["run", "retail"]);
    let contents = p.contents("silver.orders");
    let before = p.files("silver.orders");
    batched(&mut p, "1");
    let report = p.json(&[
        "backfill",
        "retail",
        "--from",
        "2026-01-01",
        "--to",
        "2026-02-28",
        "--tables",
        "silver.orders",
    ]);
    assert_eq!(engine_of(&report, "silver.orders"), "local in 2 batches");
    // Same inputs, same rows; March's file is the very same, January's and February's new.
    assert_eq!(p.contents("silver.orders"), contents);
    let after = p.files("silver.orders");
    let march = |files: &std::collections::BTreeMap<String, (String, String)>| {
        files
            .iter()
            .filter(|(_, (partition, _))| partition.contains("2026-03"))
            .map(|(path, v)| (path.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(march(&after), march(&before));
    assert_eq!(after.len(), before.len());
    let new: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert_eq!(new.len(), 2, "{after:?}");

    // A nightly run replacing the months its new rows fall in (January and March here) is one
    // query: looking for batches would read every manifest of the inputs every night.
    p.write(
        "sample-data/retail/orders/pos_2026-03-20.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         3001,1,2026-03-20 10:00:00,Tea,4,5.00,shipped\n\
         3002,1,2026-01-20 10:00:00,Tea,4,5.00,shipped\n",
    );
    let report = p.json(&["run", "retail"]);
    assert_eq!(
        action(&report, "silver.orders"),
        "replace month(order_date) in 2026-01, 2026-03"
    );
    assert_eq!(engine_of(&report, "silver.orders"), "local");
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders WHERE order_id IN (3001, 3002)"),
        vec![vec![Some("2".to_string())]]
    );
}

/// Puts `line` after `silver.orders`'s `incremental_by` in the retail spec.
fn set_on_silver_orders(p: &Project, line: &str) {
    let path = p.path().join("pipelines/retail.toml");
    let spec = std::fs::read_to_string(&path).unwrap();
    let anchor =
        "incremental_by = { \"bronze.pos_orders\" = \"order_ts\", \"bronze.web_orders\" = \"order_ts\" }\n";
    assert!(spec.contains(anchor), "the retail spec changed");
    std::fs::write(&path, spec.replace(anchor, &format!("{anchor}{line}\n"))).unwrap();
}

/// A transform's `batch_rows` sizes its batches without the environment, and `batch_rows = 0`
/// keeps its full recompute one query even when `PIPELINE_BATCH_ROWS` asks for batches (a
/// query that breaks the `incremental_by` promise says so); the rows are the reference's
/// either way.
#[test]
fn a_transforms_batch_rows_sizes_its_batches_and_zero_keeps_one_query() {
    let p = Project::retail();
    set_on_silver_orders(&p, "batch_rows = 1");
    let report = p.json(&["run", "retail"]);
    assert_eq!(engine_of(&report, "silver.orders"), "local in 4 batches");
    p.assert_retail_reference_rows();

    let mut p = Project::retail();
    batched(&mut p, "1");
    set_on_silver_orders(&p, "batch_rows = 0");
    let report = p.json(&["run", "retail"]);
    assert_eq!(engine_of(&report, "silver.orders"), "local");
    p.assert_retail_reference_rows();
}

/// `batch_rows` on a transform without `incremental_by` is refused at its line: nothing could
/// be batched.
#[test]
fn batch_rows_without_incremental_by_is_refused_at_its_line() {
    let p = Project::retail();
    let path = p.path().join("pipelines/retail.toml");
    let spec = std::fs::read_to_string(&path).unwrap();
    let anchor = "table = \"gold.customer_metrics\"\n";
    assert!(spec.contains(anchor), "the retail spec changed");
    std::fs::write(
        &path,
        spec.replace(anchor, &format!("{anchor}batch_rows = 5\n")),
    )
    .unwrap();
    let line = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .position(|l| l == "batch_rows = 5")
        .unwrap()
        + 1;
    let (_, message) = p.fails(&["validate", "retail"]);
    assert!(
        message.contains(&format!("retail.toml:{line}")),
        "no line {line}: {message}"
    );
    assert!(
        message.contains("batch_rows on gold.customer_metrics"),
        "{message}"
    );
    assert!(message.contains("incremental_by"), "{message}");
}

/// Two batches run at once (one sorts while another writes, so both cores work): with the
/// first held before it runs, the second is written; the rows are the reference's.
#[test]
fn two_batches_run_at_once() {
    let mut p = Project::retail();
    batched(&mut p, "1");
    let gate = p.path().join("go-on");
    let mut paused = p.start_paused_piped(
        &["-v", "run", "retail", "--json"],
        "transform-batch silver.orders 1",
        gate,
    );
    let heard = paused.wait_for("batch 2 of 4 written", std::time::Duration::from_secs(60));
    let (ok, log, stdout) = paused.release_with_stdout();
    assert!(ok, "{log}");
    assert!(
        heard,
        "batch 2 was not written while batch 1 was held:\n{log}"
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(engine_of(&report, "silver.orders"), "local in 4 batches");
    p.assert_retail_reference_rows();
}
