//! Catalog settings of a spec: `[catalog]` (the pipeline's default) and `[catalogs.NAME]`
//! (alternatives chosen per command with `--catalog NAME`, so one spec runs locally and in
//! production).
//!
//! Secrets never live in the spec: credentials come from the standard AWS chain (environment,
//! profile, instance role) or from environment variables whose *names* the spec gives
//! (`access_key_id_env`, `credential_env`, ...). [`S3Storage`] and [`RestConfig`] keep only
//! those names; the values are read at connect time and never printed.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which catalog holds the tables.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogConfig {
    /// The embedded default: an Iceberg SQL catalog in a SQLite file plus a local warehouse folder.
    Sql {
        /// Catalog name recorded in the SQLite file (readers must use the same name).
        name: String,
        /// Absolute path of the SQLite database file.
        database: PathBuf,
        /// Absolute path of the warehouse folder.
        warehouse: PathBuf,
    },
    /// An AWS S3 Tables table bucket.
    S3Tables(S3TablesConfig),
    /// Any Iceberg REST catalog.
    Rest(RestConfig),
}

impl CatalogConfig {
    /// The embedded default for a project: `warehouse/catalog.db` and `warehouse/`.
    pub fn embedded_default(project_dir: &std::path::Path) -> CatalogConfig {
        let warehouse = project_dir.join("warehouse");
        CatalogConfig::Sql {
            name: "default".into(),
            database: warehouse.join("catalog.db"),
            warehouse,
        }
    }

    /// `sql`, `s3tables` or `rest`.
    pub fn kind(&self) -> &'static str {
        match self {
            CatalogConfig::Sql { .. } => "sql",
            CatalogConfig::S3Tables(_) => "s3tables",
            CatalogConfig::Rest(_) => "rest",
        }
    }

    /// A short description without secrets, for messages.
    pub fn describe(&self) -> String {
        match self {
            CatalogConfig::Sql { database, .. } => format!("sql {}", database.display()),
            CatalogConfig::S3Tables(c) => format!("s3tables {}", c.table_bucket_arn),
            CatalogConfig::Rest(c) => format!("{} {}", c.flavor, c.uri),
        }
    }
}

/// `type = "s3tables"`.
#[derive(Debug, Clone, PartialEq)]
pub struct S3TablesConfig {
    /// `arn:aws:s3tables:REGION:ACCOUNT:bucket/NAME`.
    pub table_bucket_arn: String,
    pub region: String,
    /// The S3 Tables API endpoint (for a local server); AWS's own when `None`.
    pub endpoint_url: Option<String>,
    pub storage: S3Storage,
}

/// `type = "rest"`.
#[derive(Debug, Clone, PartialEq)]
pub struct RestConfig {
    pub uri: String,
    /// The warehouse the server should use (sent as `warehouse`).
    pub warehouse: Option<String>,
    /// Environment variable holding OAuth2 client credentials `id:secret`.
    pub credential_env: Option<String>,
    /// Environment variable holding a bearer token.
    pub token_env: Option<String>,
    pub oauth2_server_uri: Option<String>,
    pub scope: Option<String>,
    /// Extra HTTP headers sent with every request (not secrets: use `token_env`).
    pub headers: BTreeMap<String, String>,
    /// Use the server's multi-table commit when it offers one (default). `false` forces
    /// per-table commits with a durable publish record, as on servers without transactions.
    pub transactions: bool,
    /// `signing = "sigv4"`: every request carries an AWS Signature Version 4.
    pub signing: Option<SigV4Signing>,
    /// The section's `type`: `rest`, `s3tables-rest` or `glue-rest` (for messages).
    pub flavor: &'static str,
    /// The server maintains its tables itself (compaction, snapshot expiry, unreferenced
    /// files): `server_maintains`, true by default for `s3tables-rest` only. Runs then leave
    /// maintenance to it unless `[maintenance] after_run = true`.
    pub server_maintains: bool,
    /// Ask the server to vend storage credentials with each table
    /// (`X-Iceberg-Access-Delegation: vended-credentials`): `vended_credentials`, true by
    /// default for `s3tables-rest` and `glue-rest`. Credentials it vends are used either way.
    pub vended_credentials: bool,
    pub storage: S3Storage,
}

impl CatalogConfig {
    /// Whether the catalog maintains its tables itself: S3 Tables (compaction, snapshot
    /// expiry and unreferenced-file removal, on by default) and REST servers the spec says do.
    pub fn maintains_tables(&self) -> bool {
        match self {
            CatalogConfig::Sql { .. } => false,
            CatalogConfig::S3Tables(_) => true,
            CatalogConfig::Rest(rest) => rest.server_maintains,
        }
    }
}

impl RestConfig {
    /// The catalog as messages and run locks name it: the URI, with the warehouse when the
    /// spec names one (one regional S3 Tables or Glue endpoint serves many buckets and
    /// warehouses; each is its own catalog).
    pub fn identity(&self) -> String {
        match &self.warehouse {
            Some(w) => format!("{} (warehouse {w})", self.uri),
            None => self.uri.clone(),
        }
    }
}

/// How a REST catalog's requests are signed with SigV4 (credentials: the storage settings'
/// named variables or profile, else the standard AWS chain).
#[derive(Debug, Clone, PartialEq)]
pub struct SigV4Signing {
    /// The signing name: `s3tables`, `glue`, or `execute-api` (API Gateway) by default.
    pub name: String,
    pub region: String,
}

/// How data and metadata files on S3 are reached.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct S3Storage {
    /// `s3_endpoint`: an S3-compatible endpoint (e.g. a local server); AWS's when `None`.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Path-style requests (`http://host/bucket/key`), needed by most local endpoints.
    pub path_style_access: bool,
    /// AWS profile to use from the shared config files.
    pub profile: Option<String>,
    /// Names of the environment variables holding static credentials; when unset the
    /// standard AWS chain applies.
    pub access_key_id_env: Option<String>,
    pub secret_access_key_env: Option<String>,
    pub session_token_env: Option<String>,
}

/// Static credentials read from the environment variables a spec names.
#[derive(Clone)]
pub struct StaticCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for StaticCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticCredentials(<redacted>)")
    }
}

impl S3Storage {
    /// The credentials named by `*_env`, or `None` for the standard AWS chain. Errors name the
    /// missing variable (never its value).
    pub fn credentials(&self) -> Result<Option<StaticCredentials>, String> {
        match (&self.access_key_id_env, &self.secret_access_key_env) {
            (None, None) => Ok(None),
            (Some(id), Some(secret)) => Ok(Some(StaticCredentials {
                access_key_id: read_env(id)?,
                secret_access_key: read_env(secret)?,
                session_token: self
                    .session_token_env
                    .as_deref()
                    .map(read_env)
                    .transpose()?,
            })),
            _ => Err(
                "access_key_id_env and secret_access_key_env must be given together".to_string(),
            ),
        }
    }
}

/// The value of environment variable `name`, which the spec names as holding a secret.
pub fn read_env(name: &str) -> Result<String, String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => {
            crate::secrets::register(&v);
            Ok(v)
        }
        _ => Err(format!(
            "environment variable {name} (named in the spec's catalog settings) is not set"
        )),
    }
}
