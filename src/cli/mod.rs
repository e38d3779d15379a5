//! The `pipeline` command line: a thin shell over the library, as datafusion-cli splits its
//! own: the arguments ([`args`]), what each command calls ([`command`]), one printer per
//! command ([`print`]) and progress on stderr ([`progress`]). Every command ends with one clear
//! message and an exit code: 0 success, 2 a problem in the spec, the SQL or the command line,
//! 1 a failure while running, 3 `plan --fail-on-breaking` found a breaking change.

pub mod args;
pub mod command;
pub mod print;
pub mod progress;

use std::process::ExitCode;

use clap::Parser;

use crate::secrets::{redact, RedactedStderr};

/// Parses the command line, runs the command on a multi-thread runtime, and turns its outcome
/// into an exit code (errors on stderr, secrets redacted).
pub fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let filter = match cli.verbose {
        0 => "warn",
        1 => "info,datafusion=warn,iceberg=warn",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PIPELINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(|| RedactedStderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(command::execute(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", redact(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}
