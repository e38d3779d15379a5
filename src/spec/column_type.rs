//! Column types as written in an ingest job's `schema`, and their Iceberg equivalents.

use iceberg::spec::{PrimitiveType, Type};

/// A declared column type. Timestamps are stored in microseconds (Iceberg has no nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Decimal {
        precision: u8,
        scale: i8,
    },
    String,
    Date,
    /// Timestamp without time zone.
    Timestamp,
    /// Timestamp with time zone, stored in UTC.
    TimestampTz,
}

/// The type names accepted in a spec, for hints.
pub const TYPE_NAMES: &str =
    "boolean, int, long, float, double, decimal(P,S), string, date, timestamp, timestamptz";

impl ColumnType {
    /// Parses `long`, `decimal(10,2)`, ... Aliases: `integer`, `bigint`, `bool`, `varchar`, `text`.
    pub fn parse(text: &str) -> Option<ColumnType> {
        let t = text.trim().to_ascii_lowercase();
        let simple = match t.as_str() {
            "boolean" | "bool" => Some(ColumnType::Boolean),
            "int" | "integer" | "int32" => Some(ColumnType::Int),
            "long" | "bigint" | "int64" => Some(ColumnType::Long),
            "float" | "real" | "float32" => Some(ColumnType::Float),
            "double" | "float64" => Some(ColumnType::Double),
            "string" | "varchar" | "text" => Some(ColumnType::String),
            "date" => Some(ColumnType::Date),
            "timestamp" => Some(ColumnType::Timestamp),
            "timestamptz" => Some(ColumnType::TimestampTz),
            _ => None,
        };
        if simple.is_some() {
            return simple;
        }
        let inner = t.strip_prefix("decimal(")?.strip_suffix(')')?;
        let (p, s) = inner.split_once(',')?;
        let precision: u8 = p.trim().parse().ok()?;
        let scale: i8 = s.trim().parse().ok()?;
        if !(1..=38).contains(&precision) || scale < 0 || scale as u8 > precision {
            return None;
        }
        Some(ColumnType::Decimal { precision, scale })
    }

    /// The column type stored as `ty`, if a spec can declare it.
    pub fn from_iceberg(ty: &Type) -> Option<ColumnType> {
        let Type::Primitive(p) = ty else {
            return None;
        };
        Some(match p {
            PrimitiveType::Boolean => ColumnType::Boolean,
            PrimitiveType::Int => ColumnType::Int,
            PrimitiveType::Long => ColumnType::Long,
            PrimitiveType::Float => ColumnType::Float,
            PrimitiveType::Double => ColumnType::Double,
            PrimitiveType::Decimal { precision, scale } => ColumnType::Decimal {
                precision: u8::try_from(*precision).ok()?,
                scale: i8::try_from(*scale).ok()?,
            },
            PrimitiveType::String => ColumnType::String,
            PrimitiveType::Date => ColumnType::Date,
            PrimitiveType::Timestamp => ColumnType::Timestamp,
            PrimitiveType::Timestamptz => ColumnType::TimestampTz,
            _ => return None,
        })
    }

    /// The Iceberg type this column is stored as.
    pub fn iceberg_type(self) -> Type {
        Type::Primitive(match self {
            ColumnType::Boolean => PrimitiveType::Boolean,
            ColumnType::Int => PrimitiveType::Int,
            ColumnType::Long => PrimitiveType::Long,
            ColumnType::Float => PrimitiveType::Float,
            ColumnType::Double => PrimitiveType::Double,
            ColumnType::Decimal { precision, scale } => PrimitiveType::Decimal {
                precision: precision as u32,
                scale: scale as u32,
            },
            ColumnType::String => PrimitiveType::String,
            ColumnType::Date => PrimitiveType::Date,
            ColumnType::Timestamp => PrimitiveType::Timestamp,
            ColumnType::TimestampTz => PrimitiveType::Timestamptz,
        })
    }

    /// How the type is written in a spec.
    pub fn name(self) -> String {
        match self {
            ColumnType::Boolean => "boolean".into(),
            ColumnType::Int => "int".into(),
            ColumnType::Long => "long".into(),
            ColumnType::Float => "float".into(),
            ColumnType::Double => "double".into(),
            ColumnType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            ColumnType::String => "string".into(),
            ColumnType::Date => "date".into(),
            ColumnType::Timestamp => "timestamp".into(),
            ColumnType::TimestampTz => "timestamptz".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_decimals() {
        assert_eq!(ColumnType::parse("long"), Some(ColumnType::Long));
        assert_eq!(
            ColumnType::parse("decimal(10, 2)"),
            Some(ColumnType::Decimal {
                precision: 10,
                scale: 2
            })
        );
        assert_eq!(ColumnType::parse("decimal(2,3)"), None);
        assert_eq!(ColumnType::parse("lng"), None);
    }
}
