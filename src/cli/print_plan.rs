//! The printer of `pipeline run --plan` (and of the run part of `pipeline plan`): per job,
//! whether it runs and why, the files it would load and what it would read.

use std::io::Write;

use super::print::json;
use crate::plan::PlannedJob;

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
