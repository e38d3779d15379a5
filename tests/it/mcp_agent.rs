//! An agent's questions about the retail sample, answered through `pipeline mcp` by a scripted
//! client on the official MCP SDK (tests/mcp/agent.py) from tool results alone; each answer
//! is checked against facts computed by hand from the sample, the late file this test writes
//! and `tests/expected/retail.json` (the independent reference implementation's output).

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{expected_retail, repo, Project};

/// The agent's answers to `questions` (comma-separated), within five minutes.
fn ask(p: &Project, questions: &str) -> Value {
    let out = Command::new("timeout")
        .args(["300", "python3"])
        .arg(repo().join("tests/mcp/agent.py"))
        .arg(questions)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_pipeline"))
        .args(["--project", p.path().to_str().unwrap(), "mcp"])
        .output()
        .expect("python3 must be installed (see tests/run-all.sh)");
    assert!(
        out.status.success(),
        "the agent failed (pip install -r tests/requirements.txt):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A decimal with two places as cents.
fn cents(text: &str) -> i64 {
    let (units, fraction) = text.split_once('.').unwrap_or((text, "0"));
    units.parse::<i64>().unwrap() * 100 + format!("{fraction:0<2}")[..2].parse::<i64>().unwrap()
}

/// The late file: order 1041 (customer 12, a 64.00 backpack on 2026-03-05) sent again,
/// cancelled. Its file name sorts after the first copy's, so its copy is the one kept.
const LATE_FILE: &str = "sample-data/retail/orders/pos_2026-03-20.csv";
const LATE: &str = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
                    1041,12,2026-03-05 09:30:00,Backpack,1,64.00,cancelled\n";

#[test]
fn an_agent_answers_five_questions_from_tool_results_alone() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p.write(LATE_FILE, LATE);
    p.json(&["run", "retail"]);
    let expected = expected_retail();
    let seen = ask(&p, "feeds,drop,failed,backfill,wrong_snapshot");
    let answers = &seen["answers"];

    // 1. gold.customer_metrics.total_spend = sum(fact_orders.amount); fact_orders.amount is
    // silver.orders.amount = quantity * unit_price of both bronze order tables, which come
    // from the POS CSV and web JSON Lines files.
    assert_eq!(
        answers["feeds"]["tables"],
        json!([
            "bronze.pos_orders",
            "bronze.web_orders",
            "gold.fact_orders",
            "silver.orders"
        ])
    );
    assert_eq!(
        answers["feeds"]["sources"],
        json!([
            "sample-data/retail/orders/*.csv",
            "sample-data/retail/web/*.jsonl"
        ])
    );

    // 2. March revenue dropped by the late cancellation's 64.00, because the table leaves
    // cancelled orders out; the newest run replaced March only.
    let drop = &answers["drop"];
    let march = expected["tables"]["gold.monthly_revenue"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == "2026-03-01")
        .unwrap()[3]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(cents(drop["before"].as_str().unwrap()), cents(&march));
    assert_eq!(cents(drop["after"].as_str().unwrap()), cents(&march) - 6400);
    assert_eq!(cents(drop["drop"].as_str().unwrap()), 6400);
    assert_eq!(drop["late_files"], json!([LATE_FILE]));
    assert_eq!(drop["orders"][0]["order_id"], 1041);
    assert_eq!(drop["orders"][0]["status"], "cancelled");
    assert_eq!(drop["orders"].as_array().unwrap().len(), 1);
    assert!(
        drop["partitions"].as_str().unwrap().ends_with("2026-03"),
        "{drop}"
    );
    assert!(drop["description"]
        .as_str()
        .unwrap()
        .contains("cancelled orders left out"));
    assert_eq!(drop["sql_filters_cancelled"], true);
    assert_eq!(drop["upstream"], json!(["gold.fact_orders"]));
    let revenue_type = drop["revenue_type"].as_str().unwrap();
    assert!(
        revenue_type.starts_with("decimal(") && revenue_type.ends_with(",2)"),
        "{revenue_type}"
    );

    // 3. The check that failed in the newest run: orders of customer 99, whom the customer
    // file does not have, among the rows the run rewrote (March).
    let failed = &answers["failed"];
    let unknown_in_march: Vec<&Value> = expected["tables"]["gold.fact_orders"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[3].is_null() && r[1].as_str().unwrap().starts_with("2026-03"))
        .collect();
    assert_eq!(failed["table"], "silver.orders");
    assert_eq!(failed["check"], "relationships");
    assert_eq!(failed["violations"], unknown_in_march.len());
    // Each sampled row is an object of the violating row's columns.
    for row in &unknown_in_march {
        let (order, customer) = (row[0].as_str().unwrap(), row[2].as_str().unwrap());
        assert!(
            failed["sample"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["order_id"] == order && s["customer_id"] == customer),
            "order {order} not in {failed}"
        );
    }
    assert_eq!(failed["run_id"], failed["last_result_run"]);
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    let line: usize = failed["defined_at"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let block: String = spec
        .lines()
        .skip(line - 1)
        .take(4)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(block.contains("relationships"), "{block}");

    // 5. February, by the spec's partitioning: the month-partitioned tables replace it, the
    // customer aggregates are recomputed whole from them.
    let backfill = &answers["backfill"];
    assert_eq!(backfill.as_object().unwrap().len(), 5, "{backfill}");
    for table in ["silver.orders", "gold.fact_orders", "gold.monthly_revenue"] {
        let action = backfill[table].as_str().unwrap();
        assert!(
            action.starts_with("replace") && action.ends_with("2026-02"),
            "{table}: {action}"
        );
    }
    for table in ["gold.customer_metrics", "gold.repeat_buyers"] {
        assert!(
            backfill[table]
                .as_str()
                .unwrap()
                .starts_with("full refresh"),
            "{table}"
        );
    }

    // An id no table has: the error names the tool to look ids up with, in an agent's words.
    let wrong = answers["wrong_snapshot"].as_str().unwrap();
    assert!(
        wrong.contains("describe_table") && wrong.contains("as_of"),
        "{wrong}"
    );
    assert!(
        !wrong.contains("pipeline history") && !wrong.contains("--as-of"),
        "{wrong}"
    );
    assert!(seen["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("list_pipelines")));
    // Query results came as structured content (the four queries of question 2), and the
    // query tool declares its output schema: columns with their types, rows, truncation.
    assert_eq!(seen["structured"], 4, "{seen}");
    let schema = &seen["output_schemas"]["query"]["properties"];
    for key in ["columns", "rows", "truncated"] {
        assert!(schema.get(key).is_some(), "{schema}");
    }

    // 4. silver.orders.amount renamed in the SQL on disk: gold.fact_orders reads it, and
    // everything computed from fact_orders.amount breaks with it, as do the two declared
    // readers of those columns.
    let sql = p.path().join("sql/retail/silver_orders.sql");
    let text = std::fs::read_to_string(&sql).unwrap();
    std::fs::write(
        &sql,
        text.replace(
            "AS DECIMAL(12, 2)) AS amount,",
            "AS DECIMAL(12, 2)) AS order_amount,",
        ),
    )
    .unwrap();
    let rename = &ask(&p, "rename")["answers"]["rename"];
    assert_eq!(rename["change"], "renamed");
    assert_eq!(rename["to"], "order_amount");
    assert_eq!(rename["breaking"], true);
    assert_eq!(
        rename["tables"],
        json!([
            "gold.customer_metrics",
            "gold.fact_orders",
            "gold.monthly_revenue",
            "gold.repeat_buyers"
        ])
    );
    assert_eq!(
        rename["readers"],
        json!([
            ["crm segment export", "crm-integrations"],
            ["finance dashboard: monthly revenue", "finance-analytics"]
        ])
    );
}
