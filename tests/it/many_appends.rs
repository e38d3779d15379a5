//! Many small appends: merge-append keeps the manifest list short (so commits and readers'
//! scan planning do not slow down with the number of appends), and every row stays readable
//! by the engine, PyIceberg and DuckDB.

use crate::common::Project;

#[test]
fn small_manifests_are_merged_after_a_hundred_appends() {
    let p = Project::empty();
    p.write(
        "pipelines/events.toml",
        "[pipeline]\nname = \"events\"\n\n[[ingest]]\ntable = \"bronze.events\"\nformat = \"csv\"\n\
         path = \"landing/*.csv\"\nschema = { id = \"long\", amount = \"long\" }\n\n\
         [maintenance]\nafter_run = false\n",
    );
    let mut expected_sum = 0;
    for step in 0..105 {
        p.write(
            &format!("landing/e_{step:03}.csv"),
            &format!("id,amount\n{step},{}\n", step * 3),
        );
        expected_sum += step * 3;
        let out = p.run(&["run", "events"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let info = p.json(&["describe", "bronze.events"]);
        let manifests = info["manifests"].as_u64().unwrap();
        if step < 100 {
            // One manifest per append until a hundred small ones have accumulated.
            assert_eq!(manifests, step + 1, "after append {step}");
        } else {
            // Then the hundred are one merged manifest, plus one per later append.
            assert_eq!(manifests, step - 98, "after append {step}");
        }
    }
    let info = p.json(&["describe", "bronze.events"]);
    assert_eq!(info["snapshots"], 105);
    assert_eq!(info["data_files"], 105);
    assert_eq!(
        p.query("SELECT count(*), sum(amount) FROM bronze.events"),
        vec![vec![Some("105".into()), Some(expected_sum.to_string())]]
    );
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(readers["bronze.events"][reader]["rows"], 105, "{reader}");
        assert_eq!(
            readers["bronze.events"][reader]["sums"]["amount"],
            expected_sum.to_string(),
            "{reader}"
        );
    }
    // Time travel to before the merge still reads the old manifests.
    let history = p.json(&["history", "bronze.events"]);
    let fiftieth = crate::common::id(&history[49]["snapshot_id"]).unwrap();
    assert_eq!(
        p.query_as_of("SELECT count(*) FROM bronze.events", fiftieth)[0][0].as_deref(),
        Some("50")
    );
}
