//! Expectations (`[[expect]]`): evaluated on the staged tables before publish. `fail` stops
//! the run with the check, the count and a sample, publishing nothing; `warn` publishes and
//! reports. Expected counts are worked out by hand from the four rows below.

use crate::common::Project;

/// Four items: id 2 twice, a NULL code, a code outside A/B (`Z`), a negative price, one price
/// above 25, and timestamps in January 2026 (months before any test run).
const ITEMS: &str = "id,code,price,ts\n\
                     1,A,10.00,2026-01-01 10:00:00\n\
                     2,B,20.00,2026-01-02 10:00:00\n\
                     2,Z,-5.00,2026-01-03 10:00:00\n\
                     4,,30.00,2026-01-04 10:00:00\n";

fn project(expectations: &str) -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/shop.toml",
        &format!(
            "[pipeline]\nname = \"shop\"\n\n\
             [[ingest]]\ntable = \"bronze.items\"\nformat = \"csv\"\npath = \"data/items.csv\"\n\
             schema = {{ id = \"long\", code = \"string\", price = \"decimal(10,2)\", ts = \"timestamp\" }}\n\n\
             [[ingest]]\ntable = \"bronze.codes\"\nformat = \"csv\"\npath = \"data/codes.csv\"\n\
             schema = {{ code = \"string\" }}\n\n\
             [[transform]]\ntable = \"silver.items\"\nsql = \"sql/items.sql\"\n\n{expectations}"
        ),
    );
    p.write(
        "sql/items.sql",
        "SELECT id, code, price, ts FROM bronze.items\n",
    );
    p.write("data/items.csv", ITEMS);
    p.write("data/codes.csv", "code\nA\nB\n");
    p
}

const ALL_CHECKS: &str = r#"
[[expect]]
table = "silver.items"
check = "not_null"
column = "code"
action = "warn"

[[expect]]
table = "silver.items"
check = "unique"
columns = ["id"]
action = "warn"

[[expect]]
table = "silver.items"
check = "accepted_values"
column = "code"
values = ["A", "B"]
action = "warn"

[[expect]]
table = "silver.items"
check = "range"
column = "price"
min = 0
action = "warn"

[[expect]]
table = "silver.items"
check = "regex"
column = "code"
pattern = "^[A-M]$"
action = "warn"

[[expect]]
table = "silver.items"
check = "relationships"
column = "code"
to = "bronze.codes.code"
action = "warn"

[[expect]]
table = "silver.items"
check = "row_count"
min = 5
action = "warn"

[[expect]]
table = "silver.items"
check = "freshness"
column = "ts"
within = "36h"
action = "warn"

[[expect]]
table = "silver.items"
name = "no_expensive_items"
check = "sql"
sql = "SELECT * FROM silver.items WHERE price > 25"
action = "warn"

[[expect]]
table = "bronze.codes"
check = "unique"
column = "code"
"#;

