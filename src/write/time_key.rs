//! The Iceberg time transforms (`year`, `month`, `day`, `hour`) as a DataFusion function over
//! a date or timestamp column, by integer arithmetic: the key that deals a result's rows to
//! parallel writers, evaluated on every row written. It gives each row the partition value
//! Iceberg's transform gives it (years, months, days or hours since 1970, UTC); `date_trunc`,
//! used before, went through a calendar type per row and cost about 6 % of a write.

use std::any::Any;
use std::cell::Cell;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array};
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use iceberg::spec::Transform;

use super::calendar::{civil_from_days, days_from_civil};

/// A time transform's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeUnitKey {
    Year,
    Month,
    Day,
    Hour,
}

impl TimeUnitKey {
    /// The unit of a time transform; `None` for any other transform.
    pub fn of(transform: &Transform) -> Option<TimeUnitKey> {
        match transform {
            Transform::Year => Some(TimeUnitKey::Year),
            Transform::Month => Some(TimeUnitKey::Month),
            Transform::Day => Some(TimeUnitKey::Day),
            Transform::Hour => Some(TimeUnitKey::Hour),
            _ => None,
        }
    }
}

/// `unit` of a date or timestamp argument, as Iceberg's partition value (an `Int32`; NULL
/// for NULL).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimeKey {
    unit: TimeUnitKey,
    signature: Signature,
}

