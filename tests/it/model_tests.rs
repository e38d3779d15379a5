//! `pipeline test`: model tests run a transform's real SQL in memory on given rows and compare
//! with expected rows. The retail sample's tests (tests/retail/*.toml, worked out by hand)
//! pass; a SQL change that breaks one fails with the rows missing and unexpected; bad test
//! files are refused with their line. No catalog is touched.

use crate::common::{copy_tree, repo, Project};

fn retail_with_tests() -> Project {
    let p = Project::retail();
    copy_tree(&repo().join("tests/retail"), &p.path().join("tests/retail"));
    p
}

#[test]
fn the_retail_tests_pass_and_touch_no_catalog() {
    let p = retail_with_tests();
    let outcomes = p.json(&["test", "retail"]);
    let outcomes = outcomes.as_array().unwrap();
    assert_eq!(outcomes.len(), 8);
    assert!(outcomes.iter().all(|o| o["passed"] == true), "{outcomes:?}");
    // Every transform of the spec has a test.
    let tested: std::collections::BTreeSet<&str> = outcomes
        .iter()
        .map(|o| o["table"].as_str().unwrap())
        .collect();
    assert_eq!(tested.len(), 6, "{tested:?}");
    assert!(
        !p.path().join("warehouse").exists(),
        "a test run touched the catalog"
    );

    let selected = p.json(&["test", "retail", "--select", "silver.orders"]);
    assert_eq!(selected.as_array().unwrap().len(), 2);
    let downstream = p.json(&["test", "retail", "--select", "gold.fact_orders+"]);
    assert_eq!(downstream.as_array().unwrap().len(), 5);
}

