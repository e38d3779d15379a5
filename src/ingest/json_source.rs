//! Newline-delimited JSON decoding: one object per line, blank lines skipped. Values are read
//! from their raw JSON text, so decimals stay exact.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::evolve::{reserved_error, undeclared_error};
use super::sink::RecordSink;
use super::values::NUL_IN_TEXT;
use super::values::{parse_date, parse_decimal, parse_integer, parse_timestamp, Parsed};
use crate::error::{Error, Result};
use crate::spec::{ColumnType, IngestJob, SchemaEvolution, LINEAGE_COLUMNS};

/// Reads one JSON Lines file into the sink.
pub fn read_json(job: &IngestJob, path: &Path, sink: &mut RecordSink) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let n = job.columns.len();
    let mut values = vec![Parsed::Null; n];
    let mut strings: Vec<String> = vec![String::new(); n];
    let mut ignored = std::collections::BTreeSet::new();
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(&buf) {
            // A byte-order mark opens the file, not its first record.
            Ok(t) if line_no == 1 => t.strip_prefix('\u{feff}').unwrap_or(t),
            Ok(t) => t,
            Err(_) => {
                let raw = String::from_utf8_lossy(&buf).into_owned();
                sink.bad(path, line_no, &raw, "invalid UTF-8".into(), None)?;
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        match decode(job, text, &mut values, &mut strings) {
            Ok(unknown) if unknown.is_empty() => {
                sink.good(&values, line_no, |i| strings[i].as_str())?
            }
            Ok(unknown) => {
                if let Some(reserved) = unknown
                    .iter()
                    .find(|k| LINEAGE_COLUMNS.contains(&k.as_str()))
                {
                    return Err(reserved_error(path, line_no, reserved));
                }
                if job.schema_evolution != SchemaEvolution::Ignore {
                    let names: Vec<&str> = unknown.iter().map(String::as_str).collect();
                    return Err(undeclared_error(job, path, line_no, &names));
                }
                ignored.extend(unknown);
                sink.good(&values, line_no, |i| strings[i].as_str())?
            }
            Err((reason, column)) => sink.bad(path, line_no, text, reason, column)?,
        }
    }
    if !ignored.is_empty() {
        tracing::warn!(
            file = %path.display(),
            "keys not in the schema of {} are not loaded (schema_evolution = \"ignore\"): {}",
            job.table,
            ignored.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// Decodes one JSON object into `values`; returns the keys the job has no column for.
fn decode<'j>(
    job: &'j IngestJob,
    text: &str,
    values: &mut [Parsed],
    strings: &mut [String],
) -> Result<Vec<String>, (String, Option<&'j str>)> {
    let Entries(object) = serde_json::from_str(text).map_err(|e| {
        let what = if e.is_eof() {
            "truncated JSON".to_string()
        } else {
            format!("invalid JSON object: {e}")
        };
        (what.replace(" at line 1 ", " at "), None)
    })?;
    // A key given twice is ambiguous (which value was meant?): the record is bad.
    for (i, (key, _)) in object.iter().enumerate() {
        if object[..i].iter().any(|(k, _)| k == key) {
            return Err((format!("duplicate key `{key}`"), None));
        }
    }
    let mut matched = 0;
    for (i, col) in job.columns.iter().enumerate() {
        let found = object
            .iter()
            .find(|(k, _)| *k == col.name.as_str())
            .map(|(_, v)| *v);
        matched += usize::from(found.is_some());
        let raw = found.map(|r| r.get().trim()).unwrap_or("null");
        let fail = |r: String| (format!("column {}: {r}", col.name), Some(col.name.as_str()));
        values[i] = if raw == "null" {
            if col.required {
                return Err(fail("NULL in a `not null` column".into()));
            }
            Parsed::Null
        } else {
            json_value(col.ty, raw, &mut strings[i], col.added).map_err(fail)?
        };
    }
    // Each key matched at most one column: any key left over is one the job does not have.
    if object.len() > matched {
        let mut unknown: Vec<String> = object
            .iter()
            .map(|(k, _)| k)
            .filter(|k| !job.columns.iter().any(|c| c.name == **k))
            .map(|k| k.to_string())
            .collect();
        unknown.sort();
        return Ok(unknown);
    }
    Ok(Vec::new())
}

/// One JSON value as `ty`. `any_value`: a string column that takes non-string values as
/// their JSON text (columns added by schema evolution).
fn json_value(
    ty: ColumnType,
    raw: &str,
    string_out: &mut String,
    any_value: bool,
) -> Result<Parsed, String> {
    let is_string = raw.starts_with('"');
    match ty {
        ColumnType::String if any_value && !is_string => {
            string_out.clear();
            string_out.push_str(raw);
            Ok(Parsed::Str)
        }
        ColumnType::String => {
            if !is_string {
                let kind = json_kind(raw);
                return Err(format!("expected a JSON string, found {kind} `{raw}`"));
            }
            *string_out = json_string(raw)?;
            if string_out.contains('\0') {
                return Err(NUL_IN_TEXT.into());
            }
            Ok(Parsed::Str)
        }
        ColumnType::Timestamp | ColumnType::TimestampTz | ColumnType::Date => {
            json_date_time(ty, raw)
        }
        ColumnType::Boolean => match raw {
            "true" => Ok(Parsed::Bool(true)),
            "false" => Ok(Parsed::Bool(false)),
            _ => Err(format!(
                "expected a JSON boolean, found {} `{raw}`",
                json_kind(raw)
            )),
        },
        ColumnType::Int | ColumnType::Long => json_integer(ty, raw),
        ColumnType::Float | ColumnType::Double => json_float(ty, raw),
        ColumnType::Decimal { precision, scale } => json_decimal(raw, precision, scale),
    }
}

/// What kind of JSON value `raw` is, for messages ("a string", "an object", ...; anything
/// else is "a number").
fn json_kind(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'"') => "a string",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b't' | b'f') => "a boolean",
        _ => "a number",
    }
}

