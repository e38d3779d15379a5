//! The printers of `pipeline plan` (schema changes, then what the next run would do) and
//! `pipeline run --plan`: per job, whether it runs and why, the files it would load and what it
//! would read; and of `pipeline test`, the model tests.

use std::io::Write;

use super::impact_render::render_text;
use super::print::json;
use crate::output::Rows;
use crate::plan::{PlannedJob, SchemaPlan, TestOutcome};

/// `pipeline run --plan`: the plan, as text or JSON.
pub fn run_plan(planned: &[PlannedJob], as_json: bool) {
    if as_json {
        return json(&planned);
    }
    let _ = write!(
        crate::secrets::stdout(),
        "run plan (nothing has been changed):\n\n{}",
        run_plan_text(planned)
    );
}

/// The plan as lines: `JOB TABLE: ACTION`, then what it loads or reads.
pub fn run_plan_text(planned: &[PlannedJob]) -> String {
    let mut out = String::new();
    let runs = planned.iter().filter(|j| j.runs).count();
    for j in planned {
        let mark = if j.runs { "RUNS" } else { "    " };
        out.push_str(&format!("{mark} {:<9} {}: {}\n", j.job, j.table, j.action));
        for (file, bytes) in &j.files {
            out.push_str(&format!("       loads {file} ({bytes} bytes)\n"));
        }
        for i in &j.inputs {
            let amount = match (i.files, i.bytes) {
                (Some(1), Some(b)) => format!(": 1 file, {b} bytes"),
                (Some(f), Some(b)) => format!(": {f} files, {b} bytes"),
                _ => String::new(),
            };
            out.push_str(&format!("       reads {} ({}){amount}\n", i.table, i.read));
        }
    }
    out.push_str(&format!(
        "\n{runs} of {} jobs would write a new snapshot\n",
        planned.len()
    ));
    out
}

/// `pipeline test`: each test PASS or FAIL with where it is, and for a failure the rows
/// missing and unexpected (or why it could not compare); then the count.
pub fn model_tests(outcomes: &[TestOutcome], pipeline: &str, as_json: bool) {
    if as_json {
        return json(&outcomes);
    }
    let mut out = crate::secrets::stdout();
    if outcomes.is_empty() {
        let _ = writeln!(
            out,
            "no model tests for {pipeline}: write [[test]] tables in tests/{pipeline}/*.toml (see pipeline test --help)"
        );
        return;
    }
    for o in outcomes {
        let verdict = if o.passed { "PASS" } else { "FAIL" };
        let _ = writeln!(out, "{verdict} {}: {} ({})", o.table, o.name, o.at);
        if let Some(error) = &o.error {
            let _ = writeln!(out, "     {error}");
        }
        for (what, rows) in [
            ("missing (expected, not returned)", &o.missing),
            ("unexpected (returned, not expected)", &o.unexpected),
        ] {
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(out, "     {} {what}:", rows.len());
            let table = Rows {
                columns: o.columns.clone(),
                rows: rows.to_vec(),
            };
            for line in table.to_table().lines() {
                let _ = writeln!(out, "       {line}");
            }
        }
    }
    let passed = outcomes.iter().filter(|o| o.passed).count();
    let _ = writeln!(out, "\n{passed} of {} model test(s) passed", outcomes.len());
}

/// `pipeline plan`: the schema changes and whom they break, then what the next run would do
/// (`run` in JSON).
pub fn schema_plan(
    plan: &SchemaPlan,
    run: &std::result::Result<Vec<PlannedJob>, String>,
    as_json: bool,
) {
    if as_json {
        let mut value = serde_json::to_value(plan).unwrap_or_default();
        match run {
            Ok(run) => value["run"] = serde_json::to_value(run).unwrap_or_default(),
            Err(e) => value["run_error"] = e.as_str().into(),
        }
        return json(&value);
    }
    say_raw!("{}", render_text(plan));
    match run {
        Ok(run) => say_raw!(
            "\nwhat the next run would do (`pipeline run --plan`):\n{}",
            run_plan_text(run)
        ),
        Err(e) => say_raw!("\nwhat the next run would do cannot be planned: {e}"),
    }
}
