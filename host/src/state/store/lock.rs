//! The lock that keeps a store file to one process: a lock file beside it (`<store>.lock`) held
//! with an OS advisory lock for as long as the process runs, with the holder's pid written in.
//!
//! The embedded engine runs every open task of its store in its process: two processes on one
//! file would both resume the same tasks and call the model twice for one step. So an embedded
//! harness holds the lock exclusively. The Temporal engine's processes share a store by design
//! (each step runs on whichever worker takes it), so each holds it shared: any number of them
//! at once, never beside an embedded one. The operating system drops the lock when the process
//! dies, however it dies (SIGKILL included), so a crash never leaves a store locked; the file
//! itself stays, and the next holder writes its own pid over the old one.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the lock file's name adds to the store's.
pub const LOCK_SUFFIX: &str = ".lock";
/// What a process of the Temporal engine writes in the lock file instead of a pid: there may be
/// several of them, and a refused embedded harness says so rather than naming one.
const SHARED_MARK: &str = "shared by the Temporal engine";
/// How long a refused process waits for the holder's pid to appear: a holder writes it right
/// after it locks, so an empty file means one that locked a moment ago.
const PID_WAIT: Duration = Duration::from_millis(200);
/// The longest lock file read: a pid or the mark, never more.
const MAX_LOCK_FILE_BYTES: u64 = 256;

/// How a process holds its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// The only process on the store (the embedded engine).
    Exclusive,
    /// One of the processes sharing it (the Temporal engine's).
    Shared,
}

/// Who holds a store a process was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A harness of the embedded engine, by its pid.
    Process(u32),
    /// Harnesses of the Temporal engine.
    Temporal,
    /// A holder that had not written its pid yet, or a lock file written by something else.
    Unknown,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Process(pid) => write!(f, "another harness process (pid {pid})"),
            Holder::Temporal => write!(
                f,
                "harness processes of the Temporal engine ([engine] kind = \"temporal\")"
            ),
            Holder::Unknown => write!(f, "another process (pid not known)"),
        }
    }
}

/// Why a process could not lock its store.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the store; two writers would corrupt each other's work.
    #[error(
        "store.path: {store} is in use by {holder}; stop it first, or give this harness a store.path of its own (lock file {lock})"
    )]
    InUse {
        /// The store file.
        store: String,
        /// The lock file beside it.
        lock: String,
        /// Who holds the lock, as its file says.
        holder: Holder,
    },
    /// The lock file could not be created, read or locked.
    #[error("store.path: cannot lock {store} with the lock file {lock}: {source}")]
    Io {
        /// The store file.
        store: String,
        /// The lock file beside it.
        lock: String,
        /// The file system's reason.
        source: std::io::Error,
    },
}

/// A store held by this process until the value is dropped (or the process ends).
#[derive(Debug)]
pub struct StoreLock {
    /// Open for as long as the lock is held: closing the file releases it.
    _file: File,
    path: PathBuf,
}

impl StoreLock {
    /// Locks the store at `store` (its lock file beside it, created if need be, with its
    /// folder) in `mode`, or says who holds it. Never waits.
    pub fn acquire(store: &Path, mode: LockMode) -> Result<StoreLock, LockError> {
        let path = lock_path(store);
        let io = |source: std::io::Error| LockError::Io {
            store: store.display().to_string(),
            lock: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        // Not truncated on open: the holder's pid must survive a refused process's look.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let locked = match mode {
            LockMode::Exclusive => file.try_lock(),
            LockMode::Shared => file.try_lock_shared(),
        };
        match locked {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::InUse {
                    store: store.display().to_string(),
                    lock: path.display().to_string(),
                    holder: holder_of(&mut file),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        let mark = match mode {
            LockMode::Exclusive => std::process::id().to_string(),
            LockMode::Shared => SHARED_MARK.to_string(),
        };
        write_mark(&mut file, &mark).map_err(io)?;
        Ok(StoreLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `<store>.lock`, beside the store file.
pub fn lock_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(LOCK_SUFFIX);
    PathBuf::from(name)
}

fn write_mark(file: &mut File, mark: &str) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{mark}\n").as_bytes())?;
    file.flush()
}

/// Who holds the lock, from what the holder wrote in the file.
fn holder_of(file: &mut File) -> Holder {
    let started = std::time::Instant::now();
    loop {
        let mut text = String::new();
        let read = file.seek(SeekFrom::Start(0)).and_then(|_| {
            (&mut *file)
                .take(MAX_LOCK_FILE_BYTES)
                .read_to_string(&mut text)
        });
        let text = text.trim();
        if read.is_ok() && !text.is_empty() {
            return match text.parse::<u32>() {
                Ok(pid) => Holder::Process(pid),
                Err(_) if text == SHARED_MARK => Holder::Temporal,
                Err(_) => Holder::Unknown,
            };
        }
        if started.elapsed() >= PID_WAIT {
            return Holder::Unknown;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A lock belongs to an open file, not to a process: two opens in one test conflict as two
    // processes would.

    #[test]
    fn a_second_exclusive_holder_is_refused_naming_the_store_and_the_first_pid_golden() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("harness.db");
        let first = StoreLock::acquire(&store, LockMode::Exclusive).unwrap();
        let err = StoreLock::acquire(&store, LockMode::Exclusive).unwrap_err();
        let pid = std::process::id();
        assert_eq!(
            err.to_string(),
            format!(
                "store.path: {} is in use by another harness process (pid {pid}); stop it first, or give this harness a store.path of its own (lock file {}.lock)",
                store.display(),
                store.display()
            )
        );
        assert_eq!(first.path(), lock_path(&store));
    }

    #[test]
    fn the_lock_is_free_again_once_its_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("nested/harness.db");
        drop(StoreLock::acquire(&store, LockMode::Exclusive).unwrap());
        let again = StoreLock::acquire(&store, LockMode::Exclusive);
        assert!(again.is_ok(), "{again:?}");
    }

    #[test]
    fn temporal_processes_share_a_store_but_never_with_an_embedded_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("harness.db");
        let one = StoreLock::acquire(&store, LockMode::Shared).unwrap();
        let two = StoreLock::acquire(&store, LockMode::Shared).unwrap();
        let err = StoreLock::acquire(&store, LockMode::Exclusive).unwrap_err();
        assert!(
            matches!(
                &err,
                LockError::InUse {
                    holder: Holder::Temporal,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("Temporal engine"), "{err}");
        drop((one, two));
        let embedded = StoreLock::acquire(&store, LockMode::Exclusive).unwrap();
        let err = StoreLock::acquire(&store, LockMode::Shared).unwrap_err();
        assert!(
            matches!(&err, LockError::InUse { holder: Holder::Process(pid), .. } if *pid == std::process::id()),
            "{err}"
        );
        drop(embedded);
    }

    #[test]
    fn a_lock_file_that_holds_no_pid_names_no_holder() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("harness.db");
        let mut held = File::create(lock_path(&store)).unwrap();
        held.try_lock().unwrap();
        held.write_all(b"not a pid\n").unwrap();
        let err = StoreLock::acquire(&store, LockMode::Exclusive).unwrap_err();
        assert!(
            matches!(
                &err,
                LockError::InUse {
                    holder: Holder::Unknown,
                    ..
                }
            ),
            "{err}"
        );
    }
}
