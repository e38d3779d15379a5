//! AWS credentials kept fresh for as long as a process runs: loaded from a provider (the
//! spec's named variables, its profile, or the standard chain) when first needed and again
//! before they expire (five minutes before, or a quarter of their life when that is shorter,
//! so credentials issued for minutes are not fetched on every use). A renewal that fails, or
//! takes longer than thirty seconds, keeps credentials that are still valid; with none, the
//! error says where to set them. The catalog's request signer and the S3 client of its data
//! files (`data_credentials.rs`) each keep one.

use std::fmt;
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use tokio::sync::Mutex;

/// At most this long before their expiry credentials are fetched again (a quarter of their
/// life when that is shorter).
const REFRESH_BEFORE: Duration = Duration::from_secs(300);
/// The longest a credential load may take (the AWS chain may ask a metadata service that
/// does not answer); users wait for it, since it holds the cache's lock.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Credentials and when they were loaded.
#[derive(Clone)]
struct Loaded {
    credentials: Credentials,
    at: SystemTime,
}

impl Loaded {
    /// Whether they should be loaded again at `now`.
    fn due(&self, now: SystemTime) -> bool {
        let Some(expiry) = self.credentials.expiry() else {
            return false;
        };
        let life = expiry.duration_since(self.at).unwrap_or_default();
        now + (life / 4).min(REFRESH_BEFORE) >= expiry
    }

    /// Whether they can still sign at `now`.
    fn valid(&self, now: SystemTime) -> bool {
        self.credentials.expiry().is_none_or(|at| now < at)
    }
}

/// A provider's credentials, cached and renewed before they expire.
pub struct FreshCredentials {
    provider: SharedCredentialsProvider,
    /// What they are for, in messages: "to sign catalog requests with".
    purpose: &'static str,
    cached: Mutex<Option<Loaded>>,
    load_timeout: Duration,
}

// Credentials are secret: only what they are for is shown.
impl fmt::Debug for FreshCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FreshCredentials({})", self.purpose)
    }
}

impl FreshCredentials {
    /// Credentials from `provider`, used `purpose` (said in messages).
    pub fn new(provider: SharedCredentialsProvider, purpose: &'static str) -> FreshCredentials {
        FreshCredentials::with_load_timeout(provider, purpose, LOAD_TIMEOUT)
    }

    /// As [`FreshCredentials::new`], waiting at most `load_timeout` for a load.
    pub fn with_load_timeout(
        provider: SharedCredentialsProvider,
        purpose: &'static str,
        load_timeout: Duration,
    ) -> FreshCredentials {
        FreshCredentials {
            provider,
            purpose,
            cached: Mutex::new(None),
            load_timeout,
        }
    }

    /// The current credentials: the cached ones unless they are due for renewal; when a
    /// renewal fails (or takes longer than the load timeout), the cached ones as long as they
    /// have not expired. Their secret parts are registered for redaction.
    pub async fn current(&self) -> Result<Credentials, String> {
        let mut cached = self.cached.lock().await;
        let now = SystemTime::now();
        if let Some(c) = cached.as_ref().filter(|c| !c.due(now)) {
            return Ok(c.credentials.clone());
        }
        let loaded = match tokio::time::timeout(
            self.load_timeout,
            self.provider.provide_credentials(),
        )
        .await
        {
            Ok(Ok(credentials)) => credentials,
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!(
                        "loading them took more than {}s",
                        self.load_timeout.as_secs_f32()
                    ),
                };
                if let Some(c) = cached.as_ref().filter(|c| c.valid(SystemTime::now())) {
                    tracing::warn!("AWS credentials {} could not be renewed ({why}); the current ones are still valid and are kept", self.purpose);
                    return Ok(c.credentials.clone());
                }
                return Err(format!(
                    "AWS credentials {} are missing: {why}; set them in the environment (AWS_ACCESS_KEY_ID, ...), a profile, or name variables with access_key_id_env / secret_access_key_env",
                    self.purpose
                ));
            }
        };
        crate::secrets::register_rotating(loaded.secret_access_key());
        if let Some(token) = loaded.session_token() {
            crate::secrets::register_rotating(token);
        }
        tracing::debug!(expiry = ?loaded.expiry(), "AWS credentials {} (re)loaded", self.purpose);
        *cached = Some(Loaded {
            credentials: loaded.clone(),
            at: now,
        });
        Ok(loaded)
    }
}
