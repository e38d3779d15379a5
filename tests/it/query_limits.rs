//! Issue 44: a query a reader wrote cannot take the machine down. `pipeline query` runs under
//! a memory ceiling (one sentence, exit 2) and an optional deadline; each MCP `query` call
//! runs in a child process of its own under both, and the server answers the next call.
//! Every hostile statement here passes the SQL gate (its sizes come from the data): only the
//! ceiling stops it. Each runs under `ulimit -v` as well, so a ceiling that failed to hold
//! would stop the test's process, never the machine.

use std::process::Command;

use serde_json::json;

use crate::common::Project;
use crate::mcp::drive_within;

/// Builds about 8.8 GB of arrays from the customers' ids (the gate cannot see the size).
const HOSTILE: &str = "SELECT sum(cardinality(array_repeat(customer_id, customer_id * 100000000))) AS n FROM silver.customers";

/// Counts 9e12 pairs: runs until stopped.
const ENDLESS: &str = "SELECT count(*) FROM unnest(range(1, 3000000)) AS a(x) JOIN unnest(range(1, 3000000)) AS b(y) ON x % 1000 = y % 1000";

/// The statements issue 44 measured (each aborted the process or took the host's memory),
/// with the function the gate names.
const ISSUE_STATEMENTS: [(&str, &str); 5] = [
    ("SELECT count(*) FROM unnest(range(1, 2000000000))", "range"),
    ("SELECT count(*) FROM unnest(range(1, 200000000))", "range"),
    ("SELECT length(repeat('x', 2000000000)) AS n", "repeat"),
    ("SELECT length(lpad('x', 2000000000)) AS n", "lpad"),
    (
        "SELECT cardinality(array_repeat(1, 1000000000)) AS n",
        "array_repeat",
    ),
];

/// `pipeline ARGS` for `p` under an address-space limit of 6 GB; (exit code, stdout, stderr).
fn limited(p: &Project, args: &[&str]) -> (Option<i32>, String, String) {
    let inner = p.command(args);
    let program = inner.get_program().to_owned();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 6000000 && exec \"$@\"")
        .arg("sh")
        .arg(program)
        .args(inner.get_args())
        .envs(p.env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn retail() -> Project {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p
}

#[test]
fn a_query_past_the_memory_ceiling_stops_with_one_sentence_and_exit_2() {
    let p = retail();
    for (args, ceiling) in [
        (vec!["query", "--max-memory-mb", "512", HOSTILE], 512),
        (vec!["query", HOSTILE], 2048),
    ] {
        let (code, _, stderr) = limited(&p, &args);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(
            stderr.trim(),
            format!("error: stopped: the query needed more than {ceiling} MiB of memory; narrow it (a WHERE on a partition column, fewer columns, a LIMIT), or raise --max-memory-mb"),
        );
    }
    // The issue's statements, whose sizes are the statement's own constants: refused by the
    // gate before anything is built, naming the function.
    for (sql, function) in ISSUE_STATEMENTS {
        let (code, _, stderr) = limited(&p, &["query", sql]);
        assert_eq!(code, Some(2), "{sql}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{sql}: {stderr}");
        assert!(
            stderr.contains(&format!("`{function}` would build a value")),
            "{sql}: {stderr}"
        );
    }
    // A legitimate query with a large constant (64 MB of range) still answers, by hand:
    // 1 + 2 + ... + 7999999.
    let (code, stdout, stderr) = limited(
        &p,
        &[
            "query",
            "--json",
            "SELECT CAST(sum(x) AS VARCHAR) AS s FROM unnest(range(1, 8000000)) AS t(x)",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("31999996000000"), "{stdout}");
}

#[test]
fn a_query_past_its_timeout_stops_with_one_sentence() {
    let p = retail();
    let started = std::time::Instant::now();
    let (code, _, stderr) = limited(&p, &["query", "--timeout", "2", ENDLESS]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr
            .trim()
            .starts_with("error: query: stopped after the 2 s timeout"),
        "{stderr}"
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    let (code, _, stderr) = limited(&p, &["query", "--max-memory-mb", "100", "SELECT 1"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("a query needs at least 256 MiB"),
        "{stderr}"
    );
}

/// Over MCP, driven by the official SDK: the hostile call is answered with the error, the
/// next call answers normally, and the server itself stays small (the query ran elsewhere).
#[test]
fn an_agents_query_past_the_ceiling_is_answered_and_the_server_goes_on() {
    let p = retail();
    let seen = drive_within(
        &p,
        &["--query-memory-mb", "512", "--query-timeout", "8"],
        json!([
            {"tool": "query", "arguments": {"sql": HOSTILE}},
            {"tool": "query", "arguments": {"sql": "SELECT count(*) AS n FROM silver.orders"}},
            {"tool": "query", "arguments": {"sql": "SELECT count(*) FROM unnest(range(1, 2000000000))"}},
            {"tool": "query", "arguments": {"sql": ENDLESS}},
            {"tool": "query", "arguments": {"sql": "SELECT count(*) AS n FROM silver.customers"}},
            {"tool": "query", "arguments": {"sql": ISSUE_STATEMENTS[1].0}},
            {"tool": "query", "arguments": {"sql": ISSUE_STATEMENTS[2].0}},
            {"tool": "query", "arguments": {"sql": ISSUE_STATEMENTS[3].0}},
            {"tool": "query", "arguments": {"sql": ISSUE_STATEMENTS[4].0}},
        ]),
        true,
        Some(6_000_000),
    );
    let calls = seen["calls"].as_array().unwrap();
    let text = |i: usize| calls[i]["text"].as_str().unwrap().to_string();
    assert_eq!(calls[0]["is_error"], true, "{}", calls[0]);
    assert!(
        text(0).contains("stopped: the query needed more than 512 MiB of memory; narrow it"),
        "{}",
        text(0)
    );
    let orders = crate::common::expected_retail()["counts"]["silver.orders"].clone();
    let answered: serde_json::Value = serde_json::from_str(&text(1)).unwrap();
    assert_eq!(answered["rows"], json!([[orders]]), "{answered}");
    assert_eq!(calls[2]["is_error"], true);
    assert!(
        text(2).contains("`range` would build a value"),
        "{}",
        text(2)
    );
    assert_eq!(calls[3]["is_error"], true);
    assert!(
        text(3).contains("stopped after the 8 s timeout"),
        "{}",
        text(3)
    );
    let customers = crate::common::expected_retail()["counts"]["silver.customers"].clone();
    let answered: serde_json::Value = serde_json::from_str(&text(4)).unwrap();
    assert_eq!(answered["rows"], json!([[customers]]), "{answered}");
    for (i, (sql, function)) in ISSUE_STATEMENTS.iter().enumerate().skip(1) {
        let call = &calls[4 + i];
        assert_eq!(call["is_error"], true, "{sql}: {call}");
        assert!(
            text(4 + i).contains(&format!("`{function}` would build a value")),
            "{sql}: {call}"
        );
    }
    let peak_kb = seen["server_peak_rss_kb"].as_u64().unwrap();
    assert!(
        peak_kb < 256 * 1024,
        "the server itself held {peak_kb} KiB at its peak"
    );
}
