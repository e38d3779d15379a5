//! Every Iceberg partition transform the spec accepts writes a table that the engine, PyIceberg
//! and DuckDB read back whole. Expected values are the hand-written input rows themselves.

use crate::common::Project;

#[test]
fn every_partition_transform_writes_readable_tables() {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        r#"
[pipeline]
name = "p"

[[ingest]]
table = "bronze.events"
format = "json"
path = "data/*.jsonl"
schema = { id = "long", kind = "string", ts = "timestamp", day = "date", price = "decimal(8,2)" }
partition_by = ["day(ts)", "bucket[4](id)", "truncate[2](kind)"]

[[transform]]
table = "silver.events"
sql = "sql/p/events.sql"
partition_by = ["year(day)", "hour(ts)", "kind", "bucket(3, id)", "truncate(10, price)"]
"#,
    );
    p.write(
        "sql/p/events.sql",
        "SELECT id, kind, ts, day, price FROM bronze.events",
    );
    p.write(
        "data/a.jsonl",
        concat!(
            "{\"id\": 1, \"kind\": \"click\", \"ts\": \"2026-01-01 10:15:00\", \"day\": \"2026-01-01\", \"price\": 1.25}\n",
            "{\"id\": 2, \"kind\": \"view\", \"ts\": \"2026-01-01T11:00:00Z\", \"day\": \"2025-12-31\", \"price\": 20}\n",
            "{\"id\": 3, \"kind\": \"click\", \"ts\": \"2026-01-02 00:00:00.5\", \"day\": \"2026-01-02\", \"price\": -3.10}\n",
            "{\"id\": 4, \"kind\": null, \"ts\": null, \"day\": null, \"price\": null}\n",
        ),
    );
    p.json(&["run", "p"]);
    for table in ["bronze.events", "silver.events"] {
        assert_eq!(
            p.query(&format!(
                "SELECT id, kind, ts, day, price FROM {table} ORDER BY id"
            )),
            vec![
                vec![
                    Some("1".into()),
                    Some("click".into()),
                    Some("2026-01-01T10:15:00".into()),
                    Some("2026-01-01".into()),
                    Some("1.25".into())
                ],
                vec![
                    Some("2".into()),
                    Some("view".into()),
                    Some("2026-01-01T11:00:00".into()),
                    Some("2025-12-31".into()),
                    Some("20.00".into())
                ],
                vec![
                    Some("3".into()),
                    Some("click".into()),
                    Some("2026-01-02T00:00:00.500".into()),
                    Some("2026-01-02".into()),
                    Some("-3.10".into())
                ],
                vec![Some("4".into()), None, None, None, None],
            ],
            "{table}"
        );
    }
    let spec = p.json(&["describe", "silver.events"])["partition_spec"].clone();
    assert_eq!(
        spec,
        serde_json::json!([
            "year(day) as day_year",
            "hour(ts) as ts_hour",
            "identity(kind) as kind",
            "bucket[3](id) as id_bucket_3",
            "truncate[10](price) as price_trunc_10"
        ])
    );
    // Independent readers see the same rows.
    let readers = p.independent_readers();
    for table in ["bronze.events", "silver.events"] {
        for reader in ["pyiceberg", "duckdb"] {
            assert_eq!(readers[table][reader]["rows"], 4, "{reader} {table}");
            assert_eq!(
                readers[table][reader]["sums"]["id"], "10",
                "{reader} {table}"
            );
            assert_eq!(
                readers[table][reader]["sums"]["price"], "18.15",
                "{reader} {table}"
            );
        }
    }
}