/// The text of the JSON string `raw`, unescaped.
fn json_string(raw: &str) -> Result<String, String> {
    serde_json::from_str::<String>(raw).map_err(|e| format!("invalid JSON string: {e}"))
}

/// A JSON string as a date (`ty` is `Date`) or a timestamp (`Timestamp`, `TimestampTz`).
fn json_date_time(ty: ColumnType, raw: &str) -> Result<Parsed, String> {
    if !raw.starts_with('"') {
        return Err(format!(
            "expected a date/time string, found {} `{raw}`",
            json_kind(raw)
        ));
    }
    let s = json_string(raw)?;
    if ty == ColumnType::Date {
        parse_date(s.trim().as_bytes())
            .map(Parsed::Date)
            .ok_or_else(|| format!("`{s}` is not a date (YYYY-MM-DD)"))
    } else {
        parse_timestamp(s.trim()).map(Parsed::Ts)
    }
}

/// A JSON integer as an `Int` (which it must fit) or a `Long`.
fn json_integer(ty: ColumnType, raw: &str) -> Result<Parsed, String> {
    let v = parse_integer(raw)
        .ok_or_else(|| format!("expected a JSON integer, found {} `{raw}`", json_kind(raw)))?;
    if ty == ColumnType::Int {
        i32::try_from(v)
            .map(Parsed::I32)
            .map_err(|_| format!("`{raw}` does not fit an int (32-bit)"))
    } else {
        Ok(Parsed::I64(v))
    }
}

/// A JSON number as a `Float` or a `Double`.
fn json_float(ty: ColumnType, raw: &str) -> Result<Parsed, String> {
    let kind = json_kind(raw);
    if raw.starts_with('"') || kind != "a number" {
        return Err(format!("expected a JSON number, found {kind} `{raw}`"));
    }
    let v: f64 = raw
        .parse()
        .map_err(|_| format!("`{raw}` is not a number"))?;
    Ok(if ty == ColumnType::Float {
        Parsed::F32(v as f32)
    } else {
        Parsed::F64(v)
    })
}

/// A JSON number, written without an exponent, as a decimal of `precision` and `scale`.
fn json_decimal(raw: &str, precision: u8, scale: i8) -> Result<Parsed, String> {
    let kind = json_kind(raw);
    if kind != "a number" {
        return Err(format!("expected a JSON number, found {kind} `{raw}`"));
    }
    if raw.contains(['e', 'E']) {
        return Err(format!(
            "`{raw}`: exponent notation is not accepted for decimal({precision},{scale})"
        ));
    }
    parse_decimal(raw, precision, scale).map(Parsed::Dec)
}

/// The keys and raw values of one JSON object, in order, duplicates kept (a map would keep
/// only the last of a duplicated key). Keys without escapes are borrowed from the line.
struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// A borrowed key, when it has no escapes.
#[derive(Deserialize)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    entries.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}
