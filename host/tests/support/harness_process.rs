//! `harness serve` as a child process, for tests that need the real binary (a crash, a kill, a
//! client in another language): started on a configuration file, its address read from the
//! `listening on http://…` line it logs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The harness binary cargo built for these tests.
pub const HARNESS: &str = env!("CARGO_BIN_EXE_harness");
/// How long a harness may take to log its address (it compiles the builtin plugin on a cold
/// cache).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Starts `harness serve --config {config}`; returns the process and the URL it listens on.
pub fn serve(config: &Path) -> (Child, String) {
    serve_with_env(config, &[])
}

/// [`serve`], with these environment variables set for the harness.
pub fn serve_with_env(config: &Path, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(HARNESS)
        .args(["serve", "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        // Read to the end so the child never blocks on a full pipe.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent && let Some(rest) = line.split("listening on ").nth(1) {
                let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                sent = true;
            }
        }
    });
    let url = rx
        .recv_timeout(STARTUP_TIMEOUT)
        .expect("the harness logged its address");
    (child, url)
}
