//! Compiled components cached on disk by content hash, so a restart does not recompile: a
//! Python or JavaScript component takes seconds to compile and milliseconds to load.
//!
//! A cached file is native code the harness will run, so it is checked twice before it is
//! loaded. The folder must be this user's alone (owned by the process's effective user, writable
//! by no one else), or the cache is not used at all: that keeps other users out. Each file
//! carries a SHA-256 digest of its name and content, verified before wasmtime sees it: that
//! catches a damaged or truncated file, or one copied over another, which is then recompiled
//! and rewritten. The digest is no defence against someone who can write the folder (they can
//! rewrite the digest too); the folder check is.

use std::fs::{File, Metadata};
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The first bytes of every cache file: which format follows (this header, then wasmtime's
/// serialized component).
const MAGIC: &[u8; 16] = b"tiny-harness-c1\n";
/// A SHA-256 digest.
const DIGEST_LEN: usize = 32;
/// The header: [`MAGIC`], then the digest of the file's name and of everything after it.
const HEADER_LEN: usize = MAGIC.len() + DIGEST_LEN;
/// Cache files end so; the `v1` keeps files of the unchecked format before it from being read.
const FILE_SUFFIX: &str = "v1.cwasm";
/// The cache folder is created private: only this user may list or write it.
#[cfg(unix)]
const DIR_MODE: u32 = 0o700;
/// Cache files are written readable and writable by this user alone.
#[cfg(unix)]
const FILE_MODE: u32 = 0o600;

/// Where compiled components are kept.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: CacheDir,
}

#[derive(Debug, Clone)]
enum CacheDir {
    None,
    Usable(PathBuf),
    Refused,
}

/// Whether a component came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a checked cache file.
    Hit,
    /// Compiled (nothing cached, or the cached file was damaged), then cached.
    Miss,
    /// No cache is configured; compiled in memory.
    Disabled,
    /// The cache folder is not safe to use (see the warning at start-up); compiled in memory.
    Refused,
}

impl CompileCache {
    /// A cache in `dir`, created private if missing; or none. A folder that is not this user's
    /// alone is refused with one warning naming it and why: every plugin is then compiled in
    /// memory.
    pub fn new(dir: Option<PathBuf>) -> CompileCache {
        let dir = match dir {
            None => CacheDir::None,
            Some(dir) => match prepare(&dir) {
                Ok(()) => CacheDir::Usable(dir),
                Err(reason) => {
                    tracing::warn!(
                        dir = %dir.display(),
                        "not using the plugin compile cache: {reason}; plugins are compiled in memory at every start"
                    );
                    CacheDir::Refused
                }
            },
        };
        CompileCache { dir }
    }

    /// The component for these bytes: loaded from the cache when this engine compiled them
    /// before and the file passes its checks, otherwise compiled and stored.
    pub fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let dir = match &self.dir {
            CacheDir::None => return Ok((Component::new(engine, bytes)?, CacheOutcome::Disabled)),
            CacheDir::Refused => {
                return Ok((Component::new(engine, bytes)?, CacheOutcome::Refused));
            }
            CacheDir::Usable(dir) => dir,
        };
        let name = format!("{}.{FILE_SUFFIX}", key(engine, bytes));
        let path = dir.join(&name);
        match read(&path, &name) {
            Ok(None) => {}
            Ok(Some(serialized)) => {
                // SAFETY: deserializing runs native code from the file. Its digest was just
                // verified, it was read from a folder only this user can write, through a
                // handle checked to be this user's file writable by no one else, and it was
                // written by `Component::serialize` of an engine with the same compatibility
                // hash (in its name). wasmtime checks its own header too.
                match unsafe { Component::deserialize(engine, &serialized) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit)),
                    Err(err) => tracing::warn!(
                        path = %path.display(),
                        "recompiling a plugin whose cached file wasmtime refused: {err}"
                    ),
                }
            }
            Err(reason) => tracing::warn!(
                path = %path.display(),
                "recompiling a plugin whose cached file is damaged: {reason}"
            ),
        }
        let component = Component::new(engine, bytes)?;
        let written = component
            .serialize()
            .map_err(|err| std::io::Error::other(err.to_string()))
            .and_then(|serialized| write(&path, &encode(&name, &serialized)));
        if let Err(err) = written {
            tracing::warn!(dir = %dir.display(), "cannot write the plugin compile cache: {err}");
        }
        Ok((component, CacheOutcome::Miss))
    }
}

