//! Run records and rollback: every published run leaves a record (written in the same catalog
//! transaction as its tables), and `pipeline rollback RUN` puts every table the run changed
//! back on its previous snapshot, atomically, or refuses and changes nothing.

use crate::common::Project;

fn late_file(p: &Project) {
    p.write(
        "sample-data/retail/orders/pos_2026-04-02.csv",
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n3001,1,2026-04-01 10:00:00,Tea,4,5.00,shipped\n",
    );
}

fn snapshots(p: &Project, tables: &[String]) -> Vec<i64> {
    tables.iter().map(|t| p.current_snapshot(t)).collect()
}

#[test]
fn rollback_restores_every_table_of_the_run_to_its_previous_snapshot() {
    let p = Project::retail();
    let first = p.json(&["run", "retail"]);
    let tables = p.tables();
    let after_first = snapshots(&p, &tables);
    let revenue_first = p.query("SELECT * FROM gold.monthly_revenue ORDER BY month");
    late_file(&p);
    let second = p.json(&["run", "retail"]);

    // Both runs are recorded, with the snapshots each table moved between.
    let runs = p.json(&["runs"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["run_id"], first["run_id"]);
    assert_eq!(runs[1]["run_id"], second["run_id"]);
    // The second run changed the POS bronze table (one new file, no bad records) and every
    // table downstream of it; customers and web orders had nothing new, so silver.customers is
    // up to date and not in the record.
    let info = p.json(&["run-info", second["run_id"].as_str().unwrap()]);
    let recorded: Vec<&str> = info["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert_eq!(
        recorded,
        vec![
            "bronze.pos_orders",
            "gold.customer_metrics",
            "gold.fact_orders",
            "gold.monthly_revenue",
            "gold.repeat_buyers",
            "silver.orders"
        ]
    );
    for t in info["tables"].as_array().unwrap() {
        let name = t["table"].as_str().unwrap();
        let i = tables.iter().position(|x| x == name).unwrap();
        assert_eq!(
            crate::common::id(&t["snapshot_before"]),
            Some(after_first[i]),
            "{name}"
        );
        assert_eq!(
            crate::common::id(&t["snapshot_after"]),
            Some(p.current_snapshot(name))
        );
    }
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0].as_deref(),
        Some("40")
    );

    // Undo the second run: every table is back where the first run left it.
    let undo = p.json(&["rollback", second["run_id"].as_str().unwrap()]);
    assert_eq!(undo["kind"], "rollback");
    assert_eq!(undo["rolls_back"], second["run_id"]);
    assert_eq!(snapshots(&p, &tables), after_first);
    assert_eq!(
        p.query("SELECT * FROM gold.monthly_revenue ORDER BY month"),
        revenue_first
    );
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0].as_deref(),
        Some("39")
    );
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["silver.orders"][reader]["rows"], 39, "{reader}");
        assert_eq!(readers["bronze.pos_orders"][reader]["rows"], 38, "{reader}");
    }
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), 3);
}

#[test]
fn rollback_is_refused_when_a_later_run_moved_the_tables() {
    let p = Project::retail();
    let first = p.json(&["run", "retail"]);
    late_file(&p);
    p.json(&["run", "retail"]);
    let tables = p.tables();
    let before = snapshots(&p, &tables);
    let (code, stderr) = p.fails(&["rollback", first["run_id"].as_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: commit conflict on table bronze.pos_orders: run "),
        "{stderr}"
    );
    assert!(
        stderr.contains("roll back the later runs first"),
        "{stderr}"
    );
    assert_eq!(
        snapshots(&p, &tables),
        before,
        "a refused rollback changes nothing"
    );
    assert_eq!(p.json(&["runs"]).as_array().unwrap().len(), 2);
}

#[test]
fn rollback_of_a_first_run_drops_the_tables_it_created() {
    let p = Project::retail();
    let first = p.json(&["run", "retail"]);
    let undo = p.json(&["rollback", first["run_id"].as_str().unwrap()]);
    assert!(undo["tables"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["operation"] == "drop"));
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
    // The catalog is usable again: a new run recreates everything.
    p.json(&["run", "retail"]);
    assert_eq!(p.tables().len(), 12);
}

#[test]
fn unknown_run_is_a_clear_error() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    let (code, stderr) = p.fails(&["run-info", "nope"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "error: no run `nope` in this catalog; `pipeline runs` lists them"
    );
}

#[test]
fn every_record_says_who_ran_it_where_why_and_the_exact_command_that_undoes_it() {
    let p = Project::retail();
    let run = p.json(&["run", "retail", "--reason", "nightly load, ticket OPS-12"]);
    let run_id = run["run_id"].as_str().unwrap();
    let info = p.json(&["run-info", run_id]);
    // The system's name for this uid (`$USER` may be unset, as here and under cron).
    let user = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let user = String::from_utf8_lossy(&user.stdout).trim().to_string();
    assert!(!user.is_empty());
    assert_eq!(info["user"], user.as_str());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(info["host"], host.as_str());
    assert_eq!(info["reason"], "nightly load, ticket OPS-12");
    let command: Vec<&str> = info["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(command[0], "pipeline");
    assert!(
        command.ends_with(&[
            "run",
            "retail",
            "--reason",
            "nightly load, ticket OPS-12",
            "--json"
        ]),
        "{command:?}"
    );
    let undo = info["undo"].as_str().unwrap().to_string();
    assert_eq!(
        undo,
        format!("pipeline rollback {run_id} --pipeline retail")
    );

    // The text forms show the same.
    let text = String::from_utf8_lossy(&p.run(&["run-info", run_id]).stdout).to_string();
    assert!(
        text.contains("reason:       nightly load, ticket OPS-12"),
        "{text}"
    );
    assert!(
        text.contains(&format!("by:           {user} on {host}")),
        "{text}"
    );
    assert!(text.contains(&format!("undo with:    {undo}")), "{text}");
    let list = String::from_utf8_lossy(&p.run(&["runs"]).stdout).to_string();
    assert!(list.contains("nightly load, ticket OPS-12"), "{list}");

    // The undo command works as recorded (with its own reason), and is itself recorded.
    let mut args: Vec<&str> = undo.split(' ').skip(1).collect();
    args.extend(["--reason", "bad load"]);
    let rollback = p.json(&args);
    assert_eq!(rollback["rolls_back"], run_id);
    assert_eq!(rollback["reason"], "bad load");
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
    let undo_of_rollback = rollback["undo"].as_str().unwrap();
    assert!(
        undo_of_rollback.starts_with("pipeline rollback ")
            && undo_of_rollback.ends_with(" --pipeline retail")
    );
}
