//! The ranges of key values a run wrote, to narrow a `unique` check of those rows.
//!
//! A `unique` check of the rows a run wrote looks for their keys anywhere in the table, so it
//! reads every key of the table: a nightly run that wrote one day of a year-old table reads a
//! year of keys. Tables whose files hold narrow key ranges (ids that grow with time, files
//! sorted by the key, as a deduplicating transform writes them) need not be read outside the
//! ranges the run's keys fall in: the check's scan gets those ranges as a predicate, and the
//! Parquet reader skips the row groups and pages whose statistics lie outside all of them.
//! The ranges cover every key the run wrote (the check stays exact: its join still matches
//! key for key); they are the [`MAX_RANGES`] ranges left when the sorted keys are split at
//! their widest gaps.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use arrow::array::{Array, Int64Array};
use arrow::datatypes::DataType;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::engine::{query, Entry};
use crate::error::{Error, Result};
use crate::spec::{quote_ident, TableName};

/// Ranges a check's predicate names at most.
const MAX_RANGES: usize = 16;

/// The key values of a set of rows: ranges covering every non-NULL value, and whether any
/// value is NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRanges {
    /// Inclusive, ascending, disjoint.
    pub ranges: Vec<(i64, i64)>,
    pub nulls: bool,
}

impl KeyRanges {
    /// The predicate selecting the rows of `alias` whose `column` may equal one of the keys
    /// (`IS NOT DISTINCT FROM`: a NULL key matches NULLs).
    pub fn predicate(&self, alias: &str, column: &str) -> String {
        let c = format!("{alias}.{}", quote_ident(column));
        let mut terms: Vec<String> = self
            .ranges
            .iter()
            .map(|(lo, hi)| format!("{c} BETWEEN {lo} AND {hi}"))
            .collect();
        if self.nulls {
            terms.push(format!("{c} IS NULL"));
        }
        if terms.is_empty() {
            return "FALSE".into();
        }
        format!("({})", terms.join(" OR "))
    }
}

/// Folds keys given in ascending order into at most `max` ranges that cover them all: the
/// keys split at their `max - 1` widest gaps.
#[derive(Debug)]
struct RangeFolder {
    max: usize,
    first: Option<i64>,
    last: i64,
    /// The widest gaps so far (a min-heap of (width, key before, key after)).
    gaps: BinaryHeap<Reverse<(u64, i64, i64)>>,
}

impl RangeFolder {
    fn new(max: usize) -> RangeFolder {
        RangeFolder {
            max: max.max(1),
            first: None,
            last: 0,
            gaps: BinaryHeap::new(),
        }
    }

    /// Adds `key`, not smaller than the keys before it.
    fn push(&mut self, key: i64) {
        if self.first.is_none() {
            self.first = Some(key);
            self.last = key;
            return;
        }
        let width = key.abs_diff(self.last);
        if width > 1 {
            self.gaps.push(Reverse((width, self.last, key)));
            if self.gaps.len() > self.max - 1 {
                self.gaps.pop();
            }
        }
        self.last = key;
    }

    /// The ranges: none when no key was pushed.
    fn finish(self) -> Vec<(i64, i64)> {
        let Some(first) = self.first else {
            return Vec::new();
        };
        let mut cuts: Vec<(i64, i64)> = self
            .gaps
            .into_iter()
            .map(|Reverse((_, a, b))| (a, b))
            .collect();
        cuts.sort_unstable();
        let mut ranges = Vec::with_capacity(cuts.len() + 1);
        let mut start = first;
        for (before, after) in cuts {
            ranges.push((start, before));
            start = after;
        }
        ranges.push((start, self.last));
        ranges
    }
}

/// Whether a column of `data_type` holds integers that fit in a BIGINT.
fn integer_key(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
    )
}

