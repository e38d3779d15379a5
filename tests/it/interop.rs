//! Independent readers: PyIceberg (SqlCatalog on the same catalog.db and catalog name) and
//! DuckDB (iceberg_scan of each table's metadata file) read every table the retail run wrote,
//! and must agree with the engine on row counts and on the sum of every numeric column.
//! `.ci/run` installs pyiceberg 0.12 and duckdb 1.5.5 with its iceberg extension from PyPI.

use crate::common::Project;

#[test]
fn pyiceberg_and_duckdb_read_every_table_like_the_engine() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let readers = p.independent_readers();
    let tables = p.tables();
    assert_eq!(
        tables.len(),
        12,
        "3 bronze + 3 quarantine + 2 silver + 4 gold tables"
    );
    for table in &tables {
        let by_reader = &readers[table.as_str()];
        assert!(by_reader.is_object(), "PyIceberg did not list {table}");
        let py = &by_reader["pyiceberg"];
        let columns: Vec<String> = py["sums"].as_object().unwrap().keys().cloned().collect();
        let select: Vec<String> = std::iter::once("count(*)".to_string())
            .chain(columns.iter().map(|c| format!("sum(\"{c}\")")))
            .collect();
        let engine = p.query(&format!("SELECT {} FROM {table}", select.join(", ")));
        let engine_rows: u64 = engine[0][0].as_deref().unwrap().parse().unwrap();
        for reader in ["pyiceberg", "duckdb"] {
            let r = &by_reader[reader];
            assert_eq!(
                r["rows"].as_u64().unwrap(),
                engine_rows,
                "{reader} row count of {table}"
            );
            for (i, c) in columns.iter().enumerate() {
                assert_eq!(
                    r["sums"][c].as_str(),
                    engine[0][i + 1].as_deref(),
                    "{reader} sum of {table}.{c}"
                );
            }
        }
    }
}
