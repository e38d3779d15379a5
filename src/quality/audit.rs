//! Audits: a run's expectations (`[[expect]]`), evaluated with DataFusion on the snapshots the
//! run staged, before anything is published.

use std::collections::{BTreeSet, HashMap, HashSet};

use datafusion::common::TableReference;
use datafusion::prelude::{col, lit, SessionContext};

use super::anomaly;
use super::check_sql::{count_sql, rule_of, violations_sql, written_sql};
use super::distinct_keys::keys_distinct;
use super::history::AuditHistory;
use super::key_ranges::key_ranges;
use super::query::{counted_sample, sample_rows, scalar, scalar_rows};
use crate::catalog::PipelineCatalog;
use crate::commit::summary::total_records;
use crate::commit::StagedTable;
use crate::commit::WriteMode;
use crate::engine::{new_session, query, register_table, table_provider, CountedTable, Entry};
use crate::error::{Error, Result};
use crate::lineage::PipelineLineage;
use crate::records::{QualityResult, SampleRow};
use crate::spec::{quote_ident, Check, ExpectAction, Expectation, TableName};
use crate::transform::range_predicate;

/// Violating rows shown per failed expectation.
const SAMPLE_ROWS: usize = 5;

/// What an audit needs besides the expectations and the staged tables.
pub struct AuditContext<'a> {
    pub catalog: &'a PipelineCatalog,
    /// Run start, microseconds since the epoch (for `freshness`).
    pub started_micros: i64,
    pub run_id: &'a str,
    /// Earlier results: measurements for `volume` and `null_rate`, the rules of row-level
    /// checks.
    pub history: &'a AuditHistory,
    /// Column lineage of the pipeline, to name the upstream causes of an anomaly.
    pub lineage: &'a PipelineLineage,
    /// The pipeline's bronze tables (they carry `_source_file` and `_run_id`).
    pub bronze: &'a BTreeSet<TableName>,
    /// Evaluate only the expectations that read at most this many rows of their table (the
    /// rows this run wrote, when the check looks at those only; else the whole table); the
    /// others are left out of the results. `None`: every expectation.
    pub max_rows: Option<u64>,
}

/// Makes the rows `staged` wrote readable as a view (named after the table, with a suffix no
/// table can have) when they can be told apart from the rest: the partitions a partition
/// replace wrote, or the rows an append stamped with this run's id (`_run_id`, bronze).
/// `None` when they cannot (overwrites, rewrites, a table this run created).
async fn written_view(
    session: &SessionContext,
    staged: &StagedTable,
    run_id: &str,
) -> Result<Option<TableName>> {
    if staged.base_location.is_none() {
        return Ok(None);
    }
    let df = session
        .table(TableReference::partial(
            staged.table.namespace.clone(),
            staged.table.name.clone(),
        ))
        .await?;
    let filter = match &staged.mode {
        WriteMode::Replace(range) => {
            let metadata = &staged.metadata;
            let field = metadata
                .default_partition_spec()
                .fields()
                .iter()
                .find(|f| f.name == range.field)
                .and_then(|f| metadata.current_schema().field_by_id(f.source_id));
            match field {
                Some(source) => range_predicate(df.schema(), &source.name, &range.spans())?,
                None => return Ok(None),
            }
        }
        WriteMode::Append if df.schema().has_column_with_unqualified_name("_run_id") => {
            col("_run_id").eq(lit(run_id.to_string()))
        }
        _ => return Ok(None),
    };
    let view = TableName {
        namespace: staged.table.namespace.clone(),
        name: format!("{} rows written", staged.table.name),
    };
    register_table(session, &view, df.filter(filter)?.into_view())?;
    Ok(Some(view))
}

