//! Which publisher each catalog kind gets: the embedded catalog one SQLite transaction; a REST
//! catalog with multi-table commits one transaction; every other remote catalog the journal
//! (table by table after a durable intent).

use super::journal::JournaledPublisher;
use super::publication::Publisher;
use super::rest_tx::TransactionPublisher;
use super::sqlite::SqlitePublisher;
use crate::catalog::{Backend, PipelineCatalog};

/// The publisher of `catalog`'s kind.
pub fn publisher(catalog: &PipelineCatalog) -> Box<dyn Publisher> {
    match catalog.backend() {
        Backend::Sql { database, .. } => Box::new(SqlitePublisher {
            name: catalog.name().to_string(),
            database: database.clone(),
            file_io: catalog.file_io().clone(),
        }),
        Backend::Remote(remote) => match &remote.transactions {
            Some(commit) => Box::new(TransactionPublisher {
                remote: remote.clone(),
                commit: commit.clone(),
            }),
            None => Box::new(JournaledPublisher {
                remote: remote.clone(),
            }),
        },
    }
}
