//! A validated pipeline: everything one `pipelines/NAME.toml` and its SQL files declare.

use std::path::PathBuf;

use super::catalog::CatalogConfig;
use super::expect::Expectation;
use super::ingest::IngestJob;
use super::maintenance::Maintenance;
use super::reader::Reader;
use super::schedule::Schedule;
use super::transform::TransformJob;

/// A validated pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub name: String,
    pub description: Option<String>,
    /// The spec file this was loaded from.
    pub file: PathBuf,
    /// The project directory; relative paths in the spec resolve against it.
    pub project_dir: PathBuf,
    /// The catalog in use: `[catalog]`, or the `[catalogs.NAME]` chosen with `--catalog`.
    pub catalog: CatalogConfig,
    /// `[catalogs.NAME]` sections.
    pub catalogs: std::collections::BTreeMap<String, CatalogConfig>,
    /// `[[expect]]`: quality checks on the tables this pipeline writes.
    pub expectations: Vec<Expectation>,
    /// `[[reader]]`: consumers outside the pipeline, for `pipeline plan`.
    pub readers: Vec<Reader>,
    pub ingests: Vec<IngestJob>,
    pub transforms: Vec<TransformJob>,
    /// `[retention] max_snapshots`: each table the pipeline writes keeps about this many
    /// snapshots of history (older ones are expired at commit); `None` keeps all.
    pub max_snapshots: Option<usize>,
    /// `[schedule]`: when the pipeline runs by itself.
    pub schedule: Option<Schedule>,
    /// `[maintenance]` (defaults when absent): how `pipeline maintain` keeps its tables healthy.
    pub maintenance: Maintenance,
    /// `[engine]` (local when absent): where transforms run.
    pub engine: super::Engine,
    /// The environment a run writes to (`--env NAME`: each table's Iceberg branch NAME);
    /// `None`: `main`. Never read from the spec file.
    pub env: Option<String>,
}

impl Pipeline {
    /// Whether a run maintains the tables it changed right after it publishes: the spec's
    /// `[maintenance] after_run`, else on unless the catalog maintains its tables itself.
    /// A run in an environment is not maintained (its branch is short-lived; maintenance
    /// works on `main`).
    pub fn maintains_after_run(&self) -> bool {
        self.env.is_none()
            && self
                .maintenance
                .after_run_on(self.catalog.maintains_tables())
    }

    /// Every table this pipeline writes (each job's, and its quarantine table), in spec order.
    pub fn tables_written(&self) -> Vec<super::TableName> {
        let mut out = Vec::new();
        let jobs = self.ingests.iter().map(|j| &j.table);
        for table in jobs.chain(self.transforms.iter().map(|j| &j.table)) {
            for t in [table.clone(), table.quarantine()] {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        out
    }

    /// Switches to the catalog `[catalogs.NAME]` (the `--catalog NAME` option).
    pub fn use_catalog(&mut self, name: &str) -> crate::error::Result<()> {
        match self.catalogs.get(name) {
            Some(c) => {
                self.catalog = c.clone();
                Ok(())
            }
            None => Err(crate::error::Error::Pipeline {
                file: self.file.clone(),
                message: format!("no catalog named `{name}`"),
                hint: Some(if self.catalogs.is_empty() {
                    "the spec has no [catalogs.NAME] sections; add one to choose it with --catalog"
                        .into()
                } else {
                    format!(
                        "the spec defines: {}",
                        self.catalogs.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }),
            }),
        }
    }
}

/// Default target size of a data file: 128 MiB.
pub const DEFAULT_TARGET_FILE_SIZE: usize = 128 * 1024 * 1024;
