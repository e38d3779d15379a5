//! The `iceberg::Catalog` of a REST catalog, over [`RestApi`]: namespaces and tables are
//! listed, created, loaded and dropped by the REST routes of the Iceberg REST specification,
//! with every request authenticated the way the spec's catalog section says (`api.rs`).
//!
//! The engine reads through this; it publishes through `commit.rs` (compare-and-set commits
//! and multi-table transactions). A loaded table's files are read with the credentials the
//! server vends for it (its `config` and `storage-credentials`) where it vends any, else with
//! the spec's or the environment's; the spec's other storage settings win (`vended.rs`).

use std::collections::HashMap;

use async_trait::async_trait;
use iceberg::io::{FileIO, FileIOBuilder, StorageFactory};
use iceberg::spec::TableMetadata;
use iceberg::table::Table;
use iceberg::{
    Catalog, Error, ErrorKind, Namespace, NamespaceIdent, Result, Runtime, TableCommit,
    TableCreation, TableIdent,
};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{urlencode, Refused, RestApi};
use super::vended::{TableProps, VendedRoutes};

/// A REST catalog's tables.
pub(super) struct RestTables {
    pub(super) api: std::sync::Arc<RestApi>,
    /// Storage for files reached with the spec's or the environment's credentials.
    pub(super) factory: std::sync::Arc<dyn StorageFactory>,
    /// Storage for files reached with the static credentials the server vends.
    pub(super) vended_factory: std::sync::Arc<dyn StorageFactory>,
    /// FileIO properties from the spec (storage endpoint, region, named credentials).
    pub(super) file_props: HashMap<String, String>,
    /// The server's `/v1/config` `defaults` and `overrides`, for FileIO.
    pub(super) defaults: HashMap<String, String>,
    pub(super) overrides: HashMap<String, String>,
    /// Where the catalog-wide file access finds the credentials vended so far.
    pub(super) vended: std::sync::Arc<VendedRoutes>,
    pub(super) runtime: Runtime,
}

impl std::fmt::Debug for RestTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestTables")
            .field("uri", &self.api.uri)
            .finish_non_exhaustive()
    }
}

/// `LoadTableResult` of the REST specification.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct LoadTable {
    metadata_location: Option<String>,
    metadata: TableMetadata,
    #[serde(default)]
    config: HashMap<String, String>,
    #[serde(default)]
    storage_credentials: Option<Vec<StorageCredential>>,
}

/// One entry of `storage-credentials`: the credentials for files under `prefix`.
#[derive(Deserialize)]
struct StorageCredential {
    prefix: String,
    #[serde(default)]
    config: HashMap<String, String>,
}

/// A namespace's path segment (levels joined by the unit separator, as the spec says).
fn namespace_path(ns: &NamespaceIdent) -> String {
    format!("/namespaces/{}", urlencode(&ns.join("\u{1f}")))
}

fn table_path(table: &TableIdent) -> String {
    format!(
        "{}/tables/{}",
        namespace_path(table.namespace()),
        urlencode(table.name())
    )
}

impl RestTables {
    /// The iceberg error for a refused request: it names the catalog, the request and, for
    /// a refused signature or token, what to check.
    fn refused(&self, what: &str, r: Refused) -> Error {
        let kind = match (r.status, r.kind.as_str()) {
            (StatusCode::NOT_FOUND, k) if k.contains("Namespace") => ErrorKind::NamespaceNotFound,
            (StatusCode::NOT_FOUND, _) => ErrorKind::TableNotFound,
            (StatusCode::CONFLICT, k) if k.contains("Namespace") => {
                ErrorKind::NamespaceAlreadyExists
            }
            (StatusCode::CONFLICT, _) if what.starts_with("commit") => {
                ErrorKind::CatalogCommitConflicts
            }
            (StatusCode::CONFLICT, _) => ErrorKind::TableAlreadyExists,
            (StatusCode::BAD_REQUEST, _) => ErrorKind::DataInvalid,
            _ => ErrorKind::Unexpected,
        };
        let message = match self.api.refusal(&r) {
            Some(refusal) => format!("catalog {}: {what}: {refusal}", self.api.identity),
            None if !r.answered => format!("catalog {}: {}", self.api.identity, r.message),
            None => format!(
                "catalog {}: {what} was refused ({})",
                self.api.identity,
                r.reason()
            ),
        };
        // A commit conflict is worth trying again on a fresh load (iceberg's transactions do).
        Error::new(kind, message).with_retryable(kind == ErrorKind::CatalogCommitConflicts)
    }

