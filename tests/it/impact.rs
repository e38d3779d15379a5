//! Column lineage and `pipeline plan`: a rename of `customer_tier` to `loyalty_tier` in a
//! silver transform is listed as breaking, with the gold SQL lines that select the column and
//! the four declared readers that use it (and not the reader that does not), before anything
//! runs. Once run, the renamed column keeps its field id, in silver and in the gold table
//! whose SQL follows the rename, so time travel reads the old values.

use serde_json::Value;

use crate::common::Project;

const SILVER: &str = "-- silver.customers\n\
                      SELECT customer_id,\n       trim(name) AS name,\n       lower(tier) AS customer_tier\n\
                      FROM bronze.customers\n";
const GOLD: &str = "-- gold.tier_counts\n\
                    SELECT customer_tier,\n       count(*) AS customers\n\
                    FROM silver.customers\n\
                    GROUP BY customer_tier\n";

const SPEC: &str = r#"[pipeline]
name = "crm"

[[ingest]]
table = "bronze.customers"
format = "csv"
path = "data/customers.csv"
schema = { customer_id = "long", name = "string", tier = "string" }

[[transform]]
table = "silver.customers"
sql = "sql/crm/silver_customers.sql"

[[transform]]
table = "gold.tier_counts"
sql = "sql/crm/gold_tiers.sql"

[[reader]]
name = "athena view crm.v_customers"
kind = "athena view"
owner = "bi-team@example.com"
sql = "SELECT customer_id, upper(customer_tier) AS tier FROM silver.customers"

[[reader]]
name = "glue export to salesforce"
kind = "glue job"
owner = "crm-integrations"
columns = ["silver.customers.customer_id", "silver.customers.customer_tier"]

[[reader]]
name = "finance extract"
owner = "finance"
sql = """
SELECT c.customer_id, c.name
FROM silver.customers c
WHERE c.customer_tier = 'gold'
"""

[[reader]]
name = "tier dashboard"
kind = "dashboard dataset"
owner = "sales-analytics"
sql = "SELECT customer_tier, count(*) AS n FROM silver.customers GROUP BY customer_tier"

[[reader]]
name = "support names"
owner = "support"
columns = ["silver.customers.name"]
"#;

fn crm() -> Project {
    let p = Project::empty();
    p.write("pipelines/crm.toml", SPEC);
    p.write("sql/crm/silver_customers.sql", SILVER);
    p.write("sql/crm/gold_tiers.sql", GOLD);
    p.write(
        "data/customers.csv",
        "customer_id,name,tier\n1,Ann,Gold\n2,Bob,Silver\n3,Cid,gold\n",
    );
    p
}

