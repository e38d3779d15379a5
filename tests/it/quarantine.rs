//! Bad records: every malformed line lands in its table's quarantine with file, line, raw text
//! and reason, the good lines of the same file are kept, and the counts add up. Expected
//! entries come from tests/reference/retail_expected.py, which parses the raw files itself.

use crate::common::{expected_retail, Project};

#[test]
fn every_malformed_line_is_quarantined_with_its_reason() {
    let p = Project::retail();
    let report = p.json(&["run", "retail"]);
    let expected = expected_retail();
    let mut got = Vec::new();
    for table in ["bronze.customers", "bronze.pos_orders", "bronze.web_orders"] {
        for row in p.query(&format!(
            "SELECT source_file, line, raw, \"column\", reason FROM {table}__quarantine ORDER BY source_file, line"
        )) {
            let reason = row[4].clone().unwrap();
            // The reason names the failing column when there is one.
            if let Some(col) = &row[3] {
                assert!(reason.starts_with(&format!("column {col}: ")), "{reason}");
            } else {
                assert!(!reason.is_empty());
            }
            got.push(serde_json::json!({
                "table": table,
                "file": row[0],
                "line": row[1].as_deref().unwrap().parse::<u64>().unwrap(),
                "raw": row[2],
                "column": row[3],
            }));
        }
    }
    assert_eq!(serde_json::Value::Array(got), expected["quarantine"]);

    // good + quarantined = records, per file and per job.
    for job in report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["job"] == "ingest")
    {
        let mut good = 0;
        for f in job["sources"].as_array().unwrap() {
            assert_eq!(
                f["good"].as_u64().unwrap() + f["bad"].as_u64().unwrap(),
                f["records"].as_u64().unwrap()
            );
            good += f["good"].as_u64().unwrap();
        }
        assert_eq!(good, job["rows_out"].as_u64().unwrap());
        assert_eq!(
            job["rows_out"].as_u64().unwrap() + job["quarantined"].as_u64().unwrap(),
            job["rows_in"].as_u64().unwrap()
        );
    }
}

#[test]
fn reasons_say_what_is_wrong() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let reasons: Vec<String> = p
        .query("SELECT reason FROM bronze.web_orders__quarantine ORDER BY source_file, line")
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    assert_eq!(
        reasons,
        vec![
            "column quantity: expected a JSON integer, found a string `\"three\"`",
            "column product: expected a JSON string, found a number `5`",
            "truncated JSON",
            "column quantity: expected a JSON integer, found a string `\"3\"`",
        ]
    );
}

#[test]
fn fail_policy_stops_the_run_at_the_first_bad_record_and_publishes_nothing() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &spec.replace("on_bad_record = \"quarantine\"", "on_bad_record = \"fail\""),
    );
    let (code, stderr) = p.fails(&["run", "retail"]);
    assert_eq!(code, 1);
    let first_line = stderr.lines().next().unwrap();
    assert!(
        [
            "error: sample-data/retail/orders/pos_2026-01-15.csv:12: column quantity: `two` is not an int (32-bit integer)",
            "error: sample-data/retail/web/web_2026-02.jsonl:6: column quantity: expected a JSON integer, found a string `\"three\"`",
            "error: sample-data/retail/customers/customers.csv:8: column customer_id: `C-7` is not a long (64-bit integer)",
        ]
        .contains(&first_line),
        "{stderr}"
    );
    assert!(stderr.contains("hint: fix the source, or set on_bad_record = \"quarantine\""));
    assert_eq!(
        p.json(&["tables"]),
        serde_json::json!([]),
        "nothing may be published"
    );
}

