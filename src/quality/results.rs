//! What an audit's results mean for a run: the result of a `drop` expectation, a one-line
//! count, and the error of the first failed `fail` expectation.

use crate::error::Error;
use crate::records::QualityResult;
use crate::spec::{ExpectAction, Expectation, TableName};

/// The result of a `drop` expectation: its violating rows went to `quarantine` as the table
/// was written.
pub fn dropped_result(e: &Expectation, dropped: u64, quarantine: &TableName) -> QualityResult {
    let plural = if dropped == 1 { "" } else { "s" };
    QualityResult {
        name: e.name.clone(),
        table: e.table.to_string(),
        check: e.check.kind().into(),
        action: e.action,
        passed: dropped == 0,
        violations: dropped,
        detail: format!("{dropped} violating row{plural} dropped to {quarantine}"),
        sample: Vec::new(),
        measured: None,
        rule: None,
        scope: None,
    }
}

/// A one-line count of results: `9 passed, 1 warned, 2 rows dropped` (empty for none).
pub fn summary(results: &[QualityResult]) -> String {
    let passed = results
        .iter()
        .filter(|r| r.passed && r.action != ExpectAction::Drop)
        .count();
    let warned = results
        .iter()
        .filter(|r| !r.passed && r.action == ExpectAction::Warn)
        .count();
    let dropped: u64 = results
        .iter()
        .filter(|r| r.action == ExpectAction::Drop)
        .map(|r| r.violations)
        .sum();
    let mut parts = Vec::new();
    if passed > 0 {
        parts.push(format!("{passed} passed"));
    }
    if warned > 0 {
        parts.push(format!("{warned} warned"));
    }
    if results.iter().any(|r| r.action == ExpectAction::Drop) {
        parts.push(format!("{dropped} rows dropped"));
    }
    parts.join(", ")
}

/// The error for the first failed `fail` expectation, if any.
pub fn first_failure(results: &[QualityResult]) -> Option<Error> {
    results
        .iter()
        .find(|r| !r.passed && r.action == ExpectAction::Fail)
        .map(|r| Error::Quality {
            table: r.table.clone(),
            name: r.name.clone(),
            detail: r.detail.clone(),
            sample: r.sample.iter().map(|s| s.to_string()).collect(),
        })
}