/// The ranges of `column`'s values in `view` (registered in `session`), when the column holds
/// integers; `None` for other types. One sorted pass over the column (the sort spills within
/// the memory pool); the ranges kept are [`MAX_RANGES`] at most.
pub async fn key_ranges(
    session: &SessionContext,
    view: &TableName,
    column: &str,
) -> Result<Option<KeyRanges>> {
    let table = session
        .table(TableReference::partial(
            view.namespace.clone(),
            view.name.clone(),
        ))
        .await?;
    let Ok(field) = table.schema().field_with_unqualified_name(column) else {
        return Ok(None);
    };
    if !integer_key(field.data_type()) {
        return Ok(None);
    }
    let sql = format!(
        "SELECT CAST({c} AS BIGINT) FROM {v} ORDER BY 1 NULLS FIRST",
        c = quote_ident(column),
        v = view.quoted()
    );
    let df = query(session, &sql, Entry::Expectation)
        .await
        .map_err(|r| Error::Failed(r.with_line()))?;
    let mut stream = df.execute_stream().await?;
    let (mut folder, mut nulls) = (RangeFolder::new(MAX_RANGES), false);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let keys = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| Error::Internal("key ranges: the keys are not BIGINT".into()))?;
        nulls |= keys.null_count() > 0;
        keys.iter().flatten().for_each(|k| folder.push(k));
    }
    Ok(Some(KeyRanges {
        ranges: folder.finish(),
        nulls,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(keys: &[i64], max: usize) -> Vec<(i64, i64)> {
        let mut folder = RangeFolder::new(max);
        keys.iter().for_each(|k| folder.push(*k));
        folder.finish()
    }

    #[test]
    fn the_keys_split_at_their_widest_gaps() {
        let keys = [1, 2, 3, 10, 11, 50, 51, 52, 1000];
        assert_eq!(
            fold(&keys, 16),
            vec![(1, 3), (10, 11), (50, 52), (1000, 1000)]
        );
        // Three ranges: the two widest gaps (52..1000, 11..50) split.
        assert_eq!(fold(&keys, 3), vec![(1, 11), (50, 52), (1000, 1000)]);
        assert_eq!(fold(&keys, 1), vec![(1, 1000)]);
        assert_eq!(fold(&[], 4), vec![]);
        assert_eq!(fold(&[7, 7, 7], 4), vec![(7, 7)]);
        assert_eq!(
            fold(&[i64::MIN, 0, i64::MAX], 3),
            vec![(i64::MIN, i64::MIN), (0, 0), (i64::MAX, i64::MAX)]
        );
    }

    #[test]
    fn every_key_lies_in_a_range() {
        // A fixed pseudo-random walk of keys, some repeated.
        let mut keys = Vec::new();
        let mut x: i64 = -5000;
        let mut seed: u64 = 42;
        for _ in 0..5000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x += ((seed >> 33) % 40) as i64
                * if (seed >> 20).is_multiple_of(7) {
                    50
                } else {
                    1
                };
            keys.push(x);
        }
        for max in [1, 2, 5, 16] {
            let ranges = fold(&keys, max);
            assert!(ranges.len() <= max, "{max}: {ranges:?}");
            assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "{ranges:?}");
            for k in &keys {
                assert!(
                    ranges.iter().any(|(lo, hi)| lo <= k && k <= hi),
                    "{k} outside {ranges:?}"
                );
            }
        }
    }

    #[test]
    fn the_predicate_names_each_range_and_nulls() {
        let r = KeyRanges {
            ranges: vec![(1, 3), (9, 9)],
            nulls: true,
        };
        assert_eq!(
            r.predicate("t", "id"),
            "(t.\"id\" BETWEEN 1 AND 3 OR t.\"id\" BETWEEN 9 AND 9 OR t.\"id\" IS NULL)"
        );
        let none = KeyRanges {
            ranges: vec![],
            nulls: false,
        };
        assert_eq!(none.predicate("t", "id"), "FALSE");
    }
}