/// Evaluates the expectations on the tables in `staged` (run start: `started_micros`).
/// Returns the result of each expectation on a table of `staged` (not a `drop`), in order:
/// `None` for one left out by [`AuditContext::max_rows`]. The caller fails the run on a failed
/// `fail` expectation.
pub async fn audit(
    expectations: &[Expectation],
    staged: &[StagedTable],
    ctx: &AuditContext<'_>,
) -> Result<Vec<Option<QualityResult>>> {
    let changed: HashMap<&TableName, &StagedTable> = staged.iter().map(|s| (&s.table, s)).collect();
    // `drop` expectations were applied while the table was written.
    let due: Vec<&Expectation> = expectations
        .iter()
        .filter(|e| changed.contains_key(&e.table) && e.action != ExpectAction::Drop)
        .collect();
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let mut auditor = Auditor {
        session: new_session(),
        ctx,
        changed,
        registered: HashSet::new(),
        written: HashMap::new(),
    };
    let mut wanted: Vec<&TableName> = due.iter().map(|e| &e.table).collect();
    for e in &due {
        if let Check::Relationships { to_table, .. } = &e.check {
            wanted.push(to_table);
        }
    }
    auditor.register(&wanted).await?;
    let mut results = Vec::new();
    for e in due {
        results.push(auditor.evaluate(e).await?);
    }
    Ok(results)
}

/// What evaluating one expectation found: violations, detail and sample; or, for `volume`
/// and `null_rate`, a judgement against the baseline (on the column, for a null rate) whose
/// upstream causes are still to be named, and the value measured.
enum Evaluated<'a> {
    Done(u64, String, Vec<SampleRow>),
    Anomaly {
        judgement: anomaly::Judgement,
        column: Option<&'a str>,
        measured: f64,
    },
}

/// The session of one audit and what is readable in it.
struct Auditor<'a> {
    session: SessionContext,
    ctx: &'a AuditContext<'a>,
    /// The tables this run staged, by name.
    changed: HashMap<&'a TableName, &'a StagedTable>,
    /// The tables registered in `session`.
    registered: HashSet<TableName>,
    /// Per staged table, the view of the rows this run wrote (`None`: they cannot be told
    /// apart), registered at most once.
    written: HashMap<TableName, Option<TableName>>,
}

/// The error of expectation `e` that could not be evaluated, naming its spec line.
fn failure(e: &Expectation, message: String) -> Error {
    Error::Pipeline {
        file: e.origin.file.clone(),
        message: format!(
            "line {}: expectation `{}` on {}: {message}",
            e.origin.line, e.name, e.table
        ),
        hint: None,
    }
}

