//! A run publishes all of its tables or none: a job that fails after others have written and
//! staged their tables leaves every table exactly as it was.

use crate::common::Project;

#[test]
fn a_job_failing_late_publishes_nothing() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let tables = p.tables();
    let before: Vec<i64> = tables.iter().map(|t| p.current_snapshot(t)).collect();

    // New source data (so bronze and silver would change), and a last gold job that fails
    // while running: the cast of a customer name to an integer fails on the data.
    p.write(
        "sample-data/retail/orders/pos_2026-04-02.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n3001,1,2026-04-01 10:00:00,Tea,4,5.00,shipped\n",
    );
    p.write(
        "sql/retail/gold_repeat_buyers.sql",
        "SELECT CAST(customer_name AS INT) AS broken, count(*) AS customers FROM gold.customer_metrics GROUP BY 1",
    );
    let (code, stderr) = p.fails(&["run", "retail"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: sql/retail/gold_repeat_buyers.sql: failed while running:"),
        "{stderr}"
    );

    let after: Vec<i64> = tables.iter().map(|t| p.current_snapshot(t)).collect();
    assert_eq!(before, after, "no table may move when a run fails");
    let (published, failed) = p.runs_by_outcome();
    assert_eq!(failed.len(), 1, "the failed run is recorded: {failed:?}");
    assert_eq!(failed[0]["tables"].as_array().unwrap().len(), 0);
    assert_eq!(
        published.len(),
        1,
        "a failed run publishes no record of tables"
    );
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders")[0][0].as_deref(),
        Some("38")
    );
}
