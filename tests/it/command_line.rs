//! The command line as scripts and terminals meet it: a closed pipe, exit codes that say
//! whose fault a failure is, `--json` that carries what the text shows with typed values, and
//! runs that had nothing to do.

use std::io::Read;
use std::process::Stdio;

use serde_json::Value;

use crate::common::Project;

#[test]
fn a_closed_stdout_ends_a_query_quietly() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // About 55,000 rows: far more than a pipe holds.
    let mut child = p
        .command(&[
            "query",
            "SELECT a.* FROM bronze.pos_orders a, bronze.pos_orders b, bronze.pos_orders c",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 256];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // as `| head -c 256` does
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert_ne!(status.code(), Some(101), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{status:?}"
        );
    }
}

#[test]
fn tables_that_do_not_exist_are_mistakes_in_the_command() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let (code, message) = p.fails(&["query", "SELECT * FROM information_schema.tables"]);
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("there is no information_schema"),
        "{message}"
    );
    assert!(message.contains("`pipeline tables`"), "{message}");
    for args in [
        vec!["query", "SELECT * FROM bronze.nope"],
        vec!["describe", "bronze.nope"],
        vec!["history", "bronze.nope"],
        vec!["files", "bronze.nope"],
    ] {
        let (code, message) = p.fails(&args);
        assert_eq!(code, 2, "{args:?}: {message}");
        assert_eq!(
            message,
            "error: no table bronze.nope in this catalog; `pipeline tables` lists the tables",
            "{args:?}"
        );
    }
}

