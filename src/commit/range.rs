//! A partition range: the set of time units (years, months, days or hours since 1970, as
//! Iceberg's time transforms number them) of a table's time partition field that a replace or
//! delete touches. Every other partition is left as it is.

use std::collections::BTreeSet;
use std::fmt;

use iceberg::spec::{
    Datum, FieldSummary, Literal, PartitionSpec, PrimitiveLiteral, PrimitiveType, Struct,
};

use crate::spec::Grain;

/// Selected partitions of one table: the units of its time partition field in `units`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRange {
    /// The partition field's name in the table's spec, e.g. `order_date_month`.
    pub field: String,
    pub grain: Grain,
    pub units: BTreeSet<i32>,
}

impl PartitionRange {
    /// An empty selection of `field`.
    pub fn new(field: impl Into<String>, grain: Grain) -> PartitionRange {
        PartitionRange {
            field: field.into(),
            grain,
            units: BTreeSet::new(),
        }
    }

    /// Adds every unit that overlaps the instants `[from, to]` (both inclusive, microseconds).
    pub fn add_instants(&mut self, from: i64, to: i64) {
        let (a, b) = (self.grain.unit_of(from), self.grain.unit_of(to.max(from)));
        self.units.extend(a..=b);
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// The selection as half-open spans of instants `[start, end)`, one per run of adjacent
    /// units, in order.
    pub fn spans(&self) -> Vec<(i64, i64)> {
        self.runs()
            .into_iter()
            .map(|(a, b)| (self.grain.start_of(a), self.grain.start_of(b + 1)))
            .collect()
    }

    /// Runs of adjacent units, inclusive.
    fn runs(&self) -> Vec<(i32, i32)> {
        let mut runs: Vec<(i32, i32)> = Vec::new();
        for &u in &self.units {
            match runs.last_mut() {
                Some((_, end)) if *end + 1 == u => *end = u,
                _ => runs.push((u, u)),
            }
        }
        runs
    }

    /// True when a partition tuple of `spec` lies in the selection. A NULL time value never
    /// does. Errors when `spec` has no field of this name.
    pub fn contains(&self, spec: &PartitionSpec, partition: &Struct) -> Result<bool, String> {
        Ok(self
            .unit_in(spec, partition)?
            .is_some_and(|u| self.units.contains(&u)))
    }

    /// The time unit of a partition tuple of `spec` (`None` for a NULL time value), whether
    /// selected or not. Errors when `spec` has no field of this name.
    pub fn unit_in(&self, spec: &PartitionSpec, partition: &Struct) -> Result<Option<i32>, String> {
        let index = self.index_in(spec)?;
        Ok(match partition.fields().get(index) {
            Some(Some(Literal::Primitive(PrimitiveLiteral::Int(v)))) => Some(*v),
            _ => None,
        })
    }

    /// False only when a manifest's partition summary proves none of its files is selected,
    /// so the manifest can be kept without reading it.
    pub fn may_touch(&self, spec: &PartitionSpec, summaries: Option<&[FieldSummary]>) -> bool {
        let Ok(index) = self.index_in(spec) else {
            return true;
        };
        let Some(summary) = summaries.and_then(|s| s.get(index)) else {
            return true;
        };
        let bound = |b: Option<&Vec<u8>>| {
            b.and_then(|b| Datum::try_from_bytes(b, PrimitiveType::Int).ok())
                .and_then(|d| match d.literal() {
                    PrimitiveLiteral::Int(v) => Some(*v),
                    _ => None,
                })
        };
        match (
            bound(summary.lower_bound.as_deref()),
            bound(summary.upper_bound.as_deref()),
        ) {
            (Some(lo), Some(hi)) => self.units.range(lo..=hi).next().is_some(),
            // Only NULL partitions (or no bounds at all): a NULL is never selected.
            (None, None) => false,
            _ => true,
        }
    }

    fn index_in(&self, spec: &PartitionSpec) -> Result<usize, String> {
        spec.fields()
            .iter()
            .position(|f| f.name == self.field)
            .ok_or_else(|| {
                format!(
                    "partition spec {} has no field `{}`",
                    spec.spec_id(),
                    self.field
                )
            })
    }
}

impl PartitionRange {
    /// The partition field as the spec writes it: `month(order_date)` for the field
    /// `order_date_month` (so a column named `month` reads `month(month)`, not
    /// `month_month`); the field's name when it is not `SOURCE_GRAIN`.
    pub fn field_label(&self) -> String {
        let grain = match self.grain {
            Grain::Year => "year",
            Grain::Month => "month",
            Grain::Day => "day",
            Grain::Hour => "hour",
        };
        match self.field.strip_suffix(&format!("_{grain}")) {
            Some(source) if !source.is_empty() => format!("{grain}({source})"),
            _ => self.field.clone(),
        }
    }
}

impl fmt::Display for PartitionRange {
    /// `month(order_date) in 2024-03..2024-05, 2024-08`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .runs()
            .into_iter()
            .map(|(a, b)| {
                if a == b {
                    self.grain.label(a)
                } else {
                    format!("{}..{}", self.grain.label(a), self.grain.label(b))
                }
            })
            .collect();
        if parts.is_empty() {
            write!(f, "{} in (none)", self.field_label())
        } else {
            write!(f, "{} in {}", self.field_label(), parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(s: &str) -> i64 {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
            .unwrap()
            .and_utc()
            .timestamp_micros()
    }

    #[test]
    fn spans_join_adjacent_units() {
        let mut r = PartitionRange::new("d_month", Grain::Month);
        r.add_instants(micros("2024-01-31 00:00:00"), micros("2024-03-01 00:00:00"));
        r.add_instants(micros("2024-06-10 00:00:00"), micros("2024-06-11 00:00:00"));
        assert_eq!(
            r.spans(),
            vec![
                (micros("2024-01-01 00:00:00"), micros("2024-04-01 00:00:00")),
                (micros("2024-06-01 00:00:00"), micros("2024-07-01 00:00:00")),
            ]
        );
        assert_eq!(r.to_string(), "month(d) in 2024-01..2024-03, 2024-06");
    }
}
