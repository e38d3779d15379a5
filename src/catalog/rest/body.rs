//! Reading a catalog's or token endpoint's answer with a size cap, so a broken or hostile
//! server cannot make the client read without end.

/// The largest answer read from a catalog (a table's metadata with a long history is a few
/// MiB): a bigger one is a broken or hostile server, and reading stops.
pub(super) const MAX_BODY: usize = 128 << 20;

/// The body of `response` as text, refused past `limit` bytes (without reading further).
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> std::result::Result<String, String> {
    let too_big = || {
        format!(
            "the answer is larger than {} MiB; stopped reading it",
            limit >> 20
        )
    };
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if bytes.len() + chunk.len() > limit {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
