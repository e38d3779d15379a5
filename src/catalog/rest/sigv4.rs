//! AWS Signature Version 4 for REST catalogs (S3 Tables' and Glue's Iceberg endpoints, or a
//! catalog behind API Gateway), signed by the `aws-sigv4` crate: this module only chooses
//! what is signed and keeps the credentials fresh.
//!
//! What is signed, and why:
//! - the method, the path (encoded twice, as SigV4 wants for every service but S3), the query
//!   (our URLs percent-encode every reserved character, so a `+` reads one way only), `host`,
//!   `x-amz-date`, the request's own headers (`content-type` and the spec's `headers`), and the
//!   session token when there is one;
//! - the payload's SHA-256, sent in `x-amz-content-sha256` as hex (what the endpoints check);
//! - never the headers a proxy rewrites (`user-agent`, `transfer-encoding`, the trace id):
//!   reqwest adds `accept`, `content-length` and the like after signing.
//!
//! Credentials come from the spec's named variables, its AWS profile, or the standard chain,
//! kept fresh by `catalog/fresh_credentials.rs`, so a daemon outlives an STS session.

use std::sync::Arc;
use std::time::SystemTime;

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use reqwest::header::{HeaderName, HeaderValue};

use crate::catalog::fresh_credentials::FreshCredentials;

/// Signs requests for one service in one region.
pub(in crate::catalog) struct SigV4 {
    credentials: Arc<FreshCredentials>,
    /// The signing region, e.g. `us-east-1`.
    region: String,
    /// The signing name: `s3tables`, `glue`, `execute-api`.
    service: String,
}

/// What the signer's credentials are for, in messages.
pub(in crate::catalog) const SIGNING: &str = "to sign catalog requests with";

impl SigV4 {
    /// Signs with `credentials`, kept fresh.
    pub(in crate::catalog) fn new(
        credentials: Arc<FreshCredentials>,
        region: String,
        service: String,
    ) -> SigV4 {
        SigV4 {
            credentials,
            region,
            service,
        }
    }

