//! Descriptions of tables and columns (`description`, `[transform.columns]`,
//! `[ingest.columns]`): written as the table's `comment` property and each field's Iceberg
//! `doc`, read back by PyIceberg (an independent reader) and shown by `describe`.

use serde_json::Value;

use crate::common::Project;

/// What PyIceberg reads of `table`: its `comment` property and each field's doc (and id).
fn pyiceberg_words(p: &Project, table: &str) -> Value {
    let script = format!(
        r#"
import json
from pyiceberg.catalog.sql import SqlCatalog
c = SqlCatalog("default", uri="sqlite:///{root}/warehouse/catalog.db", warehouse="file://{root}/warehouse")
t = c.load_table("{table}")
print(json.dumps({{"comment": t.properties.get("comment"),
                  "docs": {{f.name: f.doc for f in t.schema().fields}},
                  "ids": {{f.name: f.field_id for f in t.schema().fields}}}}))
"#,
        root = p.path().display()
    );
    serde_json::from_slice(&crate::common::python(&script)).unwrap()
}

#[test]
fn descriptions_reach_iceberg_readers_and_describe() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    let revenue_doc = "Sum of amount over the month's orders that were not cancelled";
    assert!(
        spec.contains(revenue_doc),
        "the sample spec describes revenue"
    );

    let words = pyiceberg_words(&p, "gold.monthly_revenue");
    assert_eq!(
        words["comment"],
        "Orders, customers and revenue per month; cancelled orders left out"
    );
    assert_eq!(words["docs"]["revenue"], revenue_doc);
    assert!(words["docs"]["orders"].is_null());
    let bronze = pyiceberg_words(&p, "bronze.pos_orders");
    assert_eq!(
        bronze["docs"]["_source_file"],
        "The source file the row was loaded from"
    );

    let described = p.json(&["describe", "gold.monthly_revenue"]);
    assert_eq!(described["description"], words["comment"]);
    let revenue = described["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "revenue")
        .unwrap();
    assert_eq!(revenue["doc"], revenue_doc);
    let text = String::from_utf8(p.run(&["describe", "gold.monthly_revenue"]).stdout).unwrap();
    assert!(
        text.contains("description:      Orders, customers"),
        "{text}"
    );
    assert!(text.contains(revenue_doc), "{text}");

    // A new description: the plan says why the table is written again, the run writes it
    // (field ids kept), and every other table stays up to date.
    let edited = spec.replace(revenue_doc, "Revenue of the month, EUR");
    let edited = edited.replace(
        "description = \"Orders, customers and revenue per month; cancelled orders left out\"\n",
        "",
    );
    p.write("pipelines/retail.toml", &edited);
    let plan = String::from_utf8(p.run(&["run", "retail", "--plan"]).stdout).unwrap();
    assert!(plan.contains("descriptions changed"), "{plan}");
    let report = p.json(&["run", "retail"]);
    let written = crate::common::written_tables(&report);
    assert_eq!(
        written.into_iter().collect::<Vec<_>>(),
        vec!["gold.monthly_revenue".to_string()]
    );
    let after = pyiceberg_words(&p, "gold.monthly_revenue");
    assert_eq!(after["docs"]["revenue"], "Revenue of the month, EUR");
    assert!(
        after["comment"].is_null(),
        "the removed description is gone: {after}"
    );
    assert_eq!(after["ids"], words["ids"]);
    let next = p.json(&["run", "retail"]);
    assert!(crate::common::written_tables(&next).is_empty(), "{next}");
}

#[test]
fn a_description_of_a_column_the_table_lacks_is_refused_at_its_line() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    let typo = spec.replace(
        "total_spend = \"Sum of amount",
        "total_spent = \"Sum of amount",
    );
    p.write("pipelines/retail.toml", &typo);
    let line = typo
        .lines()
        .position(|l| l.starts_with("total_spent ="))
        .unwrap()
        + 1;
    for command in [&["validate", "retail"][..], &["run", "retail"]] {
        let (code, err) = p.fails(command);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("retail.toml:{line}:")) && err.contains("`total_spent`"),
            "{err}"
        );
        assert!(
            err.contains("total_spend"),
            "the hint lists the columns: {err}"
        );
    }
    assert!(p.tables().is_empty(), "nothing ran: {:?}", p.tables());

    // An ingest's description of a column its schema lacks, and an empty description, are
    // refused when the spec loads.
    let bad = spec.replace("_source_line = \"The row's", "_source_lin = \"The row's");
    p.write("pipelines/retail.toml", &bad);
    let (code, err) = p.fails(&["validate", "retail"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("`_source_lin` describes no column of bronze.pos_orders"),
        "{err}"
    );
    let empty = spec.replace(
        "description = \"Customers with two or more orders (repeat) against one (one-time)\"",
        "description = \"  \"",
    );
    p.write("pipelines/retail.toml", &empty);
    let (code, err) = p.fails(&["validate", "retail"]);
    assert_eq!(code, 2);
    assert!(err.contains("description: empty"), "{err}");
}