#[test]
fn warn_expectations_publish_and_report_exact_counts() {
    let p = project(ALL_CHECKS);
    let report = p.json(&["run", "shop"]);
    let results: Vec<(String, u64, bool)> = report["quality"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["violations"].as_u64().unwrap(),
                r["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("not_null(code)", 1, false),
        ("unique(id)", 2, false),
        ("accepted_values(code)", 1, false),
        ("range(price)", 1, false),
        ("regex(code)", 1, false),
        ("relationships(code)", 1, false),
        ("row_count", 1, false),
        ("freshness(ts)", 1, false),
        ("no_expensive_items", 1, false),
        ("unique(code)", 0, true),
    ];
    let expected: Vec<(String, u64, bool)> = expected
        .iter()
        .map(|(n, v, ok)| (n.to_string(), *v, *ok))
        .collect();
    assert_eq!(results, expected);
    let row_count = &report["quality"][6];
    assert_eq!(row_count["detail"], "4 rows, expected at least 5");
    let unique = &report["quality"][1];
    assert!(
        unique["sample"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["id"] == "2"),
        "{unique}"
    );
    // Published, and recorded with the run.
    assert_eq!(
        p.query("SELECT count(*) FROM silver.items")[0][0].as_deref(),
        Some("4")
    );
    let runs = p.json(&["runs"]);
    assert_eq!(runs[0]["quality"], report["quality"]);
}

#[test]
fn a_failing_expectation_publishes_nothing_and_shows_the_check_count_and_sample() {
    let p = project("");
    p.json(&["run", "shop"]);
    let before = p.current_snapshot("silver.items");
    // A new file, and a check that its rows break.
    p.write(
        "pipelines/shop.toml",
        &format!(
            "{}\n[[expect]]\ntable = \"silver.items\"\ncheck = \"unique\"\ncolumn = \"id\"\n",
            std::fs::read_to_string(p.path().join("pipelines/shop.toml")).unwrap()
        ),
    );
    p.write(
        "data/items.csv",
        &format!("{ITEMS}5,A,1.00,2026-01-05 10:00:00\n"),
    );
    let (code, message) = p.fails(&["run", "shop", "--reload-changed"]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.starts_with(
            "error: expectation `unique(id)` on silver.items failed: 2 violating rows; nothing of this run was published"
        ),
        "{message}"
    );
    assert!(message.contains("\n  sample:\n    id=2, "), "{message}");
    assert!(message.contains("id=2, code=B, price=20.00"), "{message}");
    assert!(message.contains("id=2, code=Z, price=-5.00"), "{message}");
    assert_eq!(p.current_snapshot("silver.items"), before);
    let (published, failed) = p.runs_by_outcome();
    assert_eq!((published.len(), failed.len()), (1, 1), "{failed:?}");
}

#[test]
fn expectation_spec_errors_name_the_line() {
    let p = project("[[expect]]\ntable = \"silver.items\"\ncheck = \"nonsense\"\n");
    let (code, message) = p.fails(&["validate", "shop"]);
    assert_eq!(code, 2);
    assert!(message.contains("pipelines/shop.toml:"), "{message}");
    assert!(message.contains("unknown check `nonsense`"), "{message}");
    let p = project("[[expect]]\ntable = \"gold.nowhere\"\ncheck = \"row_count\"\nmin = 1\n");
    let (_, message) = p.fails(&["validate", "shop"]);
    assert!(
        message.contains("expectation on `gold.nowhere`, which this pipeline does not write"),
        "{message}"
    );
    let p = project("[[expect]]\ntable = \"silver.items\"\ncheck = \"freshness\"\ncolumn = \"ts\"\nwithin = \"soon\"\n");
    let (_, message) = p.fails(&["validate", "shop"]);
    assert!(message.contains("`soon` is not a duration"), "{message}");
}

const DROPS: &str = r#"
[[expect]]
table = "silver.items"
check = "accepted_values"
column = "code"
values = ["A", "B"]
action = "drop"

[[expect]]
table = "silver.items"
check = "not_null"
column = "code"
action = "drop"

[[expect]]
table = "silver.items"
check = "relationships"
column = "code"
to = "bronze.codes.code"
action = "drop"

[[expect]]
table = "silver.items"
check = "relationships"
column = "id"
to = "bronze.items.id"
action = "drop"

[[expect]]
table = "silver.items"
check = "range"
column = "price"
min = 0
"#;

#[test]
fn drop_expectations_send_violating_rows_to_quarantine_and_publish_the_rest() {
    let p = project(DROPS);
    let report = p.json(&["run", "shop"]);
    let run_id = report["run_id"].as_str().unwrap().to_string();
    // Kept: ids 1 (A) and 2 (B). Dropped: 2/Z by accepted_values (the first drop it breaks;
    // relationships would drop it too) and 4/NULL by not_null (NULL is not a value outside
    // A, B). Every id is in bronze.items (a second lookup, joined too). The range check
    // (fail) then passes on what is left.
    assert_eq!(
        p.query("SELECT id, code FROM silver.items ORDER BY id"),
        vec![
            vec![Some("1".into()), Some("A".into())],
            vec![Some("2".into()), Some("B".into())],
        ]
    );
    assert_eq!(
        p.query(
            "SELECT id, code, price, _expectation, _dropped_in_run FROM silver.items__quarantine ORDER BY id"
        ),
        vec![
            vec![
                Some("2".into()),
                Some("Z".into()),
                Some("-5.00".into()),
                Some("accepted_values(code)".into()),
                Some(run_id.clone())
            ],
            vec![
                Some("4".into()),
                None,
                Some("30.00".into()),
                Some("not_null(code)".into()),
                Some(run_id.clone())
            ],
        ]
    );
    let job = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == "silver.items")
        .unwrap();
    assert_eq!(job["rows_out"], 2);
    assert_eq!(job["quarantined"], 2);
    let results: Vec<(String, String, u64, String)> = report["quality"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["action"].as_str().unwrap().to_string(),
                r["violations"].as_u64().unwrap(),
                r["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![
            (
                "range(price)".into(),
                "fail".into(),
                0,
                "0 violating rows".into()
            ),
            (
                "accepted_values(code)".into(),
                "drop".into(),
                1,
                "1 violating row dropped to silver.items__quarantine".into()
            ),
            (
                "not_null(code)".into(),
                "drop".into(),
                1,
                "1 violating row dropped to silver.items__quarantine".into()
            ),
            (
                "relationships(code)".into(),
                "drop".into(),
                0,
                "0 violating rows dropped to silver.items__quarantine".into()
            ),
            (
                "relationships(id)".into(),
                "drop".into(),
                0,
                "0 violating rows dropped to silver.items__quarantine".into()
            ),
        ]
    );
    // The quarantine is published with the table, in the same run, and undone with it.
    let info = p.json(&["run-info", &run_id]);
    let tables: Vec<&str> = info["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert!(tables.contains(&"silver.items__quarantine"), "{tables:?}");
    // Nothing changed: nothing recomputed, the quarantine is not appended to again.
    p.json(&["run", "shop"]);
    assert_eq!(
        p.query("SELECT count(*) FROM silver.items__quarantine")[0][0].as_deref(),
        Some("2")
    );
    // B leaves the code list: the table is recomputed (its lookup table changed) and the
    // quarantine holds exactly what the new version dropped.
    p.write("data/codes.csv", "code\nA\n");
    p.json(&["run", "shop", "--reload-changed"]);
    assert_eq!(
        p.query("SELECT id, code FROM silver.items"),
        vec![vec![Some("1".into()), Some("A".into())]]
    );
    assert_eq!(
        p.query("SELECT id, _expectation FROM silver.items__quarantine ORDER BY id, _expectation"),
        vec![
            vec![Some("2".into()), Some("accepted_values(code)".into())],
            vec![Some("2".into()), Some("relationships(code)".into())],
            vec![Some("4".into()), Some("not_null(code)".into())],
        ]
    );
}

#[test]
fn drop_needs_a_row_level_check_on_a_transform_table() {
    let p = project(
        "[[expect]]\ntable = \"silver.items\"\ncheck = \"unique\"\ncolumn = \"id\"\naction = \"drop\"\n",
    );
    let (code, message) = p.fails(&["validate", "shop"]);
    assert_eq!(code, 2);
    assert!(
        message.contains("pipelines/shop.toml:")
            && message.contains(
                "action \"drop\" needs a check that judges each row on its own; `unique` does not"
            ),
        "{message}"
    );
    let p = project(
        "[[expect]]\ntable = \"bronze.items\"\ncheck = \"not_null\"\ncolumn = \"code\"\naction = \"drop\"\n",
    );
    let (_, message) = p.fails(&["validate", "shop"]);
    assert!(
        message.contains(
            "action \"drop\" applies to tables a transform writes; `bronze.items` is not one"
        ),
        "{message}"
    );
    let p = project(
        "[[expect]]\ntable = \"silver.items\"\ncheck = \"not_null\"\ncolumn = \"colour\"\naction = \"drop\"\n",
    );
    let (_, message) = p.fails(&["validate", "shop"]);
    assert!(message.contains("colour"), "{message}");
}

/// Starts the retail run of `p` held after `gold.fact_orders` staged, waits (up to 2 minutes)
/// for the early audit of `silver.orders`'s check `check`, lets it go on; whether that line
/// came before the job was done, the whole stderr, and the run's JSON report.
fn run_held_until_audited(p: &Project, check: &str) -> (bool, String, serde_json::Value) {
    let gate = p.path().join("go-on");
    let mut paused = p.start_paused_piped(
        &["-v", "run", "retail", "--json"],
        "transform-staged gold.fact_orders",
        gate,
    );
    let heard = paused.wait_for(
        &format!("audited early, while later jobs run table=silver.orders check={check}"),
        std::time::Duration::from_secs(120),
    );
    let before = paused.before().to_string();
    let (ok, log, stdout) = paused.release_with_stdout();
    assert!(ok, "{before}{log}");
    (heard, before + &log, serde_json::from_str(&stdout).unwrap())
}

/// The run's results are those of `silver.orders`'s three checks, in the spec's order, each
/// equal to a count of the published table.
fn assert_retail_results(p: &Project, report: &serde_json::Value) {
    let results: Vec<(String, String, u64)> = report["quality"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["table"].as_str().unwrap().to_string(),
                r["check"].as_str().unwrap().to_string(),
                r["violations"].as_u64().unwrap(),
            )
        })
        .collect();
    let count = |sql: &str| -> u64 { p.query(sql)[0][0].as_deref().unwrap().parse().unwrap() };
    let duplicated = count(
        "SELECT count(*) FROM silver.orders WHERE order_id IN \
         (SELECT order_id FROM silver.orders GROUP BY order_id HAVING count(*) > 1)",
    );
    let orphans = count(
        "SELECT count(*) FROM silver.orders o WHERE NOT EXISTS \
         (SELECT 1 FROM silver.customers c WHERE c.customer_id = o.customer_id)",
    );
    let s = |t: &str| t.to_string();
    assert_eq!(
        results,
        [
            (s("silver.orders"), s("unique"), duplicated),
            (s("silver.orders"), s("relationships"), orphans),
            (s("silver.orders"), s("volume"), 0),
        ]
    );
    assert!(
        orphans > 0,
        "the sample data has orders of unknown customers"
    );
}

