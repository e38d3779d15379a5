//! Iceberg's merge-append for the engine's appends: many small manifests (one per small append)
//! are merged into one, so the manifest list, and with it the cost of every later commit and
//! scan plan, stays bounded however many appends a table takes.

use iceberg::io::FileIO;
use iceberg::spec::{ManifestContentType, ManifestFile, ManifestWriterBuilder};

use crate::error::{Error, Result};
use crate::spec::TableName;

/// Carried data manifests smaller than this count as small.
const SMALL_MANIFEST_BYTES: i64 = 32 * 1024;
/// How many small manifests an append lets accumulate before merging them into one.
const MERGE_MIN_COUNT: usize = 100;

/// Which carried data manifests are merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merge {
    /// Iceberg's merge-append: when an append would carry [`MERGE_MIN_COUNT`] or more small
    /// data manifests of the current partition spec (one per earlier small append), they are
    /// merged.
    Small,
    /// A manifest rewrite (maintenance): every data manifest of the current partition spec, when
    /// there are at least two.
    All,
}

/// Merges the carried data manifests `which` selects: their live entries are rewritten as
/// EXISTING entries (snapshot ids and sequence numbers kept) into one manifest. This bounds
/// the manifest list, so the cost of the next commits (and of every reader's scan planning)
/// does not grow with the number of appends.
pub(super) async fn merge_manifests(
    which: Merge,
    table: &TableName,
    manifests: Vec<ManifestFile>,
    metadata: &iceberg::spec::TableMetadata,
    file_io: &FileIO,
    snapshot_id: i64,
    next_manifest_path: &mut impl FnMut() -> String,
) -> Result<Vec<ManifestFile>> {
    let spec = metadata.default_partition_spec();
    let is_small = |m: &ManifestFile| {
        m.content == ManifestContentType::Data
            && m.partition_spec_id == spec.spec_id()
            && m.added_snapshot_id != snapshot_id
            && (which == Merge::All || m.manifest_length < SMALL_MANIFEST_BYTES)
    };
    let enough = match which {
        Merge::Small => MERGE_MIN_COUNT,
        Merge::All => 2,
    };
    if manifests.iter().filter(|m| is_small(m)).count() < enough {
        return Ok(manifests);
    }
    let (small, mut kept): (Vec<_>, Vec<_>) = manifests.into_iter().partition(|m| is_small(m));
    let output = file_io.new_output(next_manifest_path())?;
    let mut writer = ManifestWriterBuilder::new(
        output,
        Some(snapshot_id),
        metadata.current_schema().clone(),
        spec.as_ref().clone(),
    )
    .build_v2_data();
    for m in &small {
        let manifest = m.load_manifest(file_io).await?;
        for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
            let seq = entry.sequence_number().ok_or_else(|| {
                Error::table_msg(
                    table,
                    format!(
                        "manifest entry for {} has no sequence number",
                        entry.file_path()
                    ),
                )
            })?;
            writer.add_existing_file(
                entry.data_file().clone(),
                entry.snapshot_id().unwrap_or(m.added_snapshot_id),
                seq,
                entry.file_sequence_number,
            )?;
        }
    }
    kept.push(writer.write_manifest_file().await?);
    Ok(kept)
}
