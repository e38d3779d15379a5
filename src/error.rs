//! The engine's error type: every variant carries the context a user needs to act on it
//! (spec file and line, source file and line, table, snapshot id).

use std::path::PathBuf;

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the engine reports. `Display` is one clear paragraph meant for a person.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pipeline spec (TOML) is malformed or inconsistent.
    #[error("{}:{line}:{col}: {message}{}", file.display(), hint_suffix(hint))]
    Spec {
        file: PathBuf,
        line: usize,
        col: usize,
        message: String,
        hint: Option<String>,
    },

    /// A spec-level problem that has no single position (a cycle, a missing pipeline).
    #[error("{}: {message}{}", file.display(), hint_suffix(hint))]
    Pipeline {
        file: PathBuf,
        message: String,
        hint: Option<String>,
    },

    /// A transform's SQL is invalid: parse error, not a SELECT, unknown column or table.
    #[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Sql {
        file: PathBuf,
        line: Option<usize>,
        message: String,
    },

    /// A transform failed while running (its SQL planned fine).
    #[error("{}: failed while running: {message}", file.display())]
    Execution { file: PathBuf, message: String },

    /// A source record could not be read under the `fail` policy.
    #[error("{}:{line}: {reason}", file.display())]
    BadRecord {
        file: PathBuf,
        line: u64,
        reason: String,
    },

    /// A source file could not be found, opened or read.
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },

    /// The catalog or a table in it failed an operation.
    #[error("table {table}: {message}{}", source_suffix(source))]
    Table {
        table: String,
        message: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// A catalog server (S3 Tables, REST) refused or failed a request.
    #[error("catalog {catalog}: {message}")]
    Catalog { catalog: String, message: String },

    /// Another writer changed a table between staging and publish.
    #[error("commit conflict on table {table}: {message}; nothing of this run was published")]
    Conflict { table: String, message: String },

    /// Another scheduler (another host) published a run of the same scheduled tick first: found
    /// at publish, in the control-table version this run would have moved from.
    #[error("tick {tick} of pipeline {pipeline} was already served by run {run_id} (another scheduler published it first); nothing of this run was published")]
    TickServed {
        pipeline: String,
        tick: String,
        run_id: String,
    },

    /// A scheduled run lost its scheduler's claim on the tick (another host took it over, or
    /// renewals could not go through for most of the lease): it stopped before publishing.
    #[error("{0}; the run stopped before publishing, and the tick is left to the scheduler that holds it")]
    LeaseLost(String),

    /// A `fail` expectation found violations in a staged table.
    #[error(
        "expectation `{name}` on {table} failed: {detail}; nothing of this run was published{}",
        sample_suffix(sample)
    )]
    Quality {
        table: String,
        name: String,
        detail: String,
        sample: Vec<String>,
    },

    /// `pipeline plan --fail-on-breaking` found breaking changes.
    #[error("{count} breaking change(s) and --fail-on-breaking: see the plan above")]
    Breaking { count: usize },

    /// A reader's writer went away (it failed; its own error is the one to report).
    #[error("the table writer stopped")]
    WriterStopped,

    /// The command line asked for something impossible.
    #[error("{0}")]
    Usage(String),

    /// Another run of the pipeline holds its lock (`--no-wait`, or `--wait-timeout` passed):
    /// nothing was done; trying again later is right.
    #[error("{0}")]
    Busy(String),

    /// A command failed for a reason said in full (a scheduled run that timed out, ticks that
    /// failed).
    #[error("{0}")]
    Failed(String),

    /// Tables or files of the catalog cannot be read (a metadata file cut short, a data file
    /// missing): what is damaged is named; the rest was done.
    #[error("{0}")]
    Damaged(String),

    /// Something that cannot happen did (a job panicked, a record could not be encoded): a
    /// bug in the engine, not in the input. Nothing of the run was published.
    #[error("internal error: {0} (a bug in pipeline, not in your input; please report it)")]
    Internal(String),

    /// A file of the warehouse could not be read or written: the disk is full or read-only, a
    /// file is missing or cut short. Never retried (it does not pass by itself).
    #[error("{path}: {problem}{}", storage_suffix(*refused_write))]
    Storage {
        path: String,
        problem: String,
        /// A write the disk refused (full, read-only, permission denied).
        refused_write: bool,
    },

    #[error("iceberg: {0}")]
    Iceberg(iceberg::Error),

    #[error("{0}")]
    DataFusion(datafusion::error::DataFusionError),

    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),

    #[error("catalog database: {0}")]
    Sqlx(#[from] sqlx::Error),

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a file of the warehouse could not be read or written. Carried as the source of the
/// `iceberg::Error` the storage returns, so the engine's error can say it plainly.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct StorageProblem {
    pub path: String,
    pub problem: String,
    /// Writing: the disk is full, read-only or refuses this process.
    pub refused_write: bool,
}

