//! `pipeline run --plan`: per job, whether the next run would write and why, the files it
//! would load and what it would read; nothing is written. Each plan is checked against the run
//! that follows it (the same jobs write), and the file counts against the sample's folders.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{written_tables, Project};

/// The tables of the jobs a plan says would write.
fn planned_writes(plan: &Value) -> BTreeSet<String> {
    plan.as_array()
        .unwrap()
        .iter()
        .filter(|j| j["runs"] == true)
        .map(|j| j["table"].as_str().unwrap().to_string())
        .collect()
}

fn action(plan: &Value, table: &str) -> String {
    plan.as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == table)
        .map(|j| j["action"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn the_plan_names_what_the_next_run_writes_and_writes_nothing() {
    let p = Project::retail();
    let plan = p.json(&["run", "retail", "--plan"]);
    assert_eq!(planned_writes(&plan).len(), 9, "{plan}");
    assert_eq!(
        action(&plan, "bronze.pos_orders")
            .split(' ')
            .take(3)
            .collect::<Vec<_>>(),
        ["load", "3", "new"]
    );
    assert!(action(&plan, "bronze.web_orders").starts_with("load 2 new files"));
    assert_eq!(
        action(&plan, "gold.fact_orders"),
        "full refresh (new table)"
    );
    assert_eq!(p.tables().len(), 0, "a plan creates no table");
    assert_eq!(
        written_tables(&p.json(&["run", "retail"])),
        planned_writes(&plan)
    );

    // Nothing new: nothing would write.
    let plan = p.json(&["run", "retail", "--plan"]);
    assert_eq!(planned_writes(&plan).len(), 0, "{plan}");

    // A late April file: its ingest, the months it touches downstream, the full refreshes.
    p.write(
        "sample-data/retail/orders/pos_2026-04-01.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         9001,1,2026-04-02 10:00:00,Tea,2,4.50,shipped\n",
    );
    let before = p.current_snapshot("bronze.pos_orders");
    let plan = p.json(&["run", "retail", "--plan"]);
    assert_eq!(p.current_snapshot("bronze.pos_orders"), before);
    let files = &plan[0]["files"];
    assert_eq!(
        files[0][0], "sample-data/retail/orders/pos_2026-04-01.csv",
        "{plan}"
    );
    assert_eq!(
        action(&plan, "silver.orders"),
        "replace the partitions the new rows of bronze.pos_orders fall in"
    );
    assert_eq!(action(&plan, "silver.customers"), "up to date");
    assert_eq!(
        planned_writes(&plan),
        [
            "bronze.pos_orders",
            "silver.orders",
            "gold.fact_orders",
            "gold.customer_metrics",
            "gold.monthly_revenue",
            "gold.repeat_buyers"
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(
        written_tables(&p.json(&["run", "retail"])),
        planned_writes(&plan)
    );

    // Changed SQL: a full refresh of that table and what follows from it.
    let sql = p.path().join("sql/retail/silver_customers.sql");
    let text = std::fs::read_to_string(&sql).unwrap();
    std::fs::write(&sql, format!("{text}\n-- reviewed\n")).unwrap();
    let plan = p.json(&["run", "retail", "--plan"]);
    assert_eq!(
        action(&plan, "silver.customers"),
        "full refresh (SQL or partitioning changed)"
    );
    assert_eq!(
        written_tables(&p.json(&["run", "retail"])),
        planned_writes(&plan)
    );
}

#[test]
fn a_changed_landing_file_is_named_as_the_failure_it_would_be() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let path = p.path().join("sample-data/retail/customers/customers.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("Alice Johnson", "Alice Johnson-Lee")).unwrap();
    let plan = p.json(&["run", "retail", "--plan"]);
    assert!(
        action(&plan, "bronze.customers").starts_with(
            "fails: 1 file changed since loaded (sample-data/retail/customers/customers.csv)"
        ),
        "{plan}"
    );
    let plan = p.json(&["run", "retail", "--plan", "--reload-changed"]);
    assert!(
        action(&plan, "bronze.customers").starts_with("load 1 file"),
        "{plan}"
    );
    assert!(planned_writes(&plan).contains("silver.customers"));
}
