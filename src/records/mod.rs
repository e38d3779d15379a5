//! What the engine records of its own work in a catalog, above the catalog that stores it:
//! run records ([`RunRecord`]: every published run, backfill, rollback, erase, `sql` change and
//! maintenance, with who ran it, why and how to undo it), the erase receipt inside them, where
//! they are kept (the embedded catalog's database, written in the publish transaction; a remote
//! catalog's control table `pipeline_meta.runs`), and the run locks that keep two commands of
//! one pipeline apart ([`lock`], keyed by `[pipeline] name`).
//!
//! Guarantee: a record exists if and only if its run was published (it is written in the same
//! commit as the tables it describes, see `commit::publish`).

mod control;
mod erase_receipt;
pub mod lock;
mod receipt;
mod record;
mod runs;
mod sample_row;

pub use control::{
    control_name, control_table, existing_control_table, run_records, tick_served_in,
    CONTROL_NAMESPACE, CONTROL_TABLE,
};
pub use erase_receipt::{EraseReceipt, ErasedSource, ErasedTable};
pub use receipt::Invocation;
pub use record::{
    new_run_id, tick_key, ExpiredFiles, FailureTrail, FinishedJob, QualityResult, RunKind,
    RunRecord, TableRecord,
};
pub(crate) use runs::insert as insert_run_record;
pub use sample_row::SampleRow;
