//! `pipeline erase`: one customer's rows removed from every table that holds `customer_id`,
//! in one atomic publish; every other row unchanged; PyIceberg and DuckDB agree; the next run
//! does not bring the rows back; the receipt names the tables, not the erased values.
//! Customer 5 (Dana Weiss) has two rows in customers.csv and orders in the POS files.

use crate::common::Project;

const TABLES: [&str; 7] = [
    "bronze.pos_orders",
    "bronze.web_orders",
    "bronze.customers",
    "silver.orders",
    "silver.customers",
    "gold.fact_orders",
    "gold.customer_metrics",
];

#[test]
fn erasing_a_customer_removes_exactly_their_rows_everywhere_at_once() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let count = |table: &str, cond: &str| -> u64 {
        p.query(&format!("SELECT count(*) FROM {table} WHERE {cond}"))[0][0]
            .as_deref()
            .unwrap()
            .parse()
            .unwrap()
    };
    // Every row of every table except customer 5's, before.
    let others = |table: &str| -> Vec<Vec<Option<String>>> {
        let all = p.query(&format!(
            "SELECT * FROM {table} WHERE customer_id IS DISTINCT FROM 5"
        ));
        let mut all = all;
        all.sort();
        all
    };
    let before: Vec<_> = TABLES.iter().map(|t| others(t)).collect();
    let theirs: Vec<u64> = TABLES.iter().map(|t| count(t, "customer_id = 5")).collect();
    assert_eq!(theirs[2], 2, "customers.csv has two rows of customer 5");
    assert!(theirs[0] >= 1, "customer 5 has POS orders");
    let runs = p.json(&["runs"]).as_array().unwrap().len();

    // The plan changes nothing and counts what it would remove.
    let plan =
        p.json(&["erase", "retail", "--where", "customer_id = 5", "--plan"])["erase"].clone();
    assert_eq!(plan["planned_only"], true);
    for (table, n) in TABLES.iter().zip(&theirs) {
        let t = plan["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == *table)
            .unwrap();
        assert_eq!(t["rows"], *n, "{table}");
    }
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), runs);
    assert_eq!(count("silver.orders", "customer_id = 5"), theirs[3]);

    // Refused without a reason, or with a condition no table can hold.
    let (code, err) = p.fails(&["erase", "retail", "--where", "customer_id = 5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--reason"), "{err}");
    let (_, err) = p.fails(&["erase", "retail", "--where", "client = 5", "--reason", "x"]);
    assert!(err.contains("no table of retail"), "{err}");

    let done = p.json(&[
        "erase",
        "retail",
        "--where",
        "customer_id = 5",
        "--reason",
        "GDPR-118",
    ]);
    let record = &done["erase"]["record"];
    assert!(done["purge"].is_null(), "no --purge");
    assert_eq!(record["kind"], "erase");
    assert_eq!(record["reason"], "GDPR-118");
    let changed: Vec<&str> = record["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    for (table, n) in TABLES.iter().zip(&theirs) {
        assert_eq!(
            changed.contains(table),
            *n > 0,
            "{table} in the receipt: {changed:?}"
        );
        assert_eq!(count(table, "customer_id = 5"), 0, "{table}");
    }
    // All published by one run: every changed table's snapshot carries its id.
    let run_id = record["run_id"].as_str().unwrap();
    for table in &changed {
        let history = p.json(&["history", table]);
        let last = history.as_array().unwrap().last().unwrap();
        assert_eq!(last["run_id"], run_id, "{table}");
    }
    // Everyone else's rows are exactly as they were.
    for (table, rows) in TABLES.iter().zip(&before) {
        assert_eq!(&others(table), rows, "{table}");
    }
    // The receipt holds no erased value.
    let receipt = p.json(&["run-info", run_id]).to_string();
    assert!(
        !receipt.contains("dana.weiss") && !receipt.contains("Dana Weiss"),
        "{receipt}"
    );

    // Independent readers see the same tables.
    let readers = p.independent_readers();
    for table in TABLES {
        let engine = count(table, "true");
        for reader in ["pyiceberg", "duckdb"] {
            assert_eq!(readers[table][reader]["rows"], engine, "{reader} {table}");
        }
    }

    // The next run does not bring the rows back (the source files are loaded already).
    p.json(&["run", "retail"]);
    for table in TABLES {
        assert_eq!(
            count(table, "customer_id = 5"),
            0,
            "{table} after the next run"
        );
    }
}