    async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        let what = format!("{method} {path}");
        let url = self.api.url(path);
        match self.api.send(method, &url, body).await {
            Ok(body) => Ok(body),
            Err(r) => Err(self.refused(&what, r)),
        }
    }

    /// Whether `path` exists (`HEAD`: 2xx yes, 404 no).
    async fn exists(&self, path: &str) -> Result<bool> {
        match self.api.send(Method::HEAD, &self.api.url(path), None).await {
            Ok(_) => Ok(true),
            Err(r) if r.status == StatusCode::NOT_FOUND => Ok(false),
            Err(r) => Err(self.refused(&format!("HEAD {path}"), r)),
        }
    }

    /// Every page of a listing: `field` of each response, following `next-page-token`; a
    /// token the server gave before (it would list forever) ends the listing with an error.
    async fn pages(&self, path: &str, field: &str) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            if let Some(t) = token.as_ref().filter(|t| !seen.insert(t.to_string())) {
                return Err(Error::new(
                    ErrorKind::Unexpected,
                    format!(
                        "catalog {}: listing {path} went round in a circle (the server gave next-page-token `{t}` twice, after {} entries); stopped: the server's paging is broken",
                        self.api.identity,
                        out.len()
                    ),
                ));
            }
            let page = match &token {
                None => path.to_string(),
                Some(t) if path.contains('?') => format!("{path}&pageToken={}", urlencode(t)),
                Some(t) => format!("{path}?pageToken={}", urlencode(t)),
            };
            let body = self.send(Method::GET, &page, None).await?;
            out.extend(body[field].as_array().cloned().unwrap_or_default());
            match body["next-page-token"].as_str() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(out),
            }
        }
    }

    /// A table from a `LoadTableResult`, its files read with the credentials the server
    /// vended for it, if any (then also for the catalog-wide file access under their prefix).
    fn table(&self, ident: TableIdent, body: Value) -> Result<Table> {
        let loaded: LoadTable = serde_json::from_value(body).map_err(|e| {
            Error::new(
                ErrorKind::DataInvalid,
                format!(
                    "catalog {}: table {ident}: the server's answer is not a LoadTableResult: {e}",
                    self.api.identity
                ),
            )
        })?;
        let location = loaded.metadata.location().to_string();
        let mut server = loaded.config;
        let credential = loaded
            .storage_credentials
            .unwrap_or_default()
            .into_iter()
            .filter(|c| location.starts_with(&c.prefix))
            .max_by_key(|c| c.prefix.len());
        let prefix = match credential {
            Some(c) => {
                server.extend(c.config);
                c.prefix
            }
            None => location,
        };
        for (key, value) in &server {
            if crate::secrets::is_secret_key(key) {
                crate::secrets::register_rotating(value);
            }
        }
        let (props, vended) = TableProps {
            defaults: &self.defaults,
            server,
            spec: &self.file_props,
            overrides: &self.overrides,
        }
        .merge();
        let factory = match vended {
            true => self.vended_factory.clone(),
            false => self.factory.clone(),
        };
        let file_io: FileIO = FileIOBuilder::new(factory).with_props(props).build();
        if vended {
            self.vended.add(&prefix, file_io.clone());
        }
        let builder = Table::builder()
            .identifier(ident)
            .file_io(file_io)
            .metadata(loaded.metadata)
            .runtime(self.runtime.clone());
        match loaded.metadata_location {
            Some(location) => builder.metadata_location(location).build(),
            None => builder.build(),
        }
    }
}

