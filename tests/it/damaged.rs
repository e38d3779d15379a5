//! A lake with a damaged table, and a disk that refuses writes: the damage is named (table and
//! file), everything else goes on working, `pipeline check` finds it, and the way back is said.
//! A refused write fails at once, naming the file, and publishes nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Project;

/// The current metadata file of `table`, from `pipeline describe`.
fn metadata_file(p: &Project, table: &str) -> PathBuf {
    PathBuf::from(
        p.json(&["describe", table])["metadata_location"]
            .as_str()
            .unwrap(),
    )
}

/// The manifest list of `table`'s current snapshot, read from its metadata file.
fn manifest_list(p: &Project, table: &str) -> PathBuf {
    let metadata: serde_json::Value =
        serde_json::from_slice(&std::fs::read(metadata_file(p, table)).unwrap()).unwrap();
    let current = &metadata["current-snapshot-id"];
    let snapshot = metadata["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| &s["snapshot-id"] == current)
        .unwrap();
    PathBuf::from(snapshot["manifest-list"].as_str().unwrap())
}

fn cut(path: &Path, bytes: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(bytes)
        .unwrap();
}

#[test]
fn a_table_with_an_unreadable_metadata_file_is_named_and_the_rest_works() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // A second pipeline on the same catalog that never reads gold.repeat_buyers.
    p.write(
        "pipelines/extra.toml",
        "[pipeline]\nname = \"extra\"\n\n[[ingest]]\ntable = \"bronze.extra\"\nformat = \"csv\"\npath = \"extra/*.csv\"\nschema = { id = \"long\" }\n",
    );
    p.write("extra/a.csv", "id\n1\n2\n");
    let damaged = metadata_file(&p, "gold.repeat_buyers");
    cut(&damaged, 100);
    let shown = damaged.display().to_string();

    let out = p.run(&["tables", "--pipeline", "retail", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let tables: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tables = tables.as_array().unwrap();
    assert_eq!(tables.len(), 12);
    let bad = tables
        .iter()
        .find(|t| t["table"] == "gold.repeat_buyers")
        .unwrap();
    assert!(bad["damaged"].as_str().unwrap().contains(&shown), "{bad}");
    let good = tables
        .iter()
        .find(|t| t["table"] == "silver.orders")
        .unwrap();
    assert_eq!(good["rows"], 39);

    let (code, message) = p.fails(&["describe", "gold.repeat_buyers", "--pipeline", "retail"]);
    assert_eq!(code, 5);
    assert!(
        message.contains("table gold.repeat_buyers: its metadata file"),
        "{message}"
    );
    assert!(message.contains(&shown), "{message}");

    // Orphans of the other tables are still found; nothing under the damaged one is listed.
    let out = p.run(&[
        "orphans",
        "--older-than",
        "0",
        "--pipeline",
        "retail",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(5));
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["damaged"][0]["table"], "gold.repeat_buyers");
    assert!(found["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| !o["path"].as_str().unwrap().contains("repeat_buyers")));

    let out = p.run(&["check", "--pipeline", "retail", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let checked: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let damaged_tables: Vec<&str> = checked
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["problems"].as_array().unwrap().is_empty())
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert_eq!(damaged_tables, ["gold.repeat_buyers"]);

    // A run that does not read the damaged table runs.
    let report = p.json(&["run", "extra"]);
    assert_eq!(report["jobs"][0]["rows_out"], 2);
}

#[test]
fn a_snapshot_that_cannot_be_read_says_how_to_go_back() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p.write(
        "sample-data/retail/customers/customers_late.csv",
        "customer_id,name,email,country,updated_at\n9001,Late Comer,late@example.com,DE,2026-03-01 08:00:00\n",
    );
    let second = p.json(&["run", "retail"]);
    let run = second["run_id"].as_str().unwrap();
    let list = manifest_list(&p, "silver.customers");
    std::fs::remove_file(&list).unwrap();

    // Nothing changed since: the run reads nothing of the damaged snapshot.
    p.json(&["run", "retail"]);

    let out = p.run(&["check", "silver.customers"]);
    assert_eq!(out.status.code(), Some(5));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&list.display().to_string()), "{text}");
    assert!(text.contains("no such file"), "{text}");
    assert!(
        text.contains(&format!("`pipeline rollback {run}`")),
        "{text}"
    );

    // A full refresh cannot rewrite what it cannot read: it says how to recover.
    let (code, message) = p.fails(&["run", "retail", "--full-refresh"]);
    assert_eq!(code, 5, "{message}");
    assert!(
        message.contains("table silver.customers: its current snapshot"),
        "{message}"
    );
    assert!(
        message.contains(&format!("pipeline rollback {run}")),
        "{message}"
    );

    // Following the advice brings the lake back.
    p.json(&["rollback", run]);
    assert!(p.run(&["check"]).status.success());
    p.json(&["run", "retail", "--full-refresh"]);
    assert_eq!(
        p.query("SELECT count(*) FROM silver.customers WHERE customer_id = 9001"),
        vec![vec![Some("1".to_string())]]
    );
}

#[test]
fn a_data_file_cut_short_or_missing_is_named_by_its_whole_path() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let files = p.json(&["files", "silver.orders"]);
    let first = files[0]["path"].as_str().unwrap().to_string();
    let second = files[1]["path"].as_str().unwrap().to_string();
    let size = files[0]["bytes"].as_u64().unwrap();
    assert!(first.starts_with('/'), "{first}");
    cut(Path::new(&first), 200);
    std::fs::remove_file(&second).unwrap();

    let (code, message) = p.fails(&["query", "SELECT sum(amount) FROM silver.orders"]);
    assert_eq!(code, 5, "a file that cannot be read is damage: {message}");
    assert!(
        message.contains(&format!("{first}: cut short: the file has 200 bytes"))
            || message.contains(&format!("{second}: no such file")),
        "{message}"
    );
    assert!(message.contains("`pipeline check`"), "{message}");

    let out = p.run(&["check", "silver.orders", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let checked: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = checked[0]["problems"].as_array().unwrap();
    let find = |path: &str| {
        problems
            .iter()
            .find(|pr| pr["file"] == path)
            .unwrap_or_else(|| panic!("{path} not reported: {problems:?}"))["problem"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        find(&first),
        format!("200 bytes, the table's metadata records {size}")
    );
    assert_eq!(find(&second), "no such file");
    assert_eq!(problems.len(), 2);
}

/// Runs `pipeline ARGS` with the table folder `bronze` of the project's warehouse on a tiny
/// (or read-only) file system of its own, in a private mount namespace (gone with the
/// process); prints the command's output and then `exit=CODE`.
fn on_small_disk(p: &Project, options: &str, args: &str) -> (String, std::time::Duration) {
    let bronze = p.path().join("warehouse/bronze");
    std::fs::create_dir_all(&bronze).unwrap();
    let script = format!(
        "mount -t tmpfs -o {options} tmpfs '{}' && '{}' --project '{}' {args} 2>&1; echo \"exit=$?\"",
        bronze.display(),
        env!("CARGO_BIN_EXE_pipeline"),
        p.path().display()
    );
    let clock = std::time::Instant::now();
    let out = Command::new("unshare")
        .args(["--mount", "--map-root-user", "sh", "-c", &script])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("unshare (util-linux) runs the command in a private mount namespace");
    let elapsed = clock.elapsed();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (text, elapsed)
}

fn incompressible_project() -> Project {
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        "[pipeline]\nname = \"p\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = { id = \"long\", blob = \"string\" }\n",
    );
    // 20,000 rows of letters no compressor shrinks much: far more than 128 KiB of Parquet.
    let mut text = String::from("id,blob\n");
    let mut x: u64 = 42;
    for i in 0..20_000 {
        text.push_str(&format!("{i},"));
        for _ in 0..40 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push((b'a' + ((x >> 33) % 26) as u8) as char);
        }
        text.push('\n');
    }
    p.write("data/f.csv", &text);
    p
}

#[test]
fn a_full_disk_fails_at_once_naming_the_file_and_publishes_nothing() {
    let p = incompressible_project();
    let (out, elapsed) = on_small_disk(&p, "size=128k", "run p");
    assert!(out.contains("exit=1"), "{out}");
    let error: Vec<&str> = out.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(error.len(), 1, "{out}");
    let bronze = p
        .path()
        .join("warehouse/bronze/t/data")
        .display()
        .to_string();
    assert!(error[0].starts_with(&format!("error: {bronze}/")), "{out}");
    assert!(
        error[0].contains(": no space left on device; nothing was published (not retried"),
        "{out}"
    );
    // Not retried (a retry waits 1 s, then 2 s, then 4 s), and no backtrace.
    assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
    assert!(!out.contains("retry"), "{out}");
    assert!(!out.contains("stack backtrace"), "{out}");
    assert!(out.lines().count() <= 3, "{out}");
    // Nothing was published, and with room the same run loads everything.
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
    let report = p.json(&["run", "p"]);
    assert_eq!(report["jobs"][0]["rows_out"], 20_000);
}

#[test]
fn a_read_only_disk_fails_at_once_naming_the_path() {
    let p = incompressible_project();
    let (out, elapsed) = on_small_disk(&p, "ro", "run p");
    assert!(out.contains("exit=1"), "{out}");
    assert!(
        out.contains(": read-only file system; nothing was published"),
        "{out}"
    );
    assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
}

#[test]
fn a_damaged_catalog_database_or_a_missing_manifest_is_damage_exit_5() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    // A manifest of bronze.pos_orders deleted: the next append cannot carry it over.
    let list = p.json(&["files", "bronze.pos_orders"]);
    assert!(!list.as_array().unwrap().is_empty());
    let metadata = p.path().join("warehouse/bronze/pos_orders/metadata");
    let manifest = std::fs::read_dir(&metadata)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| {
            f.to_string_lossy().ends_with("-m1.avro") || f.to_string_lossy().ends_with("-m0.avro")
        })
        .unwrap();
    std::fs::remove_file(&manifest).unwrap();
    p.write(
        "sample-data/retail/orders/pos_2026-03-21.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n9001,1,2026-03-20 10:00:00,Mug,1,9.50,shipped\n",
    );
    let (code, message) = p.fails(&["run", "retail"]);
    assert_eq!(code, 5, "{message}");
    assert!(
        message.contains(&manifest.display().to_string()),
        "{message}"
    );

    // The catalog database overwritten with garbage: `check` says so, exit 5.
    let database = p.path().join("warehouse/catalog.db");
    let mut bytes = std::fs::read(&database).unwrap();
    for b in bytes.iter_mut().take(4096) {
        *b = 0x5a;
    }
    std::fs::write(&database, bytes).unwrap();
    let (code, message) = p.fails(&["check"]);
    assert_eq!(code, 5, "{message}");
    assert!(message.contains("catalog database"), "{message}");
    assert!(message.contains("is damaged"), "{message}");
}
