//! A ceiling on the memory this process holds, for the commands that run SQL a reader wrote
//! (`pipeline query`, and the child process the MCP server runs each `query` call in).
//!
//! DataFusion's memory pool bounds what its operators hold (sorts and aggregations spill at
//! its limit), but not what a scalar function allocates (`repeat(s, n)` with `n` from a
//! column) nor the batches between operators. So the binary's global allocator is
//! [`CappedAllocator`]: once [`set`] is called, it counts the bytes the process holds, and an
//! allocation that would take it past the ceiling ends the process at once with one sentence
//! on stderr and exit code 2 (as ClickHouse's `max_memory_usage` stops a query where DuckDB's
//! `memory_limit` only bounds its buffer manager). Before [`set`], the allocator adds one
//! relaxed load per allocation and counts nothing.
//!
//! The sentence is written with `write(2)` and the process ends with `_exit(2)`: nothing that
//! could allocate runs after the ceiling is hit.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The exit code of a process stopped at its memory ceiling: the usage code (narrow the
/// query, or raise the ceiling).
pub const EXIT_CODE: i32 = 2;

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes held by allocations made since counting began (frees of older allocations make it
/// lower, never higher, than the truth).
static HELD: AtomicIsize = AtomicIsize::new(0);
static CEILING: AtomicUsize = AtomicUsize::new(usize::MAX);
static MESSAGE: OnceLock<String> = OnceLock::new();

/// The global allocator of the `pipeline` binary: the system allocator, with the ceiling
/// [`set`] puts on it.
pub struct CappedAllocator;

/// From now on, an allocation that would take the bytes this process holds past `bytes` ends
/// the process with `message` (one line) on stderr and [`EXIT_CODE`]. Call it once, early; a
/// later call changes the ceiling, not the message.
pub fn set(bytes: usize, message: &str) {
    let _ = MESSAGE.set(format!("error: {message}\n"));
    CEILING.store(bytes, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
}

/// The bytes held by allocations made since [`set`] (0 before).
pub fn held() -> usize {
    HELD.load(Ordering::Relaxed).max(0) as usize
}

/// Set by the first thread to stop: two threads passing the ceiling at once say it once.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Writes the ceiling's message (once per process) and ends the process, allocating nothing.
fn stop() -> ! {
    if STOPPING.swap(true, Ordering::SeqCst) {
        // Another thread is writing the message and ending the process.
        loop {
            std::thread::park();
        }
    }
    if let Some(text) = MESSAGE.get() {
        // SAFETY: writes the bytes of a string that lives as long as the process to stderr;
        // the result does not matter.
        unsafe {
            libc::write(2, text.as_ptr().cast(), text.len());
        }
    }
    // SAFETY: ends the process without running anything that could allocate.
    unsafe { libc::_exit(EXIT_CODE) }
}

/// Counts `size` more bytes held; stops the process when that passes the ceiling.
#[inline]
fn take(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        let now = HELD.fetch_add(size as isize, Ordering::Relaxed) + size as isize;
        if now > 0 && now as usize > CEILING.load(Ordering::Relaxed) {
            stop();
        }
    }
}

#[inline]
fn give_back(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        HELD.fetch_sub(size as isize, Ordering::Relaxed);
    }
}

// SAFETY: every call goes to the system allocator with the caller's layout; the counting
// around it neither allocates nor changes what is returned.
unsafe impl GlobalAlloc for CappedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        take(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        take(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        give_back(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            take(new_size - layout.size());
        } else {
            give_back(layout.size() - new_size);
        }
        System.realloc(ptr, layout, new_size)
    }
}
