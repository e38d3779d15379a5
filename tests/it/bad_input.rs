//! Source files as they arrive in real life: `\r\n` line endings, a last line without an end,
//! duplicate JSON keys, empty files, NUL bytes, binary files under a `.csv` name. Line numbers
//! are counted by hand in each test's file.

use crate::common::Project;

fn csv_project(policy: &str, file: &str) -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        &format!(
            r#"[pipeline]
name = "p"

[[ingest]]
table = "bronze.t"
format = "csv"
path = "data/*.csv"
schema = {{ id = "long", name = "string" }}
on_bad_record = "{policy}"
"#
        ),
    );
    p.write("data/f.csv", file);
    p
}

fn json_project(policy: &str, file: &str) -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        &format!(
            r#"[pipeline]
name = "p"

[[ingest]]
table = "bronze.t"
format = "json"
path = "data/*.jsonl"
schema = {{ id = "long", name = "string" }}
on_bad_record = "{policy}"
"#
        ),
    );
    p.write("data/f.jsonl", file);
    p
}

fn cell(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn csv_line_numbers_are_right_for_every_line_ending() {
    // Line 1 the header, 2 a good row, 3 a bad one, 4 a good one.
    for ending in ["\n", "\r\n"] {
        for last_ends in [true, false] {
            let mut text = ["id,name", "1,a", "x,b", "3,c"].join(ending);
            if last_ends {
                text.push_str(ending);
            }
            let p = csv_project("quarantine", &text);
            p.json(&["run", "p"]);
            let case = format!("ending {ending:?}, last line ended: {last_ends}");
            assert_eq!(
                p.query("SELECT line, raw FROM bronze.t__quarantine"),
                vec![vec![cell("3"), cell("x,b")]],
                "{case}"
            );
            assert_eq!(
                p.query("SELECT id, name, length(name), _source_line FROM bronze.t ORDER BY id"),
                vec![
                    vec![cell("1"), cell("a"), cell("1"), cell("2")],
                    vec![cell("3"), cell("c"), cell("1"), cell("4")],
                ],
                "{case}"
            );
        }
    }
}

#[test]
fn a_bad_crlf_record_under_fail_names_its_real_line() {
    let p = csv_project("fail", "id,name\r\n1,a\r\nx,b\r\n3,c\r\n");
    let (code, message) = p.fails(&["run", "p"]);
    assert_eq!(code, 1, "{message}");
    assert!(message.contains("f.csv:3: column id"), "{message}");
}

#[test]
fn crlf_keeps_quoted_fields_and_skips_blank_lines() {
    let p = csv_project(
        "quarantine",
        "id,name\r\n1,\"a, b\"\r\n\r\n2,\"c \"\"d\"\"\"\r\n",
    );
    p.json(&["run", "p"]);
    assert_eq!(
        p.query("SELECT id, name, _source_line FROM bronze.t ORDER BY id"),
        vec![
            vec![cell("1"), cell("a, b"), cell("2")],
            vec![cell("2"), cell("c \"d\""), cell("4")],
        ]
    );
    assert!(p.query("SELECT * FROM bronze.t__quarantine").is_empty());
}

#[test]
fn a_file_of_lone_carriage_returns_still_loads() {
    let p = csv_project("quarantine", "id,name\r1,a\r2,b\r");
    p.json(&["run", "p"]);
    assert_eq!(
        p.query("SELECT id, name FROM bronze.t ORDER BY id"),
        vec![vec![cell("1"), cell("a")], vec![cell("2"), cell("b")]]
    );
}

#[test]
fn lone_carriage_returns_number_every_record_and_quarantined_line() {
    // Line 1 the header, 2 good, 3 bad, 4 good (with a quoted `\r` inside: still line 4),
    // 5 bad, 6 good.
    let p = csv_project("quarantine", "id,name\r1,a\rx,b\r4,\"c\"\r5x,d\r6,e\r");
    p.json(&["run", "p"]);
    assert_eq!(
        p.query("SELECT line, raw FROM bronze.t__quarantine ORDER BY line"),
        vec![vec![cell("3"), cell("x,b")], vec![cell("5"), cell("5x,d")]]
    );
    assert_eq!(
        p.query("SELECT id, _source_line FROM bronze.t ORDER BY id"),
        vec![
            vec![cell("1"), cell("2")],
            vec![cell("4"), cell("4")],
            vec![cell("6"), cell("6")],
        ]
    );
}

/// A JSON Lines ingest that adds undeclared keys as columns (the scan of a file's keys reads
/// every line before the load does).
fn json_adding_columns(policy: &str, file: &[u8]) -> Project {
    let p = json_project(policy, "");
    let spec = std::fs::read_to_string(p.path().join("pipelines/p.toml")).unwrap();
    p.write(
        "pipelines/p.toml",
        &format!("{spec}schema_evolution = \"add_columns\"\n"),
    );
    std::fs::write(p.path().join("data/f.jsonl"), file).unwrap();
    p
}

#[test]
fn an_invalid_utf8_byte_in_json_lines_is_quarantined_with_its_line() {
    let mut file = b"{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2, \"name\": \"b".to_vec();
    file.push(0xff);
    file.extend_from_slice(b"\"}\n{\"id\": 3, \"name\": \"c\", \"extra\": \"x\"}\n");
    let p = json_adding_columns("quarantine", &file);
    p.json(&["run", "p"]);
    assert_eq!(
        p.query("SELECT line, reason FROM bronze.t__quarantine"),
        vec![vec![cell("2"), cell("invalid UTF-8")]]
    );
    assert_eq!(
        p.query("SELECT id, extra, _source_line FROM bronze.t ORDER BY id"),
        vec![
            vec![cell("1"), None, cell("1")],
            vec![cell("3"), cell("x"), cell("3")],
        ]
    );
    // Under `fail`, the run stops naming the file and line.
    let p = json_adding_columns("fail", &file);
    let (code, message) = p.fails(&["run", "p"]);
    assert_eq!(code, 1, "{message}");
    assert!(message.contains("f.jsonl:2: invalid UTF-8"), "{message}");
}

#[test]
fn a_json_lines_file_may_start_with_a_byte_order_mark() {
    for evolution in [false, true] {
        let file = "\u{feff}{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2, \"name\": \"b\"}\n";
        let p = if evolution {
            json_adding_columns("quarantine", file.as_bytes())
        } else {
            json_project("quarantine", file)
        };
        p.json(&["run", "p"]);
        assert!(
            p.query("SELECT * FROM bronze.t__quarantine").is_empty(),
            "add_columns: {evolution}"
        );
        assert_eq!(
            p.query("SELECT id, name FROM bronze.t ORDER BY id"),
            vec![vec![cell("1"), cell("a")], vec![cell("2"), cell("b")]],
            "add_columns: {evolution}"
        );
    }
}

#[test]
fn thousands_of_unknown_keys_stop_the_run_instead_of_adding_thousands_of_columns() {
    let keys: Vec<String> = (0..10_000).map(|k| format!("\"k{k}\": 1")).collect();
    let file = format!(
        "{{\"id\": 1, \"name\": \"a\"}}\n{{\"id\": 2, {}}}\n",
        keys.join(", ")
    );
    let p = json_adding_columns("quarantine", file.as_bytes());
    let (code, message) = p.fails(&["run", "p"]);
    assert_eq!(code, 1, "{message}");
    assert!(message.contains("f.jsonl:2:"), "{message}");
    assert!(message.contains("at most 500"), "{message}");
    assert_eq!(p.tables(), Vec::<String>::new(), "nothing was published");
}

#[test]
fn json_line_numbers_are_right_with_crlf() {
    let p = json_project(
        "quarantine",
        "{\"id\": 1, \"name\": \"a\"}\r\n{\"id\": \"x\"}\r\n\r\n{\"id\": 3, \"name\": \"c\"}",
    );
    p.json(&["run", "p"]);
    assert_eq!(
        p.query("SELECT line, raw FROM bronze.t__quarantine"),
        vec![vec![cell("2"), cell("{\"id\": \"x\"}")]]
    );
    assert_eq!(
        p.query("SELECT id, _source_line FROM bronze.t ORDER BY id"),
        vec![vec![cell("1"), cell("1")], vec![cell("3"), cell("4")]]
    );
}

#[test]
fn a_json_record_with_a_duplicate_key_is_a_bad_record() {
    let record = r#"{"id": 6001, "name": "First", "name": "Second", "id": 6005}"#;
    let p = json_project(
        "quarantine",
        &format!("{{\"id\": 1, \"name\": \"a\"}}\n{record}\n"),
    );
    p.json(&["run", "p"]);
    let bad = p.query("SELECT line, raw, reason FROM bronze.t__quarantine");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0][0], cell("2"));
    assert_eq!(bad[0][1], cell(record));
    let reason = bad[0][2].clone().unwrap();
    assert!(reason.contains("duplicate key `name`"), "{reason}");
    assert_eq!(p.query("SELECT id FROM bronze.t"), vec![vec![cell("1")]]);

    let p = json_project("fail", &format!("{record}\n"));
    let (code, message) = p.fails(&["run", "p"]);
    assert_eq!(code, 1);
    assert!(
        message.contains("f.jsonl:1: duplicate key `name`"),
        "{message}"
    );
}