#[test]
fn a_file_path_in_a_transform_is_refused_without_a_made_up_table_name() {
    let p = Project::retail();
    p.write(
        "sql/retail/gold_customer_metrics.sql",
        "SELECT * FROM '/etc/passwd'\n",
    );
    let (code, message) = p.fails(&["validate", "retail"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("is not a catalog table"), "{message}");
    assert!(message.contains("never files or URLs"), "{message}");
    assert!(!message.contains("bronze./etc"), "{message}");
}

#[test]
fn a_binary_file_never_reaches_the_terminal_raw() {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        "[pipeline]\nname = \"p\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = { id = \"long\" }\n",
    );
    std::fs::create_dir_all(p.path().join("data")).unwrap();
    std::fs::write(
        p.path().join("data/f.csv"),
        b"\x1b[31mid\x00\x07,\xff\xfe\n\x1b]0;title\x07\n",
    )
    .unwrap();
    let out = p.run(&["run", "p"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = &out.stderr;
    for raw in [0x1bu8, 0x00, 0x07] {
        assert!(
            !stderr.contains(&raw),
            "byte {raw:#x} printed raw: {}",
            String::from_utf8_lossy(stderr)
        );
    }
    let text = String::from_utf8_lossy(stderr);
    assert!(text.contains("\\u{1b}[31mid\\u{0}\\u{7}"), "{text}");
}

#[test]
fn listings_in_json_carry_what_the_text_shows() {
    let p = Project::retail();
    let report = p.json(&["run", "retail"]);
    let run_id = report["run_id"].as_str().unwrap();
    let tables = p.json(&["tables"]);
    let orders = tables
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "silver.orders")
        .expect("silver.orders listed");
    let described = p.json(&["describe", "silver.orders"]);
    assert_eq!(orders["rows"], 39);
    assert_eq!(orders["rows"], described["rows"]);
    assert_eq!(orders["files"], described["data_files"]);
    assert_eq!(orders["snapshot"], described["current_snapshot_id"]);
    assert_eq!(orders["last_run"], run_id);
    assert!(orders.get("damaged").is_none());
    let text = String::from_utf8_lossy(&p.run(&["tables"]).stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with("silver.orders "))
        .unwrap();
    assert!(line.contains(run_id), "{text}");
    let snapshot = orders["snapshot"]
        .as_str()
        .expect("snapshot ids are strings");
    assert!(line.contains(snapshot), "{text}");
    // Ids are JSON strings (above 2^53, a number loses digits in jq and JavaScript), and the
    // string is what `--as-of` takes back.
    assert!(
        !snapshot.is_empty() && snapshot.bytes().all(|b| b.is_ascii_digit()),
        "{snapshot}"
    );
    let at = p.json(&[
        "query",
        "SELECT count(*) AS n FROM silver.orders",
        "--as-of",
        snapshot,
    ]);
    assert_eq!(at["rows"][0][0], 39);

    let validated = p.json(&["validate", "retail"]);
    let fact = validated["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == "gold.fact_orders")
        .unwrap();
    assert_eq!(fact["job"], "transform");
    // gold_fact_orders.sql joins silver.orders with silver.customers.
    let mut inputs: Vec<&str> = fact["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    inputs.sort();
    assert_eq!(inputs, ["silver.customers", "silver.orders"]);
}

#[test]
fn query_json_values_keep_their_types() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let out = p.run(&[
        "query",
        "SELECT count(*) AS n, CAST(9 AS DECIMAL(10, 2)) AS price, count(*) > 1 AS many, \
         NULL AS nothing, 'x' AS text FROM silver.orders",
        "--json",
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    // Decimals are numbers written digit for digit (never through a float).
    assert!(stdout.contains("[[39,9.00,true,null,\"x\"]]"), "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["rows"][0][0], 39);
    assert_eq!(
        v["columns"],
        serde_json::json!(["n", "price", "many", "nothing", "text"])
    );
}

#[test]
fn a_run_with_nothing_to_do_is_recorded_as_a_no_op() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let again = p.json(&["run", "retail"]);
    assert_eq!(again["tables"], serde_json::json!([]));
    let runs = p.json(&["runs"]);
    let noop = runs.as_array().unwrap().last().unwrap().clone();
    assert_eq!(noop["run_id"], again["run_id"]);
    assert_eq!(noop["tables"], serde_json::json!([]));
    assert_eq!(noop["undo"], "");
    let text = String::from_utf8_lossy(&p.run(&["runs"]).stdout).to_string();
    assert!(text.contains("(nothing to undo)"), "{text}");
    let (code, message) = p.fails(&["rollback", again["run_id"].as_str().unwrap()]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("there is nothing to undo"), "{message}");
}

/// A query that fails on its own values is bad input (exit 2, like a query that does not
/// parse); one row is "1 row".
#[test]
fn a_query_failing_on_its_own_values_is_a_mistake_in_the_command() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    for sql in [
        "SELECT 1/0",
        "SELECT CAST('x' AS INT)",
        "SELECT sum(amount) / (count(*) - count(*)) FROM silver.orders",
    ] {
        let (code, message) = p.fails(&["query", sql]);
        assert_eq!(code, 2, "{sql}: {message}");
        assert!(message.contains("query:"), "{sql}: {message}");
    }
    let out = p.run(&["query", "SELECT count(*) AS n FROM silver.orders"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(1 row)"));
}

/// A failing `--json` command still prints one JSON document on stdout (the error and the
/// exit status); a folder without pipelines/ is not a project; the run's headline names the
/// quarantine tables it published besides the jobs' tables.
#[test]
fn json_errors_projects_and_the_run_headline_say_what_they_mean() {
    let p = Project::retail();
    let out = p.run(&["run", "retail"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("published 12 tables in")
            && stdout.contains("bronze.pos_orders__quarantine"),
        "{stdout}"
    );
    // run-info shows the checks, verdicts and sampled rows, as the run did.
    let run_id = p.json(&["runs"])[0]["run_id"].as_str().unwrap().to_string();
    let info = String::from_utf8_lossy(&p.run(&["run-info", &run_id]).stdout).to_string();
    assert!(info.contains("checks:"), "{info}");
    assert!(
        info.contains("silver.orders relationships(customer_id): WARNING (4 violating rows"),
        "{info}"
    );
    assert!(info.contains("order_id=1006, customer_id=99"), "{info}");
    assert!(
        info.contains("silver.orders unique(order_id): passed"),
        "{info}"
    );
    let error = p.json_failing(&["query", "SELECT 1/0"]);
    assert_eq!(error["exit_code"], 2, "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("Divide by zero"),
        "{error}"
    );
    // A pattern that matches nothing, for a table not loaded yet: validate says what the
    // run would.
    let fresh = Project::retail();
    let spec = fresh.path().join("pipelines/retail.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let broken = text.replace(
        "sample-data/retail/customers/*.csv",
        "sample-data/retail/nope/*.csv",
    );
    assert_ne!(broken, text);
    std::fs::write(&spec, broken).unwrap();
    for command in ["validate", "run"] {
        let (code, message) = fresh.fails(&[command, "retail"]);
        assert_eq!(code, 2, "{command}: {message}");
        assert!(
            message.contains("no files match `sample-data/retail/nope/*.csv`"),
            "{command}: {message}"
        );
    }

    std::fs::remove_dir_all(p.path().join("pipelines")).unwrap();
    let (code, message) = p.fails(&["tables"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("is not a pipeline project"), "{message}");
}
