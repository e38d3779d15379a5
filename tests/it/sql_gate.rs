//! The SQL gate (issue 26): every place SQL enters the engine (a transform, an expectation, a
//! reader, `pipeline query`, the MCP `query` tool, the docs site, `pipeline sql`, the
//! conditions of `erase` and `sql`) refuses the same hostile statements, with exit code 2 and
//! a message, and nothing is written: no file outside the warehouse, no table dropped, no
//! process killed by a stack overflow.

use serde_json::{json, Value};

use crate::common::{expected_retail, repo, Project};

/// A chain of `terms` additions, `1+1+...+1`: 50,000 terms are 100 KB of SQL.
fn deep(terms: usize) -> String {
    let mut sql = String::from("1");
    for _ in 1..terms {
        sql.push_str("+1");
    }
    sql
}

/// The hostile statements, each with a word its refusal must contain. `leak` is a folder the
/// statements try to write into.
fn hostile(leak: &str) -> Vec<(String, &'static str)> {
    vec![
        (
            format!("COPY (SELECT * FROM silver.orders) TO '{leak}/orders.csv'"),
            "must be",
        ),
        (
            format!(
                "COPY (SELECT * FROM silver.orders) TO '{leak}/orders.parquet' STORED AS PARQUET"
            ),
            "must be",
        ),
        (
            "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/passwd'".into(),
            "must be",
        ),
        ("DROP TABLE silver.orders".into(), "must be"),
        (
            "INSERT INTO silver.orders SELECT * FROM silver.orders".into(),
            "must be",
        ),
        ("SET datafusion.execution.batch_size = 1".into(), "must be"),
        ("CREATE VIEW v AS SELECT 1".into(), "must be"),
        ("SELECT * FROM '/etc/passwd'".into(), "not a catalog table"),
        (
            "SELECT * FROM silver.orders; DROP TABLE silver.orders".into(),
            "exactly one statement",
        ),
        (format!("SELECT {}", deep(50_000)), "nest more than 256"),
        (
            format!(
                "SELECT * FROM silver.orders WHERE {}",
                deep(10_000) + " > 0"
            ),
            "nest more than 256",
        ),
        // Values built from constants beyond what any memory pool accounts for (issue 44).
        (
            "SELECT count(*) FROM unnest(range(1, 2000000000))".into(),
            "`range` would build a value",
        ),
        (
            "SELECT length(repeat('x', 2000000000)) AS n".into(),
            "`repeat` would build a value",
        ),
        (
            "SELECT length(lpad('x', 2000000000)) AS n".into(),
            "`lpad` would build a value",
        ),
        (
            "SELECT cardinality(array_repeat(1, 1000000000)) AS n".into(),
            "`array_repeat` would build a value",
        ),
    ]
}

/// The retail project after one run, with a `leak/` folder the statements aim at.
fn retail_after_a_run() -> (Project, String) {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let leak = p.path().join("leak");
    std::fs::create_dir_all(&leak).unwrap();
    (p, leak.display().to_string())
}

