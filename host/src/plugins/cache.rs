//! Compiled components cached on disk by content hash, so a restart does not recompile: a
//! Python or JavaScript component takes seconds to compile and milliseconds to load.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where compiled components are kept; `None` compiles every time.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// Whether a component came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Miss,
    Disabled,
}

impl CompileCache {
    /// A cache in `dir` (created on first write), or none.
    pub fn new(dir: Option<PathBuf>) -> CompileCache {
        CompileCache { dir }
    }

    /// The component for these bytes: loaded from the cache when this engine compiled them
    /// before, otherwise compiled and stored. A damaged or foreign cache file is recompiled.
    pub fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, bytes)?, CacheOutcome::Disabled));
        };
        let path = dir.join(format!("{}.cwasm", key(engine, bytes)));
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of an engine with the same
            // compatibility hash (it is in the name), into the operator's own cache folder; a
            // file that fails wasmtime's own header checks is recompiled below.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok((component, CacheOutcome::Hit)),
                Err(err) => tracing::warn!(
                    path = %path.display(),
                    "ignoring an unreadable compiled-component cache file: {err}"
                ),
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(err) = store(dir, &path, &component) {
            tracing::warn!(dir = %dir.display(), "cannot write the plugin compile cache: {err}");
        }
        Ok((component, CacheOutcome::Miss))
    }
}

/// `{sha256 of the bytes}-{engine compatibility hash}`.
fn key(engine: &Engine, bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{:016x}", hasher.finish())
}

/// Writes atomically: a temporary file renamed into place, so a crash never leaves half a file.
fn store(dir: &PathBuf, path: &PathBuf, component: &Component) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let bytes = component
        .serialize()
        .map_err(|err| std::io::Error::other(err.to_string()))?;
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path)
}
