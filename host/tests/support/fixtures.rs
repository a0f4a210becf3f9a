//! Test plugins (`host/tests/fixtures/`), built once per test binary for wasm32-wasip2.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

static BUILT: OnceLock<PathBuf> = OnceLock::new();

/// The folder holding the built fixtures' `.wasm` files.
pub fn built() -> &'static Path {
    BUILT.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/Cargo.toml");
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "--manifest-path",
            ])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the test plugins failed");
        target.join("wasm32-wasip2/release")
    })
}

/// The path of one fixture (`zoo`, `override-role`, …).
pub fn wasm(name: &str) -> PathBuf {
    built().join(format!("fixture_{}.wasm", name.replace('-', "_")))
}

/// A fresh plugins folder holding the named fixtures under the given file names.
pub fn folder(plugins: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary folder");
    for (fixture, file) in plugins {
        std::fs::copy(wasm(fixture), dir.path().join(file)).expect("fixture copied");
    }
    dir
}
