//! The spec file as TOML gives it: every section and key, with its position (`Spanned`), before
//! any check. Unknown keys are refused here (`deny_unknown_fields`).

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub pipeline: RawPipeline,
    pub catalog: Option<RawCatalog>,
    #[serde(default)]
    pub catalogs: IndexMap<String, RawCatalog>,
    #[serde(default)]
    pub expect: Vec<RawExpect>,
    #[serde(default)]
    pub reader: Vec<RawReader>,
    #[serde(default)]
    pub ingest: Vec<RawIngest>,
    #[serde(default)]
    pub transform: Vec<RawTransform>,
    pub retention: Option<RawRetention>,
    pub schedule: Option<RawSchedule>,
    pub maintenance: Option<RawMaintenance>,
    pub engine: Option<RawEngine>,
    /// Model tests (`[[test]]`), read by `load_model_tests`, not part of the pipeline.
    #[serde(default, rename = "test")]
    pub _tests: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEngine {
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    pub url: Option<Spanned<String>>,
    pub partitions: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMaintenance {
    pub target_file_size_mb: Option<Spanned<u64>>,
    pub small_file_mb: Option<Spanned<u64>>,
    pub min_input_files: Option<Spanned<u64>>,
    pub expire_older_than: Option<Spanned<String>>,
    pub keep_last: Option<Spanned<u64>>,
    pub max_manifests: Option<Spanned<u64>>,
    pub keep_runs: Option<Spanned<u64>>,
    pub after_run: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    pub cron: Spanned<String>,
    pub timezone: Option<Spanned<String>>,
    pub catchup: Option<Spanned<String>>,
    pub retries: Option<Spanned<u32>>,
    pub retry_delay: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub on_failure: Option<Spanned<Vec<String>>>,
    pub lease: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub table: Spanned<String>,
    pub check: Spanned<String>,
    pub name: Option<String>,
    pub column: Option<Spanned<String>>,
    pub columns: Option<Vec<String>>,
    pub values: Option<Vec<toml::Value>>,
    pub min: Option<Spanned<toml::Value>>,
    pub max: Option<Spanned<toml::Value>>,
    pub pattern: Option<String>,
    pub to: Option<Spanned<String>>,
    pub within: Option<Spanned<String>>,
    pub sql: Option<String>,
    pub action: Option<Spanned<String>>,
    pub max_change: Option<Spanned<toml::Value>>,
    pub runs: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReader {
    pub name: Spanned<String>,
    pub owner: Option<String>,
    pub kind: Option<String>,
    pub sql: Option<String>,
    pub columns: Option<Vec<Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetention {
    pub max_snapshots: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPipeline {
    pub name: Spanned<String>,
    pub description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCatalog {
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    // sql
    pub name: Option<String>,
    pub uri: Option<Spanned<String>>,
    pub warehouse: Option<String>,
    // s3tables
    pub table_bucket_arn: Option<Spanned<String>>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    // rest
    pub credential_env: Option<String>,
    pub token_env: Option<String>,
    pub oauth2_server_uri: Option<Spanned<String>>,
    pub scope: Option<String>,
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    pub transactions: Option<bool>,
    pub server_maintains: Option<bool>,
    pub vended_credentials: Option<bool>,
    pub signing: Option<Spanned<String>>,
    pub signing_name: Option<String>,
    pub signing_region: Option<String>,
    // glue-rest
    pub account_id: Option<Spanned<String>>,
    // storage (s3tables and rest)
    pub s3_endpoint: Option<String>,
    pub path_style_access: Option<bool>,
    pub profile: Option<String>,
    pub access_key_id_env: Option<String>,
    pub secret_access_key_env: Option<Spanned<String>>,
    pub session_token_env: Option<String>,
    // Secrets given literally are refused with a pointer to the *_env setting.
    pub secret_access_key: Option<Spanned<toml::Value>>,
    pub access_key_id: Option<Spanned<toml::Value>>,
    pub session_token: Option<Spanned<toml::Value>>,
    pub token: Option<Spanned<toml::Value>>,
    pub credential: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIngest {
    pub table: Spanned<String>,
    pub format: Spanned<String>,
    pub path: Spanned<OneOrMany>,
    pub schema: Spanned<IndexMap<String, Spanned<String>>>,
    #[serde(default)]
    pub partition_by: Vec<Spanned<String>>,
    pub on_bad_record: Option<Spanned<String>>,
    pub schema_evolution: Option<Spanned<String>>,
    pub delimiter: Option<Spanned<String>>,
    pub quote: Option<Spanned<String>>,
    pub header: Option<bool>,
    pub null_values: Option<Vec<String>>,
    pub target_file_size_mb: Option<Spanned<u64>>,
    pub erase: Option<Spanned<IndexMap<String, Spanned<String>>>>,
    pub description: Option<Spanned<String>>,
    pub columns: Option<Spanned<IndexMap<String, Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTransform {
    pub table: Spanned<String>,
    pub sql: Spanned<String>,
    #[serde(default)]
    pub partition_by: Vec<Spanned<String>>,
    pub mode: Option<Spanned<String>>,
    pub incremental_by: Option<Spanned<IndexMap<String, Spanned<String>>>>,
    pub batch_rows: Option<Spanned<u64>>,
    pub target_file_size_mb: Option<Spanned<u64>>,
    pub erase: Option<Spanned<IndexMap<String, Spanned<String>>>>,
    pub description: Option<Spanned<String>>,
    pub columns: Option<Spanned<IndexMap<String, Spanned<String>>>>,
}
