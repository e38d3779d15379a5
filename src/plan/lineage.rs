//! The column lineage of a whole pipeline as its next run would write it: the spec and SQL
//! planned against the schemas its tables will have. Nothing is run or written.

use super::validate::validate;
use crate::error::Result;
use crate::lineage::{pipeline_lineage, PipelineLineage};
use crate::spec::Pipeline;

/// The lineage of every column `pipeline` writes (see [`crate::lineage`]).
pub async fn lineage_of(pipeline: &Pipeline) -> Result<PipelineLineage> {
    let validated = validate(pipeline).await?;
    Ok(pipeline_lineage(
        pipeline,
        &validated.ingests,
        &validated.lineage,
    ))
}
