//! Strict text -> value parsing shared by the CSV and JSON readers. A value that does not parse
//! is an error with a reason, never a silent NULL or a rounded number.

use chrono::NaiveTime;

use crate::spec::ColumnType;
use crate::write::days_from_civil;

/// Why a value holding a NUL byte is refused: text with NUL is almost always a damaged or
/// binary file, and many readers (PostgreSQL, C-string APIs) cannot hold it.
pub const NUL_IN_TEXT: &str =
    "contains a NUL byte, which text may not (is the file binary or damaged?)";

/// One parsed, non-string value (strings are read back from the source record).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Parsed {
    Null,
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// Unscaled decimal value.
    Dec(i128),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01T00:00:00 (UTC for timestamptz).
    Ts(i64),
    /// A string; its text is fetched from the record.
    Str,
}

/// Parses a text field (CSV) of the given type. Numbers, dates and timestamps may carry
/// surrounding whitespace; strings are kept exactly.
pub fn parse_text(ty: ColumnType, text: &str) -> Result<Parsed, String> {
    if ty == ColumnType::String {
        return Ok(Parsed::Str);
    }
    let t = text.trim();
    match ty {
        ColumnType::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" | "t" | "1" | "yes" => Ok(Parsed::Bool(true)),
            "false" | "f" | "0" | "no" => Ok(Parsed::Bool(false)),
            _ => Err(format!("`{t}` is not a boolean")),
        },
        ColumnType::Int => parse_integer(t)
            .and_then(|v| i32::try_from(v).ok())
            .map(Parsed::I32)
            .ok_or_else(|| format!("`{t}` is not an int (32-bit integer)")),
        ColumnType::Long => parse_integer(t)
            .map(Parsed::I64)
            .ok_or_else(|| format!("`{t}` is not a long (64-bit integer)")),
        ColumnType::Float => t
            .parse::<f32>()
            .map(Parsed::F32)
            .map_err(|_| format!("`{t}` is not a float")),
        ColumnType::Double => t
            .parse::<f64>()
            .map(Parsed::F64)
            .map_err(|_| format!("`{t}` is not a double")),
        ColumnType::Decimal { precision, scale } => {
            parse_decimal(t, precision, scale).map(Parsed::Dec)
        }
        ColumnType::Date => parse_date(t.as_bytes())
            .map(Parsed::Date)
            .ok_or_else(|| format!("`{t}` is not a date (YYYY-MM-DD)")),
        ColumnType::Timestamp | ColumnType::TimestampTz => parse_timestamp(t).map(Parsed::Ts),
        ColumnType::String => Ok(Parsed::Str),
    }
}

/// Optional sign and ASCII digits only.
pub fn parse_integer(t: &str) -> Option<i64> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<i64>().ok()
}

/// A decimal literal with at most `scale` fractional digits and `precision - scale` integer
/// digits, returned unscaled. Exponents are refused.
pub fn parse_decimal(t: &str, precision: u8, scale: i8) -> Result<i128, String> {
    let scale = scale as usize;
    let bad = || format!("`{t}` is not a decimal({precision},{scale})");
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (int_part, frac_part) = body.split_once('.').unwrap_or((body, ""));
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
        || (body.contains('.') && frac_part.is_empty() && int_part.is_empty())
    {
        return Err(bad());
    }
    if frac_part.len() > scale {
        return Err(format!(
            "`{t}` has {} decimal places; decimal({precision},{scale}) allows {scale} (values are never rounded)",
            frac_part.len()
        ));
    }
    let int_digits = int_part.trim_start_matches('0').len();
    if int_digits > precision as usize - scale {
        return Err(format!(
            "`{t}` does not fit decimal({precision},{scale}): at most {} integer digits",
            precision as usize - scale
        ));
    }
    let mut unscaled: i128 = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        unscaled = unscaled * 10 + (b - b'0') as i128;
    }
    for _ in frac_part.len()..scale {
        unscaled *= 10;
    }
    Ok(if negative { -unscaled } else { unscaled })
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |acc, d| acc * 10 + (d - b'0') as u32))
}

