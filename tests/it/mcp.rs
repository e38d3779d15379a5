//! `pipeline mcp` driven by a client no one here wrote: the official MCP Python SDK (`mcp` on
//! PyPI, tests/mcp/drive.py) over stdio. Expected values come from the hand-computed
//! tests/expected/retail.json and from the sample's files.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{expected_retail, repo, Project};

/// Starts `pipeline mcp ARGS` for `p` under the Python SDK (over stdio), makes `calls`,
/// returns what the client saw (tools, and per call `is_error` and `text`).
fn drive(p: &Project, args: &[&str], calls: Value) -> Value {
    drive_over(p, args, calls, false)
}

/// [`drive`] over stdio, or over streamable HTTP on a free loopback port. The server runs
/// in the project's environment and on its catalog, as its other commands do.
pub fn drive_over(p: &Project, args: &[&str], calls: Value, http: bool) -> Value {
    drive_within(p, args, calls, http, None)
}

/// [`drive_over`], the client and the server (and what it starts) under an address-space
/// limit of `ulimit_kb` KiB when given (`ulimit -v`): a test of memory ceilings that fail
/// stops itself, never the machine.
pub fn drive_within(
    p: &Project,
    args: &[&str],
    calls: Value,
    http: bool,
    ulimit_kb: Option<u64>,
) -> Value {
    let project = p.path().to_str().unwrap().to_string();
    let mut command = match ulimit_kb {
        Some(kb) => {
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -v {kb} && exec python3 \"$@\""))
                .arg("sh");
            sh
        }
        None => Command::new("python3"),
    };
    command.arg(repo().join("tests/mcp/drive.py"));
    if http {
        command.arg("--http");
    }
    let env: serde_json::Map<String, Value> = p
        .env
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    command
        .args(["--env", &Value::Object(env).to_string()])
        .arg(calls.to_string())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_pipeline"))
        .args(["mcp", "--project", &project]);
    if let Some(catalog) = &p.catalog {
        command.args(["--catalog", catalog]);
    }
    let out = command
        .args(args)
        .output()
        .expect("python3 must be installed (see tests/run-all.sh)");
    assert!(
        out.status.success(),
        "the MCP client failed (pip install -r tests/requirements.txt):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    seen["server_log"] = Value::String(String::from_utf8_lossy(&out.stderr).into_owned());
    seen
}

fn tool_names(seen: &Value) -> Vec<String> {
    seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The JSON a successful call answered.
fn answer(call: &Value) -> Value {
    assert_eq!(call["is_error"], false, "{call}");
    serde_json::from_str(call["text"].as_str().unwrap()).unwrap()
}

/// Rows of JSON values as text (strings as they are, numbers as written).
fn texts(rows: &Value) -> Vec<Vec<String>> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect()
        })
        .collect()
}

fn refused(call: &Value) -> String {
    assert_eq!(call["is_error"], true, "expected a refusal: {call}");
    call["text"].as_str().unwrap().to_string()
}

