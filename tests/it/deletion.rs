//! One identity for a pipeline's lock, one path for deleting files (issue 26): a renamed spec
//! locks what it always locked, a copied project never deletes the original's files, a
//! rollback that drops tables says so and its undo registers them back, and what a killed
//! maintenance leaves is removed by the next one. Expected values are the sample's own row
//! counts (tests/expected/retail.json, computed by an independent reader of the raw files).

use std::path::Path;

use serde_json::Value;

use crate::common::{copy_tree, expected_retail, Project};

const HEADER: &str = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n";

/// A late point-of-sale file with one order.
fn late_order(p: &Project, name: &str, id: u32) {
    p.write(
        &format!("sample-data/retail/orders/{name}.csv"),
        &format!("{HEADER}{id},1,2026-03-20 10:00:00,Mug,1,9.50,shipped\n"),
    );
}

fn count(p: &Project, table: &str) -> u64 {
    p.query(&format!("SELECT count(*) FROM {table}"))[0][0]
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Every table intact, by `pipeline check`.
fn intact(p: &Project) {
    let checked = p.json(&["check"]);
    for t in checked.as_array().unwrap() {
        assert!(t["problems"].as_array().unwrap().is_empty(), "{t}");
    }
}

/// Every file under the warehouse, with its size.
fn warehouse_files(p: &Project) -> Vec<(String, u64)> {
    fn walk(dir: &Path, out: &mut Vec<(String, u64)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push((path.display().to_string(), path.metadata().unwrap().len()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&p.path().join("warehouse"), &mut out);
    out.sort();
    out
}

/// Every file under the warehouse made two hours old (what a killed command left is as old as
/// the snapshots that held it; here it is aged by hand).
fn age_two_hours(p: &Project) {
    let aged = std::process::Command::new("find")
        .arg(p.path().join("warehouse"))
        .args([
            "-type",
            "f",
            "-exec",
            "touch",
            "-d",
            "2 hours ago",
            "{}",
            "+",
        ])
        .status()
        .unwrap();
    assert!(aged.success());
}

#[test]
fn a_renamed_spec_locks_by_its_pipeline_name_so_orphans_and_maintain_wait_for_its_run() {
    let p = Project::retail();
    std::fs::rename(
        p.path().join("pipelines/retail.toml"),
        p.path().join("pipelines/nightly.toml"),
    )
    .unwrap();
    p.json(&["run", "nightly"]);
    late_order(&p, "pos_2026-03-21", 9001);
    let gate = p.path().join("go");
    let run = p.start_paused(&["run", "nightly"], "staged", Some(gate));
    // The run of `nightly.toml` holds the lock of pipeline `retail`: commands that delete
    // files wait for it (here: refuse at once), whatever the spec file is called.
    let (code, message) = p.fails(&[
        "orphans",
        "--delete",
        "--force",
        "--older-than",
        "0",
        "--no-wait",
    ]);
    assert_eq!(code, 4, "{message}");
    assert!(
        message.contains("pipeline retail is already running on the embedded catalog"),
        "{message}"
    );
    let (code, message) = p.fails(&["maintain", "nightly", "--no-wait"]);
    assert_eq!(code, 4, "{message}");
    let (ok, log) = run.release();
    assert!(ok, "{log}");
    intact(&p);
    let orders = expected_retail()["counts"]["silver.orders"]
        .as_u64()
        .unwrap();
    assert_eq!(count(&p, "silver.orders"), orders + 1);
    // With the run done, orphans finds nothing of it to delete.
    let done = p.json(&["orphans", "--delete", "--force", "--older-than", "0"]);
    assert_eq!(done["orphans"], serde_json::json!([]), "{done}");

    // Records and undo commands name the pipeline; `--pipeline retail` finds nightly.toml.
    let runs = p.json(&["runs"]);
    let last = runs.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["pipeline"], "retail");
    let undo = last["undo"].as_str().unwrap();
    assert!(undo.contains("--pipeline retail"), "{undo}");
    let args: Vec<&str> = undo.split_whitespace().skip(1).collect();
    p.json(&args);
    assert_eq!(count(&p, "silver.orders"), orders);
    // `pipeline sql` locks and records by the pipeline's name too.
    let change = p.json(&[
        "sql",
        "DELETE FROM silver.orders WHERE order_id = 1001",
        "--reason",
        "test",
    ]);
    assert_eq!(change["record"]["pipeline"], "retail", "{change}");
}

#[test]
fn a_copied_project_never_deletes_the_originals_files_and_says_why() {
    let original = Project::retail();
    original.json(&["run", "retail"]);
    let copy = Project::empty();
    copy_tree(original.path(), copy.path());
    // The original goes on: its newer snapshots are unreferenced from the copy's catalog.
    late_order(&original, "pos_2026-03-21", 9001);
    original.json(&["run", "retail"]);
    late_order(&original, "pos_2026-03-22", 9002);
    original.json(&["run", "retail"]);
    let files = warehouse_files(&original);

    let (code, message) = copy.fails(&["orphans", "--delete", "--force", "--older-than", "0"]);
    assert_eq!(code, 5, "{message}");
    assert!(message.contains("outside its warehouse"), "{message}");
    assert!(message.contains("copied"), "{message}");
    let (code, message) = copy.fails(&["check"]);
    assert_eq!(code, 5, "{message}");
    assert!(
        message.contains("outside this catalog's warehouse"),
        "{message}"
    );
    for command in [vec!["run", "retail"], vec!["maintain", "retail"]] {
        let (code, message) = copy.fails(&command);
        assert_eq!(code, 2, "{command:?}: {message}");
        assert!(
            message.contains("outside its warehouse"),
            "{command:?}: {message}"
        );
        assert!(
            message.contains("nothing was changed"),
            "{command:?}: {message}"
        );
    }
    // Not one file of the original was touched; it is intact and reads as it did.
    assert_eq!(warehouse_files(&original), files);
    intact(&original);
    let orders = expected_retail()["counts"]["silver.orders"]
        .as_u64()
        .unwrap();
    assert_eq!(count(&original, "silver.orders"), orders + 2);
    let readers = original.independent_readers();
    assert_eq!(readers["silver.orders"]["pyiceberg"]["rows"], orders + 2);
}

#[test]
fn rolling_back_a_first_run_names_what_it_drops_and_its_undo_registers_them_back() {
    let p = Project::retail();
    let run = p.json(&["run", "retail"]);
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let tables = p.tables();
    let before: Vec<(String, u64)> = tables.iter().map(|t| (t.clone(), count(&p, t))).collect();

    // --plan names every table the rollback would drop, and changes nothing.
    let plan = p.json(&["rollback", &run_id, "--plan"]);
    assert_eq!(plan["planned_only"], true);
    let planned: Vec<&Value> = plan["tables"].as_array().unwrap().iter().collect();
    assert_eq!(planned.len(), tables.len(), "{plan}");
    assert!(planned.iter().all(|t| t["action"] == "drop"), "{plan}");
    assert_eq!(p.tables(), tables);

    // The rollback says what it drops before it does.
    let out = p.run(&["rollback", &run_id, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the rollback drops them"), "{stderr}");
    assert!(stderr.contains("gold.customer_metrics"), "{stderr}");
    let rollback: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p.tables(), Vec::<String>::new());

    // The dropped tables' files are kept for the undo: orphans deletes none of them.
    let done = p.json(&["orphans", "--delete", "--force", "--older-than", "0"]);
    assert_eq!(done["orphans"], serde_json::json!([]), "{done}");

    // The receipt's undo registers every table back as it was.
    let undo = p.json(&["rollback", rollback["run_id"].as_str().unwrap()]);
    assert_eq!(undo["kind"], "rollback");
    let after: Vec<(String, u64)> = p
        .tables()
        .iter()
        .map(|t| (t.clone(), count(&p, t)))
        .collect();
    assert_eq!(after, before);
    intact(&p);
    let readers = p.independent_readers();
    let orders = expected_retail()["counts"]["silver.orders"].clone();
    assert_eq!(readers["silver.orders"]["pyiceberg"]["rows"], orders);
    assert_eq!(readers["silver.orders"]["duckdb"]["rows"], orders);
    // And the next run works on them as on any table.
    p.json(&["run", "retail"]);
    intact(&p);
}

#[test]
fn what_a_killed_maintenance_leaves_the_next_maintenance_removes() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &format!(
            "{spec}\n[maintenance]\nafter_run = false\nexpire_older_than = \"0s\"\nkeep_runs = 0\n"
        ),
    );
    p.json(&["run", "retail"]);
    for (i, name) in ["pos_2026-03-21", "pos_2026-03-22", "pos_2026-03-23"]
        .iter()
        .enumerate()
    {
        late_order(&p, name, 9001 + i as u32);
        p.json(&["run", "retail"]);
    }
    // Killed after its expiry was published, before it deleted what the expiry freed.
    p.start_paused(&["maintain", "retail"], "maintain-published", None)
        .kill();
    let left = p.json(&["orphans", "--older-than", "0"]);
    let left = left["orphans"].as_array().unwrap().len() as u64;
    assert!(left > 0, "the killed maintenance left files");
    age_two_hours(&p);
    let done = p.json(&["maintain", "retail"]);
    let removed: u64 = done["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["unreferenced_deleted"].as_u64().unwrap())
        .sum();
    assert_eq!(removed, left, "{done}");
    let after = p.json(&["orphans", "--older-than", "0"]);
    assert_eq!(after["orphans"], serde_json::json!([]), "{after}");
    intact(&p);
    let orders = expected_retail()["counts"]["silver.orders"]
        .as_u64()
        .unwrap();
    assert_eq!(count(&p, "silver.orders"), orders + 3);
}

#[test]
fn another_writers_table_links_and_a_dotted_project_path_never_lose_a_file() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // PyIceberg writes a table of its own into the catalog, its files named `file:///…`.
    let warehouse = p.path().join("warehouse");
    let out = std::process::Command::new("python3")
        .arg(crate::common::repo().join("tests/interop/write_embedded.py"))
        .arg(warehouse.join("catalog.db"))
        .arg(&warehouse)
        .arg("default")
        .arg("bronze.other_tool")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    let theirs: Vec<String> = written["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(theirs.iter().all(|f| f.starts_with("file://")), "{written}");
    // A link inside a table folder to a file outside the warehouse, and one to a folder.
    let outside = p.path().join("keep.parquet");
    std::fs::write(&outside, b"not ours").unwrap();
    let data = warehouse.join("silver/orders/data");
    std::os::unix::fs::symlink(&outside, data.join("linked.parquet")).unwrap();
    std::fs::create_dir_all(p.path().join("elsewhere")).unwrap();
    std::fs::write(p.path().join("elsewhere/x.parquet"), b"not ours").unwrap();
    std::os::unix::fs::symlink(p.path().join("elsewhere"), data.join("linked-folder")).unwrap();
    age_two_hours(&p);

    // The project named through `..`: the same warehouse, not "outside" it.
    let dotted = p.path().join("sample-data/..");
    let by_dots = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pipeline"))
            .arg("--project")
            .arg(&dotted)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    by_dots(&["check", "--json"]);
    by_dots(&["maintain", "retail", "--json"]);
    by_dots(&[
        "orphans",
        "--delete",
        "--force",
        "--older-than",
        "0",
        "--json",
    ]);
    p.json(&["orphans", "--delete", "--force", "--older-than", "0"]);

    for file in &theirs {
        let path = file.trim_start_matches("file://");
        assert!(Path::new(path).exists(), "{path} was deleted");
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"not ours");
    assert!(p.path().join("elsewhere/x.parquet").exists());
    assert!(data.join("linked.parquet").symlink_metadata().is_ok());
    intact(&p);
    let readers = p.independent_readers();
    assert_eq!(readers["bronze.other_tool"]["pyiceberg"]["rows"], 6);
    assert_eq!(readers["bronze.other_tool"]["duckdb"]["rows"], 6);
}
