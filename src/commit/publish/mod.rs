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
//!  retry.rs        conflicts: rebase (rebase.rs) what can be rebased, try again, or fail
//! ```

mod intent;
mod journal;
mod per_catalog;
mod publication;
mod rebase;
mod recover;
mod rest_tx;
mod retry;
mod sqlite;

pub use per_catalog::{publish, publisher};
pub use publication::{Publication, PublishOutcome, Publisher, TableChange};
pub use rebase::rebase;
pub use recover::{publish_in_progress, recover, Recovery};
pub use retry::{publish_with_retry, ATTEMPTS};