/// The function computing `unit`'s partition value of its one argument.
pub fn time_key(unit: TimeUnitKey) -> ScalarUDF {
    ScalarUDF::from(TimeKey {
        unit,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

impl ScalarUDFImpl for TimeKey {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> &str {
        match self.unit {
            TimeUnitKey::Year => "iceberg_year",
            TimeUnitKey::Month => "iceberg_month",
            TimeUnitKey::Day => "iceberg_day",
            TimeUnitKey::Hour => "iceberg_hour",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let array = arg.to_array(args.number_rows)?;
        Ok(ColumnarValue::Array(Arc::new(keys(self.unit, &array)?)))
    }
}

const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;

/// `unit`'s partition value of every value of `array` (a date or a timestamp).
pub(super) fn keys(unit: TimeUnitKey, array: &ArrayRef) -> Result<Int32Array> {
    let last = LastPeriod::new(unit);
    let of_micros = |m: i64| last.key_of_micros(m);
    Ok(match array.data_type() {
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .unary(|d| last.key_of_days(i64::from(d))),
        DataType::Date64 => array
            .as_primitive::<Date64Type>()
            .unary(|ms| of_micros(ms.saturating_mul(1000))),
        DataType::Timestamp(TimeUnit::Second, _) => array
            .as_primitive::<TimestampSecondType>()
            .unary(|s| of_micros(s.saturating_mul(1_000_000))),
        DataType::Timestamp(TimeUnit::Millisecond, _) => array
            .as_primitive::<TimestampMillisecondType>()
            .unary(|ms| of_micros(ms.saturating_mul(1000))),
        DataType::Timestamp(TimeUnit::Microsecond, _) => array
            .as_primitive::<TimestampMicrosecondType>()
            .unary(of_micros),
        // Floor to microseconds first (as Iceberg's transform of a nanosecond timestamp).
        DataType::Timestamp(TimeUnit::Nanosecond, _) => array
            .as_primitive::<TimestampNanosecondType>()
            .unary(|ns| of_micros(ns.div_euclid(1000))),
        other => return exec_err!("a time partition key of a {other} column"),
    })
}

/// The period (hour, day, month or year) the last value fell in: its key, and the half-open
/// range of microseconds, or of days, it spans. The rows of a batch mostly fall in a few
/// periods, so most keys cost two comparisons instead of a division and a calendar
/// computation each (at 5M orders these were 1.5 % of a full run's CPU).
struct LastPeriod {
    unit: TimeUnitKey,
    /// `(from, to, key)`, microseconds; empty at first.
    micros: Cell<(i64, i64, i32)>,
    /// `(from, to, key)`, days; empty at first.
    days: Cell<(i64, i64, i32)>,
}

impl LastPeriod {
    fn new(unit: TimeUnitKey) -> LastPeriod {
        LastPeriod {
            unit,
            micros: Cell::new((1, 0, 0)),
            days: Cell::new((1, 0, 0)),
        }
    }

    /// The key of a timestamp, `micros` since 1970-01-01T00:00:00 (UTC).
    fn key_of_micros(&self, micros: i64) -> i32 {
        let (from, to, key) = self.micros.get();
        if from <= micros && micros < to {
            return key;
        }
        // The period in hours or days, and the microseconds in one of those.
        let ((key, from, to), per) = match self.unit {
            TimeUnitKey::Hour => {
                let hours = micros.div_euclid(MICROS_PER_HOUR);
                (
                    (hours as i32, hours, hours.saturating_add(1)),
                    MICROS_PER_HOUR,
                )
            }
            _ => (
                period(self.unit, micros.div_euclid(MICROS_PER_DAY)),
                MICROS_PER_DAY,
            ),
        };
        let (from, to) = (from.saturating_mul(per), to.saturating_mul(per));
        self.micros.set((from, to, key));
        key
    }

    /// The key of a date, `days` since 1970-01-01.
    fn key_of_days(&self, days: i64) -> i32 {
        if self.unit == TimeUnitKey::Hour {
            return days.saturating_mul(24) as i32;
        }
        let (from, to, key) = self.days.get();
        if from <= days && days < to {
            return key;
        }
        let (key, from, to) = period(self.unit, days);
        self.days.set((from, to, key));
        key
    }
}

/// The key of `unit` (year, month or day) of the day `days` since 1970-01-01, and the
/// half-open range of days of its period.
fn period(unit: TimeUnitKey, days: i64) -> (i32, i64, i64) {
    if matches!(unit, TimeUnitKey::Day | TimeUnitKey::Hour) {
        return (days as i32, days, days + 1);
    }
    let (year, month, _) = civil_from_days(days);
    let years = (year - 1970) as i32;
    if unit == TimeUnitKey::Year {
        let (first, next) = (days_from_civil(year, 1, 1), days_from_civil(year + 1, 1, 1));
        return (years, first, next);
    }
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (
        years * 12 + month as i32 - 1,
        days_from_civil(year, month, 1),
        days_from_civil(next_year, next_month, 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Date32Array, TimestampMicrosecondArray, TimestampNanosecondArray};
    use iceberg::transform::create_transform_function;

    /// Agrees with iceberg's own transforms, row for row, nulls included, across centuries,
    /// leap days and both sides of 1970.
    #[test]
    fn agrees_with_icebergs_transforms() {
        let days: Vec<Option<i32>> = (-800_000..800_000)
            .step_by(97)
            .map(Some)
            .chain([None, Some(-1), Some(0), Some(59), Some(60), Some(11_016)])
            .collect();
        let micros: Vec<Option<i64>> = days
            .iter()
            .flat_map(|d| {
                let base = d.map(|d| i64::from(d) * MICROS_PER_DAY);
                [
                    base,
                    base.map(|b| b - 1),
                    base.map(|b| b + 13 * MICROS_PER_HOUR + 7),
                ]
            })
            .collect();
        let date: ArrayRef = Arc::new(Date32Array::from(days));
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(micros.clone()));
        let ts_tz: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(micros.clone()).with_timezone("+00:00"));
        let ns: ArrayRef = Arc::new(TimestampNanosecondArray::from(
            micros
                .iter()
                // Nanoseconds reach only the years 1677-2262.
                .map(|m| m.filter(|m| m.abs() < 9_000_000 * MICROS_PER_DAY / 1000))
                .map(|m| m.map(|m| m * 1000 + 999))
                .collect::<Vec<_>>(),
        ));
        for array in [&date, &ts, &ts_tz, &ns] {
            assert_agrees(array);
        }
    }

    /// Every unit's keys of `array` are iceberg's (hours only of microsecond timestamps:
    /// iceberg 0.10 has no hour of a date, nor of nanoseconds).
    fn assert_agrees(array: &ArrayRef) {
        let units = [
            (TimeUnitKey::Year, Transform::Year),
            (TimeUnitKey::Month, Transform::Month),
            (TimeUnitKey::Day, Transform::Day),
            (TimeUnitKey::Hour, Transform::Hour),
        ];
        for (unit, transform) in units {
            let nanos = matches!(
                array.data_type(),
                DataType::Timestamp(TimeUnit::Nanosecond, _)
            );
            if unit == TimeUnitKey::Hour && (array.data_type() == &DataType::Date32 || nanos) {
                continue;
            }
            let ours = keys(unit, array).unwrap();
            let theirs = create_transform_function(&transform)
                .unwrap()
                .transform(array.clone())
                .unwrap();
            let theirs = arrow::compute::cast(&theirs, &DataType::Int32).unwrap();
            assert_eq!(
                &ours as &dyn Array,
                theirs.as_ref(),
                "{unit:?} of {}",
                array.data_type()
            );
        }
    }

    /// Keys of one period are remembered and given to the next values inside it: values in
    /// runs (ascending, descending) and scattered, every hour of 1998-10 to 2001-06 (2000: a
    /// leap year of a century) and around 1970, each also 1 µs before and after the hour, get
    /// iceberg's keys; a remembered period never reaches past its end.
    #[test]
    fn remembered_periods_end_where_icebergs_do() {
        let hours = (-400 * 24..400 * 24).chain(10_500 * 24..11_500 * 24);
        let micros: Vec<i64> = hours
            .flat_map(|h| {
                let m = h * MICROS_PER_HOUR;
                [m - 1, m, m + 1]
            })
            .collect();
        let n = micros.len();
        let descending: Vec<i64> = micros.iter().rev().copied().collect();
        // Index i * 7919 mod n: every value once, in no order.
        let scattered: Vec<i64> = (0..n).map(|i| micros[(i * 7919) % n]).collect();
        for values in [micros, descending, scattered] {
            let days: Vec<i32> = values
                .iter()
                .map(|m| m.div_euclid(MICROS_PER_DAY) as i32)
                .collect();
            assert_agrees(&(Arc::new(TimestampMicrosecondArray::from(values)) as ArrayRef));
            assert_agrees(&(Arc::new(Date32Array::from(days)) as ArrayRef));
        }
    }

    #[test]
    fn hours_of_nanoseconds_floor_like_microseconds() {
        let ns: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![
            Some(-1),
            Some(0),
            Some(3_600_000_000_000 - 1),
            Some(3_600_000_000_000),
            None,
        ]));
        let hours = keys(TimeUnitKey::Hour, &ns).unwrap();
        assert_eq!(
            hours,
            Int32Array::from(vec![Some(-1), Some(0), Some(0), Some(1), None])
        );
    }
}