#[test]
fn an_agent_reads_the_lake_and_cannot_write_to_it() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let seen = drive(
        &p,
        &["--max-rows", "5", "--query-timeout", "4"],
        json!([
            {"tool": "list_tables"},
            {"tool": "query", "arguments": {"sql": "SELECT CAST(month AS VARCHAR) AS month, orders, customers, revenue FROM gold.monthly_revenue ORDER BY month"}},
            {"tool": "query", "arguments": {"sql": "SELECT order_id FROM silver.orders ORDER BY order_id"}},
            {"tool": "query", "arguments": {"sql": "COPY (SELECT * FROM silver.customers) TO 'leak.csv'"}},
            {"tool": "query", "arguments": {"sql": "CREATE TABLE gold.x AS SELECT 1"}},
            {"tool": "query", "arguments": {"sql": "SELECT * FROM 'pipelines/retail.toml'"}},
            {"tool": "lineage", "arguments": {"target": "gold.fact_orders.customer_name"}},
            {"tool": "backfill_plan", "arguments": {"pipeline": "retail", "from": "2026-02-01", "to": "2026-02-28"}},
            {"tool": "describe_table", "arguments": {"table": "silver.orders"}},
            {"tool": "run", "arguments": {"pipeline": "retail", "reason": "should be refused"}},
            {"tool": "query", "arguments": {"sql": "SELECT count(*) FROM silver.orders a, silver.orders b, silver.orders c, silver.orders d, silver.orders e, silver.orders f"}},
            {"tool": "quality", "arguments": {}},
            {"tool": "list_runs", "arguments": {}},
            {"tool": "plan", "arguments": {"pipeline": "retail"}},
        ]),
    );
    // The tool list: read tools only, each annotated read-only.
    let names = tool_names(&seen);
    for t in [
        "list_tables",
        "describe_table",
        "query",
        "lineage",
        "plan",
        "list_runs",
        "run_receipt",
        "quality",
        "backfill_plan",
    ] {
        assert!(names.contains(&t.to_string()), "{t} missing from {names:?}");
    }
    for t in ["run", "backfill", "rollback"] {
        assert!(
            !names.contains(&t.to_string()),
            "{t} offered without --allow-write"
        );
    }
    assert!(seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["read_only"] == true));
    let calls = seen["calls"].as_array().unwrap();

    let tables = answer(&calls[0]);
    let expected = expected_retail();
    for (table, rows) in expected["counts"].as_object().unwrap() {
        let listed = tables
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == *table)
            .unwrap_or_else(|| panic!("{table} not listed"));
        assert_eq!(listed["rows"], *rows, "{table}");
    }

    // A query over gold: the hand-computed monthly revenue.
    let monthly = answer(&calls[1]);
    let want = texts(&expected["tables"]["gold.monthly_revenue"]["rows"]);
    let got = texts(&monthly["rows"]);
    assert_eq!(got, want);
    assert_eq!(monthly["truncated"], false);

    // The row cap: 5 of silver.orders' 39 rows, and the result says so.
    let capped = answer(&calls[2]);
    assert_eq!(capped["rows"].as_array().unwrap().len(), 5);
    assert_eq!(capped["truncated"], true);
    assert_eq!(capped["truncated_by"], "row cap 5");

    // COPY, DDL and file tables are refused, and nothing was written.
    assert!(refused(&calls[3]).contains("SELECT"));
    assert!(refused(&calls[4]).contains("SELECT"));
    assert!(
        refused(&calls[5]).contains("namespace.table"),
        "{}",
        calls[5]
    );
    assert!(!p.path().join("leak.csv").exists());
    assert!(!p.tables().contains(&"gold.x".to_string()));

    // Lineage: gold.fact_orders.customer_name comes from silver.customers.name, which comes
    // from the `name` field of the customer CSV files.
    let lineage = answer(&calls[6]).to_string();
    assert!(lineage.contains("silver.customers.name"), "{lineage}");
    assert!(
        lineage.contains("sample-data/retail/customers/*.csv"),
        "{lineage}"
    );

    // The backfill plan of February: silver.orders replaces that month only.
    let plan = answer(&calls[7]);
    let orders = plan
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "silver.orders")
        .expect("silver.orders in the plan");
    assert!(
        orders["action"].as_str().unwrap().contains("2026-02"),
        "{orders}"
    );

    // describe_table: field ids and the snapshots.
    let described = answer(&calls[8]);
    assert!(described["table"].to_string().contains("order_id"));
    assert_eq!(described["snapshots"].as_array().unwrap().len(), 1);
    let id = &described["snapshots"][0]["snapshot_id"];
    assert!(crate::common::id(id).is_some(), "ids are strings: {id}");

    // A write tool, called anyway: refused, and the run history did not grow.
    assert!(refused(&calls[9]).contains("--allow-write"));
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), 1);

    // 39^6 rows to count: stopped by the 4 s timeout, answered then (not when the busy
    // operator next yields), and the server answers the next calls.
    assert!(refused(&calls[10]).contains("timeout"));
    let log = seen["server_log"].as_str().unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("silver.orders f"))
        .expect("the timed-out call is logged");
    let seconds: f64 = line
        .rsplit("seconds=")
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no seconds in {line}"));
    assert!(seconds < 10.0, "answered after {seconds} s: {line}");

    // Quality results of the run: the spec's three expectations on silver.orders, and the
    // relationships check warns about the orders of customers missing from silver.customers.
    let quality = answer(&calls[11]);
    let results = quality["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{quality}");
    let unique = results.iter().find(|r| r["check"] == "unique").unwrap();
    assert_eq!(unique["passed"], true);
    // The hand-computed gold.fact_orders has 4 orders without a customer name.
    let expected_orphans = expected["tables"]["gold.fact_orders"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[3].is_null())
        .count();
    let related = results
        .iter()
        .find(|r| r["check"] == "relationships")
        .unwrap();
    assert_eq!(related["passed"], false);
    assert_eq!(related["violations"], expected_orphans);
    // The run, newest first, with its undo command; and no planned schema change.
    let runs = answer(&calls[12]);
    let newest = &runs["runs_newest_first"][0];
    assert_eq!(newest["kind"], "run");
    assert!(newest["undo"]
        .as_str()
        .unwrap()
        .starts_with("pipeline rollback "));
    let planned = answer(&calls[13]).to_string();
    assert!(!planned.contains("\"breaking\":true"), "{planned}");

    // Every call is logged on stderr, with the client's name.
    let log = seen["server_log"].as_str().unwrap();
    assert_eq!(
        log.matches("pipeline-tests 1.0").count(),
        calls.len(),
        "{log}"
    );
}

