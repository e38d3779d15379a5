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

/// Results of expectations evaluated while the run's later jobs still ran (see
/// `run::early_audit`), with each one's index in the pipeline's expectations.
pub type EarlyResults = Vec<(usize, QualityResult)>;

/// Evaluates `pipeline`'s expectations on `staged` (run `run_id`, started at
/// `started_micros`), but for those `early` holds results of, adds the results of its `drop`
/// expectations (`dropped`: rows each removed, by table), tells `observer` of each (in the
/// order of the spec), and returns them all; or the error of the first failed `fail`
/// expectation.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn audit_staged(
    pipeline: &Pipeline,
    validated: &Validated,
    staged: &[StagedTable],
    dropped: &HashMap<TableName, BTreeMap<String, u64>>,
    early: &[(usize, QualityResult)],
    run_id: &str,
    started_micros: i64,
    observer: &dyn Observer,
) -> Result<Vec<QualityResult>> {
    let due: Vec<usize> = (0..pipeline.expectations.len())
        .filter(|&i| {
            let e = &pipeline.expectations[i];
            e.action != ExpectAction::Drop && staged.iter().any(|s| s.table == e.table)
        })
        .collect();
    let rest: Vec<usize> = due
        .iter()
        .copied()
        .filter(|i| !early.iter().any(|(j, _)| j == i))
        .collect();
    let mut evaluated = evaluate(
        pipeline,
        validated,
        staged,
        rest,
        run_id,
        started_micros,
        None,
    )
    .await?;
    evaluated.extend(early.iter().cloned());
    let mut quality: Vec<QualityResult> = Vec::with_capacity(due.len());
    for i in &due {
        if let Some(at) = evaluated.iter().position(|(j, _)| j == i) {
            quality.push(evaluated.swap_remove(at).1);
        }
    }
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

/// Evaluates the expectations of `pipeline` at indexes `which` (none a `drop`, each on a table
/// of `staged`) on `staged`; returns each result with its index. With `max_rows`, only those
/// that read at most that many rows (see [`AuditContext::max_rows`]); the others are left out.
pub(crate) async fn evaluate(
    pipeline: &Pipeline,
    validated: &Validated,
    staged: &[StagedTable],
    which: Vec<usize>,
    run_id: &str,
    started_micros: i64,
    max_rows: Option<u64>,
) -> Result<EarlyResults> {
    if which.is_empty() {
        return Ok(Vec::new());
    }
    let expectations: Vec<Expectation> = which
        .iter()
        .map(|&i| pipeline.expectations[i].clone())
        .collect();
    let due: Vec<&Expectation> = expectations.iter().collect();
    let history = AuditHistory::read(&validated.catalog, &pipeline.name, &due).await?;
    let lineage = pipeline_lineage(pipeline, &validated.ingests, &validated.lineage);
    let bronze: BTreeSet<TableName> = pipeline.ingests.iter().map(|j| j.table.clone()).collect();
    let results = audit(
        &expectations,
        staged,
        &AuditContext {
            catalog: &validated.catalog,
            started_micros,
            run_id,
            history: &history,
            lineage: &lineage,
            bronze: &bronze,
            max_rows,
        },
    )
    .await?;
    let evaluated = results.iter().filter(|r| r.is_some()).count();
    if results.len() != which.len() || (max_rows.is_none() && evaluated != which.len()) {
        return Err(crate::error::Error::Internal(format!(
            "{} expectations to audit, {evaluated} results",
            which.len(),
        )));
    }
    Ok(which
        .into_iter()
        .zip(results)
        .filter_map(|(i, r)| r.map(|r| (i, r)))
        .collect())
}
