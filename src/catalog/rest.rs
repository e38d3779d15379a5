//! Iceberg REST catalogs. Reads go through `iceberg-catalog-rest`; commits are sent by this
//! module as REST `CommitTableRequest`s (the crate cannot send a prepared commit): one table by
//! compare-and-set ([`TablePointers`]), or several tables in one
//! `POST /v1/{prefix}/transactions/commit` ([`MultiTableCommit`]) when the server lists that
//! endpoint in `/v1/config` (all or nothing).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use iceberg::spec::TableMetadata;
use iceberg::CatalogBuilder;
use iceberg_catalog_rest::{
    RestCatalogBuilder, REST_CATALOG_PROP_URI, REST_CATALOG_PROP_WAREHOUSE,
};
use iceberg_storage_opendal::OpenDalResolvingStorageFactory;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::connection::{Backend, PipelineCatalog};
use super::remote::{Committed, MultiTableCommit, RemoteCatalog, Swap, TableMove, TablePointers};
use super::{storage, updates};
use crate::error::{Error, Result};
use crate::spec::{read_env, RestConfig, TableName};

const TRANSACTIONS_ENDPOINT: &str = "POST /v1/{prefix}/transactions/commit";

/// Connects to the REST catalog of `config`.
pub(super) async fn connect(config: &RestConfig) -> Result<PipelineCatalog> {
    let identity = config.uri.clone();
    let fail = |message: String| Error::Catalog {
        catalog: identity.clone(),
        message,
    };
    // Storage credentials are optional here: the server may vend them with each table, and
    // the tables may not be on S3 at all (no AWS credential chain is walked for them).
    let mut props = storage::rest_file_io_props(&identity, &config.storage).await?;
    let file_props = props.clone();
    let Secrets {
        mut token,
        credential,
    } = add_catalog_props(config, &mut props)?;
    let factory = Arc::new(OpenDalResolvingStorageFactory::new());
    let inner = RestCatalogBuilder::default()
        .with_storage_factory(factory.clone())
        .load("rest", props)
        .await
        .map_err(|e| fail(format!("cannot open the REST catalog: {e}")))?;
    let inner: Arc<dyn iceberg::Catalog> = Arc::new(inner);

    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .map_err(|e| fail(format!("cannot set up the HTTP client: {e}")))?;
    if token.is_none() {
        if let Some(credential) = &credential {
            token = Some(oauth_token(&http, config, credential).await.map_err(fail)?);
        }
    }
    let mut api = RestApi {
        http,
        uri: config.uri.clone(),
        token,
        headers: config.headers.clone(),
        prefix: String::new(),
    };
    let (prefix, transactions) = server_config(&api, config).await?;
    api.prefix = prefix;
    let api = Arc::new(api);
    tracing::debug!(uri = %config.uri, transactions, "connected to REST catalog");

    let file_io = iceberg::io::FileIOBuilder::new(factory)
        .with_props(&file_props)
        .build();
    let multi_table: Option<Arc<dyn MultiTableCommit>> = if transactions && config.transactions {
        Some(api.clone())
    } else {
        None
    };
    let remote = Arc::new(RemoteCatalog {
        kind: "rest",
        identity,
        catalog: inner.clone(),
        pointers: api,
        transactions: multi_table,
        file_io: file_io.clone(),
    });
    Ok(PipelineCatalog {
        inner,
        name: "rest".to_string(),
        backend: Backend::Remote(remote),
        file_io,
    })
}

/// The secrets a REST catalog is reached with, read from the variables its config names.
struct Secrets {
    token: Option<String>,
    /// OAuth2 client credential, `id:secret`.
    credential: Option<String>,
}

