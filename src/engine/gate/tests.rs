//! The gate's own cases: depth, kinds of statement and size.
use super::*;

fn chain(terms: usize, op: &str) -> String {
    let mut sql = String::from("SELECT 1");
    for _ in 1..terms {
        sql.push_str(op);
        sql.push('1');
    }
    sql
}

#[test]
fn a_deep_chain_is_refused_without_overflowing_and_a_shallow_one_passes() {
    assert!(admit(&chain(200, "+"), Entry::Query).is_ok());
    for terms in [300, 10_000, 400_000] {
        let refused = admit(&chain(terms, "+"), Entry::Query).unwrap_err();
        assert!(refused.message.contains("nest more than 256"), "{refused}");
    }
    for n in [400, 50_000] {
        let unions = vec!["SELECT 1"; n].join(" UNION ALL ");
        let refused = admit(&unions, Entry::Query).unwrap_err();
        assert!(refused.message.contains("set operations"), "{refused}");
    }
    let refused = admit_expression(&chain(5_000, " OR 1 = ")[7..]).unwrap_err();
    assert!(refused.message.contains("nest more than"), "{refused}");
}

#[test]
fn only_the_entry_points_kind_passes() {
    for sql in [
        "COPY (SELECT 1) TO '/tmp/x.csv'",
        "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/passwd'",
        "DROP TABLE silver.orders",
        "INSERT INTO silver.orders VALUES (1)",
        "SELECT 1; SELECT 2",
        "SET datafusion.execution.batch_size = 1",
    ] {
        assert!(admit(sql, Entry::Expectation).is_err(), "{sql}");
        assert!(admit(sql, Entry::Query).is_err(), "{sql}");
    }
    assert!(admit("EXPLAIN SELECT 1", Entry::Query).is_ok());
    assert!(admit("EXPLAIN SELECT 1", Entry::Transform).is_err());
    assert!(admit("DELETE FROM silver.t WHERE id = 1", Entry::RowChange).is_ok());
    assert!(admit("SELECT 1", Entry::RowChange).is_err());
    for sql in [
        "WITH x AS (SELECT 1) INSERT INTO silver.t SELECT * FROM x",
        "WITH x AS (SELECT 1) SELECT 1 UNION ALL (WITH y AS (SELECT 2) INSERT INTO silver.t VALUES (1))",
    ] {
        assert!(admit(sql, Entry::Query).is_err(), "{sql}");
    }
    assert!(admit(
        "WITH x AS (SELECT 1) SELECT * FROM x UNION SELECT 2",
        Entry::Transform
    )
    .is_ok());
    let refused = admit("SELECT * FROM '/etc/passwd'", Entry::Query).unwrap_err();
    assert!(refused.message.contains("never files or URLs"), "{refused}");
    let admitted = admit(
        "WITH x AS (SELECT * FROM bronze.a) SELECT * FROM x JOIN silver.b ON true",
        Entry::Transform,
    )
    .unwrap();
    assert_eq!(
        admitted
            .tables()
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>(),
        ["bronze.a", "silver.b"]
    );
}

#[test]
fn a_huge_string_is_refused_before_parsing() {
    let sql = format!("SELECT '{}'", "x".repeat(MAX_SQL_BYTES));
    let refused = admit(&sql, Entry::Query).unwrap_err();
    assert!(
        refused.message.contains("the limit is 1024 KiB"),
        "{refused}"
    );
}

async fn planned(sql: &str) -> Result<LogicalPlan, Refusal> {
    let ctx = SessionContext::new();
    plan(&ctx.state(), admit(sql, Entry::Query)?).await
}

#[tokio::test]
async fn values_built_from_constants_are_bounded_and_the_function_named() {
    for (sql, function) in [
        ("SELECT count(*) FROM unnest(range(1, 2000000000))", "range"),
        ("SELECT count(*) FROM unnest(range(1, 200000000))", "range"),
        (
            "SELECT count(*) FROM unnest(generate_series(-5, 20000000 * 1000, 2))",
            "generate_series",
        ),
        ("SELECT length(repeat('x', 2000000000)) AS n", "repeat"),
        ("SELECT length(lpad('x', 2000000000)) AS n", "lpad"),
        (
            "SELECT length(rpad('x', CAST(2000000000 AS BIGINT), 'ab')) AS n",
            "rpad",
        ),
        (
            "SELECT cardinality(array_repeat(1, 1000000000)) AS n",
            "array_repeat",
        ),
        (
            "SELECT cardinality(list_repeat('abc', 100000000)) AS n",
            "array_repeat",
        ),
        // Each call small, their product not.
        (
            "SELECT cardinality(array_repeat(array_repeat(1, 100000), 100000)) AS n",
            "array_repeat",
        ),
        (
            "SELECT length(replace(repeat('x', 1000000), 'x', repeat('y', 1000))) AS n",
            "replace",
        ),
        (
            "SELECT length(repeat(repeat('x', 100000), 100000)) AS n",
            "repeat",
        ),
        (
            "SELECT cardinality(array_resize([1], 1000000000, 0)) AS n",
            "array_resize",
        ),
        (
            "SELECT * FROM (SELECT 1 AS a) WHERE a IN (SELECT length(repeat('x', 2000000000)))",
            "repeat",
        ),
    ] {
        let refused = planned(sql).await.unwrap_err();
        assert!(
            refused
                .message
                .contains(&format!("`{function}` would build a value")),
            "{sql}: {refused}"
        );
    }
    for sql in [
        "SELECT count(*) FROM unnest(range(1, 1000000))",
        "SELECT repeat('-', 80), lpad('7', 3, '0'), rpad('a', 10)",
        "SELECT cardinality(array_repeat(0, 1000))",
        "SELECT replace('a-b-c', '-', '+')",
        "SELECT unnest(generate_series(DATE '2020-01-01', DATE '2030-01-01', INTERVAL '1 day'))",
    ] {
        assert!(
            planned(sql).await.is_ok(),
            "{sql}: {:?}",
            planned(sql).await.err()
        );
    }
}
