//! A partition range: the set of time units (years, months, days or hours since 1970, as
//! Iceberg's time transforms number them) of a table's time partition field that a replace or
//! delete touches. Every other partition is left as it is.

use std::collections::BTreeSet;
use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, Timelike};
use iceberg::spec::{
    Datum, FieldSummary, Literal, PartitionSpec, PrimitiveLiteral, PrimitiveType, Struct, Transform,
};

const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;

/// The size of one partition of a time transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grain {
    Year,
    Month,
    Day,
    Hour,
}

impl Grain {
    /// The grain of `year`, `month`, `day` and `hour` transforms; `None` for any other.
    pub fn of(transform: Transform) -> Option<Grain> {
        match transform {
            Transform::Year => Some(Grain::Year),
            Transform::Month => Some(Grain::Month),
            Transform::Day => Some(Grain::Day),
            Transform::Hour => Some(Grain::Hour),
            _ => None,
        }
    }

    /// The unit holding an instant (microseconds since the epoch, UTC).
    pub fn unit_of(self, micros: i64) -> i32 {
        match self {
            Grain::Hour => micros.div_euclid(MICROS_PER_HOUR) as i32,
            Grain::Day => micros.div_euclid(MICROS_PER_DAY) as i32,
            Grain::Month | Grain::Year => {
                let t = DateTime::from_timestamp_micros(micros).unwrap_or_default();
                let years = t.year() - 1970;
                if self == Grain::Year {
                    years
                } else {
                    years * 12 + t.month0() as i32
                }
            }
        }
    }

    /// The first instant of a unit (microseconds since the epoch, UTC).
    pub fn start_of(self, unit: i32) -> i64 {
        let date = |y: i32, m: u32| {
            NaiveDate::from_ymd_opt(y, m, 1)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map_or(0, |t| t.and_utc().timestamp_micros())
        };
        match self {
            Grain::Hour => unit as i64 * MICROS_PER_HOUR,
            Grain::Day => unit as i64 * MICROS_PER_DAY,
            Grain::Month => date(1970 + unit.div_euclid(12), unit.rem_euclid(12) as u32 + 1),
            Grain::Year => date(1970 + unit, 1),
        }
    }

    /// How a unit is shown: `2024`, `2024-03`, `2024-03-05`, `2024-03-05-13`.
    pub fn label(self, unit: i32) -> String {
        let t = DateTime::from_timestamp_micros(self.start_of(unit)).unwrap_or_default();
        match self {
            Grain::Year => format!("{}", t.year()),
            Grain::Month => format!("{}-{:02}", t.year(), t.month()),
            Grain::Day => t.format("%Y-%m-%d").to_string(),
            Grain::Hour => format!("{}-{:02}", t.format("%Y-%m-%d"), t.hour()),
        }
    }
}

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

impl fmt::Display for PartitionRange {
    /// `order_date_month in 2024-03..2024-05, 2024-08`.
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
            write!(f, "{} in (none)", self.field)
        } else {
            write!(f, "{} in {}", self.field, parts.join(", "))
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
    fn units_match_iceberg_transforms() {
        // Iceberg: month(2024-03-15) = (2024-1970)*12 + 2 = 650; day(1970-01-02) = 1.
        assert_eq!(Grain::Month.unit_of(micros("2024-03-15 10:00:00")), 650);
        assert_eq!(Grain::Year.unit_of(micros("2024-03-15 10:00:00")), 54);
        assert_eq!(Grain::Day.unit_of(micros("1970-01-02 00:00:00")), 1);
        assert_eq!(Grain::Day.unit_of(micros("1969-12-31 23:59:59")), -1);
        assert_eq!(Grain::Hour.unit_of(micros("1970-01-01 05:30:00")), 5);
        assert_eq!(Grain::Month.start_of(650), micros("2024-03-01 00:00:00"));
        assert_eq!(Grain::Month.start_of(-1), micros("1969-12-01 00:00:00"));
        assert_eq!(Grain::Month.label(650), "2024-03");
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
        assert_eq!(r.to_string(), "d_month in 2024-01..2024-03, 2024-06");
    }
}