#[test]
fn csv_options_delimiter_null_marker_and_headerless_files() {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        r#"
[pipeline]
name = "p"

[[ingest]]
table = "bronze.t"
format = "csv"
path = "data/*.txt"
header = false
delimiter = ";"
null_values = ["NA", ""]
schema = { id = "int not null", note = "string", amount = "decimal(5,1)" }
on_bad_record = "quarantine"
"#,
    );
    // Line 2 is a record spanning lines 2-3; line 4 has a NULL id in a `not null` column;
    // line 5 has NA as a NULL note; line 6 has a quoted delimiter and doubled quotes.
    p.write(
        "data/a.txt",
        "1;plain;1.5\n2;\"two\nlines\";2\nNA;x;3\n4;NA;-0.5\n5;\"a;b \"\"c\"\"\";NA\n",
    );
    p.json(&["run", "p"]);
    assert_eq!(
        p.query("SELECT id, note, amount, _source_line FROM bronze.t ORDER BY id"),
        vec![
            vec![
                Some("1".into()),
                Some("plain".into()),
                Some("1.5".into()),
                Some("1".into())
            ],
            vec![
                Some("2".into()),
                Some("two\nlines".into()),
                Some("2.0".into()),
                Some("2".into())
            ],
            vec![
                Some("4".into()),
                None,
                Some("-0.5".into()),
                Some("5".into())
            ],
            vec![
                Some("5".into()),
                Some("a;b \"c\"".into()),
                None,
                Some("6".into())
            ],
        ]
    );
    assert_eq!(
        p.query("SELECT line, raw, reason FROM bronze.t__quarantine"),
        vec![vec![
            Some("4".into()),
            Some("NA;x;3".into()),
            Some("column id: NULL in a `not null` column".into())
        ]]
    );
}

/// The CSV reader's buffer is sized to each file (8 KiB to 1 MiB): files below, inside and far
/// above that range (with records across every 1 MiB boundary, `\r\n` and lone `\r` endings,
/// no newline at the end) load every good row and quarantine every bad line at its own line
/// number; a second run and a run after the files are touched (fingerprinted again, through the
/// ledger's buffer) load nothing. Expected lines are the ones this test writes bad.
#[test]
fn files_of_every_size_load_whole_with_their_line_numbers() {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        r#"
[pipeline]
name = "p"

[[ingest]]
table = "bronze.rows"
format = "csv"
path = "data/*.csv"
schema = { id = "long", label = "string" }
on_bad_record = "quarantine"
"#,
    );
    // (file, records, line ending, newline after the last record)
    let files = [
        ("a_small.csv", 40, "\n", true),
        ("b_middle.csv", 4_000, "\r\n", false),
        ("c_large.csv", 90_000, "\n", true),
        ("d_returns.csv", 30_000, "\r", true),
    ];
    let mut expected_bad = Vec::new();
    let mut good = 0u64;
    let mut sum = 0u64;
    for (name, records, end, last_newline) in files {
        let mut text = String::from("id,label");
        for line in 2..=records + 1 {
            text.push_str(end);
            if line == 2 || line % 997 == 0 || line == records + 1 {
                text.push_str(&format!("x{line},bad"));
                expected_bad.push((format!("data/{name}"), line));
            } else {
                text.push_str(&format!("{line},label number {line} padded to be wide"));
                good += 1;
                sum += line;
            }
        }
        if last_newline {
            text.push_str(end);
        }
        p.write(&format!("data/{name}"), &text);
    }
    let large = std::fs::metadata(p.path().join("data/c_large.csv"))
        .unwrap()
        .len();
    assert!(
        large > 3 << 20,
        "the large file spans several buffers: {large}"
    );
    p.json(&["run", "p"]);
    let counted = p.query("SELECT count(*), sum(id) FROM bronze.rows");
    assert_eq!(
        counted,
        vec![vec![Some(good.to_string()), Some(sum.to_string())]]
    );
    let bad: Vec<(String, u64)> = p
        .query("SELECT source_file, line FROM bronze.rows__quarantine ORDER BY source_file, line")
        .into_iter()
        .map(|r| {
            (
                r[0].clone().unwrap(),
                r[1].clone().unwrap().parse().unwrap(),
            )
        })
        .collect();
    expected_bad.sort();
    assert_eq!(bad, expected_bad);

    let again = p.json(&["run", "p"]);
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    for (name, ..) in files {
        let f = std::fs::File::options()
            .write(true)
            .open(p.path().join("data").join(name))
            .unwrap();
        f.set_modified(later).unwrap();
    }
    let touched = p.json(&["run", "p"]);
    for report in [again, touched] {
        let loaded: u64 = report["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["rows_in"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(loaded, 0, "{report}");
    }
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.rows"),
        vec![vec![Some(good.to_string())]]
    );
    // One byte changed past the first MiB, size and time kept: a changed file, not loaded.
    let path = p.path().join("data/c_large.csv");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 100
        + bytes[bytes.len() - 100..]
            .iter()
            .position(|b| *b == b'l')
            .unwrap();
    bytes[at] = b'L';
    std::fs::write(&path, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(later).unwrap();
    let refused = p.json_failing(&["run", "p"]);
    assert!(refused.to_string().contains("c_large.csv"), "{refused}");
}
