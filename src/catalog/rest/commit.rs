//! How a REST catalog's tables move: one table by a `CommitTableRequest` whose requirements
//! pin the version it was staged on ([`TablePointers`]), or several tables in one
//! `POST /v1/{prefix}/transactions/commit` ([`MultiTableCommit`]), all or nothing.

use async_trait::async_trait;
use iceberg::spec::TableMetadata;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::api::{urlencode, Refused, RestApi};
use crate::catalog::remote::{Committed, MultiTableCommit, Swap, TableMove, TablePointers};
use crate::catalog::updates;
use crate::error::{Error, Result};
use crate::spec::TableName;

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

fn error(api: &RestApi, what: &str, refused: Refused) -> Error {
    Error::Catalog {
        catalog: api.identity.clone(),
        message: match api.refusal(&refused) {
            Some(refusal) => format!("{what}: {refusal}"),
            None => format!("{what}: {}", refused.reason()),
        },
    }
}

#[async_trait]
impl TablePointers for RestApi {
    async fn location(&self, table: &TableName) -> Result<Option<String>> {
        match self.get(&table_path(table)).await {
            Ok(loaded) => Ok(loaded["metadata-location"].as_str().map(str::to_string)),
            Err(r) if r.status == StatusCode::NOT_FOUND => Ok(None),
            Err(r) => Err(error(self, &format!("cannot load {table}"), r)),
        }
    }

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
                let now: Option<TableMetadata> = match self.get(&table_path(table)).await {
                    Ok(mut t) => serde_json::from_value(t["metadata"].take()).ok(),
                    Err(_) => None,
                };
                let done = match &now {
                    Some(now) => updates::reached(now, base, new)?,
                    None => false,
                };
                Ok(if done {
                    Swap::AlreadyThere
                } else {
                    Swap::Conflict
                })
            }
            Err(r) => Err(error(self, &format!("commit to {table} failed"), r)),
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
            Err(r) if r.status.is_client_error() => Err(error(
                self,
                "the server refused the multi-table commit (no table was changed)",
                r,
            )),
            Err(r) => Err(error(
                self,
                "the multi-table commit failed; whether the server applied it is unknown (`pipeline runs` lists the runs it recorded)",
                r,
            )),
        }
    }
}
