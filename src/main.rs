//! The `pipeline` binary. Everything it does is in the library: [`pipeline::cli`] parses the
//! command line and calls the engine.

fn main() -> std::process::ExitCode {
    pipeline::cli::main()
}