impl Auditor<'_> {
    /// Makes `tables` readable in the session (staged versions for the tables this run
    /// changed), each once.
    async fn register(&mut self, tables: &[&TableName]) -> Result<()> {
        let catalog = self.ctx.catalog;
        for name in tables {
            if !self.registered.insert((*name).clone()) {
                continue;
            }
            let table = match self.changed.get(name) {
                Some(s) => s.reader(catalog.file_io())?,
                None => catalog.load_existing(name).await?,
            };
            let rows = total_records(table.metadata().current_snapshot());
            let provider = table_provider(table, None)
                .await
                .map_err(|e| Error::table(*name, "cannot read table for its expectations", e))?;
            // Row counts let the join planner build on the smaller side (a `relationships` check
            // of 20M rows against 400k keys builds on the keys).
            register_table(
                &self.session,
                name,
                std::sync::Arc::new(CountedTable::new(provider, rows)),
            )?;
        }
        Ok(())
    }

    /// Evaluates `e` on its staged table (or only on the rows this run wrote, see
    /// [`Auditor::scope`]) and returns its result; `None` when it would read more rows than
    /// [`AuditContext::max_rows`].
    async fn evaluate(&mut self, e: &Expectation) -> Result<Option<QualityResult>> {
        let rule = rule_of(e);
        let scope = self.scope(e, &rule).await?;
        if let Some(max) = self.ctx.max_rows {
            if self.rows_read(e, &scope) > max {
                return Ok(None);
            }
        }
        let (listing_sql, counting_sql) = match &scope {
            Some((view, written)) => {
                let narrow = self.narrowing(e, view, *written).await?;
                written_sql(e, view, narrow.as_deref())
            }
            None => (violations_sql(e), count_sql(e)),
        };
        let evaluated = match (&e.check, listing_sql) {
            (Check::Unique { columns }, Some(_))
                if scope.is_none() && self.keys_distinct(e, columns).await? =>
            {
                Evaluated::Done(0, violation_detail(0, None), Vec::new())
            }
            (_, Some(sql)) => {
                let written_rows = scope.as_ref().map(|(_, rows)| *rows);
                self.violations(e, &sql, counting_sql, written_rows).await?
            }
            (Check::RowCount { min, max }, None) => row_count(self.changed[&e.table], *min, *max),
            (
                Check::Freshness {
                    column,
                    within_micros,
                },
                None,
            ) => self.freshness(e, column, *within_micros).await?,
            (Check::Volume { max_change, runs }, None) => self.volume(e, *max_change, *runs),
            (
                Check::NullRate {
                    column,
                    max_change,
                    runs,
                },
                None,
            ) => self.null_rate(e, column, *max_change, *runs).await?,
            _ => unreachable!("every check has a SQL form or a whole-table form"),
        };
        let measured = match &evaluated {
            Evaluated::Done(..) => None,
            Evaluated::Anomaly { measured, .. } => Some(*measured),
        };
        let (violations, detail, sample) = self.settle(e, evaluated).await?;
        Ok(Some(QualityResult {
            name: e.name.clone(),
            table: e.table.to_string(),
            check: e.check.kind().into(),
            action: e.action,
            passed: violations == 0,
            violations,
            detail,
            sample,
            measured,
            rule,
            scope: scope.map(|_| "written".to_string()),
        }))
    }

    /// For a `unique` check of the `written` rows of `view` (an integer first key column, at
    /// most half of the table written): the predicate on the table's rows `t` naming the key
    /// ranges those rows hold, so the check's scan skips what lies outside them.
    async fn narrowing(
        &self,
        e: &Expectation,
        view: &TableName,
        written: u64,
    ) -> Result<Option<String>> {
        let Check::Unique { columns } = &e.check else {
            return Ok(None);
        };
        let Some(column) = columns.first() else {
            return Ok(None);
        };
        if written.saturating_mul(2) > self.changed[&e.table].total_rows() {
            return Ok(None);
        }
        let ranges = key_ranges(&self.session, view, column)
            .await
            .map_err(|x| failure(e, format!("cannot read the key ranges written: {x}")))?;
        if let Some(r) = &ranges {
            tracing::debug!(table = %e.table, check = %e.name, ranges = r.ranges.len(), nulls = r.nulls, "unique check narrowed to the key ranges written");
        }
        Ok(ranges.map(|r| r.predicate("t", column)))
    }

    /// The rows of its table `e` reads: none for `row_count` and `volume` (they read the
    /// staged snapshot's summary), the rows this run wrote when `scope` holds them, else the
    /// whole table.
    fn rows_read(&self, e: &Expectation, scope: &Option<(TableName, u64)>) -> u64 {
        match (&e.check, scope) {
            (Check::RowCount { .. } | Check::Volume { .. }, _) => 0,
            (_, Some((_, written))) => *written,
            (_, None) => self.changed[&e.table].total_rows(),
        }
    }

    /// The view of the rows this run wrote to the table of `e`, and their count, when `e`
    /// may look at those only; `None`: it checks the whole table.
    async fn scope(
        &mut self,
        e: &Expectation,
        rule: &Option<String>,
    ) -> Result<Option<(TableName, u64)>> {
        // A row-level check the published rows passed under the same rule (the newest result
        // says so) looks only at the rows this run wrote; `relationships` only while its
        // target is not changed by this run too.
        let target_changed = matches!(&e.check, Check::Relationships { to_table, .. } if self.changed.contains_key(to_table));
        Ok(match rule {
            Some(rule)
                if !target_changed
                    && self
                        .ctx
                        .history
                        .last_rule(&e.table.to_string(), &e.name, e.action)
                        == Some(rule) =>
            {
                let staged = self.changed[&e.table];
                if !self.written.contains_key(&e.table) {
                    let view = written_view(&self.session, staged, self.ctx.run_id).await?;
                    self.written.insert(e.table.clone(), view);
                }
                self.written[&e.table]
                    .clone()
                    .map(|view| (view, staged.added_rows))
            }
            _ => None,
        })
    }

    /// A check with a SQL form: the rows `sql` lists, counted (by `count_sql` when there is
    /// one) and the first of them sampled. `written_rows`: the check looked only at the rows
    /// this run wrote, this many.
    async fn violations(
        &self,
        e: &Expectation,
        sql: &str,
        count_sql: Option<String>,
        written_rows: Option<u64>,
    ) -> Result<Evaluated<'static>> {
        let session = &self.session;
        let df = query(session, sql, Entry::Expectation)
            .await
            .map_err(|r| failure(e, r.with_line()))?;
        let (count, sample) = match count_sql {
            // One aggregate pass counts; the rows are listed only when there are some.
            Some(count_sql) => {
                let count = scalar(session, &count_sql)
                    .await
                    .map_err(|x| failure(e, x.to_string()))?
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| failure(e, "cannot count the violating rows".into()))?;
                let sample = if count > 0 {
                    sample_rows(df, SAMPLE_ROWS).await?
                } else {
                    Vec::new()
                };
                (count, sample)
            }
            // `sql` checks: counted and sampled in one pass (on object storage each pass reads
            // the table).
            None => counted_sample(df, SAMPLE_ROWS).await?,
        };
        Ok(Evaluated::Done(
            count,
            violation_detail(count, written_rows),
            sample,
        ))
    }

    /// Whether the keys of `columns` in the whole table of `e` are proven distinct by their
    /// hashes (`false`: undecided, the SQL decides).
    async fn keys_distinct(&self, e: &Expectation, columns: &[String]) -> Result<bool> {
        let proven = keys_distinct(&self.session, &e.table, columns)
            .await
            .map_err(|x| failure(e, format!("cannot read the keys: {x}")))?;
        if proven {
            tracing::debug!(table = %e.table, check = %e.name, "unique check passed: every key hashes differently");
        }
        Ok(proven)
    }

    /// `freshness`: whether the newest `column` value of the table of `e` is more than
    /// `within_micros` before the run start.
    async fn freshness(
        &self,
        e: &Expectation,
        column: &str,
        within_micros: i64,
    ) -> Result<Evaluated<'static>> {
        let started_micros = self.ctx.started_micros;
        let newest = scalar(
            &self.session,
            &format!(
                "SELECT CAST(max({0}) AS BIGINT) FROM {1}",
                quote_ident(column),
                e.table.quoted()
            ),
        )
        .await
        .map_err(|x| failure(e, x.to_string()))?;
        let newest_micros = newest.as_deref().and_then(|v| v.parse::<i64>().ok());
        let stale = newest_micros.is_none_or(|n| started_micros - n > within_micros);
        let age = newest_micros.map(|n| (started_micros - n) / 3_600_000_000);
        Ok(Evaluated::Done(
            u64::from(stale),
            match age {
                Some(h) if h >= 48 => {
                    format!("newest {column} is {} days before the run", h / 24)
                }
                Some(h) => format!("newest {column} is {h}h before the run"),
                None => format!("no {column} value at all"),
            },
            Vec::new(),
        ))
    }

    /// `volume`: the staged row count of the table of `e` judged against its last `runs`
    /// measurements.
    fn volume(&self, e: &Expectation, max_change: f64, runs: usize) -> Evaluated<'static> {
        // The staged snapshot's summary counts its rows.
        let staged = self.changed[&e.table];
        let rows = total_records(staged.metadata.snapshot_by_id(staged.snapshot_id)) as f64;
        let history = self.ctx.history.baselines.last(&e.table, &e.name, runs);
        let judgement = anomaly::judge(rows, history, max_change, true, |v| format!("{v:.0} rows"));
        Evaluated::Anomaly {
            judgement,
            column: None,
            measured: rows,
        }
    }

    /// `null_rate`: the share of NULLs in `column` of the table of `e`, judged against its
    /// last `runs` measurements.
    async fn null_rate<'c>(
        &self,
        e: &Expectation,
        column: &'c str,
        max_change: f64,
        runs: usize,
    ) -> Result<Evaluated<'c>> {
        let row = scalar_rows(
            &self.session,
            &format!(
                "SELECT count(*) FILTER (WHERE {0} IS NULL), count(*) FROM {1}",
                quote_ident(column),
                e.table.quoted()
            ),
        )
        .await
        .map_err(|x| failure(e, x.to_string()))?;
        let number = |i: usize| -> Result<f64> {
            row.first()
                .and_then(|r| r.get(i).cloned().flatten())
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| failure(e, format!("cannot count its NULLs (got {row:?})")))
        };
        let (nulls, rows) = (number(0)?, number(1)?);
        let rate = if rows > 0.0 { nulls / rows } else { 0.0 };
        let history = self.ctx.history.baselines.last(&e.table, &e.name, runs);
        let judgement = anomaly::judge(rate, history, max_change, false, |v| {
            format!("{:.1}% NULL", v * 100.0)
        });
        Ok(Evaluated::Anomaly {
            judgement,
            column: Some(column),
            measured: rate,
        })
    }

    /// The violations, detail and sample of what evaluating `e` found: an anomalous
    /// judgement names its upstream causes in the detail.
    async fn settle(
        &mut self,
        e: &Expectation,
        evaluated: Evaluated<'_>,
    ) -> Result<(u64, String, Vec<SampleRow>)> {
        Ok(match evaluated {
            Evaluated::Done(violations, detail, sample) => (violations, detail, sample),
            Evaluated::Anomaly {
                judgement: j,
                column,
                ..
            } => {
                let causes = if j.anomalous {
                    // The other tables this run changed name the causes.
                    let all: Vec<&TableName> = self.changed.keys().copied().collect();
                    self.register(&all).await?;
                    anomaly::upstream_causes(
                        &self.session,
                        &e.table,
                        column,
                        self.ctx.lineage,
                        &self.changed,
                        self.ctx.bronze,
                        self.ctx.run_id,
                    )
                    .await?
                } else {
                    Vec::new()
                };
                let violations = u64::from(j.anomalous);
                (violations, with_causes(j.detail, &causes), Vec::new())
            }
        })
    }
}

