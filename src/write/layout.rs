//! What a writer needs of a table, and nothing more: its current schema (with field ids), its
//! partition spec, where its data files go, and its format version. A table's metadata grows
//! with every snapshot; this does not, so it is what crosses the wire to a cluster's
//! executors.

use iceberg::spec::{FormatVersion, PartitionSpec, Schema, StructType, TableMetadata};
use iceberg::writer::file_writer::location_generator::{
    DefaultLocationGenerator, LocationGenerator,
};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The shape and place of a table's next data files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileLayout {
    pub schema: Schema,
    pub spec: PartitionSpec,
    /// The folder data files go under (partition folders inside it).
    pub data_location: String,
    pub format_version: FormatVersion,
}

impl FileLayout {
    /// The layout of `metadata`'s current schema and default spec.
    pub fn of(metadata: &TableMetadata) -> Result<FileLayout> {
        // The data folder as iceberg's location generator derives it (`write.data.path`, or
        // the table location's `data`): a file name at the root shows it.
        let probe = DefaultLocationGenerator::new(metadata)?.generate_location(None, "x");
        Ok(FileLayout {
            schema: metadata.current_schema().as_ref().clone(),
            spec: metadata.default_partition_spec().as_ref().clone(),
            data_location: probe.strip_suffix("/x").unwrap_or(&probe).to_string(),
            format_version: metadata.format_version(),
        })
    }

    /// The type of the files' partition values.
    pub fn partition_type(&self) -> Result<StructType> {
        Ok(self.spec.partition_type(&self.schema)?)
    }
}
