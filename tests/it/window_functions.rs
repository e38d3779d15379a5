//! `row_number()` over partitions runs through the engine's streaming operator
//! (src/transform/window_rule.rs); these check it numbers rows exactly like the SQL definition,
//! including partitions that straddle record batch boundaries.

use crate::common::Project;

#[test]
fn row_number_restarts_per_partition_in_order() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // customers.csv (read by hand): customers 1, 5 and 8 have two rows each.
    let rows = p.query(
        "SELECT customer_id, updated_at, row_number() OVER (PARTITION BY customer_id ORDER BY updated_at DESC) AS n \
         FROM bronze.customers WHERE customer_id IN (1, 5, 8, 9) ORDER BY customer_id, n",
    );
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        rows,
        vec![
            vec![s("1"), s("2025-11-20T18:00:00"), s("1")],
            vec![s("1"), s("2025-06-01T09:00:00"), s("2")],
            vec![s("5"), s("2025-12-01T08:00:00"), s("1")],
            vec![s("5"), s("2025-06-05T14:15:00"), s("2")],
            vec![s("8"), s("2026-01-02T07:30:00"), s("1")],
            vec![s("8"), s("2025-06-08T16:20:00"), s("2")],
            vec![s("9"), s("2025-06-09T10:10:00"), s("1")],
        ]
    );
    let plan = p.query(
        "EXPLAIN SELECT customer_id, row_number() OVER (PARTITION BY customer_id ORDER BY updated_at) FROM bronze.customers",
    );
    assert!(
        plan.iter()
            .flatten()
            .flatten()
            .any(|l| l.contains("SortedRowNumberExec")),
        "{plan:?}"
    );
}

#[test]
fn row_number_is_exact_across_batch_boundaries() {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        r#"
[pipeline]
name = "p"

[[ingest]]
table = "bronze.t"
format = "csv"
path = "data/*.csv"
schema = { k = "long", v = "long" }
"#,
    );
    // 20,000 rows in runs of 7 per key: 2,857 full runs and one run of 1 row.
    let mut csv = String::from("k,v\n");
    for i in 0..20_000 {
        csv.push_str(&format!("{},{}\n", i / 7, 20_000 - i));
    }
    p.write("data/a.csv", &csv);
    p.json(&["run", "p"]);
    let rows = p.query(
        "WITH numbered AS (SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) AS n FROM bronze.t) \
         SELECT count(*), sum(n), max(n), sum(CASE WHEN n = 1 THEN 1 ELSE 0 END) FROM numbered",
    );
    // sum(n) = 2857 * (1+...+7) + 1 = 79,997; one n = 1 per key: 2,858 keys.
    let s = |v: &str| Some(v.to_string());
    assert_eq!(rows, vec![vec![s("20000"), s("79997"), s("7"), s("2858")]]);
}
