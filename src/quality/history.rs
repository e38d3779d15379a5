//! What earlier runs tell an audit: the measurements `volume` and `null_rate` compare with,
//! and the rule each row-level check last ran with (a check whose rule is unchanged looks only
//! at the rows a run writes). Read from the pipeline's run records newest first, a page at a
//! time and only as far back as the expectations need, so an audit's cost does not grow with
//! years of nightly records.

use std::collections::{HashMap, HashSet};

use super::anomaly::Baselines;
use crate::catalog::PipelineCatalog;
use crate::error::Result;
use crate::records::RunRecord;
use crate::spec::{Check, ExpectAction, Expectation};

/// Records read per page.
const PAGE: usize = 50;

/// The history of a pipeline's expectations, as its published runs (less those a rollback
/// undid) recorded them.
#[derive(Debug, Default)]
pub struct AuditHistory {
    pub baselines: Baselines,
    /// Per (table, expectation): the rule and action of its newest result (rule `None`:
    /// recorded without one).
    rules: HashMap<(String, String), (Option<String>, ExpectAction)>,
}

impl AuditHistory {
    /// Reads what `expectations` of `pipeline` need: for `volume` and `null_rate`, their last
    /// `runs` measurements; for the other checks, their newest result.
    pub async fn read(
        catalog: &PipelineCatalog,
        pipeline: &str,
        expectations: &[&Expectation],
    ) -> Result<AuditHistory> {
        if expectations.is_empty() {
            return Ok(AuditHistory::default());
        }
        let mut newest_first: Vec<RunRecord> = Vec::new();
        loop {
            let page = catalog
                .newest_runs(pipeline, newest_first.len(), PAGE)
                .await?;
            let exhausted = page.len() < PAGE;
            newest_first.extend(page);
            let history = AuditHistory::from_newest_first(&newest_first);
            if exhausted || history.answers(expectations) {
                return Ok(history);
            }
        }
    }

    /// The history in `records` (one pipeline's, newest first).
    pub fn from_newest_first(records: &[RunRecord]) -> AuditHistory {
        // A rollback finishes after the run it undoes, so it is met first.
        let mut undone: HashSet<&str> = HashSet::new();
        let mut measured: HashMap<(String, String), Vec<f64>> = HashMap::new();
        let mut rules: HashMap<(String, String), (Option<String>, ExpectAction)> = HashMap::new();
        for record in records {
            if let Some(target) = record.rolls_back.as_deref() {
                undone.insert(target);
            }
            // An undone run's measurements are no baseline, nor are a failed run's (nothing
            // of it was published; its rules did not pass), nor an environment's (its rows
            // are not main's).
            if undone.contains(record.run_id.as_str())
                || record.is_failure()
                || record.env.is_some()
            {
                continue;
            }
            for q in &record.quality {
                let key = (q.table.clone(), q.name.clone());
                if let Some(m) = q.measured {
                    measured.entry(key.clone()).or_default().push(m);
                }
                rules
                    .entry(key)
                    .or_insert_with(|| (q.rule.clone(), q.action));
            }
        }
        for values in measured.values_mut() {
            values.reverse();
        }
        AuditHistory {
            baselines: Baselines(measured),
            rules,
        }
    }

    /// The rule expectation `name` on `table` ran with in its newest result, if that result
    /// had one and the same `action`. (A `fail` check that was a `warn` one may have let
    /// violations through: it looks at the whole table once more.)
    pub fn last_rule(&self, table: &str, name: &str, action: ExpectAction) -> Option<&str> {
        match self.rules.get(&(table.to_string(), name.to_string())) {
            Some((rule, was)) if *was == action => rule.as_deref(),
            _ => None,
        }
    }

    /// Whether this history holds all that `expectations` need.
    fn answers(&self, expectations: &[&Expectation]) -> bool {
        expectations.iter().all(|e| {
            let table = e.table.to_string();
            match &e.check {
                Check::Volume { runs, .. } | Check::NullRate { runs, .. } => {
                    self.baselines.last(&e.table, &e.name, *runs).len() >= *runs
                }
                _ => self.rules.contains_key(&(table, e.name.clone())),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(id: &str, rolls_back: Option<&str>, quality: serde_json::Value) -> RunRecord {
        serde_json::from_value(json!({
            "run_id": id, "pipeline": "p", "kind": if rolls_back.is_some() { "rollback" } else { "run" },
            "started_at": "2026-01-01T00:00:00.000Z", "finished_at": "2026-01-01T00:00:00.000Z",
            "rolls_back": rolls_back, "tables": [], "quality": quality,
        }))
        .unwrap()
    }

    fn result(
        name: &str,
        action: &str,
        rule: Option<&str>,
        measured: Option<f64>,
    ) -> serde_json::Value {
        json!({"name": name, "table": "s.t", "check": "x", "action": action, "passed": true,
               "violations": 0, "detail": "", "rule": rule, "measured": measured})
    }

    #[test]
    fn an_undone_run_and_another_action_do_not_count() {
        // Newest first: a rollback of r3, r3 (new rule), r2 (warn), r1 (fail).
        let records = vec![
            record("r4", Some("r3"), json!([])),
            record(
                "r3",
                None,
                json!([result("u", "warn", Some("new"), Some(30.0))]),
            ),
            record(
                "r2",
                None,
                json!([result("u", "warn", Some("old"), Some(20.0))]),
            ),
            record(
                "r1",
                None,
                json!([result("u", "fail", Some("older"), Some(10.0))]),
            ),
        ];
        let history = AuditHistory::from_newest_first(&records);
        assert_eq!(
            history.last_rule("s.t", "u", ExpectAction::Warn),
            Some("old")
        );
        // The newest result was a warn: a fail check looks at the whole table again.
        assert_eq!(history.last_rule("s.t", "u", ExpectAction::Fail), None);
        assert_eq!(history.last_rule("s.t", "other", ExpectAction::Warn), None);
        let table = crate::spec::TableName::parse("s.t").unwrap();
        assert_eq!(history.baselines.last(&table, "u", 5), &[10.0, 20.0]);
    }

    #[test]
    fn a_failed_run_is_no_baseline_and_no_rule() {
        // Newest first: r2 failed its checks (measured 999, a new rule), r1 published.
        let mut failed = record(
            "r2",
            None,
            json!([result("u", "warn", Some("new"), Some(999.0))]),
        );
        failed.error = Some("expectation `u` on s.t failed".into());
        let records = vec![
            failed,
            record(
                "r1",
                None,
                json!([result("u", "warn", Some("old"), Some(10.0))]),
            ),
        ];
        let history = AuditHistory::from_newest_first(&records);
        assert_eq!(
            history.last_rule("s.t", "u", ExpectAction::Warn),
            Some("old")
        );
        let table = crate::spec::TableName::parse("s.t").unwrap();
        assert_eq!(history.baselines.last(&table, "u", 5), &[10.0]);
    }
}
