//! Whether a table's rows are distinct on a set of columns, told from 64-bit hashes of their
//! keys before a `unique` check groups the whole table with SQL.
//!
//! `GROUP BY key HAVING count(*) > 1` over the five million keys of a full 5M-order run costs
//! the audit about 0.9 CPU-seconds (a hash table of every key with its count, spilled when the
//! memory pool is shared); hashing the keys and sorting the hashes costs a fraction of that.
//! Keys that GROUP BY puts in one group hash alike (DataFusion's own `create_hashes`, which
//! its grouping relies on; NULLs hash alike too), so hashes that all differ prove the keys
//! all differ and the check passes with no violating row. A hash seen twice proves nothing
//! (a duplicate key, or, for two keys among 5M, a chance of about 1 in 10^6, a collision):
//! the exact SQL then counts and lists the violations, as it does when the hashes do not fit
//! in the memory pool.

use arrow::array::ArrayRef;
use datafusion::common::hash_utils::create_hashes;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_plan::repartition::REPARTITION_RANDOM_STATE;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::engine::{query, Entry};
use crate::error::{Error, Result};
use crate::spec::{quote_ident, TableName};

/// The hashes are kept in 2^BUCKET_BITS buckets by their top bits, so each bucket is sorted
/// within the processor's caches and two equal hashes always share a bucket.
const BUCKET_BITS: u32 = 10;

/// Whether every row of `table` has a different key of `columns` (`true`: proven; `false`:
/// a hash repeats, or the hashes did not fit in the session's memory pool: undecided). The
/// query reading the keys passes the SQL gate as an expectation's does.
pub(super) async fn keys_distinct(
    session: &SessionContext,
    table: &TableName,
    columns: &[String],
) -> Result<bool> {
    let keys: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let sql = format!("SELECT {} FROM {}", keys.join(", "), table.quoted());
    let df = query(session, &sql, Entry::Expectation)
        .await
        .map_err(|r| Error::Failed(r.with_line()))?;
    let pool = session.runtime_env().memory_pool.clone();
    let reservation = MemoryConsumer::new("unique check key hashes").register(&pool);
    let mut hashes = KeyHashes::default();
    let mut stream = df.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        hashes.add(batch?.columns())?;
        if reservation.try_resize(hashes.bytes()).is_err() {
            tracing::debug!(%table, "unique check: the key hashes do not fit in the memory pool");
            return Ok(false);
        }
    }
    drop(stream);
    Ok(hashes.all_distinct())
}

/// The hashes of the keys seen so far, bucketed by their top bits.
#[derive(Default)]
struct KeyHashes {
    buckets: Vec<Vec<u64>>,
    /// One batch's hashes, before they are bucketed.
    scratch: Vec<u64>,
}

impl KeyHashes {
    /// Adds the hash of each row of `columns` (the key columns of one batch).
    fn add(&mut self, columns: &[ArrayRef]) -> Result<()> {
        let Some(rows) = columns.first().map(|c| c.len()) else {
            return Ok(());
        };
        if self.buckets.is_empty() {
            self.buckets = vec![Vec::new(); 1 << BUCKET_BITS];
        }
        self.scratch.clear();
        self.scratch.resize(rows, 0);
        create_hashes(
            columns,
            REPARTITION_RANDOM_STATE.random_state(),
            &mut self.scratch,
        )?;
        for &h in &self.scratch {
            self.buckets[(h >> (64 - BUCKET_BITS)) as usize].push(h);
        }
        Ok(())
    }

    /// The memory held, in bytes.
    fn bytes(&self) -> usize {
        let held: usize = self.buckets.iter().map(Vec::capacity).sum::<usize>();
        (held + self.scratch.capacity()) * std::mem::size_of::<u64>()
            + self.buckets.capacity() * std::mem::size_of::<Vec<u64>>()
    }

