//! One run of a pipeline at a time per catalog: an OS file lock next to the catalog database,
//! keyed by the pipeline's `[pipeline] name` (never by its spec file's name, so a renamed spec
//! locks what it always locked). A command that deletes files takes every pipeline's lock
//! ([`acquire_all`], [`acquire_others`]): no run of any of them is staging files meanwhile.
//! The operating system releases it when the holder exits, however it exits (a killed run
//! leaves no stale lock to clean up). The holder's pid and start time are written into the
//! file so a waiting run can say whom it waits for.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::catalog::LockAnchor;
use crate::error::{Error, Result};

/// A held run lock; released on drop.
pub struct RunLock {
    _file: File,
    /// Another run held the lock first and this one waited for it.
    pub waited: bool,
    pipeline: String,
}

impl RunLock {
    /// The pipeline (`[pipeline] name`) whose lock this is.
    pub fn pipeline(&self) -> &str {
        &self.pipeline
    }
}

/// The run locks of every pipeline of a project on one catalog, held together: what the one
/// path that deletes files requires (`commit::deletion`). Released on drop.
pub struct AllLocks {
    _held: Vec<RunLock>,
    pipelines: Vec<String>,
}

impl AllLocks {
    /// The pipelines whose locks are held (the caller's own included), sorted.
    pub fn pipelines(&self) -> &[String] {
        &self.pipelines
    }
}

/// Takes the run lock of every pipeline in `pipelines` (`[pipeline] name`s), in name order so
/// that two commands taking several locks never wait for each other in a circle; waits for
/// each as `wait` says, calling `on_wait(pipeline, holder)` when one is busy.
pub fn acquire_all(
    anchor: &LockAnchor,
    pipelines: &[String],
    wait: LockWait,
    on_wait: impl Fn(&str, &str),
) -> Result<AllLocks> {
    let mut names = pipelines.to_vec();
    names.sort();
    names.dedup();
    let mut held = Vec::with_capacity(names.len());
    for name in &names {
        held.push(acquire(anchor, name, wait, |holder| on_wait(name, holder))?);
    }
    Ok(AllLocks {
        _held: held,
        pipelines: names,
    })
}

/// For a command that already holds its own pipeline's lock (`own`): takes the locks of the
/// other `pipelines` without waiting. `None` when one of them is busy (nothing is then held
/// beyond `own`): the caller defers what needed them.
pub fn acquire_others(
    anchor: &LockAnchor,
    pipelines: &[String],
    own: &RunLock,
) -> Result<Option<AllLocks>> {
    let mut names = pipelines.to_vec();
    names.push(own.pipeline.clone());
    names.sort();
    names.dedup();
    let mut held = Vec::with_capacity(names.len());
    for name in names.iter().filter(|n| **n != own.pipeline) {
        match acquire(anchor, name, LockWait(None), |_| {}) {
            Ok(lock) => held.push(lock),
            Err(Error::Busy(_)) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(Some(AllLocks {
        _held: held,
        pipelines: names,
    }))
}

/// How long to wait for another run of the same pipeline to finish; `None` fails at once.
#[derive(Debug, Clone, Copy)]
pub struct LockWait(pub Option<Duration>);

/// The lock file of `pipeline` for the catalog at `database`.
pub fn lock_path(database: &Path, pipeline: &str) -> PathBuf {
    let mut name = database.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{pipeline}.lock"));
    database.with_file_name(name)
}

/// Takes the run lock of `pipeline` on the catalog of `anchor`, waiting as `wait` says.
/// `on_wait` is called once, with the holder's description, if the lock is busy.
pub fn acquire(
    anchor: &LockAnchor,
    pipeline: &str,
    wait: LockWait,
    on_wait: impl FnOnce(&str),
) -> Result<RunLock> {
    let path = lock_path(&anchor.path, pipeline);
    let catalog = &anchor.catalog;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let started = Instant::now();
    let mut on_wait = Some(on_wait);
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {
                let holder = holder_of(&mut file);
                match wait.0 {
                    Some(limit) if started.elapsed() < limit => {
                        if let Some(f) = on_wait.take() {
                            f(&holder);
                        }
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    Some(limit) => {
                        return Err(Error::Busy(format!(
                            "pipeline {pipeline} is still running on the {catalog} ({holder}) after waiting {}s; try again later or raise --wait-timeout",
                            limit.as_secs()
                        )))
                    }
                    None => {
                        return Err(Error::Busy(format!(
                            "pipeline {pipeline} is already running on the {catalog} ({holder}); wait for it, or run without --no-wait to queue behind it"
                        )))
                    }
                }
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
    let me = format!(
        "pid {} since {}",
        std::process::id(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    file.set_len(0).map_err(|e| Error::io(&path, e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io(&path, e))?;
    file.write_all(me.as_bytes())
        .map_err(|e| Error::io(&path, e))?;
    Ok(RunLock {
        _file: file,
        waited: on_wait.is_none(),
        pipeline: pipeline.to_string(),
    })
}

/// Who holds the run lock of `pipeline` on the catalog of `anchor` right now (`pid N since
/// TIME`), or `None` when no run of it is in progress.
pub fn holder(anchor: &LockAnchor, pipeline: &str) -> Result<Option<String>> {
    let path = lock_path(&anchor.path, pipeline);
    let mut file = match OpenOptions::new().read(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    // A shared lock is granted only while nobody holds the run lock; it is dropped at once.
    match file.try_lock_shared() {
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(Some(holder_of(&mut file))),
        Err(TryLockError::Error(e)) => Err(Error::io(&path, e)),
    }
}

fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.read_to_string(&mut text);
    if text.trim().is_empty() {
        "another process".into()
    } else {
        text.trim().to_string()
    }
}
