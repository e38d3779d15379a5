//! The addresses a REST catalog is reached at (`uri`, `oauth2_server_uri`): URLs over http or
//! https with no user name or password in them (reqwest would send those as Basic
//! authentication, and they would show in messages and lock names), and never plain http
//! when credentials go with the requests, except to this machine (a local test catalog).

use std::net::IpAddr;
use std::ops::Range;

use super::position::Positions;
use crate::error::Result;

/// Checks `uri`, the value of `field` at `span`; `credentials` names what the requests to it
/// carry (a token, a client secret, a SigV4 signature), if anything.
pub(super) fn check_endpoint(
    at: &Positions,
    span: Range<usize>,
    field: &str,
    uri: &str,
    credentials: Option<&str>,
) -> Result<()> {
    let fail =
        |message: String, hint: &str| Err(at.error(span.clone(), message, Some(hint.into())));
    let Ok(url) = reqwest::Url::parse(uri) else {
        return fail(
            format!("`{field}` is not a URL"),
            "e.g. https://catalog.example.com/api/catalog",
        );
    };
    if !matches!(url.scheme(), "http" | "https") {
        return fail(
            format!(
                "`{field}` must be an http or https URL, not {}:",
                url.scheme()
            ),
            "e.g. https://catalog.example.com/api/catalog",
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        return fail(
            format!("`{field}` must not hold a user name or password"),
            "they would be sent as Basic authentication and show in messages: remove them, and name a variable holding a token with `token_env` or an OAuth2 client credential with `credential_env`",
        );
    }
    if let (Some(what), "http") = (credentials, url.scheme()) {
        if !is_loopback(&url) {
            return fail(
                format!(
                    "`{field}` is plain http to {}, and the requests carry {what}: it would travel in the clear",
                    url.host_str().unwrap_or_default()
                ),
                "use https; plain http is accepted only to this machine (localhost, 127.0.0.1, ::1)",
            );
        }
    }
    Ok(())
}

/// Whether `url` names this machine.
fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
