//! Secrets this process holds (credentials read from the environment or resolved by the AWS
//! chain), and the redaction that keeps them out of every log line and message: a dependency
//! logging its configuration at debug level (as reqsign does with static credentials) prints
//! `<redacted>` instead.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::{OnceLock, RwLock};

/// How many short-lived secrets (tokens, vended or renewed credentials) are remembered: the
/// most recently registered ones. A scheduler running for a year registers a new token every
/// hour; the registry (and the cost of redacting a line) stays bounded.
pub const ROTATING: usize = 256;

/// The secrets: those named by the spec (kept for the process's life) and the short-lived
/// ones (at most [`ROTATING`], newest last).
#[derive(Default)]
struct Registry {
    lasting: Vec<String>,
    rotating: VecDeque<String>,
}

fn registry() -> &'static RwLock<Registry> {
    static SECRETS: OnceLock<RwLock<Registry>> = OnceLock::new();
    SECRETS.get_or_init(|| RwLock::new(Registry::default()))
}

/// Remembers `secret`, which lasts (a value from the environment, a client secret), so that
/// [`redact`] hides it. Values shorter than 6 characters are not worth hiding (and would
/// redact ordinary words).
pub fn register(secret: &str) {
    if secret.len() < 6 {
        return;
    }
    let mut secrets = registry().write().unwrap_or_else(|e| e.into_inner());
    if !secrets.lasting.iter().any(|s| s == secret) {
        secrets.lasting.push(secret.to_string());
    }
}

/// Remembers `secret`, which is short-lived (a token, credentials renewed or vended with a
/// table): among the [`ROTATING`] most recent, the oldest forgotten first.
pub fn register_rotating(secret: &str) {
    if secret.len() < 6 {
        return;
    }
    let mut secrets = registry().write().unwrap_or_else(|e| e.into_inner());
    if secrets.lasting.iter().any(|s| s == secret) {
        return;
    }
    if let Some(at) = secrets.rotating.iter().position(|s| s == secret) {
        let again = secrets.rotating.remove(at).unwrap_or_default();
        secrets.rotating.push_back(again);
        return;
    }
    if secrets.rotating.len() >= ROTATING {
        secrets.rotating.pop_front();
    }
    secrets.rotating.push_back(secret.to_string());
}

/// Whether a property named `key` (a FileIO or catalog property, e.g.
/// `s3.secret-access-key`, `adls.auth.shared-key.account.key`, `gcs.oauth2.token`) holds a
/// secret.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let named = ["secret", "token", "password", "credential", "private-key"]
        .iter()
        .any(|word| key.contains(word));
    named || (key.ends_with("key") && !key.ends_with("key-id"))
}

/// `text` with every registered secret replaced by `<redacted>`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = registry().read().unwrap_or_else(|e| e.into_inner());
    let all = || secrets.lasting.iter().chain(secrets.rotating.iter());
    if !all().any(|s| text.contains(s.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for s in all() {
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

/// `text` on standard output through [`redact`] (a closed stdout is not an error: nobody
/// reads it). Every command's output goes through here, `say!` or [`stdout`].
pub fn print(text: &str) {
    PRINTED.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = std::io::stdout().lock().write_all(redact(text).as_bytes());
}

/// Whether anything was written on standard output through [`print`].
static PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process has written anything on standard output (through [`print`]).
pub fn printed() -> bool {
    PRINTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// `println!` through [`redact`].
macro_rules! say {
    () => {
        $crate::secrets::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::secrets::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `text` on standard error through [`redact`].
pub fn eprint(text: &str) {
    let _ = std::io::stderr().lock().write_all(redact(text).as_bytes());
}

/// `eprintln!` through [`redact`].
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::secrets::eprint(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`redact`].
macro_rules! say_raw {
    ($($arg:tt)*) => {
        $crate::secrets::print(&format!($($arg)*))
    };
}

/// Standard output through [`redact`], a line at a time (a secret is never cut in two by
/// separate writes): what is left of a last line is written when it is dropped.
pub fn stdout() -> RedactedStdout {
    RedactedStdout(Vec::new())
}

/// See [`stdout`].
pub struct RedactedStdout(Vec<u8>);

impl Write for RedactedStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        if let Some(end) = self.0.iter().rposition(|b| *b == b'\n') {
            let lines: Vec<u8> = self.0.drain(..=end).collect();
            print(&String::from_utf8_lossy(&lines));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.0);
        print(&String::from_utf8_lossy(&rest));
        std::io::stdout().flush()
    }
}

impl Drop for RedactedStdout {
    fn drop(&mut self) {
        let _ = self.flush();
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

    #[test]
    fn short_lived_secrets_are_bounded_and_lasting_ones_never_forgotten() {
        register("lasting-secret-from-env");
        for n in 0..10_000 {
            register_rotating(&format!("hourly-token-{n:05}"));
        }
        let held = registry().read().unwrap().rotating.len();
        assert_eq!(held, ROTATING);
        assert_eq!(redact("lasting-secret-from-env"), "<redacted>");
        assert_eq!(redact("hourly-token-09999"), "<redacted>");
        assert_eq!(redact("hourly-token-00000"), "hourly-token-00000");
    }

    #[test]
    fn secret_property_names_are_recognized() {
        for key in [
            "s3.secret-access-key",
            "s3.session-token",
            "adls.auth.shared-key.account.key",
            "adls.sas-token.account.dfs.core.windows.net",
            "gcs.oauth2.token",
            "client.password",
            "gcs.credentials-json",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "s3.access-key-id",
            "s3.endpoint",
            "s3.region",
            "adls.auth.shared-key.account.name",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }
}