/// Files under the warehouse holding customer 5's id (Parquet `customer_id`) or name or
/// e-mail (any Parquet string, decompressed manifests, metadata, the catalog database).
fn files_holding_customer_5(p: &Project) -> Vec<String> {
    let out = std::process::Command::new("python3")
        .arg(crate::common::repo().join("tests/erase/find_values.py"))
        .arg(p.path().join("warehouse"))
        .args(["customer_id=5", "dana.weiss", "Dana Weiss", "Dana Widget"])
        .output()
        .expect("python3 with pyarrow (pip install -r tests/requirements.txt)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["file"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn erase_with_purge_leaves_no_file_holding_the_customer() {
    // With quarantined lines of customer 5 too (their product: "Dana Widget").
    let p = crate::erase_reach::project();
    p.json(&["run", "retail"]);
    // A run killed after writing a new order of customer 5 into bronze, silver and gold:
    // files nothing references, which a purge must reach too (the landing file then goes).
    let late = "sample-data/retail/orders/pos_2026-03-29.csv";
    p.write(
        late,
        "order_id,customer_id,order_ts,product,quantity,unit_price,status
1201,5,2026-03-29 10:00:00,Dana Widget,1,5.00,placed
",
    );
    p.start_paused(&["run", "retail"], "staged", None).kill();
    std::fs::remove_file(p.path().join(late)).unwrap();
    let killed = p.json(&["orphans", "--older-than", "0"]);
    assert!(
        killed["orphans"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["table"] == "gold.customer_metrics"),
        "{killed}"
    );
    // And a file another writer has in flight in a table folder (not named by a run of this
    // engine, a minute old): a purge must neither delete it nor pass over it in silence.
    let foreign = "gold/customer_metrics/metadata/00007-another-writer.metadata.json";
    p.write(
        &format!("warehouse/{foreign}"),
        "{\"note\": \"Dana Weiss\"}",
    );
    // Before: their rows are in bronze, silver and gold files (the search can find them).
    let before = files_holding_customer_5(&p);
    for layer in [
        "bronze/customers/",
        "silver/customers/",
        "gold/fact_orders/",
        "bronze/pos_orders__quarantine/",
        "bronze/web_orders__quarantine/",
    ] {
        assert!(
            before.iter().any(|f| f.starts_with(layer)),
            "{layer}: {before:?}"
        );
    }
    let done = p.json(&[
        "erase",
        "retail",
        "--where",
        "customer_id = 5",
        "--reason",
        "GDPR-118",
        "--purge",
    ]);
    assert_eq!(done["erase"]["record"]["kind"], "erase");
    assert!(done["purge"]["run_id"].is_string(), "{done}");
    let history = done["erase"]["history"].as_str().unwrap();
    assert!(history.starts_with("purged"), "{history}");
    // The purge's record says what it is for; it expired snapshots and deleted files.
    let purge_run = p.json(&["run-info", done["purge"]["run_id"].as_str().unwrap()]);
    let erase_run = done["erase"]["record"]["run_id"].as_str().unwrap();
    assert!(
        purge_run["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("purge after erase {erase_run}")),
        "{purge_run}"
    );
    let tables = done["purge"]["tables"].as_array().unwrap();
    let sum = |key: &str| tables.iter().map(|t| t[key].as_u64().unwrap()).sum::<u64>();
    assert!(sum("expired_snapshots") >= 10, "{done}");
    assert!(sum("deleted_data_files") >= 10, "{done}");
    // The killed run's data files were deleted too, whatever their age, and the report says
    // so; the young files no run of this engine named are listed as not searched, by file.
    assert!(sum("unreferenced_deleted") >= 4, "{done}");
    let not_searched: Vec<&str> = done["erase"]["not_searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let listed = |file: &str| not_searched.iter().any(|n| n.contains(file));
    assert!(listed(foreign), "{done}");
    let left = files_holding_customer_5(&p);
    assert!(
        left.iter().all(|f| listed(f)),
        "{left:?} not listed: {done}"
    );
    assert!(left.iter().all(|f| !f.contains("/data/")), "{left:?}");
    // With no other writer at work, orphans removes them now.
    p.json(&["orphans", "--delete", "--force", "--older-than", "0"]);
    // The erase's receipt lists the purge: its records name the erase and say, per table,
    // what was expired and freed, as the command reported it.
    let receipt = p.json(&["run-info", erase_run]);
    let purges = receipt["purged_by"].as_array().unwrap();
    assert_eq!(purges.len(), 2, "two maintain passes: {receipt}");
    let recorded = |key: &str| -> u64 {
        purges
            .iter()
            .inspect(|r| assert_eq!(r["purge_of"], erase_run))
            .flat_map(|r| r["tables"].as_array().unwrap())
            .filter_map(|t| t["expired"][key].as_u64())
            .sum()
    };
    assert_eq!(recorded("snapshots"), sum("expired_snapshots"));
    assert_eq!(recorded("data_files"), sum("deleted_data_files"));
    assert_eq!(recorded("data_bytes"), sum("deleted_bytes"));
    // After: no data file, manifest, metadata file or catalog row holds them; the lake is
    // intact; the next run works and does not bring them back.
    assert_eq!(files_holding_customer_5(&p), Vec::<String>::new());
    p.json(&["check"]);
    // The erase cannot be rolled back: the refusal names the purge, not a retention setting
    // the spec does not have.
    let (code, message) = p.fails(&["rollback", erase_run]);
    assert_eq!(code, 1, "{message}");
    assert!(message.contains("was expired by the purge"), "{message}");
    assert!(
        message.contains(&format!("of erase {erase_run}")),
        "{message}"
    );
    assert!(!message.contains("max_snapshots"), "{message}");
    p.json(&["run", "retail"]);
    assert_eq!(files_holding_customer_5(&p), Vec::<String>::new());
}