fn storage_suffix(refused_write: bool) -> &'static str {
    if refused_write {
        "; nothing was published (not retried: free space or fix the permissions, then run again)"
    } else {
        " (`pipeline check` lists every damaged table and file)"
    }
}

/// The storage problem behind an error, however deeply it is wrapped.
fn storage_problem<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a StorageProblem> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(p) = e.downcast_ref::<StorageProblem>() {
            return Some(p);
        }
        next = e.source();
    }
    None
}

impl Error {
    /// Whether a run that ended with this error is recorded as a failed run: everything but a
    /// refusal before it started (a spec problem, a wrong flag, the lock held by another run, a
    /// tick already served or a lease lost to another scheduler).
    pub fn is_run_failure(&self) -> bool {
        !matches!(
            self,
            Error::Spec { .. }
                | Error::Pipeline { .. }
                | Error::Usage(_)
                | Error::Busy(_)
                | Error::TickServed { .. }
                | Error::LeaseLost(_)
                | Error::Breaking { .. }
        )
    }

    /// A failure that may pass by itself (another writer committed first, a catalog server
    /// failed, the catalog database was busy): worth retrying. A problem in the spec, the SQL
    /// or the data, a failed expectation, a damaged table or a refused write is not.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Conflict { .. } | Error::Catalog { .. } | Error::Sqlx(_) => true,
            Error::Iceberg(e) => !matches!(
                e.kind(),
                iceberg::ErrorKind::DataInvalid
                    | iceberg::ErrorKind::FeatureUnsupported
                    | iceberg::ErrorKind::TableNotFound
                    | iceberg::ErrorKind::NamespaceNotFound
            ),
            Error::Table { source, .. } => source.is_some(),
            Error::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            ),
            _ => false,
        }
    }

    /// `e` as the engine's error: a storage problem behind it (a full disk, a missing file)
    /// becomes [`Error::Storage`], said plainly.
    pub fn from_source(e: &(dyn std::error::Error + 'static)) -> Option<Error> {
        storage_problem(e).map(|p| Error::Storage {
            path: p.path.clone(),
            problem: p.problem.clone(),
            refused_write: p.refused_write,
        })
    }
}

impl From<iceberg::Error> for Error {
    fn from(e: iceberg::Error) -> Self {
        Error::from_source(&e).unwrap_or(Error::Iceberg(e))
    }
}

impl From<datafusion::error::DataFusionError> for Error {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        Error::from_source(&e).unwrap_or(Error::DataFusion(e))
    }
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_ref()
        .map(|h| format!("\n  hint: {h}"))
        .unwrap_or_default()
}

fn source_suffix(source: &Option<Box<dyn std::error::Error + Send + Sync>>) -> String {
    source
        .as_ref()
        .map(|s| format!(": {s}"))
        .unwrap_or_default()
}

impl Error {
    /// A table-scoped error wrapping a lower-level cause.
    pub fn table(
        table: impl ToString,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Table {
            table: table.to_string(),
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A table-scoped error without a lower-level cause.
    pub fn table_msg(table: impl ToString, message: impl Into<String>) -> Self {
        Error::Table {
            table: table.to_string(),
            message: message.into(),
            source: None,
        }
    }

    /// An I/O error on a named path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The process exit code for this error: 2 for problems in the spec or the command line
    /// (fix the input), 3 for breaking changes under `--fail-on-breaking`, 4 when another run
    /// of the pipeline holds its lock (try again later), 5 when tables or files are damaged, 1
    /// for failures while running (internal errors included).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Spec { .. } | Error::Pipeline { .. } | Error::Sql { .. } | Error::Usage(_) => 2,
            Error::Breaking { .. } => 3,
            Error::Busy(_) => 4,
            // A file of the lake that cannot be read (missing, cut short) is damage, as
            // `pipeline check` reports it; a write the disk refused is not.
            Error::Damaged(_)
            | Error::Storage {
                refused_write: false,
                ..
            } => 5,
            _ => 1,
        }
    }
}

fn sample_suffix(sample: &[String]) -> String {
    if sample.is_empty() {
        String::new()
    } else {
        format!("\n  sample:\n    {}", sample.join("\n    "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_fail_the_run_without_blaming_the_input() {
        let e = Error::Internal("a job panicked".into());
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with("internal error: a job panicked"));
        assert_eq!(Error::Usage("--from".into()).exit_code(), 2);
        assert_eq!(Error::Breaking { count: 1 }.exit_code(), 3);
        assert_eq!(Error::Busy("running".into()).exit_code(), 4);
        assert_eq!(Error::Damaged("cut short".into()).exit_code(), 5);
    }
}
