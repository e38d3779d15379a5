//! Tables and data files for unit tests of the commit core: a table of orders partitioned by
//! `month(order_date)` in a temporary local warehouse, and data files that need not exist (the
//! producer reads and writes only metadata: manifests and manifest lists).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use iceberg::io::{FileIO, FileIOBuilder};
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, Datum, FormatVersion, Literal,
    ManifestStatus, NestedField, PrimitiveType, Schema, Struct, TableMetadataBuilder, Transform,
    Type, UnboundPartitionSpec,
};
use iceberg::table::Table;
use iceberg::TableCreation;
use iceberg_storage_opendal::OpenDalStorageFactory;

use super::manifests::manifest_list;
use super::produce::stage_snapshot;
use super::range::PartitionRange;
use super::staged::{StagedTable, WriteMode};
use super::target::TableTarget;
use crate::spec::{Grain, TableName};

/// Month 650 (months since 1970) is 2024-03.
pub const MARCH_2024: i32 = 650;

/// A temporary warehouse on the local file system.
pub struct Warehouse {
    pub dir: tempfile::TempDir,
    pub file_io: FileIO,
}

impl Warehouse {
    pub fn new() -> Warehouse {
        Warehouse {
            dir: tempfile::tempdir().expect("temporary folder"),
            file_io: FileIOBuilder::new(Arc::new(OpenDalStorageFactory::Fs)).build(),
        }
    }

    /// A new table `ns.name` (`id long, order_date date`) partitioned by `month(order_date)`,
    /// with no snapshot, as a job would write it.
    pub fn new_table(&self, ns: &str, name: &str) -> TableTarget {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "order_date", Type::Primitive(PrimitiveType::Date)).into(),
            ])
            .build()
            .expect("schema");
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "order_date_month", Transform::Month)
            .expect("partition field")
            .build();
        let location = self.dir.path().join(ns).join(name);
        let creation = TableCreation::builder()
            .name(name.to_string())
            .location(location.display().to_string())
            .schema(schema)
            .partition_spec(spec)
            .format_version(FormatVersion::V2)
            .build();
        TableTarget {
            table: TableName::parse(&format!("{ns}.{name}")).expect("table name"),
            base_location: None,
            metadata: TableMetadataBuilder::from_table_creation(creation)
                .expect("metadata")
                .build()
                .expect("metadata")
                .metadata,
            reshaped: true,
        }
    }

    /// A data file `name` of `target`'s table with `rows` rows, all in month `month`
    /// (its `order_date` bounds: the 1st and the 28th of that month).
    pub fn file(&self, target: &TableTarget, name: &str, month: i32, rows: u64) -> DataFile {
        let first_day = (Grain::Month.start_of(month) / 86_400_000_000) as i32;
        self.file_with_bounds(target, name, month, rows, Some((first_day, first_day + 27)))
    }

    /// A data file like [`Warehouse::file`], with `order_date` bounds in days since the epoch
    /// (`None`: the file has no bounds).
    pub fn file_with_bounds(
        &self,
        target: &TableTarget,
        name: &str,
        month: i32,
        rows: u64,
        bounds: Option<(i32, i32)>,
    ) -> DataFile {
        let (lower, upper) = match bounds {
            Some((lo, hi)) => (
                HashMap::from([(2, Datum::date(lo))]),
                HashMap::from([(2, Datum::date(hi))]),
            ),
            None => (HashMap::new(), HashMap::new()),
        };
        DataFileBuilder::default()
            .content(DataContentType::Data)
            .file_format(DataFileFormat::Parquet)
            .file_path(format!(
                "{}/data/{name}.parquet",
                target.metadata.location()
            ))
            .file_size_in_bytes(rows * 10)
            .record_count(rows)
            .partition(Struct::from_iter([Some(Literal::int(month))]))
            .partition_spec_id(target.metadata.default_partition_spec_id())
            .lower_bounds(lower)
            .upper_bounds(upper)
            .build()
            .expect("data file")
    }

    /// Stages `files` on `target` as `mode`, with no extra summary properties.
    pub async fn stage(
        &self,
        target: TableTarget,
        files: Vec<DataFile>,
        mode: WriteMode,
    ) -> StagedTable {
        stage_snapshot(target, files, &self.file_io, HashMap::new(), mode)
            .await
            .expect("staged")
    }

    /// The manifest entries of `staged`'s snapshot: (file name, status, snapshot id,
    /// data sequence number), sorted by file name.
    pub async fn entries(
        &self,
        staged: &StagedTable,
    ) -> Vec<(String, ManifestStatus, Option<i64>, Option<i64>)> {
        let snapshot = staged
            .metadata
            .snapshot_by_id(staged.snapshot_id)
            .expect("snapshot");
        let list = manifest_list(&self.file_io, &staged.metadata, snapshot)
            .await
            .expect("manifest list");
        let mut out = Vec::new();
        for manifest in list.entries() {
            let manifest = manifest
                .load_manifest(&self.file_io)
                .await
                .expect("manifest");
            for e in manifest.entries() {
                let name = e
                    .file_path()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".parquet")
                    .to_string();
                out.push((name, e.status(), e.snapshot_id(), e.sequence_number()));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The manifest paths of `staged`'s snapshot.
    pub async fn manifest_paths(&self, staged: &StagedTable) -> BTreeSet<String> {
        let snapshot = staged
            .metadata
            .snapshot_by_id(staged.snapshot_id)
            .expect("snapshot");
        manifest_list(&self.file_io, &staged.metadata, snapshot)
            .await
            .expect("manifest list")
            .entries()
            .iter()
            .map(|m| m.manifest_path.clone())
            .collect()
    }
}

/// The table as the next job of a later run finds it: `main` at `staged`'s snapshot.
pub fn published(staged: &StagedTable) -> TableTarget {
    TableTarget {
        table: staged.table.clone(),
        base_location: Some(format!(
            "{}/metadata/00001-published.metadata.json",
            staged.metadata.location()
        )),
        metadata: staged.published_metadata().expect("published metadata"),
        reshaped: false,
    }
}

/// A read-only table whose `main` is `staged`'s snapshot, as a transform reads its input.
pub fn reader(warehouse: &Warehouse, staged: &StagedTable) -> Table {
    staged.reader(&warehouse.file_io).expect("reader")
}

/// The partitions `units` (months) of `order_date_month`.
pub fn months(units: &[i32]) -> PartitionRange {
    let mut range = PartitionRange::new("order_date_month", Grain::Month);
    range.units.extend(units.iter().copied());
    range
}
