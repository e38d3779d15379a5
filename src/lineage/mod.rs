//! Column-level lineage: which table columns (down to bronze and the source files' fields)
//! every column a pipeline writes derives from, computed from DataFusion logical plans
//! ([`query`]), assembled for a whole pipeline ([`graph`]) and printed as a tree, DOT, Mermaid
//! or JSON ([`render`]).
//!
//! Each transform snapshot also records its columns' lineage ([`recorded`]), so a later run
//! can tell a renamed column (same derivation, new name) from a dropped one plus an added one.
//!
//! Lineage is pure analysis of the spec and of SQL plans: it imports nothing of the engine but
//! [`crate::spec`], so every layer above (transforms record it, `pipeline plan` and the
//! anomaly checks follow it) can use it.

pub mod downstream;
pub mod graph;
pub mod query;
pub mod recorded;
pub mod render;

pub use downstream::render_downstream;
pub use graph::{pipeline_lineage, ColumnOrigin, PipelineLineage};
pub use query::{query_lineage, Derivation, QueryLineage, Use};
pub use recorded::{record, recorded_on, renames, snapshot_renames, Recorded, LINEAGE_KEY};
pub use render::{render, LineageFormat};
