//! The publish of tables that jobs staged (a run's, an erase's, a row change's): each attempt
//! publishes them as they are now, their oldest snapshots beyond `max_snapshots` expired in the
//! same commit; a table another writer moved first is rebased onto it (an append, a replace
//! of untouched partitions), or the operation fails naming it.

use std::sync::Arc;

use super::report::Observer;
use crate::catalog::PipelineCatalog;
use crate::commit::expire_snapshots;
use crate::commit::publish::{rebase, Publication, TableChange};
use crate::commit::StagedTable;
use crate::error::Result;
use crate::records::RunRecord;

/// Staged tables, published together.
pub struct StagedTables {
    pub tables: Vec<StagedTable>,
    /// `[pipeline] max_snapshots`: each table's oldest snapshots beyond it expire in the
    /// publishing commit.
    pub max_snapshots: Option<usize>,
}

impl StagedTables {
    /// One attempt's publication: every table (its oldest snapshots expired first) with
    /// `record`, which gets their table records.
    pub async fn publication(
        &mut self,
        catalog: &PipelineCatalog,
        record: RunRecord,
    ) -> Result<Publication> {
        // Retention works on main; an environment's run leaves it to main's runs.
        if let (Some(keep), None) = (self.max_snapshots, catalog.env()) {
            for table in self.tables.iter_mut() {
                expire_snapshots(table, keep, catalog.file_io()).await?;
            }
        }
        let tables = self.tables.iter().map(|t| t.table_record()).collect();
        let mut publication = Publication {
            record: Some(record.with_tables(tables)),
            ..Publication::default()
        };
        for table in &self.tables {
            publication
                .changes
                .push(TableChange::publish(table.clone(), catalog.env())?);
        }
        Ok(publication)
    }

    /// Rebases the tables at `conflicts` onto what other writers committed, telling
    /// `observer`; fails (a `Conflict` naming the table) when one cannot be rebased.
    pub async fn rebase(
        &mut self,
        catalog: &PipelineCatalog,
        conflicts: &[usize],
        attempt: u32,
        observer: &Arc<dyn Observer>,
    ) -> Result<()> {
        for &i in conflicts {
            let table = &self.tables[i];
            tracing::info!(table = %table.table, attempt, "another writer moved the table; rebasing");
            observer.rebasing(&table.table, attempt);
            self.tables[i] = rebase(catalog, table).await?;
        }
        Ok(())
    }
}
