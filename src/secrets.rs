//! Secrets this process holds (credentials read from the environment or resolved by the AWS
//! chain), and the redaction that keeps them out of every log line and message: a dependency
//! logging its configuration at debug level (as reqsign does with static credentials) prints
//! `<redacted>` instead.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{OnceLock, RwLock};

fn registry() -> &'static RwLock<Vec<String>> {
    static SECRETS: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    SECRETS.get_or_init(|| RwLock::new(Vec::new()))
}

/// Remembers `secret` so that [`redact`] hides it. Values shorter than 6 characters are not
/// worth hiding (and would redact ordinary words).
pub fn register(secret: &str) {
    if secret.len() < 6 {
        return;
    }
    let mut secrets = registry().write().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
    }
}

/// `text` with every registered secret replaced by `<redacted>`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = registry().read().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|s| text.contains(s.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for s in secrets.iter() {
        out = out.replace(s.as_str(), "<redacted>");
    }
    Cow::Owned(out)
}

/// Standard error through [`redact`]: the writer for log output.
pub struct RedactedStderr;

impl Write for RedactedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_redacted_and_others_kept() {
        register("s3cr3t-value-xyz");
        register("abc");
        assert_eq!(redact("key=s3cr3t-value-xyz, abc"), "key=<redacted>, abc");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }
}