#[test]
fn an_empty_file_loads_nothing_and_says_so() {
    let p = csv_project("fail", "");
    let out = p.run(&["run", "p", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "data/f.csv is empty (0 bytes, not even a header line): nothing loaded from it"
        ),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["jobs"][0]["sources"][0]["records"], 0);
    assert_eq!(report["jobs"][0]["rows_out"], 0);
}

#[test]
fn text_with_a_nul_byte_is_a_bad_record() {
    let p = csv_project("quarantine", "id,name\n1,a\u{0}b\n2,ok\n");
    p.json(&["run", "p"]);
    let bad = p.query("SELECT line, \"column\", reason FROM bronze.t__quarantine");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0][0], cell("2"));
    assert_eq!(bad[0][1], cell("name"));
    assert!(bad[0][2].as_ref().unwrap().contains("NUL byte"), "{bad:?}");
    assert_eq!(p.query("SELECT name FROM bronze.t"), vec![vec![cell("ok")]]);

    let p = json_project(
        "quarantine",
        "{\"id\": 1, \"name\": \"a\\u0000b\"}\n{\"id\": 2, \"name\": \"ok\"}\n",
    );
    p.json(&["run", "p"]);
    let bad = p.query("SELECT line, reason FROM bronze.t__quarantine");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0][1].as_ref().unwrap().contains("NUL byte"), "{bad:?}");
}

