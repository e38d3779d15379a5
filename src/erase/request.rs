//! What `pipeline erase` is asked to do ([`EraseRequest`]): the subject's condition, planned
//! only or not, whether landing files are rewritten and older snapshots purged, who asks and why.

use crate::records::Invocation;

/// What `pipeline erase` is asked to do.
#[derive(Debug, Clone)]
pub struct EraseRequest {
    /// The subject, as a SQL condition over its columns: `customer_id = 4711`.
    pub condition: String,
    /// Say what would be erased; change nothing.
    pub plan_only: bool,
    /// Rewrite the landing files without the subject's records.
    pub rewrite_sources: bool,
    /// Then expire every older snapshot of the erased tables and delete their files.
    pub purge: bool,
    /// Who asks and why (the reason is required by the command line).
    pub invocation: Invocation,
}
