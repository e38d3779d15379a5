//! AWS S3 Tables: a table bucket as the catalog, data and metadata on the bucket's S3
//! storage. Reads go through `iceberg-catalog-s3tables`; each table pointer moves by
//! `UpdateTableMetadataLocation` with the version token read just before, S3 Tables'
//! compare-and-set. S3 Tables has no multi-table commit, so a run publishes table by table
//! through a durable publish record (`commit::publish`'s journal).

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_s3tables::config::http::HttpResponse;
use aws_sdk_s3tables::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3tables::operation::get_table_metadata_location::{
    GetTableMetadataLocationError, GetTableMetadataLocationOutput,
};
use iceberg::io::FileIOBuilder;
use iceberg::spec::TableMetadata;
use iceberg::CatalogBuilder;
use iceberg_catalog_s3tables::{S3TablesCatalogBuilder, S3TABLES_CATALOG_PROP_TABLE_BUCKET_ARN};
use iceberg_storage_opendal::OpenDalStorageFactory;

use super::connection::{Backend, PipelineCatalog};
use super::remote::{RemoteCatalog, Swap, TablePointers};
use super::storage;
use crate::error::{Error, Result};
use crate::spec::{S3TablesConfig, TableName};

/// Connects to the table bucket of `config`.
pub(super) async fn connect(config: &S3TablesConfig) -> Result<PipelineCatalog> {
    let identity = config.table_bucket_arn.clone();
    let sdk =
        storage::sdk_config(&identity, &config.storage, config.endpoint_url.as_deref()).await?;
    let client = aws_sdk_s3tables::Client::new(&sdk);
    let access = storage::file_io_props(&identity, &config.storage, &sdk, true).await?;
    let factory = Arc::new(OpenDalStorageFactory::S3 {
        customized_credential_load: access.loader(),
    });
    let props = access.props;
    let mut catalog_props = props.clone();
    catalog_props.insert(
        S3TABLES_CATALOG_PROP_TABLE_BUCKET_ARN.to_string(),
        identity.clone(),
    );
    let name = identity
        .rsplit('/')
        .next()
        .unwrap_or("s3tables")
        .to_string();
    let inner = S3TablesCatalogBuilder::default()
        .with_client(client.clone())
        .with_storage_factory(factory.clone())
        .load(name.clone(), catalog_props)
        .await
        .map_err(|e| Error::Catalog {
            catalog: identity.clone(),
            message: format!("cannot open the table bucket: {e}"),
        })?;
    let inner: Arc<dyn iceberg::Catalog> = Arc::new(inner);
    let file_io = FileIOBuilder::new(factory).with_props(&props).build();
    let pointers = Arc::new(S3TablesPointers {
        client,
        bucket_arn: identity.clone(),
    });
    let remote = Arc::new(RemoteCatalog {
        kind: "s3tables",
        identity,
        catalog: inner.clone(),
        pointers,
        transactions: None,
        file_io: file_io.clone(),
        metadata_files: Default::default(),
    });
    Ok(PipelineCatalog {
        inner,
        name,
        backend: Backend::Remote(remote),
        file_io,
        env: None,
    })
}

/// Table pointers of one table bucket.
struct S3TablesPointers {
    client: aws_sdk_s3tables::Client,
    bucket_arn: String,
}

impl S3TablesPointers {
    /// `table`'s metadata location and version token (`GetTableMetadataLocation`).
    async fn pointer(
        &self,
        table: &TableName,
    ) -> std::result::Result<
        GetTableMetadataLocationOutput,
        SdkError<GetTableMetadataLocationError, HttpResponse>,
    > {
        self.client
            .get_table_metadata_location()
            .table_bucket_arn(&self.bucket_arn)
            .namespace(&table.namespace)
            .name(&table.name)
            .send()
            .await
    }

    fn error(&self, table: &TableName, what: &str, e: impl std::error::Error) -> Error {
        Error::Catalog {
            catalog: self.bucket_arn.clone(),
            message: format!("{what} {table}: {}", DisplayErrorContext(e)),
        }
    }
}

#[async_trait]
impl TablePointers for S3TablesPointers {
    async fn location(&self, table: &TableName) -> Result<Option<String>> {
        match self.pointer(table).await {
            Ok(current) => Ok(current.metadata_location().map(str::to_string)),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(self.error(table, "cannot read the metadata location of", e)),
        }
    }

    async fn swap(
        &self,
        table: &TableName,
        base_location: &str,
        _base: &TableMetadata,
        new_file: &str,
        _new: &TableMetadata,
    ) -> Result<Swap> {
        let current = self
            .pointer(table)
            .await
            .map_err(|e| self.error(table, "cannot read the metadata location of", e))?;
        match current.metadata_location() {
            Some(l) if l == new_file => return Ok(Swap::AlreadyThere),
            Some(l) if l == base_location => {}
            _ => return Ok(Swap::Conflict),
        }
        // Tests stop here to let another writer make the token stale.
        crate::fault::pause_point(&format!("version-token-read {table}"));
        let result = self
            .client
            .update_table_metadata_location()
            .table_bucket_arn(&self.bucket_arn)
            .namespace(&table.namespace)
            .name(&table.name)
            .version_token(current.version_token())
            .metadata_location(new_file)
            .send()
            .await;
        match result {
            Ok(_) => Ok(Swap::Moved(new_file.to_string())),
            Err(e) => {
                let conflict = e
                    .as_service_error()
                    .is_some_and(|s| s.is_conflict_exception());
                if conflict {
                    tracing::info!(table = %table, "version token is stale: another writer moved the table");
                    Ok(Swap::Conflict)
                } else {
                    Err(self.error(table, "cannot move", e))
                }
            }
        }
    }
}
