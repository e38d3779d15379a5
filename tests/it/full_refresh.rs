//! Full refresh: a second run replaces gold tables in one overwrite snapshot each (silver.orders,
//! `replace_partitions`, only gets its new month), and the earlier snapshots stay readable with
//! `--as-of`.

use crate::common::Project;

#[test]
fn second_run_replaces_silver_and_gold_and_keeps_old_snapshots_readable() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let first_orders = p.current_snapshot("silver.orders");
    let first_revenue = p.current_snapshot("gold.monthly_revenue");
    let first_metrics = p.current_snapshot("gold.customer_metrics");
    let before = p.query("SELECT * FROM gold.monthly_revenue ORDER BY month");

    // A late file arrives: two April orders by customer 1 (valid), amounts 20.00 and 7.50.
    p.write(
        "sample-data/retail/orders/pos_2026-04-02.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         3001,1,2026-04-01 10:00:00,Tea,4,5.00,shipped\n\
         3002,1,2026-04-02 11:00:00,Mug,1,7.50,placed\n",
    );
    p.json(&["run", "retail"]);

    // Silver is replaced, not appended: 39 + 2 orders.
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0].as_deref(),
        Some("41")
    );
    let after = p.query("SELECT * FROM gold.monthly_revenue ORDER BY month");
    assert_eq!(after.len(), 4);
    assert_eq!(after[..3], before[..]);
    assert_eq!(
        after[3],
        vec![
            Some("2026-04-01".into()),
            Some("2".into()),
            Some("1".into()),
            Some("27.50".into())
        ]
    );

    // The first version is still there.
    assert_eq!(
        p.query_as_of(
            "SELECT * FROM gold.monthly_revenue ORDER BY month",
            first_revenue
        ),
        before
    );
    assert_eq!(
        p.query_as_of("SELECT count(*) FROM silver.orders", first_orders)[0][0].as_deref(),
        Some("39")
    );

    // History: two snapshots with honest counts, the second parented on the first.
    // gold.customer_metrics (full refresh) is rewritten whole: 12 customers deleted, 12 added.
    // silver.orders and gold.monthly_revenue (replace_partitions) only gain April: a replace of
    // one partition that had nothing yet.
    let history = p.json(&["history", "gold.customer_metrics"]);
    let snaps = history.as_array().unwrap();
    assert_eq!(snaps.len(), 2);
    assert_eq!(
        crate::common::id(&snaps[0]["snapshot_id"]),
        Some(first_metrics)
    );
    assert_eq!(
        crate::common::id(&snaps[1]["parent_id"]),
        Some(first_metrics)
    );
    assert_eq!(snaps[1]["operation"], "overwrite");
    assert_eq!(snaps[1]["added_records"], 12);
    assert_eq!(snaps[1]["deleted_records"], 12);
    assert_eq!(snaps[1]["total_records"], 12);
    assert_eq!(snaps[1]["current"], true);
    let history = p.json(&["history", "gold.monthly_revenue"]);
    let snaps = history.as_array().unwrap();
    assert_eq!(
        crate::common::id(&snaps[1]["parent_id"]),
        Some(first_revenue)
    );
    assert_eq!(snaps[1]["added_records"], 1);
    assert_eq!(snaps[1]["deleted_records"], 0);
    assert_eq!(snaps[1]["total_records"], 4);
    let history = p.json(&["history", "silver.orders"]);
    let snaps = history.as_array().unwrap();
    assert_eq!(snaps.len(), 2);
    assert_eq!(
        crate::common::id(&snaps[0]["snapshot_id"]),
        Some(first_orders)
    );
    assert_eq!(
        crate::common::id(&snaps[1]["parent_id"]),
        Some(first_orders)
    );
    assert_eq!(snaps[1]["operation"], "overwrite");
    assert_eq!(snaps[1]["added_records"], 2);
    assert_eq!(snaps[1]["deleted_records"], 0);
    assert_eq!(snaps[1]["total_records"], 41);

    // Independent readers honour the DELETED manifest entries of the overwrite: they see the
    // new version only, not both.
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["silver.orders"][reader]["rows"], 41, "{reader}");
        assert_eq!(
            readers["gold.monthly_revenue"][reader]["rows"], 4,
            "{reader}"
        );
        assert_eq!(readers["bronze.pos_orders"][reader]["rows"], 40, "{reader}");
    }
}

#[test]
fn as_of_an_unknown_snapshot_is_a_clear_error() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let (code, stderr) = p.fails(&[
        "query",
        "SELECT count(*) FROM gold.monthly_revenue",
        "--as-of",
        "42",
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "error: --as-of 42: no table in the query has that snapshot; `pipeline history <table>` lists snapshot ids"
    );
}
