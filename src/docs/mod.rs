//! `pipeline docs`: a static site for people, written to a folder that opens from disk
//! (`file://`, no server, no network: CSS and pictures are inline). It shows the pipeline's
//! DAG (an SVG laid out here: sources, bronze, silver, gold, readers), a page per table
//! (schema with field ids, partitioning, SQL, column lineage down to the source files'
//! fields, expectations and their last results, snapshots), and the runs (who, why, what
//! changed, checks, how to undo; a chart of rows and seconds per run). A face over the same
//! library calls as the command line and the MCP server.

mod chart;
mod columns;
mod dag;
mod html;
mod links;
mod pages;
mod search;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::inspect::{self, SnapshotInfo, TableInfo};
use crate::lineage::{pipeline_lineage, PipelineLineage};
use crate::plan::{tables_read_by, validate, JobId};
use crate::records::{QualityResult, RunRecord};
use crate::spec::{Pipeline, Reader, TableDocs, TableName};

/// Runs shown on the runs page (the newest): a year of nightly runs stays one page.
pub const RUNS_SHOWN: usize = 400;

/// What `pipeline docs` wrote.
#[derive(Debug, Serialize)]
pub struct SiteReport {
    /// The folder; open `index.html` in it.
    pub out: PathBuf,
    pub pages: usize,
    pub tables: usize,
    pub runs: usize,
}

/// One table the pipeline writes, with what the catalog says of it.
pub struct TablePage {
    pub table: TableName,
    pub name: String,
    /// "ingest of sample-data/... (csv)" or "transform sql/....sql (replace_partitions by ...)".
    pub written_by: String,
    /// Source file patterns (ingest jobs).
    pub sources: Vec<String>,
    /// Tables it is computed from (transforms).
    pub inputs: Vec<String>,
    pub sql: Option<String>,
    /// The spec's description of the table and its columns.
    pub docs: TableDocs,
    /// `None` before the table exists.
    pub info: Option<TableInfo>,
    pub snapshots: Vec<SnapshotInfo>,
}

impl TablePage {
    /// The catalog's view of `column`: its type and field doc (`None` before the table exists).
    fn column_info(&self, column: &str) -> Option<&inspect::ColumnInfo> {
        self.info
            .as_ref()?
            .columns
            .iter()
            .find(|c| c.name == column)
    }

    /// `column`'s type, as the catalog has it ("" before the table exists).
    pub fn column_type(&self, column: &str) -> &str {
        self.column_info(column).map_or("", |c| c.ty.as_str())
    }

    /// `column`'s description: the spec's, else the field's doc in the catalog.
    pub fn column_doc(&self, column: &str) -> Option<&str> {
        let field = || self.column_info(column)?.doc.as_deref();
        self.docs.of_column(column).or_else(field)
    }
}

/// Everything the pages show, gathered once.
pub struct Site {
    pub pipeline: Pipeline,
    pub lineage: PipelineLineage,
    pub tables: Vec<TablePage>,
    /// Newest first, at most [`RUNS_SHOWN`].
    pub runs: Vec<RunRecord>,
}

impl Site {
    /// The DAG's nodes, edges and column headers.
    pub fn graph(&self) -> (Vec<dag::Node>, Vec<(String, String)>, Vec<String>) {
        pages::graph_of(self)
    }

    /// The newest result of expectation `name` on `table`, with its run id.
    pub fn last_result(&self, table: &str, name: &str) -> Option<(&str, &QualityResult)> {
        self.runs.iter().find_map(|r| {
            r.quality
                .iter()
                .find(|q| q.table == table && q.name == name)
                .map(|q| (r.run_id.as_str(), q))
        })
    }

    /// The pipeline's tables `reader` reads (see [`tables_read_by`]).
    pub fn tables_read_by(&self, reader: &Reader) -> Vec<String> {
        let named = tables_read_by(reader);
        self.tables
            .iter()
            .filter(|t| named.contains(&t.table))
            .map(|t| t.name.clone())
            .collect()
    }
}

/// Gathers `pipeline`'s site from its spec and catalog. Reads only.
pub async fn gather(pipeline: &Pipeline) -> Result<Site> {
    let validated = validate(pipeline).await?;
    let lineage = pipeline_lineage(pipeline, &validated.ingests, &validated.lineage);
    let catalog = validated.catalog.clone();
    let mut tables = Vec::new();
    for job in &validated.graph.order {
        let (table, written_by, sources, inputs, sql, docs) = match job {
            JobId::Ingest(i) => {
                let ingest = &pipeline.ingests[*i];
                let by = format!(
                    "ingest of {} ({:?})",
                    ingest.paths.join(", "),
                    ingest.format
                )
                .to_lowercase();
                (
                    ingest.table.clone(),
                    by,
                    ingest.paths.clone(),
                    Vec::new(),
                    None,
                    ingest.docs.clone(),
                )
            }
            JobId::Transform(i) => {
                let transform = &pipeline.transforms[*i];
                let file = transform
                    .sql_file
                    .strip_prefix(&pipeline.project_dir)
                    .unwrap_or(&transform.sql_file)
                    .display()
                    .to_string();
                let inputs = validated.graph.transforms[*i]
                    .inputs
                    .iter()
                    .map(|t| t.to_string())
                    .collect();
                (
                    transform.table.clone(),
                    format!("transform {file}"),
                    Vec::new(),
                    inputs,
                    Some(transform.sql.clone()),
                    transform.docs.clone(),
                )
            }
        };
        // A table that cannot be read is an error here, not "not created yet".
        let (info, snapshots) = if catalog.load(&table).await?.is_some() {
            (
                Some(inspect::describe(&catalog, &table).await?),
                inspect::history(&catalog, &table).await?,
            )
        } else {
            (None, Vec::new())
        };
        tables.push(TablePage {
            name: table.to_string(),
            table,
            written_by,
            sources,
            inputs,
            sql,
            docs,
            info,
            snapshots,
        });
    }
    let runs = catalog.newest_runs(&pipeline.name, 0, RUNS_SHOWN).await?;
    Ok(Site {
        pipeline: pipeline.clone(),
        lineage,
        tables,
        runs,
    })
}

/// Writes the site of `pipeline` into `out` (created; pages already there are replaced).
pub async fn write_site(pipeline: &Pipeline, out: &Path) -> Result<SiteReport> {
    let site = gather(pipeline).await?;
    let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
    files.insert(out.join("index.html"), pages::index(&site));
    files.insert(out.join("runs.html"), pages::runs(&site));
    for t in &site.tables {
        files.insert(
            out.join("tables").join(links::table_file(&t.name)),
            pages::table(&site, t),
        );
    }
    for (path, text) in &files {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let text = crate::secrets::redact(text);
        std::fs::write(path, text.as_bytes()).map_err(|e| Error::io(path, e))?;
    }
    Ok(SiteReport {
        out: out.to_path_buf(),
        pages: files.len(),
        tables: site.tables.len(),
        runs: site.runs.len(),
    })
}