fn field_id(p: &Project, table: &str, column: &str) -> i64 {
    p.json(&["describe", table])["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == column)
        .unwrap_or_else(|| panic!("{table} has no column {column}"))["id"]
        .as_i64()
        .unwrap()
}

#[test]
fn plan_lists_every_reader_and_sql_line_a_rename_breaks() {
    let p = crm();
    p.json(&["run", "crm"]);
    let silver_before = p.current_snapshot("silver.customers");
    let tier_id = field_id(&p, "silver.customers", "customer_tier");
    let gold_tier_id = field_id(&p, "gold.tier_counts", "customer_tier");

    // Nothing changed: nothing breaks.
    let plan = p.json(&["plan", "crm"]);
    assert_eq!(plan["tables"], Value::Array(vec![]), "{plan}");
    assert_eq!(plan["unchanged"].as_array().unwrap().len(), 3);

    p.write(
        "sql/crm/silver_customers.sql",
        &SILVER.replace("customer_tier", "loyalty_tier"),
    );
    let plan = p.json(&["plan", "crm"]);
    let tables = plan["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{plan}");
    assert_eq!(tables[0]["table"], "silver.customers");
    let changes = tables[0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{plan}");
    let change = &changes[0];
    assert_eq!(change["change"], "renamed");
    assert_eq!(change["from"], "customer_tier");
    assert_eq!(change["to"], "loyalty_tier");
    assert_eq!(change["breaking"], true);
    let breaks = change["breaks"].as_array().unwrap();
    // The gold SQL selects it on line 2 and groups by it on line 5 (counted by hand above).
    let sql: Vec<&Value> = breaks.iter().filter(|b| b["kind"] == "sql").collect();
    assert_eq!(sql.len(), 1, "{breaks:?}");
    assert_eq!(sql[0]["table"], "gold.tier_counts");
    assert_eq!(sql[0]["sql"], "sql/crm/gold_tiers.sql");
    assert_eq!(sql[0]["lines"], serde_json::json!([2, 5]));
    // The gold column computed from it breaks too.
    assert!(breaks
        .iter()
        .any(|b| b["kind"] == "column" && b["column"] == "gold.tier_counts.customer_tier"));
    // All four readers of the column, with owners; not the one reading only `name`.
    let mut readers: Vec<(String, String)> = breaks
        .iter()
        .filter(|b| b["kind"] == "reader")
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_string(),
                b["owner"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    readers.sort();
    assert_eq!(
        readers,
        vec![
            (
                "athena view crm.v_customers".into(),
                "bi-team@example.com".into()
            ),
            ("finance extract".into(), "finance".into()),
            (
                "glue export to salesforce".into(),
                "crm-integrations".into()
            ),
            ("tier dashboard".into(), "sales-analytics".into()),
        ]
    );
    // The gold transform would not plan any more.
    let failures = plan["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0]["name"], "gold.tier_counts");

    // The same as text, and as a CI gate.
    let out = p.run(&["plan", "crm"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("BREAKING  column customer_tier renamed to loyalty_tier")
            && text.contains("breaks transform gold.tier_counts: sql/crm/gold_tiers.sql:2,5 uses silver.customers.customer_tier")
            && text.contains("breaks reader \"finance extract\", owner finance: uses silver.customers.customer_tier [declared at pipelines/crm.toml:")
            && !text.contains("support names"),
        "{text}"
    );
    let (code, err) = p.fails(&["plan", "crm", "--fail-on-breaking"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("2 breaking change(s)"), "{err}");

    // Nothing ran.
    assert_eq!(p.current_snapshot("silver.customers"), silver_before);

    // Follow the rename in gold and run: both columns keep their field ids.
    p.write(
        "sql/crm/gold_tiers.sql",
        &GOLD.replace("customer_tier", "loyalty_tier"),
    );
    let plan = p.json(&["plan", "crm"]);
    assert_eq!(plan["failures"], Value::Array(vec![]), "{plan}");
    assert_eq!(
        plan["tables"][1]["changes"][0]["change"], "renamed",
        "{plan}"
    );
    p.json(&["run", "crm"]);
    assert_eq!(field_id(&p, "silver.customers", "loyalty_tier"), tier_id);
    assert_eq!(
        field_id(&p, "gold.tier_counts", "loyalty_tier"),
        gold_tier_id
    );
    assert_eq!(
        p.query("SELECT loyalty_tier, customers FROM gold.tier_counts ORDER BY loyalty_tier"),
        vec![
            vec![Some("gold".into()), Some("2".into())],
            vec![Some("silver".into()), Some("1".into())],
        ]
    );
    // Time travel to before the rename reads the old name and values.
    assert_eq!(
        p.query_as_of(
            "SELECT customer_tier FROM silver.customers ORDER BY customer_id",
            silver_before
        ),
        vec![
            vec![Some("gold".into())],
            vec![Some("silver".into())],
            vec![Some("gold".into())]
        ]
    );
    let plan = p.json(&["plan", "crm"]);
    assert_eq!(plan["tables"], Value::Array(vec![]), "{plan}");
    // The readers still on the old name now fail against the live tables, and are named.
    let stale: Vec<&str> = plan["unplanned_readers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        stale,
        vec![
            "athena view crm.v_customers",
            "finance extract",
            "tier dashboard"
        ]
    );
}

#[test]
fn lineage_traces_columns_to_source_fields() {
    let p = crm();
    let json = p.json(&["lineage", "gold.tier_counts.customer_tier"]);
    let root = &json["columns"][0];
    assert_eq!(root["column"], "gold.tier_counts.customer_tier");
    assert_eq!(root["kind"], "transform");
    assert_eq!(root["direct"], true);
    let silver = &root["from"][0];
    assert_eq!(silver["column"], "silver.customers.customer_tier");
    assert_eq!(silver["sql"], "sql/crm/silver_customers.sql");
    assert_eq!(silver["direct"], false, "lower() computes it");
    let bronze = &silver["from"][0];
    assert_eq!(bronze["column"], "bronze.customers.tier");
    assert_eq!(bronze["kind"], "source");
    assert_eq!(bronze["format"], "csv");
    assert_eq!(bronze["field"], "tier");
    assert_eq!(bronze["paths"], serde_json::json!(["data/customers.csv"]));

    // A count(*) derives from no column.
    let json = p.json(&["lineage", "gold.tier_counts.customers"]);
    assert_eq!(json["columns"][0]["from"], Value::Array(vec![]));

    // Retail: amount = quantity * unit_price, from both order feeds.
    let retail = Project::retail();
    let out = retail.run(&["lineage", "silver.orders.amount", "--format", "dot"]);
    assert!(out.status.success());
    let dot = String::from_utf8_lossy(&out.stdout);
    for source in [
        "bronze.pos_orders.quantity",
        "bronze.pos_orders.unit_price",
        "bronze.web_orders.quantity",
        "bronze.web_orders.unit_price",
    ] {
        assert!(
            dot.contains(&format!("\"{source}\" -> \"silver.orders.amount\";")),
            "{dot}"
        );
    }
    assert!(!dot.contains("customer_id"), "{dot}");
    let out = retail.run(&["lineage", "gold.customer_metrics", "--format", "mermaid"]);
    let mermaid = String::from_utf8_lossy(&out.stdout);
    assert!(mermaid.starts_with("flowchart LR\n"), "{mermaid}");
    assert!(
        mermaid.contains("[\"csv field `name` of sample-data/retail/customers/*.csv\"]"),
        "{mermaid}"
    );
    let (code, err) = retail.fails(&["lineage", "gold.customer_metrics.nope"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("gold.customer_metrics has no column `nope`"),
        "{err}"
    );
}

#[test]
fn lineage_downstream_lists_what_a_column_reaches() {
    let p = Project::retail();
    // By the SQL: fact_orders.amount = o.amount; customer_metrics' total_spend = sum(amount),
    // avg_order_value and segment from total_spend; monthly_revenue.revenue = sum(amount);
    // repeat_buyers.revenue = sum(total_spend).
    let tree = p.json(&["lineage", "silver.orders.amount", "--downstream"]);
    let mut reached = Vec::new();
    fn walk(node: &Value, out: &mut Vec<String>) {
        out.push(node["column"].as_str().unwrap().to_string());
        for child in node["to"].as_array().unwrap() {
            walk(child, out);
        }
    }
    walk(&tree["columns"][0], &mut reached);
    reached.sort();
    assert_eq!(
        reached,
        [
            "gold.customer_metrics.avg_order_value",
            "gold.customer_metrics.segment",
            "gold.customer_metrics.total_spend",
            "gold.fact_orders.amount",
            "gold.monthly_revenue.revenue",
            "gold.repeat_buyers.revenue",
            "silver.orders.amount",
        ]
    );
    let text = String::from_utf8(
        p.run(&["lineage", "silver.orders.amount", "--downstream"])
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("└── gold.fact_orders.amount <- o.amount"),
        "{text}"
    );
    assert!(
        text.contains("gold.repeat_buyers.revenue <- sum(gold.customer_metrics.total_spend)"),
        "{text}"
    );
}