/// New keys spread over several JSON Lines files (loaded by parallel lanes) become columns
/// in the order first seen (file by file, line by line), rows without them NULL; every row is
/// loaded once (a bad line quarantined once), the run's counts are those of one load, and the
/// successful run leaves no file the tables do not reference.
#[test]
fn new_json_keys_across_files_add_their_columns_and_load_every_row_once() {
    let p = json_adding_columns("quarantine", b"");
    std::fs::remove_file(p.path().join("data/f.jsonl")).unwrap();
    let mut expected = Vec::new();
    let mut id = 0;
    for f in 1..=6 {
        let mut text = String::new();
        for line in 1..=400 {
            id += 1;
            let mut record = format!("{{\"id\": {id}, \"name\": \"n{id}\"");
            // `zone` first appears in file 4 line 10, `channel` in file 4 line 11 and
            // `coupon` in file 5: columns zone, channel, coupon.
            let zone = (f == 4 && line >= 10 || f == 6).then(|| format!("z{id}"));
            let channel = (f == 4 && line == 11).then(|| "web".to_string());
            let coupon = (f == 5 && line % 2 == 0).then(|| format!("c{id}"));
            for (key, value) in [("channel", &channel), ("zone", &zone), ("coupon", &coupon)] {
                if let Some(v) = value {
                    record.push_str(&format!(", \"{key}\": \"{v}\""));
                }
            }
            record.push('}');
            if f == 2 && line == 7 || f == 6 && line == 400 {
                record.truncate(record.len() - 2); // cut short: quarantined
                id -= 1;
            } else {
                expected.push(vec![
                    Some(id.to_string()),
                    zone.clone(),
                    channel.clone(),
                    coupon.clone(),
                    Some(line.to_string()),
                ]);
            }
            text.push_str(&record);
            text.push('\n');
        }
        p.write(&format!("data/f{f}.jsonl"), &text);
    }
    let report = p.json(&["run", "p"]);
    let job = &report["jobs"][0];
    assert_eq!(
        job["action"].as_str(),
        Some("append; columns added: zone, channel, coupon"),
        "{job}"
    );
    assert_eq!(job["rows_in"], 2400, "{job}");
    assert_eq!(job["rows_out"], 2398, "{job}");
    assert_eq!(job["quarantined"], 2, "{job}");
    let got = p.query("SELECT id, zone, channel, coupon, _source_line FROM bronze.t ORDER BY id");
    assert_eq!(got.len(), expected.len());
    assert_eq!(got, expected);
    // An independent reader agrees: rows written before a lane met a new key and after it
    // are one table (PyIceberg maps the columns by field id).
    let script = format!(
        r#"
import json
from pyiceberg.catalog.sql import SqlCatalog
c = SqlCatalog("default", uri="sqlite:///{root}/warehouse/catalog.db", warehouse="file://{root}/warehouse")
t = c.load_table("bronze.t").scan(selected_fields=("id", "zone", "channel", "coupon", "_source_line")).to_arrow().sort_by("id")
print(json.dumps([[None if v is None else str(v) for v in row.values()] for row in t.to_pylist()]))
"#,
        root = p.path().display()
    );
    let by_pyiceberg: Vec<Vec<Option<String>>> =
        serde_json::from_slice(&crate::common::python(&script)).unwrap();
    assert_eq!(by_pyiceberg, expected);
    assert_eq!(
        p.query("SELECT source_file, line FROM bronze.t__quarantine ORDER BY source_file"),
        vec![
            vec![cell("data/f2.jsonl"), cell("7")],
            vec![cell("data/f6.jsonl"), cell("400")],
        ]
    );
    let orphans = p.json(&["orphans", "--older-than", "0"]);
    assert_eq!(orphans["orphans"], serde_json::json!([]), "{orphans}");
}
