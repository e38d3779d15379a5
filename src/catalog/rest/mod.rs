//! Iceberg REST catalogs, spoken by this module alone: every request (reads, creates and
//! commits) goes through one HTTP client with the catalog's authentication, a bearer or OAuth2
//! token, or an AWS SigV4 signature (S3 Tables' and Glue's Iceberg REST endpoints).
//!
//! - `api.rs`: the requests, authenticated and with the spec's headers;
//! - `auth.rs`: which authentication the spec asks for; `sigv4.rs`: the signer; `oauth.rs`:
//!   OAuth2 tokens kept fresh; `body.rs`: answers read with a size cap;
//! - `tables.rs`: the `iceberg::Catalog` the engine reads through; `vended.rs`: credentials
//!   the server vends with a table, used for its files and everything under their prefix;
//! - `commit.rs`: one table by compare-and-set, or several in one
//!   `POST /v1/{prefix}/transactions/commit` when `/v1/config` lists that endpoint.

mod api;
mod auth;
mod body;
#[cfg(test)]
mod canned;
mod commit;
mod oauth;
mod sigv4;
mod tables;
mod vended;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use iceberg::io::StorageFactory;
use iceberg_storage_opendal::OpenDalResolvingStorageFactory;
use reqwest::Method;

use self::api::{urlencode, RestApi};
use self::tables::RestTables;
use super::connection::{Backend, PipelineCatalog};
use super::remote::{MultiTableCommit, RemoteCatalog};
use crate::error::{Error, Result};
use crate::spec::RestConfig;

const TRANSACTIONS_ENDPOINT: &str = "POST /v1/{prefix}/transactions/commit";

/// Connects to the REST catalog of `config`: authenticates, reads `/v1/config`.
pub(super) async fn connect(config: &RestConfig) -> Result<PipelineCatalog> {
    let identity = config.identity();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Error::Catalog {
            catalog: identity.clone(),
            message: format!("cannot set up the HTTP client: {e}"),
        })?;
    // Storage credentials are optional: the server may vend them with each table, and the
    // tables may not be on S3 at all.
    let (auth, access) = auth::authenticate(config, &http).await?;
    let mut api = RestApi::new(http, config.uri.clone(), auth, request_headers(config));
    api.identity = identity.clone();
    let server = server_config(&api, config).await?;
    api.prefix = server.prefix;
    let api = Arc::new(api);
    tracing::debug!(uri = %config.uri, transactions = server.transactions, "connected to REST catalog");

    // Files are reached with the spec's or the environment's credentials (kept fresh where a
    // provider gives them), but a table's whose credentials the server vends: with those.
    let plain = Arc::new(OpenDalResolvingStorageFactory::new());
    let factory: Arc<dyn StorageFactory> = match access.loader() {
        Some(loader) => {
            Arc::new(OpenDalResolvingStorageFactory::new().with_s3_credential_loader(loader))
        }
        None => plain.clone(),
    };
    let file_props = access.props;
    let routes = Arc::new(vended::VendedRoutes::default());
    let routing = vended::RoutingStorageFactory {
        base: factory.clone(),
        routes: routes.clone(),
    };
    let file_io = iceberg::io::FileIOBuilder::new(Arc::new(routing))
        .with_props(&file_props)
        .build();
    let inner: Arc<dyn iceberg::Catalog> = Arc::new(RestTables {
        api: api.clone(),
        factory,
        vended_factory: plain,
        file_props,
        defaults: server.defaults,
        overrides: server.overrides,
        vended: routes,
        runtime: iceberg::Runtime::current(),
    });
    let multi_table: Option<Arc<dyn MultiTableCommit>> =
        if server.transactions && config.transactions {
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
        metadata_files: Default::default(),
    });
    Ok(PipelineCatalog {
        inner,
        name: "rest".to_string(),
        backend: Backend::Remote(remote),
        file_io,
        env: None,
    })
}

/// The header asking the server to vend credentials with each table.
const DELEGATION: &str = "X-Iceberg-Access-Delegation";

/// The headers every request carries: the spec's, and, when `vended_credentials` is on and
/// the spec does not set it, `X-Iceberg-Access-Delegation: vended-credentials`.
fn request_headers(config: &RestConfig) -> BTreeMap<String, String> {
    let mut headers = config.headers.clone();
    let set = headers.keys().any(|k| k.eq_ignore_ascii_case(DELEGATION));
    if config.vended_credentials && !set {
        headers.insert(DELEGATION.into(), "vended-credentials".into());
    }
    headers
}

/// What the server's `/v1/config` says.
struct ServerConfig {
    /// The path prefix of its routes.
    prefix: String,
    /// Whether it lists the multi-table commit endpoint.
    transactions: bool,
    defaults: HashMap<String, String>,
    overrides: HashMap<String, String>,
}

/// Asks the server for its `/v1/config` (the first request: a refused credential or
/// signature shows here, said plainly).
async fn server_config(api: &RestApi, config: &RestConfig) -> Result<ServerConfig> {
    let fail = |message: String| Error::Catalog {
        catalog: config.identity(),
        message,
    };
    let url = match &config.warehouse {
        Some(w) => format!("{}/v1/config?warehouse={}", config.uri, urlencode(w)),
        None => format!("{}/v1/config", config.uri),
    };
    let server = api.send(Method::GET, &url, None).await.map_err(|e| {
        fail(api.refusal(&e).unwrap_or_else(|| match e.answered {
            true => format!(
                "GET /v1/config failed ({}); is `uri` the catalog's base URL (without /v1)?",
                e.reason()
            ),
            false => e.message.clone(),
        }))
    })?;
    let map = |key: &str| -> HashMap<String, String> {
        serde_json::from_value(server[key].clone()).unwrap_or_default()
    };
    let (defaults, overrides) = (map("defaults"), map("overrides"));
    let prefix = overrides
        .get("prefix")
        .or(defaults.get("prefix"))
        .cloned()
        .unwrap_or_default();
    let transactions = server["endpoints"]
        .as_array()
        .is_some_and(|e| e.iter().any(|v| v.as_str() == Some(TRANSACTIONS_ENDPOINT)));
    Ok(ServerConfig {
        prefix,
        transactions,
        defaults,
        overrides,
    })
}
