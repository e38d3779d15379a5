//! Whether a pipeline's tables need maintenance now, and why: what `pipeline maintain --plan`
//! would do (compact partitions of small files, rewrite manifests, expire snapshots beyond the
//! window), read without a lock and changing nothing. `pipeline tables` and `schedule
//! status` show it with the command that does it.

use serde::Serialize;

use super::options::MaintainOptions;
use super::plan::plan;
use super::report::TableMaintenance;
use crate::catalog::PipelineCatalog;
use crate::error::Result;
use crate::records::lock::LockWait;
use crate::spec::Pipeline;

/// One table that needs maintenance.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Due {
    pub table: String,
    /// What maintenance would do, e.g. `compact 1 partition (7 small files)`.
    pub why: Vec<String>,
    /// The command that does it.
    pub command: String,
}

/// The tables of `pipeline` on `catalog` that need maintenance now (none on a catalog that
/// maintains its tables itself).
pub async fn due(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Result<Vec<Due>> {
    if pipeline.catalog.maintains_tables() {
        return Ok(Vec::new());
    }
    let options = MaintainOptions {
        plan_only: true,
        // What the maintenance after the next run would do, where runs maintain.
        batch_expiry: pipeline.maintains_after_run(),
        ..MaintainOptions::new(LockWait(None))
    };
    let planned = plan(catalog, pipeline, &options, crate::fault::wall_now()).await?;
    Ok(planned
        .iter()
        .filter(|p| p.report.changes())
        .map(|p| Due {
            table: p.report.table.clone(),
            why: reasons(&p.report),
            command: format!("pipeline maintain {}", pipeline.name),
        })
        .collect())
}

fn reasons(report: &TableMaintenance) -> Vec<String> {
    let mut why = Vec::new();
    let groups = &report.compaction.groups;
    if !groups.is_empty() {
        let files: usize = groups.iter().map(|g| g.files.len()).sum();
        let s = if groups.len() == 1 { "" } else { "s" };
        why.push(format!(
            "compact {} partition{s} ({files} small files)",
            groups.len()
        ));
    }
    if report.rewrite_manifests {
        why.push(format!("rewrite {} manifests into one", report.manifests));
    }
    if report.expired_snapshots > 0 {
        why.push(format!(
            "expire {} snapshots beyond the window",
            report.expired_snapshots
        ));
    }
    why
}
