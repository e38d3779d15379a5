//! What reaches stderr besides a command's own output. At the default verbosity: the engine's
//! own warnings in full, and a dependency's warning or error as one line in the engine's
//! words, once per kind (a library's retries must not flood a terminal, and a `Debug` dump of
//! an HTTP response is for `-v`). `-v` shows every library's info and warnings as they are,
//! `-vv` debug; `PIPELINE_LOG` (an `EnvFilter`, e.g. `PIPELINE_LOG=aws_config=debug`)
//! overrides all of it. Secrets are redacted everywhere.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{EnvFilter, FilterFn};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::secrets::RedactedStderr;

/// The engine's own targets.
const OURS: &str = "pipeline";

/// Longest dependency message shown at the default verbosity.
const MAX_LINE: usize = 200;

/// Installs the logger for `verbose` (the count of `-v`).
pub fn init(verbose: u8) {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let full = |filter: EnvFilter| {
        tracing_subscriber::fmt::layer()
            .with_writer(|| RedactedStderr)
            .with_ansi(ansi)
            .with_filter(filter)
    };
    if let Ok(filter) = EnvFilter::try_from_env("PIPELINE_LOG") {
        tracing_subscriber::registry().with(full(filter)).init();
        return;
    }
    match verbose {
        // MCP calls are logged at every verbosity.
        0 => tracing_subscriber::registry()
            .with(full(EnvFilter::new("pipeline=warn,pipeline::mcp=info")))
            .with(
                DependencyWarnings::default().with_filter(FilterFn::new(|m| {
                    !m.target().starts_with(OURS) && *m.level() <= Level::WARN
                })),
            )
            .init(),
        1 => tracing_subscriber::registry()
            .with(full(EnvFilter::new("info,datafusion=warn,iceberg=warn")))
            .init(),
        _ => tracing_subscriber::registry()
            .with(full(EnvFilter::new("debug")))
            .init(),
    }
}

/// Prints a dependency's warning or error as one line, once per library and message.
#[derive(Default)]
struct DependencyWarnings {
    seen: Mutex<HashSet<String>>,
}

impl<S: Subscriber> Layer<S> for DependencyWarnings {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut message = Message::default();
        event.record(&mut message);
        let library = event.metadata().target().split("::").next().unwrap_or("");
        let text = one_line(&message.0);
        let key = format!("{library}: {}", text.chars().take(48).collect::<String>());
        if !self.seen.lock().map(|mut s| s.insert(key)).unwrap_or(true) {
            return;
        }
        let level = if *event.metadata().level() == Level::ERROR {
            "error"
        } else {
            "warning"
        };
        let line = format!("{level}: {}\n", in_our_words(library, &text));
        let _ = RedactedStderr.write_all(line.as_bytes());
    }
}

/// A dependency's message as the user should read it: what it means for them, where that is
/// known, and how to see the rest.
fn in_our_words(library: &str, text: &str) -> String {
    let aws = library.starts_with("aws_");
    if aws && (text.contains("credentials") || text.contains("region") || text.contains("IMDS")) {
        return format!(
            "the AWS SDK could not load credentials or a region from the environment, a profile or the instance metadata service ({text}); S3 access that needs them will fail: set them in the environment or name variables in the spec (access_key_id_env, ...); -v shows the details"
        );
    }
    if library.starts_with("ballista") {
        return format!("the Ballista cluster: {text} (-v shows the details)");
    }
    format!("{library}: {text} (-v shows the details)")
}

/// The first line of `text`, without what follows a `Debug` dump's opening brace, cut to
/// [`MAX_LINE`] characters.
fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    let plain = match first.find(['{', '[']) {
        Some(i) if i > 0 => first[..i].trim_end_matches([' ', ':', '=', '(']),
        _ => first,
    };
    if plain.chars().count() <= MAX_LINE {
        return plain.to_string();
    }
    let mut cut: String = plain.chars().take(MAX_LINE).collect();
    cut.push('…');
    cut
}

/// An event's `message` field.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_message_becomes_one_short_line() {
        assert_eq!(
            one_line(
                "failed to load region from IMDS err=Response { status: 500, body: .. }\nmore"
            ),
            "failed to load region from IMDS err=Response"
        );
        assert_eq!(one_line("plain words"), "plain words");
        assert_eq!(one_line("{starts with a brace}"), "{starts with a brace}");
        let long = "x".repeat(500);
        assert_eq!(one_line(&long).chars().count(), MAX_LINE + 1);
        let aws = in_our_words("aws_config", "failed to load region from IMDS");
        assert!(aws.starts_with("the AWS SDK could not load credentials or a region"));
        assert!(in_our_words("hyper", "x").ends_with("(-v shows the details)"));
    }
}
