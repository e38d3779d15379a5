//! The `pipeline` command line: a thin shell over the library, as datafusion-cli splits its
//! own: the arguments ([`args`]), what each command calls ([`command`]), one printer per
//! command ([`print`]) and progress on stderr ([`progress`]). Every command ends with one clear
//! message and an exit code: 0 success, 1 a failure while running, 2 a problem in the spec,
//! the SQL or the command line, 3 `plan --fail-on-breaking` found a breaking change, 4 another
//! run of the pipeline holds its lock, 5 tables or files are damaged.

pub mod args;
pub mod cluster;
pub mod command;
pub mod due;
pub mod export;
pub mod impact_render;
pub mod init;
pub mod logging;
pub mod maintain;
pub mod print;
pub mod print_env;
pub mod print_files;
pub mod print_plan;
pub mod print_runs;
pub mod progress;
pub mod query;
pub mod query_args;
pub mod run_args;
pub mod schedule;

use std::process::ExitCode;

use clap::Parser;

use crate::engine::WORKER_STACK_BYTES;
use crate::output::escape_message;
use crate::secrets::redact;

/// Parses the command line, runs the command on a multi-thread runtime, and turns its outcome
/// into an exit code (errors on stderr, secrets redacted).
pub fn main() -> ExitCode {
    let cli = args::Cli::parse();
    if !talks_to_peers(&cli.command) {
        restore_sigpipe();
    }
    logging::init(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tell!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let json = cli.json;
    match runtime.block_on(command::execute(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let text = e.to_string();
            let redacted = redact(&text);
            let message = escape_message(&redacted).to_string();
            tell!("error: {message}");
            // A --json reader gets a document on stdout whatever happened: the error, when
            // the command printed nothing else.
            if json && !crate::secrets::printed() {
                let error = serde_json::json!({"error": message, "exit_code": e.exit_code()});
                crate::secrets::print(&format!("{error}\n"));
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// Commands that hold network connections for long (cluster processes, servers, runs that may
/// drive a cluster): a peer that goes away must be a failed write they handle, not SIGPIPE
/// ending the process (HTTP/2 and gRPC write with `writev`, which raises it). Their output
/// tolerates a closed stdout on its own.
fn talks_to_peers(command: &args::Command) -> bool {
    use args::Command as C;
    matches!(
        command,
        C::Scheduler(_) | C::Executor(_) | C::Mcp { .. } | C::Run { .. } | C::Backfill { .. }
    )
}

/// A closed stdout (`pipeline query ... | head`) ends the process quietly, as it ends every
/// Unix tool, instead of a panic in the next `println!`: Rust ignores SIGPIPE by default, so
/// its default action is restored. Nothing is half published by it: a run's publish is atomic
/// whenever the process stops.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; it only resets the
    // disposition of one signal to the operating system's default.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