    /// Whether no hash was added twice.
    fn all_distinct(mut self) -> bool {
        self.buckets.iter_mut().all(|bucket| {
            bucket.sort_unstable();
            bucket.windows(2).all(|w| w[0] != w[1])
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::prelude::SessionConfig;

    use super::*;
    use crate::engine::register_table;

    /// One batch's `id` and `a"b` values.
    type Rows<'a> = (Vec<Option<i64>>, Vec<Option<&'a str>>);

    /// A session where `s.t` holds `batches` of columns `id` (Int64) and `a"b` (Utf8), with
    /// a memory pool of `pool` bytes (`None`: unbounded).
    fn session(batches: Vec<Rows>, pool: Option<usize>) -> SessionContext {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("a\"b", DataType::Utf8, true),
        ]));
        let batches: Vec<RecordBatch> = batches
            .into_iter()
            .map(|(ids, texts)| {
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(StringArray::from(texts)),
                ];
                RecordBatch::try_new(schema.clone(), columns).unwrap()
            })
            .collect();
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(bytes) = pool {
            runtime = runtime.with_memory_limit(bytes, 1.0);
        }
        let ctx =
            SessionContext::new_with_config_rt(SessionConfig::new(), runtime.build_arc().unwrap());
        let table = MemTable::try_new(schema, vec![batches]).unwrap();
        register_table(&ctx, &TableName::parse("s.t").unwrap(), Arc::new(table)).unwrap();
        ctx
    }

    async fn distinct(ctx: &SessionContext, columns: &[&str]) -> bool {
        let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        keys_distinct(ctx, &TableName::parse("s.t").unwrap(), &columns)
            .await
            .unwrap()
    }

    fn ints(range: std::ops::Range<i64>) -> Vec<Option<i64>> {
        range.map(Some).collect()
    }

    #[tokio::test]
    async fn distinct_keys_are_proven_and_a_repeat_in_another_batch_is_not() {
        let texts = |n: usize| vec![Some("x"); n];
        let ctx = session(
            vec![
                (ints(0..5000), texts(5000)),
                (ints(5000..9000), texts(4000)),
            ],
            None,
        );
        assert!(distinct(&ctx, &["id"]).await);
        assert!(!distinct(&ctx, &["a\"b"]).await, "every text is x");
        let ctx = session(
            vec![(ints(0..5000), texts(5000)), (ints(4999..5001), texts(2))],
            None,
        );
        assert!(!distinct(&ctx, &["id"]).await, "4999 twice, in two batches");
    }

    #[tokio::test]
    async fn nulls_group_together_as_group_by_groups_them() {
        let one_null = session(
            vec![(vec![Some(1), None, Some(2)], vec![Some("a"); 3])],
            None,
        );
        assert!(distinct(&one_null, &["id"]).await);
        let two_nulls = session(vec![(vec![None, Some(1), None], vec![Some("a"); 3])], None);
        assert!(!distinct(&two_nulls, &["id"]).await);
        let texts = vec![None, Some("a"), None];
        let pairs = session(vec![(vec![Some(1), Some(1), Some(2)], texts)], None);
        assert!(
            distinct(&pairs, &["id", "a\"b"]).await,
            "(1,NULL) (1,a) (2,NULL)"
        );
        let texts = vec![None, Some("a"), None];
        let pairs = session(vec![(vec![Some(1), Some(2), Some(1)], texts)], None);
        assert!(!distinct(&pairs, &["id", "a\"b"]).await, "(1,NULL) twice");
    }

    #[tokio::test]
    async fn keys_are_told_apart_by_every_column() {
        let texts = vec![Some("a"), Some("b"), Some("a"), Some("b")];
        let ctx = session(
            vec![(vec![Some(1), Some(1), Some(2), Some(2)], texts)],
            None,
        );
        assert!(!distinct(&ctx, &["id"]).await);
        assert!(!distinct(&ctx, &["a\"b"]).await);
        assert!(distinct(&ctx, &["id", "a\"b"]).await);
    }

    #[tokio::test]
    async fn hashes_beyond_the_memory_pool_leave_it_undecided() {
        let texts = vec![Some("x"); 20_000];
        let ctx = session(vec![(ints(0..20_000), texts)], Some(64 * 1024));
        assert!(!distinct(&ctx, &["id"]).await);
    }
}
