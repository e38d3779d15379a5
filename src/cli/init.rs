//! `pipeline init NAME`: a working pipeline to start from, written into the project folder:
//! one CSV file, a bronze table loaded from it, a silver and a gold transform with
//! descriptions, an expectation, and a model test of the gold SQL. `pipeline run NAME` and
//! `pipeline test NAME` pass on it as written. Nothing that exists is ever overwritten.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::spec::{is_identifier, list_pipelines, load_pipeline, producer_of, TableName};

/// What `pipeline init` wrote.
#[derive(Debug, Serialize)]
pub struct Scaffold {
    pub pipeline: String,
    pub project: PathBuf,
    /// Relative to the project.
    pub files: Vec<String>,
    /// The tables the pipeline writes.
    pub tables: Vec<String>,
}

const CSV: &str = "order_id,customer,order_ts,amount,status
1,alice,2026-01-05 10:00:00,12.50,paid
2,bob,2026-01-05 11:30:00,8.00,paid
3,alice,2026-01-06 09:15:00,20.00,refunded
4,carol,2026-01-06 17:45:00,5.25,paid
5,bob,2026-01-07 08:00:00,14.75,paid
";

const SPEC: &str = r#"# The NAME pipeline: orders from CSV files into bronze, cleaned into silver, revenue per day
# in gold. Run it with `pipeline run NAME`; test the SQL with `pipeline test NAME`.

[pipeline]
name = "NAME"
description = "Orders from CSV files, bronze -> silver -> gold"

# Tables live in the embedded catalog (warehouse/catalog.db + warehouse/) unless a
# [catalog] section says otherwise (see the README: S3 Tables, Glue, any Iceberg REST catalog).

[[ingest]]
table = "bronze.ORDERS"
description = "Order files as loaded, one row per CSV line"
format = "csv"
path = "sample-data/NAME/*.csv"
schema = { order_id = "long not null", customer = "string", order_ts = "timestamp", amount = "decimal(10,2)", status = "string" }
on_bad_record = "quarantine"

[[transform]]
table = "silver.ORDERS"
description = "One row per order, status in lower case, with the order's day"
sql = "sql/NAME/silver_orders.sql"

[[transform]]
table = "gold.DAILY"
description = "Paid orders and revenue per day; refunded orders left out"
sql = "sql/NAME/gold_daily_revenue.sql"
[transform.columns]
revenue = "Sum of amount over the day's paid orders"

[[expect]]
table = "silver.ORDERS"
check = "unique"
columns = ["order_id"]
"#;

const SILVER: &str = "-- silver.ORDERS: one row per order (the latest copy), status in lower case.
WITH ranked AS (
    SELECT *,
           row_number() OVER (PARTITION BY order_id ORDER BY order_ts DESC, _source_file DESC, _source_line DESC) AS copy_no
    FROM bronze.ORDERS
)
SELECT order_id,
       customer,
       order_ts,
       CAST(order_ts AS DATE) AS order_date,
       amount,
       lower(trim(status)) AS status
FROM ranked
WHERE copy_no = 1
";

const GOLD: &str = "-- gold.DAILY: paid orders and revenue per day.
SELECT order_date,
       count(*) AS orders,
       sum(amount) AS revenue
FROM silver.ORDERS
WHERE status = 'paid'
GROUP BY order_date
";

const TEST: &str = r#"# Model tests of gold.DAILY (sql/NAME/gold_daily_revenue.sql): `pipeline test NAME`.

[[test]]
name = "paid orders per day; a refunded order is left out"
table = "gold.DAILY"
given."silver.ORDERS" = [
  { order_id = 1, customer = "alice", order_date = "2026-01-05", amount = "12.50", status = "paid" },
  { order_id = 2, customer = "bob", order_date = "2026-01-05", amount = "8.00", status = "paid" },
  { order_id = 3, customer = "alice", order_date = "2026-01-06", amount = "20.00", status = "refunded" },
]
expect = [
  { order_date = "2026-01-05", orders = 2, revenue = "20.50" },
]
"#;

/// Writes the scaffold of pipeline `name` into `project` (created if missing). Refused, with
/// nothing written, when `name` is not a plain name, a file it would write exists, or
/// another pipeline of the project writes a table of the same name.
pub fn init(project: &Path, name: &str) -> Result<Scaffold> {
    if !is_identifier(name) || name.len() > 64 {
        return Err(Error::Usage(format!(
            "init: `{name}` is not a pipeline name; use letters, digits and _ (e.g. shop_orders)"
        )));
    }
    if list_pipelines(project).iter().any(|p| p == name) {
        return Err(Error::Usage(format!(
            "init: the project already has a pipeline named {name}; choose another name"
        )));
    }
    let (orders, daily) = table_names(project, name)?;
    let fill = |text: &str| {
        text.replace("NAME", name)
            .replace("DAILY", &daily)
            .replace("ORDERS", &orders)
    };
    let files = [
        (format!("pipelines/{name}.toml"), fill(SPEC)),
        (
            format!("sample-data/{name}/orders_2026-01.csv"),
            CSV.to_string(),
        ),
        (format!("sql/{name}/silver_orders.sql"), fill(SILVER)),
        (format!("sql/{name}/gold_daily_revenue.sql"), fill(GOLD)),
        (format!("tests/{name}/gold_daily_revenue.toml"), fill(TEST)),
    ];
    if let Some((path, _)) = files.iter().find(|(p, _)| project.join(p).exists()) {
        return Err(Error::Usage(format!(
            "init: {} exists; init never overwrites a file (choose another name, or remove it)",
            project.join(path).display()
        )));
    }
    for (path, text) in &files {
        let path = project.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    }
    // What was written loads: the scaffold is a pipeline as any other.
    load_pipeline(project, name)?;
    Ok(Scaffold {
        pipeline: name.to_string(),
        project: project.to_path_buf(),
        files: files.into_iter().map(|(p, _)| p).collect(),
        tables: [
            format!("bronze.{orders}"),
            format!("silver.{orders}"),
            format!("gold.{daily}"),
        ]
        .into(),
    })
}

/// The table names (`orders`, `daily_revenue`), prefixed with the pipeline's name when
/// another pipeline of the project already writes a table of that name.
fn table_names(project: &Path, name: &str) -> Result<(String, String)> {
    if list_pipelines(project).is_empty() {
        return Ok(("orders".into(), "daily_revenue".into()));
    }
    let taken =
        |table: &str| TableName::parse(table).is_some_and(|t| producer_of(project, &t).is_ok());
    let plain = ["bronze.orders", "silver.orders", "gold.daily_revenue"];
    Ok(match plain.iter().any(|t| taken(t)) {
        false => ("orders".into(), "daily_revenue".into()),
        true => (format!("{name}_orders"), format!("{name}_daily_revenue")),
    })
}
