//! S3 as a node of a Ballista cluster (`pipeline scheduler`, `pipeline executor`) reaches it:
//! with the node's own settings and credentials, never with the driver's. A plan carries
//! table locations (`s3://BUCKET/...`), nothing secret; each node signs its requests with the
//! AWS credential chain of its own environment (environment variables, shared profile,
//! `credential_process`, SSO, web identity, instance or container role), kept fresh as the
//! driver's are ([`FreshCredentials`]).
//!
//! Nothing is resolved until a node first touches S3: a node of a cluster over a local
//! warehouse never walks the chain (off AWS its last link probes the instance metadata
//! service, which costs seconds).

use std::fmt;
use std::sync::Arc;

use aws_config::default_provider::credentials::DefaultCredentialsChain;
use aws_config::Region;
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider};
use iceberg::io::{FileIO, FileIOBuilder};
use iceberg_storage_opendal::OpenDalStorageFactory;
use tokio::sync::OnceCell;

use super::data_credentials::{self, DATA_FILES};
use super::fresh_credentials::FreshCredentials;
use super::storage::{first_env, s3_location_props};

/// Where a node's S3 requests go. Unset fields come from the node's environment as the AWS
/// SDKs read it: `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_REGION` or
/// `AWS_DEFAULT_REGION`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeS3 {
    /// An S3-compatible endpoint (MinIO, moto, a VPC endpoint); AWS's own when unset.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Path-style requests (`ENDPOINT/BUCKET/KEY`) instead of virtual-hosted ones, as most
    /// S3-compatible stores want.
    pub path_style: bool,
}

impl NodeS3 {
    /// These settings, unset ones filled from the environment.
    pub fn with_environment(self) -> NodeS3 {
        NodeS3 {
            endpoint: self
                .endpoint
                .or_else(|| first_env(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"])),
            region: self
                .region
                .or_else(|| first_env(&["AWS_REGION", "AWS_DEFAULT_REGION"])),
            path_style: self.path_style,
        }
    }

    /// A FileIO reading and writing `s3://` and `s3a://` paths with these settings and the
    /// node's own credentials (loaded at the first request).
    pub fn file_io(&self) -> FileIO {
        let props = s3_location_props(
            self.endpoint.as_deref(),
            self.region.clone(),
            self.path_style,
        );
        let chain = LazyChain {
            region: self.region.clone(),
            chain: OnceCell::new(),
        };
        let fresh = FreshCredentials::new(SharedCredentialsProvider::new(chain), DATA_FILES);
        let factory = Arc::new(OpenDalStorageFactory::S3 {
            customized_credential_load: Some(data_credentials::loader(Arc::new(fresh))),
        });
        FileIOBuilder::new(factory).with_props(props).build()
    }
}

/// The AWS SDK's default credential chain, built when first asked for credentials.
struct LazyChain {
    region: Option<String>,
    chain: OnceCell<DefaultCredentialsChain>,
}

impl fmt::Debug for LazyChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LazyChain(the node's AWS credential chain)")
    }
}

impl ProvideCredentials for LazyChain {
    fn provide_credentials<'a>(&'a self) -> provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        provider::future::ProvideCredentials::new(async move {
            let chain = self
                .chain
                .get_or_init(|| async {
                    let mut builder = DefaultCredentialsChain::builder();
                    if let Some(region) = &self.region {
                        builder = builder.region(Region::new(region.clone()));
                    }
                    builder.build().await
                })
                .await;
            chain.provide_credentials().await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_given_win_over_the_environment() {
        let given = NodeS3 {
            endpoint: Some("http://minio:9000".into()),
            region: Some("eu-west-1".into()),
            path_style: true,
        };
        assert_eq!(given.clone().with_environment(), given);
    }
}
