//! Reading a snapshot's manifest list (the entry point to its data files).

use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;

use crate::error::Result;

/// Reads a snapshot's manifest list.
pub async fn manifest_list(
    file_io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &iceberg::spec::Snapshot,
) -> Result<iceberg::spec::ManifestList> {
    let bytes = file_io.new_input(snapshot.manifest_list())?.read().await?;
    Ok(iceberg::spec::ManifestList::parse_with_version(
        &bytes,
        metadata.format_version(),
    )?)
}
