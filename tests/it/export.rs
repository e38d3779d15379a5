//! `pipeline query --format csv|json|parquet --out FILE` (exports) and `pipeline completions`.
//! Expected rows come from `tests/expected/retail.json` (computed independently of the engine);
//! the Parquet file is read back by DuckDB.

use std::process::Command;

use serde_json::Value;

use crate::common::{expected_retail, Project};

/// The expected rows of a table, every value as text.
fn expected_rows(table: &str) -> Vec<Vec<String>> {
    expected_retail()["tables"][table]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let row = r.as_array().unwrap();
            row.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .collect()
}

const REVENUE: &str = "SELECT * FROM gold.monthly_revenue ORDER BY month";

#[test]
fn csv_and_json_lines_stream_to_stdout_with_every_value() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let out = p.run(&["query", REVENUE, "--format", "csv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("month,orders,customers,revenue"));
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(rows, expected_rows("gold.monthly_revenue"));

    // JSON Lines: one object per row; counts are numbers, decimals exact numbers.
    let out = p.run(&["query", REVENUE, "--format", "json"]);
    let objects: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want = expected_rows("gold.monthly_revenue");
    assert_eq!(objects.len(), want.len());
    for (object, row) in objects.iter().zip(&want) {
        assert_eq!(object["month"], row[0].as_str());
        assert_eq!(object["orders"].to_string(), row[1]);
        assert!(object["revenue"].is_number(), "{object}");
        assert_eq!(object["revenue"].to_string(), row[3]);
    }
}

#[test]
fn parquet_export_reads_back_in_duckdb_and_refuses_what_it_must() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let exports = tempfile::tempdir().unwrap();
    let file = exports.path().join("fact_orders.parquet");
    let file_arg = file.to_str().unwrap();
    let written = p.json(&["query", "SELECT * FROM gold.fact_orders", "--out", file_arg]);
    assert_eq!(written["rows"], 39);
    assert_eq!(written["format"], "parquet");
    assert_eq!(written["bytes"], std::fs::metadata(&file).unwrap().len());
    let sum = p.query("SELECT sum(amount) FROM gold.fact_orders")[0][0]
        .clone()
        .unwrap();
    let read = duckdb(&format!(
        "SELECT count(*), sum(amount) FROM read_parquet('{}')",
        file.display()
    ));
    assert_eq!(read, format!("39|{sum}"));

    // An existing file is refused, left as it was; --force replaces it.
    let before = std::fs::read(&file).unwrap();
    let (code, err) = p.fails(&["query", "SELECT 1 AS x", "--out", file_arg]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    p.json(&["query", "SELECT 1 AS x", "--out", file_arg, "--force"]);
    assert_eq!(
        duckdb(&format!("SELECT x FROM read_parquet('{}')", file.display())),
        "1"
    );

    // A failing query, and one stopped by its timeout after streaming for a while, leave no
    // file and no partial file.
    let bad = exports.path().join("bad.csv");
    let (code, _) = p.fails(&["query", "SELECT 1/0 AS x", "--out", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    let huge = "SELECT a.order_id FROM silver.orders a, silver.orders b, silver.orders c, \
                silver.orders d, silver.orders e";
    let (code, err) = p.fails(&[
        "query",
        huge,
        "--out",
        bad.to_str().unwrap(),
        "--timeout",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("timeout"), "{err}");
    let left: Vec<_> = std::fs::read_dir(exports.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(left, vec!["fact_orders.parquet".to_string()]);

    // Hostile: an export into the warehouse (the catalog's files) is refused, by any path.
    let files_before = p.files("gold.fact_orders");
    for inside in [
        "warehouse/gold/leak.parquet",
        "sample-data/../warehouse/x.csv",
    ] {
        let target = p.path().join(inside);
        let (code, err) = p.fails(&["query", REVENUE, "--out", target.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("warehouse"), "{err}");
        assert!(!target.exists());
    }
    assert_eq!(p.files("gold.fact_orders"), files_before);
    // Parquet needs a file; a name without a known extension needs --format.
    let (_, err) = p.fails(&["query", REVENUE, "--format", "parquet"]);
    assert!(err.contains("--out"), "{err}");
    let plain = exports.path().join("revenue.txt");
    let (_, err) = p.fails(&["query", REVENUE, "--out", plain.to_str().unwrap()]);
    assert!(err.contains("--format"), "{err}");
}

/// One DuckDB query's rows, values joined by `|`.
fn duckdb(sql: &str) -> String {
    let script = format!(
        "import duckdb\nfor r in duckdb.sql(\"{sql}\").fetchall(): print('|'.join(str(v) for v in r))"
    );
    String::from_utf8(crate::common::python(&script))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn bash_completion_script_completes_commands() {
    let p = Project::empty();
    let out = p.run(&["completions", "bash"]);
    assert!(out.status.success());
    let script = p.path().join("pipeline.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // bash loads it, and completing `pipeline ba` offers backfill.
    let probe = format!(
        "source '{}'; COMP_WORDS=(pipeline ba); COMP_CWORD=1; COMP_LINE='pipeline ba'; \
         COMP_POINT=${{#COMP_LINE}}; _pipeline pipeline ba pipeline; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let done = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let offered = String::from_utf8_lossy(&done.stdout);
    assert!(
        offered.lines().any(|l| l == "backfill"),
        "{offered}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let (code, err) = p.fails(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}
