//! The S3 client of a catalog's data and metadata files (opendal, through iceberg's FileIO)
//! signs with credentials kept fresh ([`FreshCredentials`]), not keys read once: a scheduler
//! or a long run keeps reading and writing past the expiry of the credentials it started
//! with (an STS session, a `credential_process`, SSO), as the catalog's signer does.
//!
//! opendal asks for credentials per operation (a FileIO builds its S3 client per call); the
//! cache answers without loading again until the credentials are due for renewal.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iceberg_storage_opendal::{AwsCredential, CustomAwsCredentialLoader, ProvideCredential};
use reqsign_core::time::Timestamp;
use reqsign_core::Context;

use super::fresh_credentials::FreshCredentials;

/// opendal's signer refuses credentials that expire within 10 s of signing and asks again
/// for any that expire within two minutes. Credentials are reported to live at least this
/// long, so it signs with whatever the cache deems current (renewed when due, kept while a
/// renewal fails and they are valid) and asks the cache again on each request.
const SIGNER_HEADROOM: Duration = Duration::from_secs(11);

/// What the data files' credentials are for, in messages.
pub const DATA_FILES: &str = "for the warehouse's S3 files";

/// opendal's credential provider over [`FreshCredentials`].
#[derive(Debug)]
struct DataCredentials(Arc<FreshCredentials>);

impl ProvideCredential for DataCredentials {
    type Credential = AwsCredential;

    async fn provide_credential(&self, _: &Context) -> reqsign_core::Result<Option<AwsCredential>> {
        let c = self
            .0
            .current()
            .await
            .map_err(reqsign_core::Error::credential_invalid)?;
        let expires_in = c
            .expiry()
            .map(|at| timestamp(at.max(SystemTime::now() + SIGNER_HEADROOM)))
            .transpose()?;
        Ok(Some(AwsCredential {
            access_key_id: c.access_key_id().to_string(),
            secret_access_key: c.secret_access_key().to_string(),
            session_token: c.session_token().map(str::to_string),
            expires_in,
        }))
    }
}

fn timestamp(at: SystemTime) -> reqsign_core::Result<Timestamp> {
    let millis = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    Timestamp::from_millisecond(i64::try_from(millis).unwrap_or(i64::MAX))
}

/// The loader to give iceberg's S3 storage factories: every S3 request is signed with the
/// current credentials of `fresh`.
pub fn loader(fresh: Arc<FreshCredentials>) -> CustomAwsCredentialLoader {
    CustomAwsCredentialLoader::new(DataCredentials(fresh))
}