/// `row_count`: the rows of the staged snapshot of `staged` against `min` and `max`.
fn row_count(staged: &StagedTable, min: Option<u64>, max: Option<u64>) -> Evaluated<'static> {
    // The staged snapshot's summary counts its rows.
    let rows = total_records(staged.metadata.snapshot_by_id(staged.snapshot_id));
    let low = min.is_some_and(|m| rows < m);
    let high = max.is_some_and(|m| rows > m);
    let bounds = match (min, max) {
        (Some(a), Some(b)) => format!("{a}..{b}"),
        (Some(a), None) => format!("at least {a}"),
        (None, Some(b)) => format!("at most {b}"),
        (None, None) => "any".into(),
    };
    Evaluated::Done(
        u64::from(low || high),
        format!("{rows} rows, expected {bounds}"),
        Vec::new(),
    )
}

/// A check's detail: its count of violating rows, and how many rows it looked at when it
/// checked only the `written_rows` of this run.
fn violation_detail(count: u64, written_rows: Option<u64>) -> String {
    let plural = if count == 1 { "" } else { "s" };
    match written_rows {
        Some(rows) => {
            format!("{count} violating row{plural} (checked the {rows} rows this run wrote)")
        }
        None => format!("{count} violating row{plural}"),
    }
}

/// `detail`, then each upstream cause on its own line.
fn with_causes(detail: String, causes: &[String]) -> String {
    if causes.is_empty() {
        return detail;
    }
    format!("{detail}; upstream this run: {}", causes.join("; "))
}
