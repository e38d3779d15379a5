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
