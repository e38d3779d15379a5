//! The `pipeline` binary. Everything it does is in the library: [`pipeline::cli`] parses the
//! command line and calls the engine.

/// mimalloc instead of the system allocator: a run allocates and frees many short-lived
/// buffers across threads, and glibc's arenas keep what earlier stages freed, so the peak RSS
/// of a run grew stage by stage.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    pipeline::cli::main()
}