fn namespaces_of(values: Vec<Value>) -> Result<Vec<NamespaceIdent>> {
    values
        .into_iter()
        .map(|v| {
            serde_json::from_value(v)
                .map_err(|e| Error::new(ErrorKind::DataInvalid, format!("a namespace listed: {e}")))
        })
        .collect()
}

#[async_trait]
impl Catalog for RestTables {
    async fn list_namespaces(
        &self,
        parent: Option<&NamespaceIdent>,
    ) -> Result<Vec<NamespaceIdent>> {
        let path = match parent {
            None => "/namespaces".to_string(),
            Some(p) => format!("/namespaces?parent={}", urlencode(&p.join("\u{1f}"))),
        };
        namespaces_of(self.pages(&path, "namespaces").await?)
    }

    async fn create_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> Result<Namespace> {
        let body = json!({ "namespace": namespace, "properties": properties });
        self.send(Method::POST, "/namespaces", Some(&body)).await?;
        Ok(Namespace::with_properties(namespace.clone(), properties))
    }

    async fn get_namespace(&self, namespace: &NamespaceIdent) -> Result<Namespace> {
        let body = self
            .send(Method::GET, &namespace_path(namespace), None)
            .await?;
        let properties = serde_json::from_value(body["properties"].clone()).unwrap_or_default();
        Ok(Namespace::with_properties(namespace.clone(), properties))
    }

    async fn namespace_exists(&self, namespace: &NamespaceIdent) -> Result<bool> {
        self.exists(&namespace_path(namespace)).await
    }

    async fn update_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> Result<()> {
        let body = json!({ "removals": [], "updates": properties });
        let path = format!("{}/properties", namespace_path(namespace));
        self.send(Method::POST, &path, Some(&body)).await?;
        Ok(())
    }

    async fn drop_namespace(&self, namespace: &NamespaceIdent) -> Result<()> {
        self.send(Method::DELETE, &namespace_path(namespace), None)
            .await?;
        Ok(())
    }

