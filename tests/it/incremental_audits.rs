//! Expectations on an incremental run: a row-level check whose rule the published rows
//! already passed looks only at the rows the run wrote (a partition replace's partitions, an
//! append's rows); `unique` at the keys those rows hold, wherever else in the table they are.
//! A new or changed rule, a `warn` check turned `fail`, or a `relationships` target changed by
//! the same run looks at the whole table again. Expected counts are worked out by hand.

use serde_json::Value;

use crate::common::Project;

const SPEC: &str = r#"[pipeline]
name = "ev"

[[ingest]]
table = "bronze.events"
format = "csv"
path = "data/events/*.csv"
schema = { id = "long", code = "string", ts = "timestamp" }
partition_by = ["month(ts)"]

[[ingest]]
table = "bronze.codes"
format = "csv"
path = "data/codes/*.csv"
schema = { code = "string" }

[[transform]]
table = "silver.events"
sql = "sql/events.sql"
partition_by = ["month(ts)"]
mode = "replace_partitions"
incremental_by = { "bronze.events" = "ts" }

[[expect]]
table = "silver.events"
check = "unique"
column = "id"
action = "warn"

[[expect]]
table = "silver.events"
check = "not_null"
column = "code"
action = "warn"

[[expect]]
table = "silver.events"
check = "relationships"
column = "code"
to = "bronze.codes.code"
action = "warn"

[[expect]]
table = "bronze.events"
check = "accepted_values"
column = "code"
values = ["A", "B", "C"]
action = "warn"
"#;

/// January: ids 1..3, id 3 without a code, code C unknown to bronze.codes.
const JANUARY: &str = "id,code,ts\n\
                       1,A,2026-01-05 10:00:00\n\
                       2,C,2026-01-06 10:00:00\n\
                       3,,2026-01-07 10:00:00\n";

/// February: id 4, and id 1 again (a duplicate of January's); both codes known.
const FEBRUARY: &str = "id,code,ts\n\
                        4,B,2026-02-05 10:00:00\n\
                        1,A,2026-02-06 10:00:00\n";

fn project() -> Project {
    let p = Project::empty();
    p.write("pipelines/ev.toml", SPEC);
    p.write("sql/events.sql", "SELECT id, code, ts FROM bronze.events\n");
    p.write("data/codes/codes.csv", "code\nA\nB\n");
    p.write("data/events/2026-01.csv", JANUARY);
    p
}

