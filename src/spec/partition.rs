//! Partition expressions: `day(order_ts)`, `bucket(16, id)` or `bucket[16](id)`, a bare column;
//! and the time grains (year, month, day, hour) of Iceberg's time transforms, numbered as
//! Iceberg numbers them.

use chrono::{DateTime, Datelike, NaiveDate, Timelike};
use iceberg::spec::Transform;

use super::sql::is_identifier;

/// One partition field: an Iceberg transform applied to a source column.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionField {
    /// Column the transform reads.
    pub source: String,
    pub transform: Transform,
    /// The expression as written in the spec, for messages.
    pub text: String,
}

impl PartitionField {
    /// Parses one `partition_by` entry. Accepted: `col`, `identity(col)`, `year(col)`,
    /// `month(col)`, `day(col)`, `hour(col)`, `bucket(N, col)`, `bucket[N](col)`,
    /// `truncate(W, col)`, `truncate[W](col)`.
    pub fn parse(text: &str) -> Result<PartitionField, String> {
        let t = text.trim();
        let err = || {
            format!(
                "invalid partition expression `{t}`; expected a column, identity(c), year(c), \
                 month(c), day(c), hour(c), bucket(N, c) or truncate(W, c)"
            )
        };
        let Some(open) = t.find('(') else {
            if is_identifier(t) {
                return Ok(PartitionField {
                    source: t.to_string(),
                    transform: Transform::Identity,
                    text: t.to_string(),
                });
            }
            return Err(err());
        };
        let inner = t[open + 1..].strip_suffix(')').ok_or_else(err)?;
        let head = t[..open].trim().to_ascii_lowercase();
        let args: Vec<&str> = inner.split(',').map(str::trim).collect();
        let (name, bracket_arg) = match head.split_once('[') {
            Some((n, rest)) => (n.to_string(), Some(rest.strip_suffix(']').ok_or_else(err)?)),
            None => (head.clone(), None),
        };
        let (number, column) = match (bracket_arg, args.as_slice()) {
            (Some(n), [c]) => (Some(n.trim()), *c),
            (None, [c]) => (None, *c),
            (None, [n, c]) => (Some(*n), *c),
            _ => return Err(err()),
        };
        if !is_identifier(column) {
            return Err(err());
        }
        let parse_n = |n: Option<&str>| -> Result<u32, String> {
            let n = n.ok_or_else(|| format!("`{name}` needs a width: {name}(N, {column})"))?;
            n.parse::<u32>()
                .ok()
                .filter(|v| *v > 0 && *v <= i32::MAX as u32)
                .ok_or_else(|| {
                    format!(
                        "`{name}` width must be a whole number from 1 to {}, got `{n}`",
                        i32::MAX
                    )
                })
        };
        let transform = match name.as_str() {
            "identity" if number.is_none() => Transform::Identity,
            "year" | "years" if number.is_none() => Transform::Year,
            "month" | "months" if number.is_none() => Transform::Month,
            "day" | "days" if number.is_none() => Transform::Day,
            "hour" | "hours" if number.is_none() => Transform::Hour,
            "bucket" => Transform::Bucket(parse_n(number)?),
            "truncate" => Transform::Truncate(parse_n(number)?),
            _ => return Err(err()),
        };
        Ok(PartitionField {
            source: column.to_string(),
            transform,
            text: t.to_string(),
        })
    }

    /// Whether this field's transform applies to a source column of type `ty` (Iceberg's own
    /// rules: `month` needs a date or timestamp, `truncate` a string, number or binary, ...).
    pub fn check_type(&self, ty: &iceberg::spec::Type) -> Result<(), String> {
        match self.transform.result_type(ty) {
            Ok(_) => Ok(()),
            Err(_) => {
                let needs = match self.transform {
                    Transform::Year | Transform::Month | Transform::Day => "a date or timestamp",
                    Transform::Hour => "a timestamp",
                    Transform::Truncate(_) => "a string, int, long, decimal or binary",
                    Transform::Bucket(_) => "a column of a primitive type (not float or double)",
                    _ => "a column of a primitive type",
                };
                Err(format!(
                    "partition_by `{}` needs {needs} column; `{}` is {ty}",
                    self.text, self.source
                ))
            }
        }
    }

    /// The Iceberg partition field name: `order_ts_day`, `id_bucket_16`, or the column itself.
    pub fn field_name(&self) -> String {
        match self.transform {
            Transform::Identity => self.source.clone(),
            Transform::Year => format!("{}_year", self.source),
            Transform::Month => format!("{}_month", self.source),
            Transform::Day => format!("{}_day", self.source),
            Transform::Hour => format!("{}_hour", self.source),
            Transform::Bucket(n) => format!("{}_bucket_{n}", self.source),
            Transform::Truncate(w) => format!("{}_trunc_{w}", self.source),
            _ => format!("{}_{}", self.source, self.transform),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_transform() {
        let p = |s| PartitionField::parse(s).unwrap().transform;
        assert_eq!(p("day(order_ts)"), Transform::Day);
        assert_eq!(p("status"), Transform::Identity);
        assert_eq!(p("bucket(16, customer_id)"), Transform::Bucket(16));
        assert_eq!(p("bucket[8](customer_id)"), Transform::Bucket(8));
        assert_eq!(p("truncate[4](product)"), Transform::Truncate(4));
        assert_eq!(p("month(order_date)"), Transform::Month);
        assert!(PartitionField::parse("week(order_ts)").is_err());
        assert!(PartitionField::parse("bucket(customer_id)").is_err());
    }

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
}
