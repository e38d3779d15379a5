//! Tables are read by DataFusion's own Parquet source, in parallel file groups, where reading
//! a file's columns by name reads what Iceberg's field ids say; a table with a renamed column is
//! read through iceberg's reader instead. Either way the rows are the same.

use crate::common::Project;

const SPEC: &str = r#"[pipeline]
name = "shop"

[[ingest]]
table = "bronze.items"
format = "csv"
path = "data/*.csv"
schema = { id = "long", price = "decimal(10,2)", day = "date" }
partition_by = ["month(day)"]

[[transform]]
table = "silver.items"
sql = "sql/items.sql"
"#;

/// The physical plan of `sql`, as `pipeline query "EXPLAIN ..."` prints it.
pub(crate) fn plan(p: &Project, sql: &str) -> String {
    p.query(&format!("EXPLAIN {sql}"))
        .into_iter()
        .flatten()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn files_are_read_in_parallel_by_name_unless_a_column_was_renamed() {
    let p = Project::empty();
    p.write("pipelines/shop.toml", SPEC);
    p.write("sql/items.sql", "SELECT id, price FROM bronze.items\n");
    // Three months: three files of bronze.items.
    p.write(
        "data/a.csv",
        "id,price,day\n1,10.50,2026-01-05\n2,20.25,2026-02-05\n3,5.00,2026-03-05\n",
    );
    p.json(&["run", "shop"]);

    let bronze = plan(&p, "SELECT sum(price) FROM bronze.items");
    assert!(bronze.contains("DataSourceExec"), "{bronze}");
    assert!(bronze.contains("file_groups={"), "{bronze}");
    assert_eq!(
        p.query("SELECT sum(price), count(*) FROM bronze.items WHERE day >= DATE '2026-02-01'"),
        vec![vec![Some("25.25".to_string()), Some("2".to_string())]]
    );

    // `price` becomes `cost` (the same derivation: renamed in place, its field id kept).
    p.write(
        "sql/items.sql",
        "SELECT id, price AS cost FROM bronze.items\n",
    );
    p.json(&["run", "shop"]);
    let silver = plan(&p, "SELECT sum(cost) FROM silver.items");
    assert!(silver.contains("IcebergTableScan"), "{silver}");
    assert!(!silver.contains("DataSourceExec"), "{silver}");
    assert_eq!(
        p.query("SELECT sum(cost), count(*) FROM silver.items"),
        vec![vec![Some("35.75".to_string()), Some("3".to_string())]]
    );
    // The bronze table never renamed anything: still read natively.
    assert!(plan(&p, "SELECT count(*) FROM bronze.items").contains("DataSourceExec"));
}
