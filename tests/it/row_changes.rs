//! `pipeline sql "DELETE FROM ... WHERE ..."`: rows removed copy-on-write, recorded, undone
//! by `rollback`, read the same by PyIceberg and DuckDB, and followed downstream by the next
//! run. Expected counts come from the hand-computed tests/expected/retail.json.

use crate::common::{action, expected_retail, Project};

#[test]
fn a_delete_rewrites_only_the_files_holding_the_rows_and_is_undone_by_rollback() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let expected = expected_retail();
    let orders = expected["counts"]["silver.orders"].as_u64().unwrap();
    // The first February order, and the files before.
    let target = p.query(
        "SELECT min(order_id) FROM silver.orders WHERE order_date >= DATE '2026-02-01' AND order_date < DATE '2026-03-01'",
    )[0][0]
        .clone()
        .unwrap();
    let before = p.files("silver.orders");
    assert_eq!(before.len(), 3, "one file per month");

    let change = p.json(&[
        "sql",
        &format!("DELETE FROM silver.orders WHERE order_id = {target}"),
        "--reason",
        "TICKET-7: a test order",
    ]);
    assert_eq!(change["statement"], "delete");
    assert_eq!(change["rows"], 1, "{change}");
    assert_eq!(change["files_rewritten"], 1);
    assert_eq!(change["files_in_table"], 3);
    let record = &change["record"];
    assert_eq!(record["kind"], "sql");
    assert_eq!(record["reason"], "TICKET-7: a test order");
    let run_id = record["run_id"].as_str().unwrap().to_string();

    // The row is gone; January's and March's files are the very same files; February's was
    // replaced by a new one.
    let count = |table: &str| -> u64 {
        p.query(&format!("SELECT count(*) FROM {table}"))[0][0]
            .as_deref()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(count("silver.orders"), orders - 1);
    let gone = p.query(&format!(
        "SELECT count(*) FROM silver.orders WHERE order_id = {target}"
    ));
    assert_eq!(gone[0][0].as_deref(), Some("0"));
    let after = p.files("silver.orders");
    let kept: Vec<_> = before
        .iter()
        .filter(|(path, _)| after.contains_key(*path))
        .collect();
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|(path, v)| after[*path] == **v));
    assert!(kept
        .iter()
        .all(|(_, (partition, _))| !partition.contains("2026-02")));

    // PyIceberg and DuckDB read the change (no delete files: a plain rewrite).
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(
            readers["silver.orders"][reader]["rows"],
            orders - 1,
            "{reader}"
        );
    }

    // The next run keeps silver.orders as it is and recomputes only February downstream.
    let next = p.json(&["run", "retail"]);
    assert!(
        action(&next, "silver.orders").contains("up to date"),
        "{next}"
    );
    assert!(
        action(&next, "gold.fact_orders").contains("2026-02"),
        "{next}"
    );
    assert!(
        !action(&next, "gold.fact_orders").contains("2026-01"),
        "{next}"
    );
    assert_eq!(count("gold.fact_orders"), orders - 1);

    // Rollback brings the row back; the next run brings it back downstream too.
    p.json(&["rollback", &run_id, "--reason", "it was real"]);
    assert_eq!(count("silver.orders"), orders);
    p.json(&["run", "retail"]);
    assert_eq!(count("gold.fact_orders"), orders);

    // A condition that matches nothing changes nothing and records nothing.
    let runs = p.json(&["runs"]).as_array().unwrap().len();
    let none = p.json(&["sql", "DELETE FROM silver.orders WHERE order_id = -1"]);
    assert!(none["record"].is_null(), "{none}");
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), runs);

    // What it does not do, said clearly.
    let (code, err) = p.fails(&["sql", "DELETE FROM silver.orders"]);
    assert_eq!(code, 2);
    assert!(err.contains("needs a WHERE"), "{err}");
    let (_, err) = p.fails(&["sql", "DELETE FROM silver.orders WHERE no_such_column = 1"]);
    assert!(err.contains("no_such_column"), "{err}");
}

#[test]
fn an_update_of_bronze_flows_to_silver_on_the_next_run_for_its_month_only() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // A January POS order that is not cancelled yet.
    let target = p.query(
        "SELECT min(order_id) FROM bronze.pos_orders WHERE order_ts < TIMESTAMP '2026-02-01 00:00:00' AND lower(trim(status)) <> 'cancelled'",
    )[0][0]
        .clone()
        .unwrap();
    let rows_before = p.query("SELECT count(*) FROM bronze.pos_orders")[0][0].clone();
    let change = p.json(&[
        "sql",
        &format!("UPDATE bronze.pos_orders SET status = 'cancelled', quantity = quantity * 2 WHERE order_id = {target}"),
        "--reason",
        "INC-9: cancelled by phone",
    ]);
    assert_eq!(change["statement"], "update");
    assert_eq!(change["rows"], 1, "{change}");
    assert_eq!(change["files_rewritten"], 1);
    // Every row is still there; only the matching one changed.
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.pos_orders")[0][0],
        rows_before
    );
    let row = p.query(&format!(
        "SELECT status, quantity FROM bronze.pos_orders WHERE order_id = {target}"
    ));
    assert_eq!(row[0][0].as_deref(), Some("cancelled"));
    let quantity: i64 = row[0][1].as_deref().unwrap().parse().unwrap();
    assert!(quantity >= 2 && quantity % 2 == 0, "{row:?}");

    // The next run recomputes January of silver.orders (and downstream), nothing else.
    let next = p.json(&["run", "retail"]);
    let silver = action(&next, "silver.orders");
    assert!(
        silver.contains("2026-01") && !silver.contains("2026-02"),
        "{silver}"
    );
    let status = p.query(&format!(
        "SELECT status, quantity FROM silver.orders WHERE order_id = {target}"
    ));
    assert_eq!(status[0][0].as_deref(), Some("cancelled"));
    assert_eq!(status[0][1].as_deref(), Some(quantity.to_string().as_str()));

    // A bad SET names the column.
    let (_, err) = p.fails(&[
        "sql",
        "UPDATE bronze.pos_orders SET colour = 'red' WHERE order_id = 1",
    ]);
    assert!(err.contains("colour"), "{err}");
}
