//! A run that fails once it started is recorded (`error`, the jobs that finished staging,
//! the checks evaluated) and shown by `runs` and `run-info`; the next run names the failure;
//! a run refused before it started (a spec error) is not recorded. Counts are worked out by
//! hand from the three rows below.

use serde_json::{json, Value};

use crate::common::Project;

/// Three items, id 2 twice.
const ITEMS: &str = "id,price\n1,10\n2,20\n2,30\n";

fn project(sql: &str, expect: &str) -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/shop.toml",
        &format!(
            "[pipeline]\nname = \"shop\"\n\n\
             [[ingest]]\ntable = \"bronze.items\"\nformat = \"csv\"\npath = \"data/items.csv\"\n\
             schema = {{ id = \"long\", price = \"long\" }}\n\n\
             [[transform]]\ntable = \"silver.items\"\nsql = \"sql/items.sql\"\n\n{expect}"
        ),
    );
    p.write("sql/items.sql", sql);
    p.write("data/items.csv", ITEMS);
    p
}

const UNIQUE_ID: &str =
    "[[expect]]\ntable = \"silver.items\"\ncheck = \"unique\"\ncolumn = \"id\"\n";

/// The records of `pipeline runs --json` that are not maintenance.
fn runs(p: &Project) -> Vec<Value> {
    p.json(&["runs"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] != "maintain")
        .cloned()
        .collect()
}

fn jobs(record: &Value) -> Vec<(String, u64)> {
    record["finished_jobs"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|j| {
                    (
                        j["table"].as_str().unwrap().to_string(),
                        j["rows"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_failed_check_is_recorded_and_the_next_run_names_it() {
    let p = project("SELECT id, price FROM bronze.items\n", UNIQUE_ID);
    let out = p.run(&["run", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unique(id): FAILED"), "{stderr}");
    assert!(
        !stderr.contains("publishing"),
        "said before the checks: {stderr}"
    );

    let recorded = runs(&p);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let failed = &recorded[0];
    let id = failed["run_id"].as_str().unwrap().to_string();
    assert_eq!(failed["kind"], "run");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .starts_with("expectation `unique(id)` on silver.items failed: 2 violating rows"),
        "{failed}"
    );
    assert_eq!(failed["tables"].as_array().unwrap().len(), 0);
    // Both jobs staged their three rows before the check stopped the run.
    assert_eq!(
        jobs(failed),
        vec![
            ("bronze.items".to_string(), 3),
            ("silver.items".to_string(), 3)
        ]
    );
    let check = &failed["quality"][0];
    assert_eq!(
        (check["passed"].as_bool(), check["violations"].as_u64()),
        (Some(false), Some(2))
    );

    let listed = String::from_utf8_lossy(&p.run(&["runs"]).stdout).to_string();
    assert!(listed.contains("run FAILED"), "{listed}");
    let info = String::from_utf8_lossy(&p.run(&["run-info", &id]).stdout).to_string();
    assert!(
        info.contains("FAILED:       expectation `unique(id)`"),
        "{info}"
    );
    assert!(info.contains("failed at:"), "{info}");
    assert!(
        info.contains("jobs that finished before the run failed"),
        "{info}"
    );
    // The docs site and an agent (MCP, the official SDK) see the failure too.
    p.json(&["docs", "shop", "--out", "site"]);
    let page = std::fs::read_to_string(p.path().join("site/runs.html")).unwrap();
    assert!(page.contains("FAILED: expectation `unique(id)`"), "{page}");
    assert!(
        page.contains("finished before it failed, not published: bronze.items"),
        "{page}"
    );
    let seen = crate::mcp::drive_over(&p, &[], json!([{"tool": "list_runs"}]), false);
    let call = &seen["calls"][0];
    assert_eq!(call["is_error"], false, "{call}");
    let listed: Value = serde_json::from_str(call["text"].as_str().unwrap()).unwrap();
    let newest = &listed["runs_newest_first"][0];
    assert_eq!(newest["run_id"], id.as_str(), "{listed}");
    assert_eq!(newest["checks_failed"], 1, "{listed}");
    assert_eq!(jobs(newest).len(), 2, "{listed}");
    let (code, message) = p.fails(&["rollback", &id]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("failed and changed no table"), "{message}");

    // Fixed data: the next run says what failed last time, then publishes.
    p.write("data/items.csv", "id,price\n1,10\n2,20\n3,30\n");
    let out = p.run(&["run", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("the last run, {id} (started ")),
        "{stderr}"
    );
    assert!(
        stderr.contains("failed: expectation `unique(id)`"),
        "{stderr}"
    );
    let check_at = stderr.find("unique(id): passed").expect("the check passed");
    let publishing_at = stderr.find("publishing").expect("publishing said");
    assert!(check_at < publishing_at, "{stderr}");
    assert_eq!(
        p.query("SELECT count(*) FROM silver.items")[0][0].as_deref(),
        Some("3")
    );

    // Published now: the run after says nothing of the old failure.
    let out = p.run(&["run", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("the last run"), "{stderr}");
    assert_eq!(runs(&p).len(), 3);
}

#[test]
fn a_transform_that_fails_while_running_is_recorded_with_the_jobs_before_it() {
    // Integer division by zero fails while the transform runs, not when it is planned.
    let p = project("SELECT id, price / (id - id) AS x FROM bronze.items\n", "");
    let (code, message) = p.fails(&["run", "shop"]);
    assert_eq!(code, 1, "{message}");
    let recorded = runs(&p);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let error = recorded[0]["error"].as_str().unwrap();
    assert!(error.contains("items.sql"), "{error}");
    assert!(error.to_lowercase().contains("divide by zero"), "{error}");
    assert_eq!(jobs(&recorded[0]), vec![("bronze.items".to_string(), 3)]);
    assert!(recorded[0]["quality"].as_array().is_none());
}

#[test]
fn a_run_refused_before_it_starts_is_not_recorded() {
    let p = project("SELECT id, price FROM bronze.items\n", "");
    p.json(&["run", "shop"]);
    let spec = std::fs::read_to_string(p.path().join("pipelines/shop.toml")).unwrap();
    p.write(
        "pipelines/shop.toml",
        &format!("{spec}\n[[ingest]]\ntable = 3\n"),
    );
    let (code, message) = p.fails(&["run", "shop"]);
    assert_eq!(code, 2, "{message}");
    p.write("pipelines/shop.toml", &spec);
    let recorded = runs(&p);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0]["error"].is_null(), "{recorded:?}");
}