/// The checks of `silver.orders` run while the gold jobs that read it still run (here: while
/// `gold.fact_orders` is held after staging), and find what the audit step would: the same
/// results, in the spec's order, each against a count of the published table.
#[test]
fn checks_run_beside_the_later_jobs_and_find_what_the_audit_step_would() {
    let p = Project::retail();
    let (heard, log, report) = run_held_until_audited(&p, "unique");
    assert!(
        heard,
        "silver.orders was not audited before gold.fact_orders was done:\n{log}"
    );
    assert_retail_results(&p, &report);
}

/// A check that reads more rows than `PIPELINE_EARLY_AUDIT_ROWS` waits for the audit step
/// (beside a full run's gold jobs a big check only doubles the peak memory): with 1, `volume`
/// (it reads the staged snapshot's summary, no rows) still runs while `gold.fact_orders` is
/// held, `unique` and `relationships` do not; the results are the same.
#[test]
fn checks_over_the_early_budget_wait_for_the_audit_step() {
    let mut p = Project::retail();
    p.env.push(("PIPELINE_EARLY_AUDIT_ROWS".into(), "1".into()));
    let (heard, log, report) = run_held_until_audited(&p, "volume");
    assert!(heard, "volume was not audited early:\n{log}");
    for check in ["unique", "relationships"] {
        assert!(
            !log.contains(&format!(
                "early, while later jobs run table=silver.orders check={check}"
            )),
            "{check} read more rows than the budget and still started early:\n{log}"
        );
    }
    assert_retail_results(&p, &report);
}

