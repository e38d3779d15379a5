//! A table-by-table publish (S3 Tables; REST servers without multi-table commits) that another command resolves while its publisher is
//! still alive, only slow: the publisher set its intent and froze before moving any table;
//! meanwhile S3 Tables' own maintenance moved one of its tables, and a command that found the
//! intent pending rolled it back. When the publisher wakes, its late move must not publish a
//! table with no record and no intent: the rollback fenced the tables still at their base, so
//! the move fails its compare-and-set (on REST, whose compare-and-set pins `main` only, the
//! publisher reads its intent again before each move), and it starts over on what is there
//! now.

use std::process::Command;

use serde_json::Value;

use crate::common::Project;
use crate::remote::{moto, table_bucket, Rustberg, KEY, REGION, SECRET};

/// S3 Tables' maintenance, as seen by the engine: `table` moved to a new metadata file.
fn maintained_by_s3tables(arn: &str, table: &str) -> String {
    let (ns, name) = table.split_once('.').unwrap();
    let out = Command::new("python3")
        .arg(crate::common::repo().join("tests/interop/move_s3table.py"))
        .args([arn, ns, name])
        .env("S3_ENDPOINT", moto())
        .env("AWS_ACCESS_KEY_ID", KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", REGION)
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Another tool's metadata-only commit to `table` of the REST catalog at `uri`.
fn touched_on_rest(uri: &str, table: &str) {
    let out = Command::new("python3")
        .arg(crate::common::repo().join("tests/interop/touch_rest.py"))
        .args([uri, table])
        .env("S3_ENDPOINT", moto())
        .env("AWS_ACCESS_KEY_ID", KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", REGION)
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn on_host(p: &mut Project, dir: &tempfile::TempDir) {
    p.env.retain(|(k, _)| k != "TMPDIR");
    p.env
        .push(("TMPDIR".into(), dir.path().display().to_string()));
}

fn metadata_location(p: &Project, table: &str) -> String {
    p.json(&["describe", table])["metadata_location"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Both days are in `bronze.t` once (2 rows, 7 + 5) and summed in `silver.s`.
fn both_days_loaded_once(p: &Project) {
    assert_eq!(
        p.query("SELECT count(*), sum(n) FROM bronze.t"),
        [[Some("2".into()), Some("12".into())]]
    );
    assert_eq!(
        p.query("SELECT days, total FROM silver.s"),
        [[Some("2".into()), Some("12".into())]]
    );
}

/// Pipeline `p`: `data/*.csv` appended to `bronze.t`, summed into `silver.s`; one day loaded.
fn loaded() -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        "[pipeline]\nname = \"p\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\n\
         path = \"data/*.csv\"\nschema = { day = \"date\", n = \"long\" }\n\n\
         [[transform]]\ntable = \"silver.s\"\nsql = \"sql/s.sql\"\n",
    );
    p.write(
        "sql/s.sql",
        "SELECT count(*) AS days, sum(n) AS total FROM bronze.t\n",
    );
    p.write("data/2026-03-01.csv", "day,n\n2026-03-01,7\n");
    p
}

#[test]
fn on_s3tables_a_late_move_of_a_publish_rolled_back_meanwhile_publishes_nothing_unrecorded() {
    let arn = table_bucket();
    let p = loaded().on_s3tables_bucket(&arn);
    late_move(p, || drop(maintained_by_s3tables(&arn, "silver.s")), true);
}

#[test]
fn on_rest_table_by_table_a_late_move_of_a_publish_rolled_back_meanwhile_publishes_nothing_unrecorded(
) {
    let server = Rustberg::start();
    let p = loaded().on_rest(&server, false);
    let uri = server.uri.clone();
    late_move(p, move || touched_on_rest(&uri, "silver.s"), false);
}

/// A stalls with its intent recorded; `other_writer` moves silver.s; a command on another host
/// rolls A's publish back (fencing bronze.t where the catalog can: `fenced`); A wakes.
fn late_move(mut p: Project, other_writer: impl FnOnce(), fenced: bool) {
    p.json(&["run", "p"]);
    p.write("data/2026-03-02.csv", "day,n\n2026-03-02,5\n");
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    // A records its intent (bronze.t, then silver.s) and stalls before moving anything.
    on_host(&mut p, &dir_a);
    let bronze_base = metadata_location(&p, "bronze.t");
    let a = p.start_paused_piped(&["run", "p", "--json"], "intent-set", p.path().join("go-a"));
    // S3 Tables' maintenance moves silver.s; a command on another host finds A's intent
    // pending with a table elsewhere, and rolls it back.
    other_writer();
    on_host(&mut p, &dir_b);
    let out = p.run(&["maintain", "p"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("rolled back the half-done publish"), "{log}");
    // bronze.t, still at A's base, was fenced: same rows, another metadata file.
    if fenced {
        assert_ne!(metadata_location(&p, "bronze.t"), bronze_base);
    }
    assert_eq!(p.query("SELECT sum(n) FROM bronze.t"), [[Some("7".into())]]);

    // A wakes: its move of bronze.t fails, it starts over on what is there now and publishes
    // with its record; day 2 is loaded once.
    let (ok, log, stdout) = a.release_with_stdout();
    assert!(ok, "{log}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["published"], true, "{stdout}");
    both_days_loaded_once(&p);
    let runs = p.json(&["runs"]);
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&report["run_id"].as_str().unwrap()), "{runs}");
    // Every table's current snapshot belongs to a recorded run or to the maintenance.
    let check = p.run(&["check"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

/// Every `*.metadata.json` file under `folder` that no table of `tables` names (as its
/// current metadata or in its metadata log).
fn unnamed_metadata_files(p: &Project, folder: &std::path::Path, tables: &[&str]) -> Vec<String> {
    let plain = |l: &str| l.trim_start_matches("file://").to_string();
    let mut named = std::collections::HashSet::new();
    for table in tables {
        let current = plain(&metadata_location(p, table));
        let metadata: Value =
            serde_json::from_str(&std::fs::read_to_string(&current).unwrap()).unwrap();
        for entry in metadata["metadata-log"].as_array().into_iter().flatten() {
            named.insert(plain(entry["metadata-file"].as_str().unwrap()));
        }
        named.insert(current);
    }
    let mut unnamed = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = path.display().to_string();
            if path.is_dir() {
                folders.push(path);
            } else if text.ends_with(".metadata.json") && !named.contains(&text) {
                unnamed.push(text);
            }
        }
    }
    unnamed
}

/// Issue 43, item 8: a REST server takes changes, not files, and writes its own metadata
/// file. Publishing table by table writes none of its own (nothing that would pile up
/// unnamed), and a publish killed half way is still completed by the next command, from the
/// changes its intent holds.
#[test]
fn on_rest_table_by_table_no_metadata_file_is_written_that_the_server_does_not_use() {
    let server = Rustberg::start_on_files();
    let p = loaded().on_rest_files_with(&server, "transactions = false\n");
    p.json(&["run", "p"]);
    p.write("data/2026-03-02.csv", "day,n\n2026-03-02,5\n");
    // Killed after bronze.t moved, before silver.s did.
    p.start_paused(&["run", "p"], "publishing", None).kill();
    assert_eq!(
        p.query("SELECT sum(n) FROM bronze.t"),
        [[Some("12".into())]]
    );
    assert_eq!(
        p.query("SELECT days, total FROM silver.s"),
        [[Some("1".into()), Some("7".into())]]
    );

    let out = p.run(&["run", "p"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("completed the publish of run") && log.contains("silver.s"),
        "{log}"
    );
    both_days_loaded_once(&p);
    let folder = std::path::PathBuf::from(server.warehouse.trim_start_matches("file://"));
    let unnamed =
        unnamed_metadata_files(&p, &folder, &["bronze.t", "silver.s", "pipeline_meta.runs"]);
    assert!(
        unnamed.is_empty(),
        "metadata files no table names: {unnamed:#?}"
    );
}
