//! Partition expressions: `day(order_ts)`, `bucket(16, id)` or `bucket[16](id)`, a bare column.

use iceberg::spec::Transform;

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
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("`{name}` width must be a positive integer, got `{n}`"))
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

/// True for a plain SQL identifier: letters, digits and `_`, not starting with a digit.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
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
}
