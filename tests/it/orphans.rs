//! Files left by a failed run are found, proven unreferenced (no snapshot of any table reaches
//! them), and removable without touching anything a table reads.

use crate::common::Project;

fn orphans(p: &Project, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["orphans"];
    all.extend_from_slice(args);
    p.json(&all)["orphans"].as_array().unwrap().clone()
}

#[test]
fn files_of_a_failed_run_are_found_and_removed_safely() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p.json(&["run", "retail"]);
    // Two published runs (with overwrites and metadata logs) leave nothing unreferenced.
    assert!(orphans(&p, &["--older-than", "0"]).is_empty());

    // A run that writes bronze, silver and most of gold, then fails.
    p.write(
        "sample-data/retail/orders/pos_2026-04-02.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n3001,1,2026-04-01 10:00:00,Tea,4,5.00,shipped\n",
    );
    p.write(
        "sql/retail/gold_repeat_buyers.sql",
        "SELECT CAST(customer_name AS INT) AS broken FROM gold.customer_metrics",
    );
    p.fails(&["run", "retail"]);
    let found = orphans(&p, &["--older-than", "0"]);
    assert!(!found.is_empty());
    let tables: Vec<&str> = found.iter().map(|o| o["table"].as_str().unwrap()).collect();
    assert!(
        tables.contains(&"bronze.pos_orders") && tables.contains(&"silver.orders"),
        "{tables:?}"
    );
    assert!(
        !tables.contains(&"bronze.customers"),
        "customers had nothing new: {tables:?}"
    );
    assert!(
        orphans(&p, &[]).is_empty(),
        "files younger than the default 60 minutes are never listed"
    );

    let counts = |p: &Project| -> Vec<Option<String>> {
        p.tables()
            .iter()
            .map(|t| p.query(&format!("SELECT count(*) FROM {t}"))[0][0].clone())
            .collect()
    };
    let before = counts(&p);
    let deleted = p.json(&["orphans", "--older-than", "0", "--delete", "--force"]);
    assert_eq!(deleted["orphans"].as_array().unwrap().len(), found.len());
    for o in &found {
        assert!(!std::path::Path::new(o["path"].as_str().unwrap()).exists());
    }
    assert!(orphans(&p, &["--older-than", "0"]).is_empty());
    assert_eq!(counts(&p), before);
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["silver.orders"][reader]["rows"], 39, "{reader}");
        assert_eq!(readers["bronze.pos_orders"][reader]["rows"], 38, "{reader}");
    }
}
