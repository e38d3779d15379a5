//! Publishing a run: every table's `main` moves to its staged snapshot at once, together with
//! the run record, or nothing moves.
//!
//! ```text
//!  publication.rs  what is published: table changes + the run record; the Publisher trait
//!  per_catalog.rs  which publisher a catalog gets:
//!      sqlite.rs     embedded: ONE SQLite transaction (every pointer + the record)
//!      rest_tx.rs    REST with multi-table commits: ONE transactions/commit request
//!      journal.rs    S3 Tables, other REST: a durable intent (intent.rs), then table by
//!                    table by compare-and-set; recover.rs completes or undoes what a killed
//!                    command left pending
//!  rebase.rs       a staged table rebased onto what another writer committed first (the
//!                  attempts and backoff are the operation skeleton's: `operation::operate`)
//! ```

mod intent;
mod journal;
mod per_catalog;
mod publication;
mod rebase;
mod recover;
mod rest_tx;
mod sqlite;

pub use intent::set_control_property;
pub use per_catalog::publisher;
pub use publication::{Publication, PublishOutcome, Publisher, TableChange};
pub use rebase::rebase;
pub use recover::{publish_in_progress, recover, Recovery};
