//! One process per store, with real `harness` processes: a second `harness serve` on a store
//! another one serves is refused (exit 2, naming `store.path` and the holder's pid) while the
//! first goes on serving; `harness check` never opens the store and runs beside it; once the
//! first is killed (SIGKILL), a new one starts on the same store.

mod support {
    pub mod harness_process;
}

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::harness_process::{HARNESS, serve};

/// How long a refused process may take to exit: a hang guard, not a speed bound.
const EXIT_GUARD: Duration = Duration::from_secs(30);
const CARD: &str = "/.well-known/agent-card.json";

fn write_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"data/harness.db\"\n",
    )
    .unwrap();
    path
}

/// Runs `harness {command} --config {config}` to its end (killed past [`EXIT_GUARD`]); its exit
/// code, its stderr and how long it ran.
fn run(command: &str, config: &Path) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(HARNESS)
        .args([command, "--config"])
        .arg(config)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > EXIT_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`harness {command}` was still running after {EXIT_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    (status.code(), reader.join().unwrap(), elapsed)
}

fn card_status(url: &str) -> u16 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        reqwest::get(format!("{url}{CARD}"))
            .await
            .unwrap()
            .status()
            .as_u16()
    })
}

fn kill(mut child: Child) {
    // SIGKILL: the process gets no chance to let go of anything itself.
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_second_serve_on_a_served_store_is_refused_naming_the_store_and_the_first_pid() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let (first, url) = serve(&config);
    let store = dir.path().join("data/harness.db");

    let (code, stderr, took) = run("serve", &config);
    assert_eq!(code, Some(2), "{stderr}");
    let expected = format!(
        "error: store.path: {} is in use by another harness process (pid {}); stop it first, or give this harness a store.path of its own (lock file {}.lock)",
        store.display(),
        first.id(),
        store.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        !stderr.contains("listening on"),
        "the refused process never served: {stderr}"
    );
    eprintln!("a second serve on a served store refused in {took:?}");
    assert_eq!(card_status(&url), 200, "the first goes on serving");

    let (code, stderr, _) = run("check", &config);
    assert_eq!(code, Some(0), "check opens no store: {stderr}");

    kill(first);
    let (again, url) = serve(&config);
    assert_eq!(card_status(&url), 200, "a new harness serves the store");
    kill(again);
}