/// A `unique` check of a whole table whose keys all hash differently passes without grouping
/// the table (the audit's debug log says so), on every key column together; a key repeated
/// far apart in 3,000 rows still fails it with the exact count, from the SQL. Items: ids 0 to
/// 1,499, each twice (codes A and B): unique on (id, code), and every row breaks unique(id).
#[test]
fn a_whole_table_unique_check_is_proven_by_key_hashes_and_repeats_are_still_counted() {
    let p = project(
        "[[expect]]\ntable = \"silver.items\"\ncheck = \"unique\"\ncolumns = [\"id\", \"code\"]\n\n\
         [[expect]]\ntable = \"silver.items\"\ncheck = \"unique\"\ncolumns = [\"id\"]\naction = \"warn\"\n",
    );
    let mut items = String::from("id,code,price,ts\n");
    for code in ["A", "B"] {
        for id in 0..1500 {
            items.push_str(&format!("{id},{code},1.00,2026-01-01 10:00:00\n"));
        }
    }
    p.write("data/items.csv", &items);
    let out = p
        .command(&["run", "shop", "--json"])
        .env("PIPELINE_LOG", "pipeline=debug")
        .output()
        .expect("run the pipeline binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the JSON report");
    let results: Vec<(String, u64)> = report["quality"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["violations"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("unique(id, code)".to_string(), 0),
            ("unique(id)".to_string(), 3000)
        ]
    );
    let proven: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("every key hashes differently"))
        .collect();
    assert_eq!(proven.len(), 1, "{stderr}");
    assert!(proven[0].contains("check=unique(id, code)"), "{stderr}");
}
