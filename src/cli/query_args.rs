//! `pipeline query`'s arguments: the SQL, where it reads (a snapshot, an environment), its
//! bounds, and where the rows go (a table on the terminal, or an export).

use std::path::{Path, PathBuf};

/// How `pipeline query` writes its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryFormat {
    /// An aligned table (with --json: one {"columns", "rows"} document).
    Table,
    /// CSV with a header line; NULL is an empty field.
    Csv,
    /// JSON Lines: one object per row, every column named (NULL as null); decimals are exact
    /// JSON numbers.
    Json,
    /// A Parquet file (ZSTD); needs --out.
    Parquet,
}

impl QueryFormat {
    /// The format's name, as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            QueryFormat::Table => "table",
            QueryFormat::Csv => "csv",
            QueryFormat::Json => "json",
            QueryFormat::Parquet => "parquet",
        }
    }

    /// The format a file name implies: `.csv`, `.parquet`, `.json`/`.jsonl`/`.ndjson`.
    pub fn of_file(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(Self::Csv),
            "parquet" => Some(Self::Parquet),
            "json" | "jsonl" | "ndjson" => Some(Self::Json),
            _ => None,
        }
    }
}

/// `pipeline query`.
#[derive(clap::Args)]
pub struct QueryArgs {
    /// One SELECT; tables are written namespace.table.
    pub sql: String,
    /// Read tables as of this snapshot id (time travel); see `pipeline history`.
    #[arg(long = "as-of", value_name = "SNAPSHOT_ID")]
    pub as_of: Option<i64>,
    /// Read each table on its branch of environment NAME (`run --env NAME`), or on `main`
    /// where the environment did not change it.
    #[arg(long, value_name = "NAME")]
    pub env: Option<String>,
    #[arg(long)]
    pub pipeline: Option<String>,
    /// The most memory the query may hold, in MiB [default: 2048, or the query engine's
    /// spill budget PIPELINE_MEMORY_LIMIT_MB + 1024 when that is more].
    #[arg(long, value_name = "MIB")]
    pub max_memory_mb: Option<usize>,
    /// Stop the query after this many seconds [default: no limit].
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// How to write the rows [default: table; with --out, the file's extension: .csv,
    /// .json/.jsonl, .parquet]. csv and json stream to stdout without --out.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<QueryFormat>,
    /// Write the rows to FILE, streamed batch by batch (no row count limit, memory stays
    /// bounded). FILE appears only when the query has finished: a query that fails or is
    /// stopped leaves no FILE and no partial file. An existing FILE is refused unless --force.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --out: replace FILE if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
}
