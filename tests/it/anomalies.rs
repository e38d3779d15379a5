//! Volume and null-rate anomalies against the last runs, with the upstream files that caused
//! them. Row counts and NULL shares below are counted by hand from the files written here.

use crate::common::Project;

fn spec(null_action: &str) -> String {
    format!(
        r#"[pipeline]
name = "shop"

[[ingest]]
table = "bronze.orders"
format = "csv"
path = "data/*.csv"
schema = {{ id = "long", customer_id = "long" }}

[[transform]]
table = "silver.orders"
sql = "sql/orders.sql"

[[expect]]
table = "silver.orders"
check = "volume"
max_change = "50%"
runs = 3
action = "warn"

[[expect]]
table = "silver.orders"
check = "null_rate"
column = "customer_id"
max_change = "20%"
action = "{null_action}"
"#
    )
}

/// `n` orders starting at id `first`, the first `nulls` without a customer.
fn orders(first: u64, n: u64, nulls: u64) -> String {
    let mut out = String::from("id,customer_id\n");
    for i in 0..n {
        let customer = if i < nulls {
            String::new()
        } else {
            (100 + i).to_string()
        };
        out.push_str(&format!("{},{customer}\n", first + i));
    }
    out
}

fn details(report: &serde_json::Value) -> Vec<(String, bool, String)> {
    report["quality"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["passed"].as_bool().unwrap(),
                r["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn volume_and_null_rate_jumps_are_reported_with_the_files_that_caused_them() {
    let p = Project::empty();
    p.write("pipelines/shop.toml", &spec("fail"));
    p.write(
        "sql/orders.sql",
        "SELECT id, customer_id FROM bronze.orders\n",
    );

    // Run 1: 10 rows, 1 NULL (10%): the baseline starts.
    p.write("data/a.csv", &orders(1, 10, 1));
    let r1 = p.json(&["run", "shop"]);
    assert_eq!(
        details(&r1),
        vec![
            (
                "volume".into(),
                true,
                "10 rows; no earlier run to compare with (the baseline starts here)".into()
            ),
            (
                "null_rate(customer_id)".into(),
                true,
                "10.0% NULL; no earlier run to compare with (the baseline starts here)".into()
            ),
        ]
    );
    // Run 2: 12 rows (+20% of 10), 1 NULL of 12 (8.3%, -1.7 points): within both limits.
    p.write("data/b.csv", &orders(11, 2, 0));
    let r2 = p.json(&["run", "shop"]);
    assert_eq!(
        details(&r2)[0].2,
        "12 rows vs a mean of 10 rows over the last 1 run(s): +20% (within 50%)"
    );
    assert!(details(&r2).iter().all(|d| d.1), "{r2}");

    // Run 3: 10 more rows, 8 of them without a customer: 22 rows (+100% of the mean 11) and
    // 9 NULLs of 22 = 40.9% (mean of 10% and 8.3% = 9.2%: +31.7 points). The null rate
    // fails the run, naming the file.
    p.write("data/c.csv", &orders(13, 10, 8));
    let before = p.current_snapshot("silver.orders");
    let (code, err) = p.fails(&["run", "shop"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err.lines().next().unwrap(),
        "error: expectation `null_rate(customer_id)` on silver.orders failed: 40.9% NULL vs a mean of 9.2% NULL over the last 2 run(s): +31.7 points (beyond 20.0 points); upstream this run: bronze.orders.customer_id is NULL in 8 of 10 rows loaded from data/c.csv; nothing of this run was published"
    );
    assert_eq!(p.current_snapshot("silver.orders"), before);

    // As a warning, both anomalies are published and reported with their causes.
    p.write("pipelines/shop.toml", &spec("warn"));
    let r3 = p.json(&["run", "shop"]);
    assert_eq!(
        details(&r3),
        vec![
            (
                "volume".into(),
                false,
                "22 rows vs a mean of 11 rows over the last 2 run(s): +100% (beyond 50%); upstream this run: bronze.orders: +10 / -0 rows this run, loaded from data/c.csv (10 rows)".into()
            ),
            (
                "null_rate(customer_id)".into(),
                false,
                "40.9% NULL vs a mean of 9.2% NULL over the last 2 run(s): +31.7 points (beyond 20.0 points); upstream this run: bronze.orders.customer_id is NULL in 8 of 10 rows loaded from data/c.csv".into()
            ),
        ]
    );
    let runs = p.run(&["runs"]);
    let listing = String::from_utf8_lossy(&runs.stdout);
    assert!(
        listing.contains("checks") && listing.contains("2 warned"),
        "{listing}"
    );

    // A rolled-back run's measurements leave the baseline: the same load compares with the
    // same two runs again.
    let run3 = r3["run_id"].as_str().unwrap().to_string();
    p.json(&["rollback", &run3]);
    let again = p.json(&["run", "shop"]);
    assert_eq!(details(&again), details(&r3));
}
