//! The retail sample end to end. Expected values come from tests/expected/retail.json, written
//! by tests/reference/retail_expected.py: an independent pure-Python implementation that reads
//! the raw sample files itself (strict parsing, dedup, joins, aggregates with Decimal).

use crate::common::{expected_retail, Project};

#[test]
fn retail_gold_tables_match_the_independent_reference() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let expected = expected_retail();
    for (table, want) in expected["tables"].as_object().unwrap() {
        let (columns, rows) =
            p.query_result(&["query", &format!("SELECT * FROM {table} ORDER BY 1")]);
        let want_columns: Vec<&str> = want["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(columns, want_columns, "columns of {table}");
        let want_rows: Vec<Vec<Option<String>>> =
            serde_json::from_value(want["rows"].clone()).unwrap();
        assert_eq!(rows, want_rows, "rows of {table}");
    }
}

#[test]
fn retail_row_counts_match_the_reference() {
    let p = Project::retail();
    let report = p.json(&["run", "retail"]);
    let expected = expected_retail();
    for (table, count) in expected["counts"].as_object().unwrap() {
        let rows = p.query(&format!("SELECT count(*) FROM {table}"));
        assert_eq!(
            rows[0][0].as_deref(),
            Some(count.to_string().as_str()),
            "rows of {table}"
        );
    }
    // The run summary agrees with the tables and names each job's published snapshot.
    let jobs = report["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 9);
    assert_eq!(report["published"], true);
    for job in jobs {
        let table = job["table"].as_str().unwrap();
        assert_eq!(
            crate::common::id(&job["snapshot_id"]).unwrap(),
            p.current_snapshot(table),
            "{table}"
        );
        let rows = p.query(&format!("SELECT count(*) FROM {table}"));
        assert_eq!(
            rows[0][0].as_deref().unwrap(),
            job["rows_out"].to_string(),
            "{table}"
        );
    }
    let pos = jobs
        .iter()
        .find(|j| j["table"] == "bronze.pos_orders")
        .unwrap();
    assert_eq!(
        (pos["rows_in"].as_u64(), pos["quarantined"].as_u64()),
        (Some(45), Some(7))
    );
}

#[test]
fn bronze_rows_carry_their_source_file_and_line() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // Order 1007's product spans two physical lines (9-10) of the January POS file; the record
    // starts on line 9. Values checked by reading the file by hand.
    let rows = p.query(
        "SELECT _source_file, _source_line, product, unit_price, order_ts FROM bronze.pos_orders WHERE order_id = 1007",
    );
    assert_eq!(
        rows,
        vec![vec![
            Some("sample-data/retail/orders/pos_2026-01-15.csv".to_string()),
            Some("9".to_string()),
            Some("Gift Card\nBirthday".to_string()),
            Some("50.00".to_string()),
            Some("2026-01-09T09:00:00".to_string()),
        ]]
    );
    let runs = p.query(
        "SELECT count(DISTINCT _run_id), count(DISTINCT _ingested_at) FROM bronze.web_orders",
    );
    assert_eq!(runs, vec![vec![Some("1".into()), Some("1".into())]]);
}
