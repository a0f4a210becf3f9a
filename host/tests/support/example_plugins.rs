//! The example plugins (`plugins/*`), built from source by `scripts/build-plugins` once per test
//! binary into this checkout's `target/example-plugins/`, and compiled once into a compile cache
//! every test shares. Building them needs Python 3.9+ with venv and Node.js 20+ with npm; without
//! them the tests that use them fail (never skip) saying what to install.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::base::config::Config;
use tiny_harness::work::plugins::{CallLimits, PluginHost, PluginSettings};

pub struct Built {
    /// The folder `scripts/build-plugins` wrote the `.wasm` files to.
    pub dir: PathBuf,
    /// A compile cache shared by every test (and kept between runs), already holding the
    /// examples: compiling a Python or JavaScript component takes seconds, loading it from the
    /// cache milliseconds.
    pub cache: PathBuf,
}

static BUILT: OnceLock<Built> = OnceLock::new();

/// Builds the examples from source once per test binary and fills the compile cache.
pub fn built() -> &'static Built {
    BUILT.get_or_init(|| {
        // In this checkout's own `target/`, not the cargo target dir, which several checkouts
        // may share.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = root.join("target/example-plugins");
        let started = Instant::now();
        let output = Command::new(root.join("scripts/build-plugins"))
            .arg(&dir)
            .output()
            .expect("scripts/build-plugins runs");
        assert!(
            output.status.success(),
            "scripts/build-plugins failed; the example plugins need Python 3.9+ with venv and \
             Node.js 20+ with npm (Debian: apt-get install python3-venv nodejs npm), and PyPI and \
             the npm registry reachable:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        eprintln!("built the example plugins in {:?}", started.elapsed());
        let built = Built {
            dir,
            cache: root.join("target/example-plugins-cache"),
        };
        // Compile once here, so the tests running in parallel all load from the cache. A
        // thread of its own: this may run inside a test's runtime, which cannot block on another.
        let settings = settings(&built);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("a runtime");
            let started = Instant::now();
            let host = runtime
                .block_on(PluginHost::load(
                    &settings,
                    &offline_prompt_context(&Config::default()),
                    std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
                ))
                .expect("the example plugins load");
            eprintln!(
                "loaded the example plugins ({:?}) in {:?}",
                host.summaries().iter().map(|s| s.cache).collect::<Vec<_>>(),
                started.elapsed()
            );
        })
        .join()
        .expect("the warm-up load finished");
        built
    })
}

/// A fresh plugins folder holding the named examples (`python-http.wasm`, …).
pub fn folder(files: &[&str]) -> tempfile::TempDir {
    let built = built();
    let dir = tempfile::tempdir().expect("temporary folder");
    for file in files {
        std::fs::copy(built.dir.join(file), dir.path().join(file)).expect("plugin copied");
    }
    dir
}

/// Settings loading every built example through the shared compile cache.
pub fn settings(built: &Built) -> PluginSettings {
    PluginSettings {
        dir: Some(built.dir.clone()),
        dir_required: true,
        cache_dir: Some(built.cache.clone()),
        limits: CallLimits {
            memory_bytes: 64 * 1024 * 1024,
            deadline: Duration::from_millis(1000),
        },
        ..PluginSettings::default()
    }
}
