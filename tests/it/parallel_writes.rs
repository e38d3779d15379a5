//! Large transform results of partitioned tables are written by one writer per core, rows
//! hash-partitioned by the table's partitions (`PIPELINE_PARALLEL_WRITE_MIN_ROWS=0` makes the
//! sample large enough). The tables hold exactly the independent reference's rows, each
//! partition is still one file, and `drop` expectations send the same rows to quarantine.

use crate::common::{expected_retail, Project};

fn parallel(p: &mut Project) {
    p.env
        .push(("PIPELINE_PARALLEL_WRITE_MIN_ROWS".into(), "0".into()));
}

#[test]
fn parallel_writers_write_the_reference_rows_one_file_per_partition() {
    let mut p = Project::retail();
    parallel(&mut p);
    p.json(&["run", "retail"]);
    p.assert_retail_reference_rows();
    for table in ["silver.orders", "gold.fact_orders", "gold.monthly_revenue"] {
        let n = p.assert_one_file_per_partition(table);
        assert!(n > 1, "{table} has {n} partitions");
    }
}

#[test]
fn parallel_writers_quarantine_the_same_rows_as_one_writer() {
    let drop_cancelled = "\n[[expect]]\ntable = \"silver.orders\"\ncheck = \"accepted_values\"\n\
                          column = \"status\"\nvalues = [\"placed\", \"shipped\", \"delivered\"]\n\
                          action = \"drop\"\n";
    let mut runs = Vec::new();
    for parallel_writes in [false, true] {
        let mut p = Project::retail();
        if parallel_writes {
            parallel(&mut p);
        }
        p.append_to_retail_spec(drop_cancelled);
        let report = p.json(&["run", "retail"]);
        let dropped = report["quality"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["action"] == "drop")
            .map(|q| q["violations"].as_u64().unwrap());
        let kept = p.query("SELECT count(*), sum(amount) FROM silver.orders");
        let quarantined = p.query(
            "SELECT order_id, status, _expectation FROM silver.orders__quarantine ORDER BY order_id",
        );
        runs.push((dropped, kept, quarantined));
    }
    // Cancelled orders (status `cancelled`) are the ones outside the accepted values.
    let cancelled = expected_retail()["tables"]["gold.fact_orders"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.as_array().unwrap().last().unwrap() == "cancelled")
        .count() as u64;
    assert!(cancelled > 0);
    assert_eq!(runs[0].0, Some(cancelled));
    assert_eq!(runs[0].2.len() as u64, cancelled);
    assert_eq!(runs[1], runs[0]);
}