/// `{sha256 of the bytes}-{engine compatibility hash}`.
fn key(engine: &Engine, bytes: &[u8]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{}-{:016x}", hex(&Sha256::digest(bytes)), hasher.finish())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the header's digest covers: the file's name, so a good file copied over another is
/// caught too, and the serialized component.
fn digest(name: &str, serialized: &[u8]) -> [u8; DIGEST_LEN] {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0]);
    hasher.update(serialized);
    hasher.finalize().into()
}

/// A cache file's bytes: the header, then the serialized component.
fn encode(name: &str, serialized: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_LEN + serialized.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&digest(name, serialized));
    bytes.extend_from_slice(serialized);
    bytes
}

/// The serialized component in the cache file `path` (named `name`), once its ownership,
/// permissions and digest are checked; `None` when there is no such file; why it is unusable
/// otherwise.
fn read(path: &Path, name: &str) -> Result<Option<Vec<u8>>, String> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.to_string()),
    };
    // The handle's own metadata: the file checked is the file read.
    let meta = file.metadata().map_err(|err| err.to_string())?;
    check_private(&meta)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    if bytes.len() < HEADER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        return Err("it is not a tiny-harness cache file".into());
    }
    let serialized = bytes.split_off(HEADER_LEN);
    if bytes[MAGIC.len()..] != digest(name, &serialized) {
        return Err("its content does not match its digest".into());
    }
    Ok(Some(serialized))
}

/// Writes atomically: a private temporary file renamed into place, so a crash never leaves half
/// a file under the real name (and a torn one would fail its digest anyway).
fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    let mut file = options.open(&temp)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temp, path)
}

/// Creates the folder (private) if it is missing and checks it is this user's alone.
fn prepare(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder
        .create(dir)
        .map_err(|err| format!("it cannot be created: {err}"))?;
    let meta = std::fs::metadata(dir).map_err(|err| err.to_string())?;
    if !meta.is_dir() {
        return Err("it is not a folder".into());
    }
    check_private(&meta)
}

/// A cache folder or file must be owned by the process's effective user and writable by no one
/// else, or another user could choose the native code the harness runs.
#[cfg(unix)]
fn check_private(meta: &Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let euid = rustix::process::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(format!(
            "it is owned by uid {}, not by uid {euid} this process runs as",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    let writers = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (false, false) => return Ok(()),
        (true, false) => "its group",
        (false, true) => "others",
        (true, true) => "its group and others",
    };
    Err(format!(
        "it is writable by {writers} (mode {mode:03o}); make it private with chmod go-w"
    ))
}

/// Without Unix ownership and modes only the digest is checked.
#[cfg(not(unix))]
fn check_private(_meta: &Metadata) -> Result<(), String> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_missing_folder_is_created_private() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("a/cache");
        prepare(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_folder_others_may_write_is_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o777);
        assert_eq!(
            prepare(dir.path()).unwrap_err(),
            "it is writable by its group and others (mode 777); make it private with chmod go-w"
        );
        chmod(dir.path(), 0o770);
        assert!(
            prepare(dir.path())
                .unwrap_err()
                .contains("by its group (mode 770)")
        );
        chmod(dir.path(), 0o755);
        assert_eq!(prepare(dir.path()), Ok(()));
    }

    #[test]
    fn a_written_file_reads_back_and_a_flipped_byte_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.v1.cwasm");
        write(&path, &encode("k.v1.cwasm", b"native code")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read(&path, "k.v1.cwasm"), Ok(Some(b"native code".to_vec())));
        assert_eq!(
            read(&path, "other.v1.cwasm").unwrap_err(),
            "its content does not match its digest",
            "a good file under another name"
        );
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_LEN + 3] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            read(&path, "k.v1.cwasm").unwrap_err(),
            "its content does not match its digest"
        );
        std::fs::write(&path, b"\x7fELF old format").unwrap();
        assert_eq!(
            read(&path, "k.v1.cwasm").unwrap_err(),
            "it is not a tiny-harness cache file"
        );
        assert_eq!(read(&dir.path().join("missing.v1.cwasm"), "x"), Ok(None));
    }

    #[test]
    fn a_cache_file_others_may_write_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.v1.cwasm");
        write(&path, &encode("k.v1.cwasm", b"native code")).unwrap();
        chmod(&path, 0o666);
        assert!(
            read(&path, "k.v1.cwasm")
                .unwrap_err()
                .starts_with("it is writable by its group and others")
        );
    }
}