    async fn list_tables(&self, namespace: &NamespaceIdent) -> Result<Vec<TableIdent>> {
        let path = format!("{}/tables", namespace_path(namespace));
        self.pages(&path, "identifiers")
            .await?
            .into_iter()
            .map(|v| {
                serde_json::from_value(v)
                    .map_err(|e| Error::new(ErrorKind::DataInvalid, format!("a table listed: {e}")))
            })
            .collect()
    }

    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> Result<Table> {
        let ident = TableIdent::new(namespace.clone(), creation.name.clone());
        let mut body = json!({
            "name": creation.name,
            "schema": creation.schema,
            "stage-create": false,
            "properties": creation.properties,
        });
        if let Some(location) = &creation.location {
            body["location"] = json!(location);
        }
        if let Some(spec) = &creation.partition_spec {
            body["partition-spec"] = serde_json::to_value(spec)?;
        }
        if let Some(order) = &creation.sort_order {
            body["write-order"] = serde_json::to_value(order)?;
        }
        let path = format!("{}/tables", namespace_path(namespace));
        let created = self.send(Method::POST, &path, Some(&body)).await?;
        self.table(ident, created)
    }

    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        let body = self.send(Method::GET, &table_path(table), None).await?;
        self.table(table.clone(), body)
    }

    async fn drop_table(&self, table: &TableIdent) -> Result<()> {
        self.send(Method::DELETE, &table_path(table), None).await?;
        Ok(())
    }

    async fn purge_table(&self, table: &TableIdent) -> Result<()> {
        let path = format!("{}?purgeRequested=true", table_path(table));
        self.send(Method::DELETE, &path, None).await?;
        Ok(())
    }

    async fn table_exists(&self, table: &TableIdent) -> Result<bool> {
        self.exists(&table_path(table)).await
    }

    async fn rename_table(&self, src: &TableIdent, dest: &TableIdent) -> Result<()> {
        let body = json!({ "source": src, "destination": dest });
        self.send(Method::POST, "/tables/rename", Some(&body))
            .await?;
        Ok(())
    }

    async fn register_table(&self, table: &TableIdent, metadata_location: String) -> Result<Table> {
        let body = json!({ "name": table.name(), "metadata-location": metadata_location });
        let path = format!("{}/register", namespace_path(table.namespace()));
        let registered = self.send(Method::POST, &path, Some(&body)).await?;
        self.table(table.clone(), registered)
    }

    async fn update_table(&self, mut commit: TableCommit) -> Result<Table> {
        let ident = commit.identifier().clone();
        let body = json!({
            "identifier": { "namespace": ident.namespace(), "name": ident.name() },
            "requirements": serde_json::to_value(commit.take_requirements())?,
            "updates": serde_json::to_value(commit.take_updates())?,
        });
        let path = table_path(&ident);
        let committed = match self
            .api
            .send(Method::POST, &self.api.url(&path), Some(&body))
            .await
        {
            Ok(body) => body,
            // 409: a requirement failed (the table moved since it was loaded).
            Err(r) => return Err(self.refused(&format!("commit to {path}"), r)),
        };
        self.table(ident, committed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use iceberg::transaction::{ApplyTransactionAction, Transaction};
    use iceberg_storage_opendal::OpenDalResolvingStorageFactory;

    use super::super::api::Auth;
    use super::super::canned::{serve, Answer};
    use super::*;
    use crate::commit::fixture::Warehouse;

    /// A catalog whose table `bronze.t` loads, and whose commits all answer 409.
    async fn conflicting(commits: Arc<AtomicUsize>) -> RestTables {
        let metadata = Warehouse::new().new_table("bronze", "t").metadata;
        let loaded = json!({
            "metadata-location": format!("{}/metadata/00000-a.metadata.json", metadata.location()),
            "metadata": metadata,
        })
        .to_string();
        let uri = serve(move |method, _| match method {
            "POST" => {
                commits.fetch_add(1, Ordering::SeqCst);
                Answer(409, json!({"error": {"message": "Requirement failed: branch main has changed", "type": "CommitFailedException", "code": 409}}).to_string())
            }
            _ => Answer(200, loaded.clone()),
        })
        .await;
        let api = RestApi::new(
            reqwest::Client::new(),
            uri,
            Auth::Anonymous,
            Default::default(),
        );
        RestTables {
            api: Arc::new(api),
            factory: Arc::new(OpenDalResolvingStorageFactory::new()),
            vended_factory: Arc::new(OpenDalResolvingStorageFactory::new()),
            file_props: HashMap::new(),
            defaults: HashMap::new(),
            overrides: HashMap::new(),
            vended: Default::default(),
            runtime: Runtime::current(),
        }
    }

    #[tokio::test]
    async fn a_409_on_a_table_commit_is_a_commit_conflict_that_transactions_try_again() {
        let commits = Arc::new(AtomicUsize::new(0));
        let catalog = conflicting(commits.clone()).await;
        let ident = TableIdent::from_strs(["bronze", "t"]).unwrap();
        let table = catalog.load_table(&ident).await.unwrap();
        let tx = Transaction::new(&table);
        let tx = tx
            .update_table_properties()
            .set("owner".into(), "data".into())
            .apply(tx)
            .unwrap();
        let err = tx.commit(&catalog).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CatalogCommitConflicts, "{err}");
        assert!(err.to_string().contains("branch main has changed"), "{err}");
        assert!(commits.load(Ordering::SeqCst) > 1, "not tried again");
    }
}