    /// Adds the signature headers (`authorization`, `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token`) to `request`.
    pub(super) async fn sign(&self, request: &mut reqwest::Request) -> Result<(), String> {
        let identity: Identity = self.credentials.current().await?.into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| format!("cannot sign: {e}"))?
            .into();
        let body = request
            .body()
            .map(|b| {
                b.as_bytes()
                    .ok_or("a streamed request body cannot be signed".to_string())
            })
            .transpose()?
            .unwrap_or(&[]);
        let headers: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .collect();
        let signable = SignableRequest::new(
            request.method().as_str(),
            request.url().as_str(),
            headers.into_iter(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| format!("cannot sign: {e}"))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| format!("cannot sign: {e}"))?
            .into_parts();
        let (headers, _) = instructions.into_parts();
        for header in headers {
            let value =
                HeaderValue::from_str(header.value()).map_err(|e| format!("cannot sign: {e}"))?;
            let name = HeaderName::from_bytes(header.name().as_bytes())
                .map_err(|e| format!("cannot sign: {e}"))?;
            request.headers_mut().insert(name, value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use std::time::Duration;

    use aws_credential_types::provider::future;
    use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
    use aws_credential_types::Credentials;
    use sha2::{Digest, Sha256};

    use super::*;

    /// Hands out credentials valid for `valid_for`, counting how often it is asked; from the
    /// call numbered `fails_from` on it fails (`hangs`: never answers).
    #[derive(Debug)]
    struct Counting {
        calls: Arc<AtomicUsize>,
        valid_for: Duration,
        fails_from: usize,
        hangs: bool,
    }

    impl ProvideCredentials for Counting {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if n >= self.fails_from && self.hangs {
                return future::ProvideCredentials::new(std::future::pending());
            }
            if n >= self.fails_from {
                return future::ProvideCredentials::ready(Err(
                    aws_credential_types::provider::error::CredentialsError::not_loaded(
                        "the chain is down",
                    ),
                ));
            }
            future::ProvideCredentials::ready(Ok(Credentials::new(
                format!("AKIDTEST{n}"),
                "test-secret-never-print",
                Some("session-token".into()),
                Some(SystemTime::now() + self.valid_for),
                "test",
            )))
        }
    }

    fn failing_signer(
        valid_for: Duration,
        fails_from: usize,
        hangs: bool,
    ) -> (SigV4, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let provider = SharedCredentialsProvider::new(Counting {
            calls: calls.clone(),
            valid_for,
            fails_from,
            hangs,
        });
        let timeout = Duration::from_millis(300);
        let credentials = FreshCredentials::with_load_timeout(provider, SIGNING, timeout);
        let signer = SigV4::new(Arc::new(credentials), "eu-west-1".into(), "glue".into());
        (signer, calls)
    }

    fn signer(valid_for: Duration) -> (SigV4, Arc<AtomicUsize>) {
        failing_signer(valid_for, usize::MAX, false)
    }

    fn key_of(r: &reqwest::Request) -> String {
        let auth = r.headers()["authorization"].to_str().unwrap();
        auth.split("Credential=")
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_string()
    }

    fn request(body: &str) -> reqwest::Request {
        reqwest::Client::new()
            .post("https://glue.eu-west-1.amazonaws.com/iceberg/v1/namespaces?warehouse=1%3A2")
            .header("content-type", "application/json")
            .body(body.to_string())
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_signed_request_carries_its_scope_signed_headers_and_body_hash() {
        let (signer, _) = signer(Duration::from_secs(3600));
        let mut r = request("{\"namespace\":[\"bronze\"]}");
        signer.sign(&mut r).await.unwrap();
        let header = |name: &str| r.headers()[name].to_str().unwrap().to_string();
        let auth = header("authorization");
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST0/")
                && auth.contains("/eu-west-1/glue/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="),
            "{auth}"
        );
        let hash = Sha256::digest(b"{\"namespace\":[\"bronze\"]}");
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(header("x-amz-content-sha256"), hex);
        assert_eq!(header("x-amz-security-token"), "session-token");
        assert!(!auth.contains("test-secret"));
    }

    #[tokio::test]
    async fn credentials_are_fetched_again_only_when_they_are_about_to_expire() {
        let (lasting, calls) = signer(Duration::from_secs(3600));
        for _ in 0..3 {
            lasting.sign(&mut request("")).await.unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Credentials issued for two minutes are kept until the last 30 s of their life, not
        // fetched again for every request.
        let (short, calls) = signer(Duration::from_secs(120));
        for _ in 0..3 {
            short.sign(&mut request("")).await.unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Two-second credentials are fetched again in their last half second.
        let (brief, calls) = signer(Duration::from_secs(2));
        brief.sign(&mut request("")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1600)).await;
        let mut r = request("");
        brief.sign(&mut r).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(key_of(&r), "AKIDTEST1");
    }

    #[tokio::test]
    async fn a_failed_or_hanging_renewal_keeps_credentials_still_valid_and_says_when_none_are() {
        for hangs in [false, true] {
            let (signer, calls) = failing_signer(Duration::from_secs(2), 1, hangs);
            signer.sign(&mut request("")).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1600)).await;
            // Due for renewal, which fails: the first key, still valid, signs.
            let mut r = request("");
            signer.sign(&mut r).await.unwrap();
            assert_eq!(key_of(&r), "AKIDTEST0");
            assert_eq!(calls.load(Ordering::SeqCst), 2);
            // Expired, and no new ones: an error that says so, in bounded time.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let started = std::time::Instant::now();
            let err = signer.sign(&mut request("")).await.unwrap_err();
            assert!(
                err.contains("AWS credentials to sign catalog requests with are missing"),
                "{err}"
            );
            assert!(started.elapsed() < Duration::from_secs(5));
            assert!(!err.contains("test-secret"), "{err}");
        }
    }
}