#[test]
fn a_sql_change_that_breaks_a_test_fails_with_the_row_diff() {
    let p = retail_with_tests();
    let sql = p.path().join("sql/retail/silver_orders.sql");
    let text = std::fs::read_to_string(&sql).unwrap();
    // The earliest copy of an order now wins.
    let broken = text.replace("ORDER BY order_ts DESC", "ORDER BY order_ts ASC");
    assert_ne!(broken, text);
    std::fs::write(&sql, broken).unwrap();
    let out = p.run(&["test", "retail", "--select", "silver.orders"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("1 of 2 model test(s) failed"), "{stderr}");
    assert!(
        stdout.contains("FAIL silver.orders: the latest copy of an order wins"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PASS silver.orders: two copies at the same time"),
        "{stdout}"
    );
    let json = p.json_failing(&["test", "retail", "--select", "silver.orders"]);
    let failed = &json[0];
    // Columns compared: the expected rows' keys, in the order the SQL returns them.
    let columns = [
        "order_id",
        "customer_id",
        "order_date",
        "quantity",
        "amount",
        "status",
    ];
    assert_eq!(failed["columns"], serde_json::json!(columns));
    let missing = ["1", "7", "2026-01-04", "3", "13.50", "delivered"];
    assert_eq!(failed["missing"], serde_json::json!([missing]));
    let unexpected = ["1", "7", "2026-01-03", "2", "9.00", "shipped"];
    assert_eq!(failed["unexpected"], serde_json::json!([unexpected]));
}

#[test]
fn bad_test_files_are_refused_with_their_line() {
    let p = retail_with_tests();
    p.write(
        "tests/retail/zz_bad.toml",
        "[[test]]\ntable = \"silver.orders\"\nexpected = []\n",
    );
    let (code, message) = p.fails(&["test", "retail"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("tests/retail/zz_bad.toml:3"), "{message}");
    p.write(
        "tests/retail/zz_bad.toml",
        "[[test]]\ntable = \"silver.orders\"\ngiven.\"bronze.x; DROP TABLE silver.orders\" = []\nexpect = []\n",
    );
    let (code, message) = p.fails(&["test", "retail"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("zz_bad.toml:3"), "{message}");
    assert!(message.contains("is not a table name"), "{message}");
    // A value that is not of its column's type fails that test, saying which.
    p.write(
        "tests/retail/zz_bad.toml",
        "[[test]]\nname = \"bad\"\ntable = \"silver.orders\"\n\
         given.\"bronze.pos_orders\" = [ { order_id = 1, order_ts = \"soon\" } ]\nexpect = []\n",
    );
    let json = p.json_failing(&["test", "retail", "--select", "silver.orders"]);
    let bad = json
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "bad")
        .unwrap();
    let error = bad["error"].as_str().unwrap();
    assert!(
        error.contains("given bronze.pos_orders: column `order_ts`: `soon` is not a Timestamp"),
        "{error}"
    );
    // Existing rows are for an incremental (replace_partitions) transform.
    p.write(
        "tests/retail/zz_bad.toml",
        "[[test]]\nname = \"bad\"\ntable = \"silver.customers\"\nexisting = []\nexpect = []\n",
    );
    let json = p.json_failing(&["test", "retail", "--select", "silver.customers"]);
    let outcomes = json.as_array().unwrap();
    let bad = outcomes.iter().find(|o| o["name"] == "bad").unwrap();
    let error = bad["error"].as_str().unwrap();
    assert!(
        error.contains("silver.customers is not a replace_partitions transform"),
        "{error}"
    );
}

/// `[[test]]` sections in the pipeline's spec file run with those of tests/<pipeline>/
/// (the spec still loads for a run); a failing one, or a bad one, names the spec file's line.
#[test]
fn tests_in_the_spec_file_run_with_the_others_and_name_its_lines() {
    let p = retail_with_tests();
    let spec = p.path().join("pipelines/retail.toml");
    let original = std::fs::read_to_string(&spec).unwrap();
    let test = |revenue: &str| {
        format!(
            "\n[[test]]\nname = \"in the spec\"\ntable = \"gold.monthly_revenue\"\n\
             given.\"gold.fact_orders\" = [\n\
             \x20 {{ order_id = 1, order_date = \"2026-03-05\", customer_id = 1, amount = \"10.00\", status = \"shipped\" }},\n\
             \x20 {{ order_id = 2, order_date = \"2026-03-20\", customer_id = 2, amount = \"5.50\", status = \"cancelled\" }},\n\
             \x20 {{ order_id = 3, order_date = \"2026-03-21\", customer_id = 1, amount = \"2.25\", status = \"delivered\" }},\n\
             ]\nexpect = [ {{ month = \"2026-03-01\", orders = 2, customers = 1, revenue = \"{revenue}\" }} ]\n"
        )
    };
    std::fs::write(&spec, format!("{original}{}", test("12.25"))).unwrap();
    let outcomes = p.json(&["test", "retail"]);
    let outcomes = outcomes.as_array().unwrap();
    assert_eq!(outcomes.len(), 9, "{outcomes:?}");
    let ours = outcomes
        .iter()
        .find(|o| o["name"] == "in the spec")
        .unwrap();
    assert_eq!(ours["passed"], true, "{ours}");
    p.json(&["validate", "retail"]);

    // 12.25 is right (10.00 + 2.25; the cancelled order left out): 17.75 is not.
    std::fs::write(&spec, format!("{original}{}", test("17.75"))).unwrap();
    let line = original.lines().count() + 4;
    let out = p.run(&["test", "retail", "--select", "gold.monthly_revenue"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "FAIL gold.monthly_revenue: in the spec (pipelines/retail.toml:{line})"
        )),
        "{stdout}"
    );
    std::fs::write(
        &spec,
        format!("{original}\n[[test]]\ntable = \"gold.monthly_revenue\"\nexpected = []\n"),
    )
    .unwrap();
    let (code, message) = p.fails(&["test", "retail"]);
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains(&format!(
            "pipelines/retail.toml:{}",
            original.lines().count() + 4
        )),
        "{message}"
    );
}
