//! Giving freed memory back to the operating system between the stages of a run.
//!
//! glibc keeps freed heap in its arenas; between the stages of a large run (each transform,
//! then the audit) that kept memory would stack up under the next stage's peak, so it is
//! handed back (`malloc_trim`). That is not free: the trim itself takes up to tens of
//! milliseconds with the allocator's arenas locked, and every page handed back is faulted in
//! (and zeroed) again when the next stage allocates. A small process gains nothing worth that:
//! a one-month backfill at 5M orders stays under 200 MiB resident, and trimming after each of
//! its jobs cost it a tenth of its CPU time (half of its page faults). So memory is handed
//! back only once the process holds at least a quarter of the query memory pool.

use super::session::memory_limit_mb;

/// Hands memory the process has freed back to the operating system when the process is large
/// enough for it to matter ([`worth_trimming`]: its resident set is at least a quarter of the
/// memory pool). A no-op off Linux/glibc.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let pool = (memory_limit_mb() as u64) << 20;
        let resident = resident_bytes();
        if !resident.is_some_and(|r| worth_trimming(r, pool)) {
            return;
        }
        // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
        unsafe {
            libc::malloc_trim(0);
        }
        tracing::debug!(
            resident_mib = resident.unwrap_or(0) >> 20,
            "freed memory returned"
        );
    }
}

/// Whether a process with `resident` bytes in memory should hand its freed memory back, under
/// a query memory pool of `pool` bytes: when it holds at least a quarter of the pool.
fn worth_trimming(resident: u64, pool: u64) -> bool {
    resident >= pool / 4
}

/// The process's resident set in bytes (`/proc/self/statm`), or `None` where that is not
/// readable.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok().filter(|p| *p > 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_from_a_quarter_of_the_pool() {
        let pool = 1024 << 20;
        assert!(!worth_trimming(0, pool));
        assert!(!worth_trimming((256 << 20) - 1, pool));
        assert!(worth_trimming(256 << 20, pool));
        assert!(worth_trimming(4096 << 20, pool));
        // A smaller pool trims a smaller process.
        assert!(worth_trimming(64 << 20, 256 << 20));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_the_resident_set() {
        // 64 MiB written page by page is resident (other tests of the process may free
        // memory meanwhile, so only a lower bound holds).
        let block = vec![1u8; 64 << 20];
        let resident = resident_bytes().expect("statm is readable on Linux");
        assert!(resident >= 64 << 20, "{resident}");
        assert_eq!(block[block.len() - 1], 1);
        drop(block);
    }
}