/// Adds the catalog properties of `config` to `props` (URI, warehouse, token, credential,
/// OAuth2 server, scope, headers) and returns the secrets read for them. A credential's
/// secret is registered for redaction.
fn add_catalog_props(config: &RestConfig, props: &mut HashMap<String, String>) -> Result<Secrets> {
    let fail = |message: String| Error::Catalog {
        catalog: config.uri.clone(),
        message,
    };
    props.insert(REST_CATALOG_PROP_URI.to_string(), config.uri.clone());
    if let Some(w) = &config.warehouse {
        props.insert(REST_CATALOG_PROP_WAREHOUSE.to_string(), w.clone());
    }
    let token = config
        .token_env
        .as_deref()
        .map(read_env)
        .transpose()
        .map_err(fail)?;
    if let Some(t) = &token {
        props.insert("token".to_string(), t.clone());
    }
    let credential = config
        .credential_env
        .as_deref()
        .map(read_env)
        .transpose()
        .map_err(fail)?;
    if let Some(c) = &credential {
        if let Some((_, secret)) = c.split_once(':') {
            crate::secrets::register(secret);
        }
        props.insert("credential".to_string(), c.clone());
    }
    if let Some(u) = &config.oauth2_server_uri {
        props.insert("oauth2-server-uri".to_string(), u.clone());
    }
    if let Some(s) = &config.scope {
        props.insert("scope".to_string(), s.clone());
    }
    for (name, value) in &config.headers {
        props.insert(format!("header.{name}"), value.clone());
    }
    Ok(Secrets { token, credential })
}

/// Asks the server for its `/v1/config`: the path prefix of its routes, and whether it lists
/// the multi-table commit endpoint.
async fn server_config(api: &RestApi, config: &RestConfig) -> Result<(String, bool)> {
    let fail = |message: String| Error::Catalog {
        catalog: config.uri.clone(),
        message,
    };
    let server = api
        .get(&with_warehouse("/v1/config", config))
        .await
        .map_err(|e| {
            fail(match e.status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => format!(
                    "the catalog refused this client's credentials ({}): check the variables named by token_env / credential_env",
                    e.status
                ),
                _ => format!(
                    "GET /v1/config failed ({} {}); is `uri` the catalog's base URL (without /v1)?",
                    e.status, e.message
                ),
            })
        })?;
    let prefix = ["overrides", "defaults"]
        .iter()
        .find_map(|k| server[k]["prefix"].as_str())
        .map(str::to_string)
        .unwrap_or_default();
    let transactions = server["endpoints"]
        .as_array()
        .is_some_and(|e| e.iter().any(|v| v.as_str() == Some(TRANSACTIONS_ENDPOINT)));
    Ok((prefix, transactions))
}

fn with_warehouse(path: &str, config: &RestConfig) -> String {
    match &config.warehouse {
        Some(w) => format!("{path}?warehouse={}", urlencode(w)),
        None => path.to_string(),
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// OAuth2 client-credentials exchange (`credential` = `id:secret`).
async fn oauth_token(
    http: &reqwest::Client,
    config: &RestConfig,
    credential: &str,
) -> std::result::Result<String, String> {
    let (id, secret) = credential
        .split_once(':')
        .ok_or("the OAuth2 credential must be CLIENT_ID:CLIENT_SECRET")?;
    let url = config
        .oauth2_server_uri
        .clone()
        .unwrap_or_else(|| format!("{}/v1/oauth/tokens", config.uri));
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_id", id),
        ("client_secret", secret),
    ];
    let scope = config.scope.clone().unwrap_or_else(|| "catalog".into());
    form.push(("scope", &scope));
    let response = http
        .post(&url)
        .form(&form)
        .send()
        .await
        .map_err(|e| format!("OAuth2 token request to {url} failed: {e}"))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    match body["access_token"].as_str() {
        Some(t) if status.is_success() => {
            crate::secrets::register(t);
            Ok(t.to_string())
        }
        _ => Err(format!(
            "OAuth2 token request to {url} was refused ({status}): {}",
            body["error_description"]
                .as_str()
                .or(body["error"].as_str())
                .unwrap_or("no reason given")
        )),
    }
}

/// Raw REST requests this engine sends itself.
struct RestApi {
    http: reqwest::Client,
    uri: String,
    token: Option<String>,
    headers: std::collections::BTreeMap<String, String>,
    prefix: String,
}

/// A REST response that was not a success.
struct Refused {
    status: StatusCode,
    message: String,
}

impl RestApi {
    fn url(&self, path: &str) -> String {
        let prefix = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("/{}", self.prefix)
        };
        format!("{}/v1{prefix}{path}", self.uri)
    }

    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request
    }

    async fn get(&self, path: &str) -> std::result::Result<Value, Refused> {
        self.get_url(&format!("{}{path}", self.uri)).await
    }

    async fn get_url(&self, url: &str) -> std::result::Result<Value, Refused> {
        let unavailable = |e: reqwest::Error| Refused {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!("GET {url}: {e}"),
        };
        let response = self
            .request(reqwest::Method::GET, url)
            .send()
            .await
            .map_err(unavailable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(Refused {
                status,
                message: String::new(),
            });
        }
        response.json().await.map_err(unavailable)
    }

    async fn post(&self, path: &str, body: &Value) -> std::result::Result<Value, Refused> {
        let url = self.url(path);
        let response = self
            .request(reqwest::Method::POST, &url)
            .json(body)
            .send()
            .await
            .map_err(|e| Refused {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: format!("POST {url}: {e}"),
            })?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(serde_json::from_str(&text).unwrap_or(Value::Null));
        }
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let message = parsed["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| text.chars().take(300).collect());
        Err(Refused { status, message })
    }

    fn error(&self, what: &str, refused: Refused) -> Error {
        Error::Catalog {
            catalog: self.uri.clone(),
            message: format!("{what}: {} {}", refused.status, refused.message),
        }
    }
}