#[test]
fn with_allow_write_a_rollback_records_the_client_and_reason() {
    let p = Project::retail();
    let run = p.json(&["run", "retail"]);
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let seen = drive(
        &p,
        &["--allow-write"],
        json!([
            {"tool": "rollback", "arguments": {"run_id": run_id, "reason": "   "}},
            {"tool": "rollback", "arguments": {"run_id": run_id, "reason": "INC-42: bad load"}},
            {"tool": "list_runs", "arguments": {}},
        ]),
    );
    let names = tool_names(&seen);
    for t in ["run", "backfill", "rollback"] {
        let tool = seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == t);
        let tool = tool.unwrap_or_else(|| panic!("{t} not offered with --allow-write: {names:?}"));
        assert_eq!(tool["read_only"], false, "{t}");
    }
    let calls = seen["calls"].as_array().unwrap();
    assert!(refused(&calls[0]).contains("reason"));
    let receipt = answer(&calls[1]);
    assert_eq!(receipt["kind"], "rollback");
    assert_eq!(receipt["rolls_back"], run_id.as_str());
    // (A run record's invocation fields stand at its top level.)
    assert_eq!(receipt["client"], "pipeline-tests 1.0");
    assert_eq!(receipt["reason"], "INC-42: bad load");
    // The rollback happened: the run's tables went back to no snapshot at all.
    assert!(p
        .json(&["tables"])
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["snapshot"].is_null()));
    let runs = answer(&calls[2]);
    let newest = &runs["runs_newest_first"][0];
    assert_eq!(newest["kind"], "rollback");
    assert_eq!(newest["client"], "pipeline-tests 1.0");
    // The command line shows the same receipt.
    let info = p.json(&["run-info", receipt["run_id"].as_str().unwrap()]);
    assert_eq!(info["client"], "pipeline-tests 1.0");
    let text = String::from_utf8(
        p.run(&["run-info", receipt["run_id"].as_str().unwrap()])
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("via:          MCP client pipeline-tests 1.0"),
        "{text}"
    );
}

#[test]
fn the_same_tools_over_streamable_http() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let seen = drive_over(
        &p,
        &[],
        json!([
            {"tool": "query", "arguments": {"sql": "SELECT count(*) AS orders, CAST(sum(revenue) AS VARCHAR) AS revenue FROM gold.monthly_revenue"}},
            {"tool": "query", "arguments": {"sql": "COPY (SELECT 1) TO 'x.csv'"}},
            {"tool": "rollback", "arguments": {"run_id": "x", "reason": "no"}},
        ]),
        true,
    );
    assert!(seen["url"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    assert!(!tool_names(&seen).contains(&"rollback".to_string()));
    let calls = seen["calls"].as_array().unwrap();
    // By hand from tests/expected/retail.json: 3 months, 1674.48 + 1829.35 + 307.36.
    let totals = answer(&calls[0]);
    assert_eq!(totals["rows"], json!([[3, "3811.19"]]));
    assert!(refused(&calls[1]).contains("SELECT"));
    assert!(refused(&calls[2]).contains("--allow-write"));
    let log = seen["server_log"].as_str().unwrap();
    assert_eq!(log.matches("pipeline-tests 1.0").count(), 3, "{log}");
}
