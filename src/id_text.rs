//! Snapshot ids in JSON as strings.
//!
//! Iceberg snapshot ids are 64-bit integers, most of them above 2^53: as JSON numbers, `jq` and
//! JavaScript (so most agents) round them (`7188641316525520000`), and the rounded id names no
//! snapshot. Every id this engine prints with `--json` or returns over MCP is therefore a string of
//! its decimal digits. Iceberg's REST spec keeps them numbers; the catalog clients here speak that
//! spec unchanged.
//!
//! Reading accepts both, so run records written before ids were strings still read:
//! `#[serde(with = "crate::id_text")]` on an `i64`, `crate::id_text::option` on an `Option<i64>`,
//! `crate::id_text::map` on a `BTreeMap<String, i64>`.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Writes the id as a string of its digits.
pub fn serialize<S: Serializer>(id: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(id)
}

/// Reads an id written as a string or as a JSON number.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(IdVisitor)
}

/// Parses an id a person or an agent typed: digits, optionally signed.
pub fn parse(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a snapshot id: a string of digits or an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("snapshot id {v} is out of range")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        Err(E::custom(format!(
            "snapshot id {v} is not exact (rounded by a JSON number?): pass it as a string"
        )))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        parse(v).ok_or_else(|| E::custom(format!("'{v}' is not a snapshot id (digits)")))
    }
}

/// `Option<i64>`: `null` or the id as a string.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(id: &Option<i64>, serializer: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => serializer.collect_str(id),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<i64>, D::Error> {
        #[derive(Deserialize)]
        struct Id(#[serde(with = "super")] i64);
        Ok(Option::<Id>::deserialize(deserializer)?.map(|Id(id)| id))
    }
}

/// `BTreeMap<String, i64>` of ids: each value as a string.
pub mod map {
    use std::collections::BTreeMap;

    use serde::ser::SerializeMap;
    use serde::Serializer;

    pub fn serialize<S: Serializer>(
        ids: &BTreeMap<String, i64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(ids.len()))?;
        for (key, id) in ids {
            map.serialize_entry(key, &id.to_string())?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Record {
        #[serde(with = "super")]
        id: i64,
        #[serde(with = "super::option", default)]
        parent: Option<i64>,
    }

    #[test]
    fn ids_are_strings_and_old_numbers_still_read() {
        let record = Record {
            id: 7_188_641_316_525_519_361,
            parent: None,
        };
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(text, r#"{"id":"7188641316525519361","parent":null}"#);
        assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), record);
        let old = r#"{"id":7188641316525519361,"parent":42}"#;
        let read: Record = serde_json::from_str(old).unwrap();
        assert_eq!(
            (read.id, read.parent),
            (7_188_641_316_525_519_361, Some(42))
        );
        assert!(serde_json::from_str::<Record>(r#"{"id":7.1e18}"#).is_err());
    }
}
