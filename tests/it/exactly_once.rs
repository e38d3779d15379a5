//! Exactly-once ingest: bronze snapshots record the files they loaded, in the same commit as
//! the rows; a re-run loads only new files, and a loaded file that changed stops the run.

use crate::common::Project;

#[test]
fn running_twice_adds_nothing_to_bronze_and_gives_the_same_gold() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let bronze = [
        "bronze.pos_orders",
        "bronze.web_orders",
        "bronze.customers",
        "bronze.pos_orders__quarantine",
    ];
    let before: Vec<i64> = bronze.iter().map(|t| p.current_snapshot(t)).collect();
    let gold = p.query("SELECT * FROM gold.customer_metrics ORDER BY customer_id");
    let second = p.json(&["run", "retail"]);
    let after: Vec<i64> = bronze.iter().map(|t| p.current_snapshot(t)).collect();
    assert_eq!(
        before, after,
        "no new bronze snapshot when every file was loaded"
    );
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders")[0][0].as_deref(),
        Some("38")
    );
    assert_eq!(
        p.query("SELECT * FROM gold.customer_metrics ORDER BY customer_id"),
        gold
    );
    let pos = second["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == "bronze.pos_orders")
        .unwrap();
    assert_eq!(
        (pos["rows_in"].as_u64(), pos["already_loaded"].as_u64()),
        (Some(0), Some(3))
    );
}

#[test]
fn a_new_file_is_appended_and_recorded_in_the_same_snapshot() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let first = p.current_snapshot("bronze.pos_orders");
    // Two valid lines and one malformed (quantity `x`).
    p.write(
        "sample-data/retail/orders/pos_2026-04-02.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         3001,1,2026-04-01 10:00:00,Tea,4,5.00,shipped\n\
         3002,2,2026-04-02 11:00:00,Mug,x,7.50,placed\n\
         3003,3,2026-04-02 12:00:00,Mug,1,7.50,placed\n",
    );
    p.json(&["run", "retail"]);
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders")[0][0].as_deref(),
        Some("40")
    );
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders__quarantine")[0][0].as_deref(),
        Some("8")
    );
    let history = p.json(&["history", "bronze.pos_orders"]);
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["operation"], "append");
    assert_eq!(crate::common::id(&last["parent_id"]), Some(first));
    assert_eq!(
        (
            last["added_records"].as_u64(),
            last["total_records"].as_u64()
        ),
        (Some(2), Some(40))
    );
    // The old rows are untouched: the first snapshot's rows are all still there.
    assert_eq!(
        p.query_as_of("SELECT count(*) FROM bronze.pos_orders", first)[0][0].as_deref(),
        Some("38")
    );
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["bronze.pos_orders"][reader]["rows"], 40, "{reader}");
    }
}

#[test]
fn a_loaded_file_that_changed_stops_the_run() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let before = p.current_snapshot("silver.orders");
    let path = p.path().join("sample-data/retail/web/web_2026-03.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"order_id\": 2999, \"customer_id\": 1, \"order_ts\": \"2026-03-30T10:00:00\", \"product\": \"Tea\", \"quantity\": 1, \"unit_price\": 4.50, \"status\": \"placed\"}\n");
    std::fs::write(&path, text).unwrap();
    let (code, stderr) = p.fails(&["run", "retail"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: sample-data/retail/web/web_2026-03.jsonl: changed since bronze.web_orders loaded it in snapshot "),
        "{stderr}"
    );
    assert!(
        stderr.contains("deliver the new content under a new file name"),
        "{stderr}"
    );
    assert_eq!(
        p.current_snapshot("silver.orders"),
        before,
        "nothing published"
    );
}

#[test]
fn loaded_files_moved_away_from_the_landing_folder_mean_nothing_new() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let before = p.current_snapshot("bronze.web_orders");
    std::fs::remove_dir_all(p.path().join("sample-data/retail/web")).unwrap();
    p.json(&["run", "retail"]);
    assert_eq!(p.current_snapshot("bronze.web_orders"), before);
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.web_orders")[0][0].as_deref(),
        Some("11")
    );
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0].as_deref(),
        Some("39")
    );
}

/// A corrected March POS export: two rows, one price changed, the bad records gone.
const CORRECTED_MARCH: &str = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
                               1031,2,2026-03-01 09:15:00,Tea,3,4.75,placed\n\
                               1032,8,2026-03-02 11:00:00,Desk Lamp,1,39.90,shipped\n";

#[test]
fn reload_changed_replaces_a_files_rows_instead_of_appending_them() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let file = "sample-data/retail/orders/pos_2026-03-05.csv";
    let old_rows = p.query(&format!(
        "SELECT count(*) FROM bronze.pos_orders WHERE _source_file = '{file}'"
    ))[0][0]
        .clone()
        .unwrap();
    assert_ne!(old_rows, "2");
    p.write(file, CORRECTED_MARCH);
    let report = p.json(&["run", "retail", "--reload-changed"]);
    let pos = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == "bronze.pos_orders")
        .unwrap()
        .clone();
    assert_eq!(pos["rows_out"], 2, "{pos}");

    // The file's rows are its new content, once; its old bad records are gone too.
    assert_eq!(
        p.query(&format!(
            "SELECT order_id, unit_price FROM bronze.pos_orders WHERE _source_file = '{file}' ORDER BY order_id"
        )),
        vec![
            vec![Some("1031".into()), Some("4.75".into())],
            vec![Some("1032".into()), Some("39.90".into())]
        ]
    );
    assert_eq!(
        p.query(&format!(
            "SELECT count(*) FROM bronze.pos_orders__quarantine WHERE source_file = '{file}'"
        ))[0][0]
            .as_deref(),
        Some("0")
    );

    // Every table equals what a clean run over the corrected file computes.
    let clean = Project::retail();
    clean.write(file, CORRECTED_MARCH);
    clean.json(&["run", "retail"]);
    for t in p.tables() {
        assert_eq!(
            p.contents_without(&t, &["_ingested_at", "_run_id"]),
            clean.contents_without(&t, &["_ingested_at", "_run_id"]),
            "{t}"
        );
    }
    let readers = p.independent_readers();
    let rows = p.query("SELECT count(*) FROM bronze.pos_orders")[0][0]
        .clone()
        .unwrap();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(
            readers["bronze.pos_orders"][reader]["rows"].to_string(),
            rows,
            "{reader}"
        );
    }

    // The ledger now holds the new content: the next run has nothing to do.
    let again = p.json(&["run", "retail"]);
    assert!(again["tables"].as_array().unwrap().is_empty(), "{again}");
}