/// The body of one table's commit.
fn commit_request(table: &TableName, base: &TableMetadata, new: &TableMetadata) -> Result<Value> {
    let (requirements, updates) = updates::diff(base, new)?;
    Ok(json!({
        "identifier": { "namespace": [table.namespace], "name": table.name },
        "requirements": requirements,
        "updates": updates,
    }))
}

fn table_path(table: &TableName) -> String {
    format!(
        "/namespaces/{}/tables/{}",
        urlencode(&table.namespace),
        urlencode(&table.name)
    )
}

#[async_trait]
impl TablePointers for RestApi {
    async fn swap(
        &self,
        table: &TableName,
        _base_location: &str,
        base: &TableMetadata,
        _new_file: &str,
        new: &TableMetadata,
    ) -> Result<Swap> {
        let body = commit_request(table, base, new)?;
        match self.post(&table_path(table), &body).await {
            Ok(response) => Ok(Swap::Moved(
                response["metadata-location"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )),
            Err(r) if r.status == StatusCode::CONFLICT => {
                // Already at the new version (another command made this very move)?
                let now = self.get_url(&self.url(&table_path(table))).await.ok();
                let main = now
                    .as_ref()
                    .and_then(|t| t["metadata"]["current-snapshot-id"].as_i64());
                let done = main.is_some()
                    && main == new.current_snapshot_id()
                    && main != base.current_snapshot_id();
                Ok(if done {
                    Swap::AlreadyThere
                } else {
                    Swap::Conflict
                })
            }
            Err(r) => Err(self.error(&format!("commit to {table} failed"), r)),
        }
    }
}

#[async_trait]
impl MultiTableCommit for RestApi {
    fn check(&self, moves: &[TableMove<'_>]) -> Result<()> {
        for m in moves {
            commit_request(m.table, m.base, m.new)?;
        }
        Ok(())
    }

    async fn commit_all(&self, moves: &[TableMove<'_>]) -> Result<Committed> {
        let body = moves
            .iter()
            .map(|m| commit_request(m.table, m.base, m.new))
            .collect::<Result<Vec<_>>>()?;
        match self
            .post("/transactions/commit", &json!({ "table-changes": body }))
            .await
        {
            Ok(_) => Ok(Committed::All),
            Err(r) if r.status == StatusCode::CONFLICT => Ok(Committed::Conflict(r.message)),
            Err(r) if r.status.is_client_error() => Err(self.error(
                "the server refused the multi-table commit (no table was changed)",
                r,
            )),
            Err(r) => Err(self.error(
                "the multi-table commit failed; whether the server applied it is unknown (`pipeline runs` lists the runs it recorded)",
                r,
            )),
        }
    }
}