/// `YYYY-MM-DD`, a real calendar date (proleptic Gregorian), as days since 1970-01-01.
pub fn parse_date(b: &[u8]) -> Option<i32> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(i64::from(year), month, day) as i32)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DD[ T]HH:MM:SS[.ffffff][Z|+HH:MM|-HH:MM]`, or a bare date (midnight). Offsets are
/// converted to UTC. More than microsecond precision is refused unless the extra digits are 0.
pub fn parse_timestamp(t: &str) -> Result<i64, String> {
    let bad = || format!("`{t}` is not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff])");
    let b = t.as_bytes();
    let days = parse_date(b.get(..10).ok_or_else(bad)?).ok_or_else(bad)? as i64;
    if b.len() == 10 {
        return Ok(days * 86_400_000_000);
    }
    if b.len() < 19 || !(b[10] == b' ' || b[10] == b'T') || b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (h, m, s) = (
        digits(&b[11..13]).ok_or_else(bad)?,
        digits(&b[14..16]).ok_or_else(bad)?,
        digits(&b[17..19]).ok_or_else(bad)?,
    );
    NaiveTime::from_hms_opt(h, m, s).ok_or_else(bad)?;
    let mut rest = &b[19..];
    let mut micros: i64 = 0;
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return Err(bad());
        }
        if frac[6.min(n)..n].iter().any(|&d| d != b'0') {
            return Err(format!(
                "`{t}` has sub-microsecond precision, which Iceberg timestamps cannot store"
            ));
        }
        for i in 0..6 {
            micros = micros * 10
                + frac
                    .get(i)
                    .filter(|_| i < n)
                    .map_or(0, |d| (d - b'0') as i64);
        }
        rest = &frac[n..];
    }
    let offset_secs: i64 = match rest {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), hh1, hh2, b':', mm1, mm2] => {
            let hh = digits(&[*hh1, *hh2]).ok_or_else(bad)? as i64;
            let mm = digits(&[*mm1, *mm2]).ok_or_else(bad)? as i64;
            (hh * 3600 + mm * 60) * if *sign == b'-' { -1 } else { 1 }
        }
        _ => return Err(bad()),
    };
    let secs = days * 86_400 + (h * 3600 + m * 60 + s) as i64 - offset_secs;
    Ok(secs * 1_000_000 + micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `YYYY-MM-DD` of four centuries (and of year 0), with months and days out of range,
    /// is accepted or refused, and counted, exactly as chrono's calendar does.
    #[test]
    fn dates_agree_with_chronos_calendar() {
        let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        let years = (0..4).chain(1890..2110).chain([2400, 9999]);
        let mut checked = 0;
        for year in years {
            for month in 0..=13 {
                for day in 0..=32 {
                    let text = format!("{year:04}-{month:02}-{day:02}");
                    let theirs = chrono::NaiveDate::from_ymd_opt(year, month, day)
                        .map(|d| (d - epoch).num_days() as i32);
                    assert_eq!(parse_date(text.as_bytes()), theirs, "{text}");
                    checked += usize::from(theirs.is_some());
                }
            }
        }
        assert_eq!(checked, 82_545); // 226 years, 55 of them leap (Python's calendar)
    }

    #[test]
    fn integers_are_strict() {
        assert_eq!(parse_text(ColumnType::Int, " 9 "), Ok(Parsed::I32(9)));
        assert!(parse_text(ColumnType::Int, "two").is_err());
        assert!(parse_text(ColumnType::Long, "1O").is_err());
        assert!(parse_text(ColumnType::Long, "N/A").is_err());
        assert!(parse_text(ColumnType::Int, "3000000000").is_err());
    }

    #[test]
    fn decimals_are_exact_and_never_rounded() {
        assert_eq!(parse_decimal("12.5", 10, 2), Ok(1250));
        assert_eq!(parse_decimal("-0.01", 10, 2), Ok(-1));
        assert_eq!(parse_decimal("12", 10, 2), Ok(1200));
        assert!(parse_decimal("12.345", 10, 2).is_err());
        assert!(parse_decimal("abc", 10, 2).is_err());
        assert!(parse_decimal("123456789", 10, 2).is_err());
        assert!(parse_decimal(".", 10, 2).is_err());
    }

    #[test]
    fn timestamps_are_microseconds_utc() {
        assert_eq!(parse_timestamp("1970-01-01 00:00:01"), Ok(1_000_000));
        assert_eq!(parse_timestamp("1970-01-01T00:00:00.5"), Ok(500_000));
        assert_eq!(parse_timestamp("1970-01-01T01:00:00+01:00"), Ok(0));
        assert_eq!(parse_timestamp("1970-01-02"), Ok(86_400_000_000));
        assert!(parse_timestamp("2026-13-45 10:00:00").is_err());
        assert!(parse_timestamp("2026-01-01 10:00:00.1234567").is_err());
        assert_eq!(
            parse_timestamp("1970-01-01 00:00:00.123456000"),
            Ok(123_456)
        );
    }
}
