//! Expectations (`[[expect]]` in a spec): data quality checks run on a run's staged tables
//! before anything is published.

use serde::{Deserialize, Serialize};

use super::sql::quote_ident;
use super::table::{Origin, TableName};

/// What an expectation checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// No NULL in the column.
    NotNull { column: String },
    /// No two rows share the values of these columns (NULLs never collide).
    Unique { columns: Vec<String> },
    /// Every non-NULL value is one of `values` (SQL literals).
    AcceptedValues { column: String, values: Vec<String> },
    /// Every non-NULL value lies within `min..=max` (SQL literals; either may be open).
    Range {
        column: String,
        min: Option<String>,
        max: Option<String>,
    },
    /// Every non-NULL value matches the regular expression.
    Regex { column: String, pattern: String },
    /// Every non-NULL value exists in `to_column` of `to_table`.
    Relationships {
        column: String,
        to_table: TableName,
        to_column: String,
    },
    /// The table holds between `min` and `max` rows.
    RowCount { min: Option<u64>, max: Option<u64> },
    /// The newest value of the timestamp column is at most `within_micros` before the run.
    Freshness { column: String, within_micros: i64 },
    /// A SELECT returning the violating rows.
    Sql { sql: String },
    /// The table's row count moves more than `max_change` (a fraction: 0.5 = 50%) from the
    /// mean of its last `runs` measurements.
    Volume { max_change: f64, runs: usize },
    /// The column's share of NULLs moves more than `max_change` (a fraction of the rows: 0.1 =
    /// 10 percentage points) from the mean of its last `runs` measurements.
    NullRate {
        column: String,
        max_change: f64,
        runs: usize,
    },
}

impl Check {
    /// The spec word for this check.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::NotNull { .. } => "not_null",
            Check::Unique { .. } => "unique",
            Check::AcceptedValues { .. } => "accepted_values",
            Check::Range { .. } => "range",
            Check::Regex { .. } => "regex",
            Check::Relationships { .. } => "relationships",
            Check::RowCount { .. } => "row_count",
            Check::Freshness { .. } => "freshness",
            Check::Sql { .. } => "sql",
            Check::Volume { .. } => "volume",
            Check::NullRate { .. } => "null_rate",
        }
    }

    /// Whether the check judges each row on its own (so violating rows can be dropped).
    pub fn is_row_level(&self) -> bool {
        matches!(
            self,
            Check::NotNull { .. }
                | Check::AcceptedValues { .. }
                | Check::Range { .. }
                | Check::Regex { .. }
                | Check::Relationships { .. }
        )
    }

    /// A default name: `not_null(order_id)`, `unique(order_id, line)`, `row_count`.
    pub fn default_name(&self) -> String {
        let kind = self.kind();
        match self {
            Check::NotNull { column }
            | Check::AcceptedValues { column, .. }
            | Check::Range { column, .. }
            | Check::Regex { column, .. }
            | Check::Relationships { column, .. }
            | Check::Freshness { column, .. }
            | Check::NullRate { column, .. } => format!("{kind}({column})"),
            Check::Unique { columns } => format!("{kind}({})", columns.join(", ")),
            Check::RowCount { .. } | Check::Sql { .. } | Check::Volume { .. } => kind.to_string(),
        }
    }
}

/// What a failed expectation does to the run (as written in the spec and in run records:
/// `fail`, `warn`, `drop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectAction {
    /// The run publishes nothing and names the check, the count and a sample.
    Fail,
    /// The run publishes; the result is reported and recorded.
    Warn,
    /// Violating rows are written to `<table>__quarantine` (with the expectation's name)
    /// instead of the table; the rest is published.
    Drop,
}

impl ExpectAction {
    pub fn name(self) -> &'static str {
        match self {
            ExpectAction::Fail => "fail",
            ExpectAction::Warn => "warn",
            ExpectAction::Drop => "drop",
        }
    }
}

/// One `[[expect]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    pub name: String,
    pub table: TableName,
    pub check: Check,
    pub action: ExpectAction,
    /// Where it is declared.
    pub origin: Origin,
}

/// The condition a violating row meets, for checks that judge each row on its own (SQL over
/// the table's unqualified columns; NULL counts as not violating). `None` for other checks.
pub fn violation_predicate(check: &Check) -> Option<String> {
    Some(match check {
        Check::NotNull { column } => format!("{} IS NULL", quote_ident(column)),
        Check::AcceptedValues { column, values } => format!(
            "{0} IS NOT NULL AND {0} NOT IN ({1})",
            quote_ident(column),
            values.join(", ")
        ),
        Check::Range { column, min, max } => {
            let mut outside = Vec::new();
            if let Some(min) = min {
                outside.push(format!("{} < {min}", quote_ident(column)));
            }
            if let Some(max) = max {
                outside.push(format!("{} > {max}", quote_ident(column)));
            }
            format!("({})", outside.join(" OR "))
        }
        Check::Regex { column, pattern } => format!(
            "{0} IS NOT NULL AND NOT ({0} ~ '{1}')",
            quote_ident(column),
            pattern.replace('\'', "''")
        ),
        Check::Relationships {
            column,
            to_table,
            to_column,
        } => format!(
            "{0} IS NOT NULL AND {0} NOT IN (SELECT {1} FROM {2} WHERE {1} IS NOT NULL)",
            quote_ident(column),
            quote_ident(to_column),
            to_table.quoted()
        ),
        Check::Unique { .. }
        | Check::Sql { .. }
        | Check::RowCount { .. }
        | Check::Freshness { .. }
        | Check::Volume { .. }
        | Check::NullRate { .. } => return None,
    })
}

/// Parses a change threshold: `"50%"` or a fraction such as `0.5`.
pub fn parse_fraction(value: &toml::Value) -> Option<f64> {
    let f = match value {
        toml::Value::String(s) => s.trim().strip_suffix('%')?.trim().parse::<f64>().ok()? / 100.0,
        toml::Value::Float(f) => *f,
        // `50` is much more likely to mean 50% than 5000%: only 0 and 1 are taken as fractions.
        toml::Value::Integer(i @ (0 | 1)) => *i as f64,
        _ => return None,
    };
    (f.is_finite() && f >= 0.0).then_some(f)
}

/// Parses a duration such as `90m`, `36h`, `2d` (or `45s`) into microseconds.
pub fn parse_duration_micros(text: &str) -> Option<i64> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let number: i64 = text[..text.len() - unit.len_utf8()].trim().parse().ok()?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    number.checked_mul(seconds)?.checked_mul(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions() {
        assert_eq!(
            parse_fraction(&toml::Value::String("50%".into())),
            Some(0.5)
        );
        assert_eq!(parse_fraction(&toml::Value::Float(0.25)), Some(0.25));
        assert_eq!(parse_fraction(&toml::Value::String("half".into())), None);
        assert_eq!(parse_fraction(&toml::Value::Float(-1.0)), None);
        assert_eq!(parse_fraction(&toml::Value::Integer(50)), None);
        assert_eq!(parse_fraction(&toml::Value::Integer(1)), Some(1.0));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_micros("90m"), Some(90 * 60 * 1_000_000));
        assert_eq!(parse_duration_micros("2d"), Some(2 * 86_400 * 1_000_000));
        assert_eq!(parse_duration_micros("36 h"), Some(36 * 3600 * 1_000_000));
        assert_eq!(parse_duration_micros("3w"), None);
        assert_eq!(parse_duration_micros("h"), None);
    }
}
