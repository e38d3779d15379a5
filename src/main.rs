//! The `pipeline` binary. Everything it does is in the library: [`pipeline::cli`] parses the
//! command line and calls the engine.

/// The system allocator, with the ceiling `pipeline query` puts on it (see `memory_cap`).
#[global_allocator]
static ALLOCATOR: pipeline::memory_cap::CappedAllocator = pipeline::memory_cap::CappedAllocator;

fn main() -> std::process::ExitCode {
    pipeline::cli::main()
}
