//! Column lineage as a transform snapshot records it (`pipeline.lineage` in its summary), and
//! what comparing two such records tells: a renamed column (same derivation, new name) rather
//! than a dropped one plus an added one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::query::QueryLineage;
use crate::spec::TableName;

/// Snapshot summary key of a transform snapshot's column lineage (JSON, see [`Recorded`]).
pub const LINEAGE_KEY: &str = "pipeline.lineage";

/// How one output column was produced, as recorded on a transform snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// `namespace.table.column` of every source column.
    pub sources: Vec<String>,
    /// A source column passed through unchanged (possibly renamed or cast).
    pub direct: bool,
    /// The SELECT expression without its alias.
    pub expr: String,
}

impl Recorded {
    /// What identifies a column across a rename: a passed-through column by its source
    /// column, a computed one by its sources and expression. `upstream` renames sources
    /// (`ns.table.old` -> `ns.table.new`) renamed upstream in the same change.
    /// `None` when the derivation is not known well enough to recognize (a computed column
    /// whose expression text is unknown): such a column is never taken for a rename.
    pub fn signature(&self, upstream: &BTreeMap<String, String>) -> Option<String> {
        let mut sources: Vec<&str> = self
            .sources
            .iter()
            .map(|s| upstream.get(s).unwrap_or(s).as_str())
            .collect();
        sources.sort_unstable();
        if self.direct && sources.len() == 1 {
            Some(format!("direct|{}", sources[0]))
        } else if self.expr.is_empty() {
            None
        } else {
            Some(format!("{}|{}", sources.join(","), self.expr))
        }
    }
}

/// Columns of `table` renamed by its current snapshot (same field id, new name) against the
/// snapshot before it: `ns.table.old` -> `ns.table.new`.
pub fn snapshot_renames(
    table: &TableName,
    metadata: &iceberg::spec::TableMetadata,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(current) = metadata.current_snapshot() else {
        return out;
    };
    let previous = current
        .parent_snapshot_id()
        .and_then(|id| metadata.snapshot_by_id(id))
        .and_then(|s| s.schema_id())
        .and_then(|id| metadata.schema_by_id(id));
    let now = current
        .schema_id()
        .and_then(|id| metadata.schema_by_id(id))
        .unwrap_or_else(|| metadata.current_schema());
    let Some(previous) = previous else {
        return out;
    };
    for field in now.as_struct().fields() {
        if let Some(old) = previous.field_by_id(field.id) {
            if old.name != field.name {
                out.insert(
                    format!("{table}.{}", old.name),
                    format!("{table}.{}", field.name),
                );
            }
        }
    }
    out
}

/// The recorded form of a query's lineage: output column -> how it is produced.
pub fn record(lineage: &QueryLineage) -> BTreeMap<String, Recorded> {
    lineage
        .outputs
        .iter()
        .map(|(name, d, expr)| {
            (
                name.clone(),
                Recorded {
                    sources: d.sources.iter().map(|s| s.to_string()).collect(),
                    direct: d.direct,
                    expr: expr.clone(),
                },
            )
        })
        .collect()
}

/// The lineage recorded on a table's current snapshot, if a transform wrote it.
pub fn recorded_on(metadata: &iceberg::spec::TableMetadata) -> BTreeMap<String, Recorded> {
    metadata
        .current_snapshot()
        .and_then(|s| {
            s.summary()
                .additional_properties
                .get(LINEAGE_KEY)
                .and_then(|text| serde_json::from_str(text).ok())
        })
        .unwrap_or_default()
}

/// Renames implied by a new lineage against the recorded one: `new name -> old name` for every
/// new column whose derivation equals exactly one vanished old column's (and vice versa).
pub fn renames(
    old: &BTreeMap<String, Recorded>,
    new: &BTreeMap<String, Recorded>,
    upstream: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let vanished: Vec<(&String, String)> = old
        .iter()
        .filter(|(name, _)| !new.contains_key(*name))
        .filter_map(|(name, r)| Some((name, r.signature(upstream)?)))
        .collect();
    let appeared: Vec<(&String, String)> = new
        .iter()
        .filter(|(name, _)| !old.contains_key(*name))
        .filter_map(|(name, r)| Some((name, r.signature(&BTreeMap::new())?)))
        .collect();
    let mut out = BTreeMap::new();
    for (new_name, sig) in &appeared {
        let olds: Vec<&&String> = vanished
            .iter()
            .filter(|(_, s)| s == sig)
            .map(|(n, _)| n)
            .collect();
        let news = appeared.iter().filter(|(_, s)| s == sig).count();
        if olds.len() == 1 && news == 1 {
            out.insert((*new_name).clone(), (**olds[0]).clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ColumnRef;

    fn rec(sources: &[&str], expr: &str) -> Recorded {
        Recorded {
            sources: sources.iter().map(|s| s.to_string()).collect(),
            direct: true,
            expr: expr.into(),
        }
    }

    #[test]
    fn a_rename_keeps_the_derivation() {
        let old = BTreeMap::from([
            ("id".to_string(), rec(&["b.c.id"], "c.id")),
            ("customer_tier".to_string(), rec(&["b.c.tier"], "c.tier")),
            ("gone".to_string(), rec(&["b.c.x"], "c.x")),
        ]);
        let new = BTreeMap::from([
            ("id".to_string(), rec(&["b.c.id"], "c.id")),
            ("loyalty_tier".to_string(), rec(&["b.c.tier"], "c.tier")),
            ("other".to_string(), rec(&["b.c.y"], "c.y")),
        ]);
        let r = renames(&old, &new, &BTreeMap::new());
        assert_eq!(r.len(), 1);
        assert_eq!(r["loyalty_tier"], "customer_tier");
        // Downstream of a rename: the source itself was renamed.
        let old = BTreeMap::from([(
            "customer_tier".to_string(),
            rec(&["s.c.customer_tier"], "c.customer_tier"),
        )]);
        let new = BTreeMap::from([(
            "loyalty_tier".to_string(),
            rec(&["s.c.loyalty_tier"], "c.loyalty_tier"),
        )]);
        assert!(renames(&old, &new, &BTreeMap::new()).is_empty());
        let upstream = BTreeMap::from([(
            "s.c.customer_tier".to_string(),
            "s.c.loyalty_tier".to_string(),
        )]);
        assert_eq!(
            renames(&old, &new, &upstream)["loyalty_tier"],
            "customer_tier"
        );
    }

    #[test]
    fn ambiguous_derivations_are_not_renames() {
        let old = BTreeMap::from([
            ("a".to_string(), rec(&["b.c.tier"], "c.tier")),
            ("b".to_string(), rec(&["b.c.tier"], "c.tier")),
        ]);
        let new = BTreeMap::from([("z".to_string(), rec(&["b.c.tier"], "c.tier"))]);
        assert!(renames(&old, &new, &BTreeMap::new()).is_empty());
        assert_eq!(
            ColumnRef::parse("silver.customers.tier").map(|c| c.to_string()),
            Some("silver.customers.tier".into())
        );
        assert!(ColumnRef::parse("customers.tier").is_none());
    }
}
