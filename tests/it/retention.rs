//! Snapshot retention: with `[retention] max_snapshots`, old snapshots are expired at commit
//! (in batches), the file ledger of expired snapshots survives in a checkpoint (no file is
//! ever loaded twice, a changed old file is still caught), expired snapshots cannot be read
//! any more, and the files only they used are orphans that can be deleted safely.

use crate::common::Project;

const SPEC: &str = "[pipeline]\nname = \"events\"\n\n[retention]\nmax_snapshots = 8\n\n\
    [[ingest]]\ntable = \"bronze.events\"\nformat = \"csv\"\npath = \"landing/*.csv\"\n\
    schema = { id = \"long\", amount = \"long\" }\n\n\
    [[transform]]\ntable = \"gold.totals\"\nsql = \"sql/totals.sql\"\n";

fn file(step: u64) -> String {
    format!(
        "id,amount\n{step},{}\n{},{}\n",
        step * 2,
        step + 1000,
        step * 3
    )
}

#[test]
fn old_snapshots_expire_and_the_ledger_survives_them() {
    let p = Project::empty();
    p.write("pipelines/events.toml", SPEC);
    p.write(
        "sql/totals.sql",
        "SELECT count(*) AS n, sum(amount) AS total FROM bronze.events\n",
    );
    let mut first_snapshot = 0;
    let mut total = 0;
    for step in 0..30u64 {
        p.write(&format!("landing/e_{step:02}.csv"), &file(step));
        total += step * 5;
        p.json(&["run", "events"]);
        if step == 0 {
            first_snapshot = p.current_snapshot("bronze.events");
        }
        let snapshots = p.json(&["describe", "bronze.events"])["snapshots"]
            .as_u64()
            .unwrap();
        assert!(snapshots <= 10, "{snapshots} snapshots after run {step}");
    }
    for table in ["bronze.events", "gold.totals"] {
        let snapshots = p.json(&["describe", table])["snapshots"].as_u64().unwrap();
        assert!((8..=10).contains(&snapshots), "{table}: {snapshots}");
    }
    let expected = vec![vec![Some("60".to_string()), Some(total.to_string())]];
    assert_eq!(p.query("SELECT n, total FROM gold.totals"), expected);

    // Every file is still known as loaded: nothing is loaded again.
    let again = p.json(&["run", "events"]);
    assert_eq!(again["jobs"][0]["already_loaded"], 30);
    assert_eq!(again["jobs"][0]["rows_in"], 0);
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.events")[0][0].as_deref(),
        Some("60")
    );
    // A changed file whose loading snapshot expired long ago is still caught.
    p.write("landing/e_00.csv", "id,amount\n0,999\n");
    let (_, err) = p.fails(&["run", "events"]);
    assert!(
        err.contains("landing/e_00.csv: changed since bronze.events loaded it in snapshot"),
        "{err}"
    );
    p.write("landing/e_00.csv", &file(0));

    // An expired snapshot cannot be read any more.
    let (_, err) = p.fails(&[
        "query",
        "SELECT count(*) FROM bronze.events",
        "--as-of",
        &first_snapshot.to_string(),
    ]);
    assert!(
        err.contains("no table in the query has that snapshot"),
        "{err}"
    );

    // What only expired snapshots used is orphaned; deleting it changes nothing readable, and
    // the ledger checkpoint is not among it.
    let orphans = p.json(&["orphans", "--older-than", "0"])["orphans"]
        .as_array()
        .unwrap()
        .len();
    assert!(orphans > 0);
    p.json(&["orphans", "--older-than", "0", "--delete", "--force"]);
    assert_eq!(p.query("SELECT n, total FROM gold.totals"), expected);
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["bronze.events"][reader]["rows"], 60, "{reader}");
        assert_eq!(
            readers["bronze.events"][reader]["sums"]["amount"],
            total.to_string(),
            "{reader}"
        );
    }
    p.write("landing/e_99.csv", &file(99));
    let last = p.json(&["run", "events"]);
    assert_eq!(last["jobs"][0]["rows_out"], 2);
    assert_eq!(last["jobs"][0]["already_loaded"], 30);
    // The last run can still be undone.
    p.json(&["rollback", last["run_id"].as_str().unwrap()]);
    assert_eq!(p.query("SELECT n, total FROM gold.totals"), expected);
}