/// Nothing was written and every table is as the run left it.
fn untouched(p: &Project, leak: &str) {
    let written: Vec<_> = std::fs::read_dir(leak).unwrap().collect();
    assert!(written.is_empty(), "a statement wrote {written:?}");
    let check = p.run(&["check"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let expected = expected_retail();
    for (table, rows) in expected["counts"].as_object().unwrap() {
        let got = p.query(&format!("SELECT count(*) FROM {table}"));
        assert_eq!(
            got[0][0].as_deref(),
            Some(rows.to_string().as_str()),
            "{table}"
        );
    }
}

#[test]
fn pipeline_query_and_sql_refuse_every_hostile_statement() {
    let (p, leak) = retail_after_a_run();
    for (sql, why) in hostile(&leak) {
        let (code, message) = p.fails(&["query", &sql]);
        assert_eq!(code, 2, "query {sql:.80}: {message}");
        assert!(message.contains(why), "query {sql:.80}: {message}");
        let (code, message) = p.fails(&["sql", &sql, "--reason", "hostile"]);
        assert_eq!(code, 2, "sql {sql:.80}: {message}");
    }
    // The conditions of `sql` and `erase` pass the same gate.
    let where_deep = format!("customer_id = {}", deep(50_000));
    let (code, message) = p.fails(&[
        "sql",
        &format!("DELETE FROM silver.orders WHERE {where_deep}"),
        "--reason",
        "hostile",
    ]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("nest more than 256"), "{message}");
    let (code, message) = p.fails(&["erase", "retail", "--where", &where_deep, "--reason", "x"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("nest more than 256"), "{message}");
    // At the limit, a chain still runs: 200 terms sum to 200.
    let rows = p.query(&format!("SELECT {} AS n", deep(200)));
    assert_eq!(rows[0][0].as_deref(), Some("200"));
    untouched(&p, &leak);
}

#[test]
fn transforms_refuse_every_hostile_statement_at_validate_and_at_run() {
    let (p, leak) = retail_after_a_run();
    let original =
        std::fs::read_to_string(p.path().join("sql/retail/gold_repeat_buyers.sql")).unwrap();
    for (sql, why) in hostile(&leak) {
        p.write("sql/retail/gold_repeat_buyers.sql", &sql);
        for command in ["validate", "run"] {
            let (code, message) = p.fails(&[command, "retail"]);
            assert_eq!(code, 2, "{command} {sql:.80}: {message}");
            assert!(message.contains(why), "{command} {sql:.80}: {message}");
            assert!(
                message.contains("sql/retail/gold_repeat_buyers.sql"),
                "{command}: {message}"
            );
        }
    }
    p.write("sql/retail/gold_repeat_buyers.sql", &original);
    untouched(&p, &leak);
}

#[test]
fn expectations_refuse_every_hostile_statement_at_validate_and_at_run() {
    let (p, leak) = retail_after_a_run();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    for (sql, why) in hostile(&leak) {
        p.write(
            "pipelines/retail.toml",
            &format!(
                "{spec}\n[[expect]]\nname = \"hostile\"\ntable = \"silver.orders\"\ncheck = \"sql\"\nsql = '''{sql}'''\n"
            ),
        );
        for command in ["validate", "run"] {
            let (code, message) = p.fails(&[command, "retail"]);
            assert_eq!(code, 2, "{command} {sql:.80}: {message}");
            assert!(message.contains(why), "{command} {sql:.80}: {message}");
            assert!(message.contains("expectation `hostile`"), "{message}");
        }
    }
    p.write("pipelines/retail.toml", &spec);
    untouched(&p, &leak);
}

#[test]
fn readers_and_the_docs_site_refuse_every_hostile_statement() {
    let (p, leak) = retail_after_a_run();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    for (sql, why) in hostile(&leak) {
        p.write(
            "pipelines/retail.toml",
            &format!(
                "{spec}\n[[reader]]\nname = \"hostile\"\nkind = \"script\"\nowner = \"x\"\nsql = '''{sql}'''\n"
            ),
        );
        let plan = p.json(&["plan", "retail"]);
        let unplanned = plan["unplanned_readers"].as_array().unwrap();
        let hostile = unplanned
            .iter()
            .find(|r| r["name"] == "hostile")
            .unwrap_or_else(|| panic!("{sql:.80}: the reader was planned: {plan}"));
        assert!(
            hostile["message"].as_str().unwrap().contains(why),
            "{sql:.80}: {hostile}"
        );
        let docs = p.run(&["docs", "retail", "--out", "site"]);
        assert!(
            docs.status.success(),
            "docs: {}",
            String::from_utf8_lossy(&docs.stderr)
        );
    }
    p.write("pipelines/retail.toml", &spec);
    untouched(&p, &leak);
}

#[test]
fn the_mcp_server_refuses_a_100_kb_expression_and_answers_the_next_call() {
    let (p, leak) = retail_after_a_run();
    let mut calls: Vec<Value> = hostile(&leak)
        .into_iter()
        .map(|(sql, _)| json!({"tool": "query", "arguments": {"sql": sql}}))
        .collect();
    calls.push(
        json!({"tool": "query", "arguments": {"sql": "SELECT count(*) AS n FROM silver.orders"}}),
    );
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/mcp/drive.py"))
        .arg(Value::Array(calls).to_string())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_pipeline"))
        .args(["mcp", "--project", p.path().to_str().unwrap()])
        .output()
        .expect("python3 must be installed (see tests/run-all.sh)");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = seen["calls"].as_array().unwrap();
    let (last, refused) = calls.split_last().unwrap();
    for (call, (sql, why)) in refused.iter().zip(hostile(&leak)) {
        assert_eq!(call["is_error"], true, "{sql:.80}: {call}");
        assert!(
            call["text"].as_str().unwrap().contains(why),
            "{sql:.80}: {call}"
        );
    }
    assert_eq!(last["is_error"], false, "{last}");
    let answer: Value = serde_json::from_str(last["text"].as_str().unwrap()).unwrap();
    let orders = expected_retail()["counts"]["silver.orders"].clone();
    assert_eq!(
        answer["rows"][0][0].to_string(),
        orders.to_string(),
        "{answer}"
    );
    untouched(&p, &leak);
}
