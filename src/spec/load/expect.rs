//! `[[expect]]`: quality checks on the tables a pipeline writes.

use toml::Spanned;

use super::fields::{sql_literal, table_name};
use super::position::Positions;
use super::raw::RawExpect;
use crate::error::Result;
use crate::spec::expect::{
    parse_duration_micros, parse_fraction, Check, ExpectAction, Expectation,
};
use crate::spec::table::TableName;

/// One `[[expect]]` table.
pub(super) fn expectation(at: &Positions, raw: &RawExpect) -> Result<Expectation> {
    let table = table_name(at, &raw.table)?;
    let check = CheckFields {
        at,
        raw,
        kind: raw.check.get_ref().as_str(),
    }
    .check()?;
    let action = action(at, raw, &check)?;
    Ok(Expectation {
        name: raw.name.clone().unwrap_or_else(|| check.default_name()),
        table,
        check,
        action,
        origin: at.origin(raw.check.span()),
    })
}

/// The fields of one `[[expect]]` table read as the [`Check`] its `check = "..."` names.
struct CheckFields<'a> {
    at: &'a Positions<'a>,
    raw: &'a RawExpect,
    /// The `check` value, e.g. `"not_null"`.
    kind: &'a str,
}

impl CheckFields<'_> {
    /// The [`Check`] of `kind`, or the error for an unknown kind or a missing or bad field.
    fn check(&self) -> Result<Check> {
        let (at, raw, kind) = (self.at, self.raw, self.kind);
        Ok(match kind {
            "not_null" => Check::NotNull {
                column: self.need_column()?,
            },
            "unique" => self.unique()?,
            "accepted_values" => self.accepted_values()?,
            "range" => self.range()?,
            "regex" => self.regex()?,
            "relationships" => self.relationships()?,
            "volume" | "null_rate" => self.change()?,
            "row_count" => self.row_count()?,
            "freshness" => self.freshness()?,
            "sql" => Check::Sql {
                sql: raw.sql.clone().ok_or_else(|| {
                    at.error(
                        raw.check.span(),
                        "check `sql` needs `sql = \"SELECT ... (the violating rows)\"`".into(),
                        None,
                    )
                })?,
            },
            other => {
                return Err(at.error(
                    raw.check.span(),
                    format!("unknown check `{other}`"),
                    Some("checks: not_null, unique, accepted_values, range, regex, relationships, row_count, freshness, sql, volume, null_rate".into()),
                ))
            }
        })
    }

    /// The `column` field, required by this check: an error naming the check when absent.
    fn need_column(&self) -> Result<String> {
        let (at, raw, kind) = (self.at, self.raw, self.kind);
        raw.column
            .as_ref()
            .map(|c| c.get_ref().clone())
            .ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    format!("check `{kind}` needs `column`"),
                    None,
                )
            })
    }

    /// An optional bound (`min` or `max`) as a SQL literal; an error when it is not a number,
    /// string or date.
    fn literal(&self, v: &Option<Spanned<toml::Value>>) -> Result<Option<String>> {
        let at = self.at;
        v.as_ref()
            .map(|v| {
                sql_literal(v.get_ref()).ok_or_else(|| {
                    at.error(v.span(), "expected a number, string or date".into(), None)
                })
            })
            .transpose()
    }

    /// `unique`: `columns` when given and not empty, else the one `column`.
    fn unique(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        Ok(Check::Unique {
            columns: match (&raw.columns, &raw.column) {
                (Some(cols), _) if !cols.is_empty() => cols.clone(),
                (_, Some(c)) => vec![c.get_ref().clone()],
                _ => {
                    return Err(at.error(
                        raw.check.span(),
                        "check `unique` needs `column` or `columns`".into(),
                        None,
                    ))
                }
            },
        })
    }

    /// `accepted_values`: a non-empty `values` list, each one a SQL literal.
    fn accepted_values(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        let values = raw
            .values
            .as_ref()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    "check `accepted_values` needs `values = [...]`".into(),
                    None,
                )
            })?;
        Ok(Check::AcceptedValues {
            column: self.need_column()?,
            values: values
                .iter()
                .map(|v| {
                    sql_literal(v).ok_or_else(|| {
                        at.error(
                            raw.check.span(),
                            "values must be numbers, strings or dates".into(),
                            None,
                        )
                    })
                })
                .collect::<Result<_>>()?,
        })
    }

    /// `range`: `min`, `max` or both, as SQL literals.
    fn range(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        let (min, max) = (self.literal(&raw.min)?, self.literal(&raw.max)?);
        if min.is_none() && max.is_none() {
            return Err(at.error(
                raw.check.span(),
                "check `range` needs `min`, `max` or both".into(),
                None,
            ));
        }
        Ok(Check::Range {
            column: self.need_column()?,
            min,
            max,
        })
    }

    /// `regex`: a `pattern` that compiles.
    fn regex(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        let pattern = raw.pattern.clone().ok_or_else(|| {
            at.error(
                raw.check.span(),
                "check `regex` needs `pattern`".into(),
                None,
            )
        })?;
        // The audit evaluates it with the same engine (the `regex` crate, under
        // DataFusion's regexp functions): a pattern that does not compile is the spec's.
        if let Err(e) = regex::Regex::new(&pattern) {
            return Err(at.error(
                raw.check.span(),
                format!("regex pattern `{pattern}` does not compile: {}", e.to_string().lines().last().unwrap_or("invalid")),
                Some("the syntax is Rust's regex crate (like RE2): escape ( ) [ ] { } . * + ? | ^ $ \\ with a backslash".into()),
            ));
        }
        Ok(Check::Regex {
            column: self.need_column()?,
            pattern,
        })
    }

    /// `relationships`: `to = "namespace.table.column"`, split in its three parts.
    fn relationships(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        let to = raw.to.as_ref().ok_or_else(|| {
            at.error(
                raw.check.span(),
                "check `relationships` needs `to = \"namespace.table.column\"`".into(),
                None,
            )
        })?;
        let parts: Vec<&str> = to.get_ref().split('.').collect();
        let [ns, t, c] = parts.as_slice() else {
            return Err(at.error(
                to.span(),
                format!("`{}` is not namespace.table.column", to.get_ref()),
                None,
            ));
        };
        Ok(Check::Relationships {
            column: self.need_column()?,
            to_table: TableName {
                namespace: ns.to_string(),
                name: t.to_string(),
            },
            to_column: c.to_string(),
        })
    }

    /// `volume` or `null_rate`: a `max_change` fraction over the last `runs` runs (5 unless
    /// given, at least 1).
    fn change(&self) -> Result<Check> {
        let (at, raw, kind) = (self.at, self.raw, self.kind);
        let max_change = raw.max_change.as_ref().ok_or_else(|| {
            at.error(
                raw.check.span(),
                format!("check `{kind}` needs `max_change`, e.g. \"50%\""),
                None,
            )
        })?;
        let max_change = parse_fraction(max_change.get_ref()).ok_or_else(|| {
            at.error(
                max_change.span(),
                "expected a percentage such as \"50%\" or a fraction such as 0.5".into(),
                None,
            )
        })?;
        let runs = match &raw.runs {
            None => 5,
            Some(r) if *r.get_ref() == 0 => {
                return Err(at.error(r.span(), "runs must be at least 1".into(), None))
            }
            Some(r) => *r.get_ref() as usize,
        };
        Ok(if kind == "volume" {
            Check::Volume { max_change, runs }
        } else {
            Check::NullRate {
                column: self.need_column()?,
                max_change,
                runs,
            }
        })
    }

    /// `row_count`: `min`, `max` or both, as whole numbers of rows.
    fn row_count(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        let bound = |v: &Option<Spanned<toml::Value>>| -> Result<Option<u64>> {
            v.as_ref()
                .map(|v| match v.get_ref() {
                    toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
                    _ => Err(at.error(
                        v.span(),
                        "expected a row count (a whole number)".into(),
                        None,
                    )),
                })
                .transpose()
        };
        let (min, max) = (bound(&raw.min)?, bound(&raw.max)?);
        if min.is_none() && max.is_none() {
            return Err(at.error(
                raw.check.span(),
                "check `row_count` needs `min`, `max` or both".into(),
                None,
            ));
        }
        Ok(Check::RowCount { min, max })
    }

    /// `freshness`: a `within` duration, in microseconds.
    fn freshness(&self) -> Result<Check> {
        let (at, raw) = (self.at, self.raw);
        let within = raw.within.as_ref().ok_or_else(|| {
            at.error(
                raw.check.span(),
                "check `freshness` needs `within`, e.g. \"36h\"".into(),
                None,
            )
        })?;
        Ok(Check::Freshness {
            column: self.need_column()?,
            within_micros: parse_duration_micros(within.get_ref()).ok_or_else(|| {
                at.error(
                    within.span(),
                    format!("`{}` is not a duration", within.get_ref()),
                    Some("write a number and a unit: 45s, 90m, 36h, 2d".into()),
                )
            })?,
        })
    }
}

/// The `action` of an `[[expect]]` table (`fail` unless given); `drop` only for a check that
/// judges each row on its own.
fn action(at: &Positions, raw: &RawExpect, check: &Check) -> Result<ExpectAction> {
    Ok(match raw.action.as_ref().map(|a| a.get_ref().as_str()) {
        None | Some("fail") => ExpectAction::Fail,
        Some("warn") => ExpectAction::Warn,
        Some("drop") if check.is_row_level() => ExpectAction::Drop,
        Some("drop") => {
            let span = raw.action.as_ref().map(|a| a.span()).unwrap_or_default();
            return Err(at.error(
                span,
                format!("action \"drop\" needs a check that judges each row on its own; `{}` does not", check.kind()),
                Some("drop works with not_null, accepted_values, range, regex and relationships; use \"fail\" or \"warn\" here".into()),
            ));
        }
        Some(other) => {
            let span = raw.action.as_ref().map(|a| a.span()).unwrap_or_default();
            return Err(at.error(
                span,
                format!("unknown action `{other}`"),
                Some("actions: \"fail\" (publish nothing), \"warn\" (publish and report) or \"drop\" (violating rows go to <table>__quarantine)".into()),
            ));
        }
    })
}
