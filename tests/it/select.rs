//! `--select` on `run` and `backfill`: only the jobs it names run (`t`, `t+` downstream,
//! `+t` upstream); the other tables keep their snapshots. The job sets below are worked out
//! by hand from the retail SQL's FROM and JOIN clauses.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::Project;

fn job_tables(report: &Value) -> BTreeSet<String> {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["table"].as_str().unwrap().to_string())
        .collect()
}

fn set(tables: &[&str]) -> BTreeSet<String> {
    tables.iter().map(|t| t.to_string()).collect()
}

#[test]
fn select_runs_the_named_jobs_and_leaves_the_rest_untouched() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p.write(
        "sample-data/retail/orders/pos_2026-04-01.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         9001,1,2026-04-02 10:00:00,Tea,2,4.50,shipped\n",
    );
    let silver = p.current_snapshot("silver.orders");
    let customers = p.current_snapshot("silver.customers");

    let report = p.json(&["run", "retail", "--select", "bronze.pos_orders"]);
    assert_eq!(job_tables(&report), set(&["bronze.pos_orders"]));
    assert_eq!(p.current_snapshot("silver.orders"), silver);
    let new_row = "SELECT count(*) FROM bronze.pos_orders WHERE order_id = 9001";
    assert_eq!(p.query(new_row)[0][0].as_deref(), Some("1"));

    let report = p.json(&["run", "retail", "--select", "silver.orders+"]);
    assert_eq!(
        job_tables(&report),
        set(&[
            "silver.orders",
            "gold.fact_orders",
            "gold.customer_metrics",
            "gold.monthly_revenue",
            "gold.repeat_buyers"
        ])
    );
    assert_eq!(p.current_snapshot("silver.customers"), customers);
    let april =
        "SELECT count(*) FROM gold.monthly_revenue WHERE CAST(month AS VARCHAR) LIKE '2026-04%'";
    assert_eq!(p.query(april)[0][0].as_deref(), Some("1"));

    // Upstream of a gold table: everything it reads from, up to the ingests; repeated and
    // comma-separated terms add up.
    let report = p.json(&[
        "run",
        "retail",
        "--select",
        "+gold.monthly_revenue",
        "--select",
        "gold.repeat_buyers,gold.customer_metrics",
    ]);
    assert_eq!(
        job_tables(&report),
        set(&[
            "bronze.pos_orders",
            "bronze.web_orders",
            "bronze.customers",
            "silver.orders",
            "silver.customers",
            "gold.fact_orders",
            "gold.monthly_revenue",
            "gold.repeat_buyers",
            "gold.customer_metrics"
        ])
    );
}

#[test]
fn a_selector_that_names_nothing_is_refused_before_anything_runs() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let runs = p.json(&["runs"]).as_array().unwrap().len();
    let (code, message) = p.fails(&["run", "retail", "--select", "silver.nope"]);
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("`silver.nope` is not a table pipeline `retail` writes; it writes bronze.customers, bronze.pos_orders"),
        "{message}"
    );
    // Hostile text is refused as a name, not passed anywhere.
    let (code, message) = p.fails(&["run", "retail", "--select", "x; DROP TABLE silver.orders"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("is not a table"), "{message}");
    let (code, message) = p.fails(&[
        "backfill",
        "retail",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-31",
        "--tables",
        "gold.monthly_revenue",
        "--select",
        "silver.orders",
    ]);
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("names no job this backfill runs"),
        "{message}"
    );
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), runs);
}

#[test]
fn a_backfill_plan_covers_only_the_selected_tables() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let planned = p.json(&[
        "backfill",
        "retail",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-31",
        "--tables",
        "silver.orders",
        "--select",
        "silver.orders,gold.fact_orders",
        "--plan",
    ]);
    let tables: BTreeSet<String> = planned
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tables, set(&["silver.orders", "gold.fact_orders"]));
}
