//! The audit step of a run: the pipeline's expectations evaluated on the tables it staged,
//! before anything is published. A failed `fail` expectation stops the run here.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::report::Observer;
use crate::commit::StagedTable;
use crate::error::Result;
use crate::lineage::pipeline_lineage;
use crate::plan::Validated;
use crate::quality::{audit, dropped_result, first_failure, AuditContext, AuditHistory};
use crate::records::QualityResult;
use crate::spec::{ExpectAction, Expectation, Pipeline, TableName};

/// Evaluates `pipeline`'s expectations on `staged` (run `run_id`, started at
/// `started_micros`), adds the results of its `drop` expectations (`dropped`: rows each
/// removed, by table), tells `observer` of each, and returns them all; or the error of the
/// first failed `fail` expectation.
pub(crate) async fn audit_staged(
    pipeline: &Pipeline,
    validated: &Validated,
    staged: &[StagedTable],
    dropped: &HashMap<TableName, BTreeMap<String, u64>>,
    run_id: &str,
    started_micros: i64,
    observer: &dyn Observer,
) -> Result<Vec<QualityResult>> {
    let due: Vec<&Expectation> = pipeline
        .expectations
        .iter()
        .filter(|e| e.action != ExpectAction::Drop && staged.iter().any(|s| s.table == e.table))
        .collect();
    let history = AuditHistory::read(&validated.catalog, &pipeline.name, &due).await?;
    let lineage = pipeline_lineage(pipeline, &validated.ingests, &validated.lineage);
    let bronze: BTreeSet<TableName> = pipeline.ingests.iter().map(|j| j.table.clone()).collect();
    let mut quality = audit(
        &pipeline.expectations,
        staged,
        &AuditContext {
            catalog: &validated.catalog,
            started_micros,
            run_id,
            history: &history,
            lineage: &lineage,
            bronze: &bronze,
        },
    )
    .await?;
    for e in &pipeline.expectations {
        if e.action != ExpectAction::Drop {
            continue;
        }
        if let Some(counts) = dropped.get(&e.table) {
            let n = counts.get(&e.name).copied().unwrap_or(0);
            quality.push(dropped_result(e, n, &e.table.quarantine()));
        }
    }
    for result in &quality {
        observer.checked(result);
    }
    match first_failure(&quality) {
        Some(failure) => Err(failure),
        None => Ok(quality),
    }
}