/// (table, name) -> (violations, scope, detail) of a run report's checks.
fn checks(report: &Value) -> Vec<(String, u64, Option<String>, String)> {
    report["quality"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                format!(
                    "{} {}",
                    r["table"].as_str().unwrap(),
                    r["name"].as_str().unwrap()
                ),
                r["violations"].as_u64().unwrap(),
                r["scope"].as_str().map(str::to_string),
                r["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn find<'a>(
    all: &'a [(String, u64, Option<String>, String)],
    key: &str,
) -> &'a (String, u64, Option<String>, String) {
    all.iter()
        .find(|c| c.0 == key)
        .unwrap_or_else(|| panic!("no check {key} in {all:?}"))
}

#[test]
fn an_incremental_run_checks_the_rows_it_wrote_and_the_keys_they_share() {
    let p = project();
    let first = checks(&p.json(&["run", "ev"]));
    // The first run checks whole tables: id 3's missing code, code C not in bronze.codes.
    assert_eq!(find(&first, "silver.events unique(id)").1, 0);
    assert_eq!(find(&first, "silver.events not_null(code)").1, 1);
    assert_eq!(find(&first, "silver.events relationships(code)").1, 1);
    assert_eq!(find(&first, "bronze.events accepted_values(code)").1, 0);
    assert!(first.iter().all(|c| c.2.is_none()), "{first:?}");

    p.write("data/events/2026-02.csv", FEBRUARY);
    let second = checks(&p.json(&["run", "ev"]));
    // Only February was written (2 rows): January's NULL code and unknown C are not counted
    // again; February's id 1 and January's id 1 are a duplicate pair.
    let unique = find(&second, "silver.events unique(id)");
    assert_eq!(unique.1, 2, "{unique:?}");
    assert_eq!(unique.2.as_deref(), Some("written"));
    assert!(
        unique.3.contains("checked the 2 rows this run wrote"),
        "{unique:?}"
    );
    for key in [
        "silver.events not_null(code)",
        "silver.events relationships(code)",
        "bronze.events accepted_values(code)",
    ] {
        let c = find(&second, key);
        assert_eq!((c.1, c.2.as_deref()), (0, Some("written")), "{c:?}");
    }
    // The table itself still holds what the whole-table checks found.
    assert_eq!(
        p.query("SELECT count(*) FROM silver.events WHERE code IS NULL"),
        vec![vec![Some("1".to_string())]]
    );
    assert_eq!(
        p.query(
            "SELECT count(*) FROM (SELECT id FROM silver.events GROUP BY id HAVING count(*) > 1)"
        ),
        vec![vec![Some("1".to_string())]]
    );

    // A changed rule (C becomes unacceptable too), a warn check turned fail, and a target
    // table changed in the same run: those look at the whole table again.
    let spec = SPEC
        .replace("values = [\"A\", \"B\", \"C\"]", "values = [\"A\", \"B\"]")
        .replace(
            "check = \"unique\"\ncolumn = \"id\"\naction = \"warn\"",
            "check = \"unique\"\ncolumn = \"id\"\naction = \"fail\"",
        );
    p.write("pipelines/ev.toml", &spec);
    p.write("data/codes/more.csv", "code\nC\n");
    p.write(
        "data/events/2026-03.csv",
        "id,code,ts\n5,A,2026-03-01 10:00:00\n",
    );
    let (code, message) = p.fails(&["run", "ev"]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.starts_with(
            "error: expectation `unique(id)` on silver.events failed: 2 violating rows;"
        ),
        "{message}"
    );
    // Back to warn: the run publishes, and every other check has looked at the whole table.
    p.write(
        "pipelines/ev.toml",
        &spec.replace(
            "check = \"unique\"\ncolumn = \"id\"\naction = \"fail\"",
            "check = \"unique\"\ncolumn = \"id\"\naction = \"warn\"",
        ),
    );
    let third = checks(&p.json(&["run", "ev"]));
    let accepted = find(&third, "bronze.events accepted_values(code)");
    // C (January) is now outside the values: the whole table counts it.
    assert_eq!(
        (accepted.1, accepted.2.as_deref()),
        (1, None),
        "{accepted:?}"
    );
    let related = find(&third, "silver.events relationships(code)");
    // bronze.codes gained C in this run: the whole table is checked, and nothing is missing.
    assert_eq!((related.1, related.2.as_deref()), (0, None), "{related:?}");
    let not_null = find(&third, "silver.events not_null(code)");
    assert_eq!(
        (not_null.1, not_null.2.as_deref()),
        (0, Some("written")),
        "{not_null:?}"
    );
}

/// `unique` on the rows a run wrote reads the table only within the ranges of the keys those
/// rows hold (at most 16 ranges: the written keys split at their widest gaps). The duplicates
/// at the ends of the ranges, inside a range that spans several clusters of written keys, and
/// of a NULL key are all still found.
#[test]
fn a_unique_check_of_the_rows_written_reads_within_their_key_ranges_and_misses_nothing() {
    let p = project();
    // January: ids 1000, 2000, ..., 40000 and one NULL id: 41 rows, no duplicate.
    let mut january = String::from("id,code,ts\n,A,2026-01-02 10:00:00\n");
    for i in 1..=40 {
        january.push_str(&format!("{},A,2026-01-05 10:00:00\n", i * 1000));
    }
    p.write("data/events/2026-01.csv", &january);
    let first = checks(&p.json(&["run", "ev"]));
    assert_eq!(find(&first, "silver.events unique(id)").1, 0, "{first:?}");

    // February: a NULL id, 1000 (the smallest key written), 40000 (the largest), 20000, and
    // 17 keys no other row holds (1500, 2500, ..., 17500): 21 rows, 19 clusters of keys
    // folded into 16 ranges. Duplicates: NULL, 1000, 20000 and 40000, two rows each.
    let mut february = String::from("id,code,ts\n,B,2026-02-02 10:00:00\n");
    for id in [1000, 40000, 20000] {
        february.push_str(&format!("{id},B,2026-02-05 10:00:00\n"));
    }
    for i in 1..=17 {
        february.push_str(&format!("{},B,2026-02-06 10:00:00\n", i * 1000 + 500));
    }
    p.write("data/events/2026-02.csv", &february);
    let out = p
        .command(&["run", "ev", "--json"])
        .env("PIPELINE_LOG", "pipeline=debug")
        .output()
        .expect("run the pipeline binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("unique check narrowed to the key ranges written")
            && stderr.contains("ranges=16")
            && stderr.contains("nulls=true"),
        "{stderr}"
    );
    let second = checks(&serde_json::from_slice(&out.stdout).expect("the run's JSON report"));
    let unique = find(&second, "silver.events unique(id)");
    assert_eq!(
        (unique.1, unique.2.as_deref()),
        (8, Some("written")),
        "{unique:?}"
    );
    // The same count over the whole table, by the engine's own GROUP BY.
    assert_eq!(
        p.query(
            "SELECT count(*) FROM silver.events t JOIN (SELECT id FROM silver.events GROUP BY id HAVING count(*) > 1) d ON t.id IS NOT DISTINCT FROM d.id"
        ),
        vec![vec![Some("8".to_string())]]
    );
}
