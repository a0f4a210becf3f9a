//! `harness plugin new` as a user runs it. For each language the real command writes a folder,
//! the build it prints runs with the real toolchain (the ones `scripts/build-plugins` installs
//! for the examples: the wasm32-wasip2 target, componentize-py, componentize-js), `harness
//! plugins` loads the result from the folder's own `try/config.toml`, and a real `harness serve`
//! on that configuration plays its script with the scripted model: the tool is called and its
//! answer is the task's. Building needs Python 3.9+ with venv and Node.js 20+ with npm, and the
//! Rust plugin on the SDK by git needs git and a git checkout; without them these tests fail
//! saying what to install. Also: what the command refuses, and a core
//! module refused at load saying how to build a component.

mod support {
    pub mod harness_process;
}

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::harness_process::{HARNESS, serve};
use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::app::scaffold::{Lang, SDK_GIT, build_commands, tool_name};
use tiny_harness::base::config::Config;
use tiny_harness::work::plugins::{PluginHost, PluginSettings};

/// How long one task of the try-out may take: one plugin call and two scripted replies.
const TASK_TIMEOUT: Duration = Duration::from_secs(60);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Installs the toolchains once per test binary, as the example plugins' build does.
fn toolchains() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let output = Command::new(root().join("scripts/build-plugins"))
            .arg(root().join("target/example-plugins"))
            .output()
            .expect("scripts/build-plugins runs");
        assert!(
            output.status.success(),
            "scripts/build-plugins failed; building plugins needs Python 3.9+ with venv and \
             Node.js 20+ with npm (Debian: apt-get install python3-venv nodejs npm), and PyPI \
             and the npm registry reachable:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}

fn harness(args: &[&str]) -> Output {
    Command::new(HARNESS)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("harness runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs one line of a printed build in `dir` with `sh`, failing the test with its output.
fn run(dir: &Path, line: &str, env: &[(&str, String)]) {
    let started = Instant::now();
    let mut command = Command::new("sh");
    command.arg("-c").arg(line).current_dir(dir);
    // The host's own build settings must not reach a guest's build.
    for name in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET"] {
        command.env_remove(name);
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    let output = command.output().expect("sh runs");
    assert!(
        output.status.success(),
        "`{line}` failed in {}:\n{}{}",
        dir.display(),
        text(&output.stdout),
        text(&output.stderr)
    );
    eprintln!("`{line}`: {:?}", started.elapsed());
}

/// Builds a folder `harness plugin new` wrote by the commands it printed, with the toolchains
/// already installed in place of each install step; `env` is added to a Rust build's.
fn build(lang: Lang, name: &str, dir: &Path, env: &[(&str, String)]) {
    let commands = build_commands(lang, name);
    let venv = root().join("plugins/python-example/.venv");
    let rust_target = root().join("target/plugin-builds/plugin-new");
    for line in commands.lines() {
        match lang {
            // One target folder for every run: only the first compiles the SDK's dependencies.
            Lang::Rust => run(
                dir,
                &line.replace("target/", &format!("{}/", rust_target.display())),
                &[
                    &[("CARGO_TARGET_DIR", rust_target.display().to_string())],
                    env,
                ]
                .concat(),
            ),
            Lang::Python if line.starts_with("python3 -m venv") => {}
            Lang::Python => run(
                dir,
                &line.replace(".venv/", &format!("{}/", venv.display())),
                &[("VIRTUAL_ENV", venv.display().to_string())],
            ),
            Lang::JavaScript if line == "npm install" => {
                std::os::unix::fs::symlink(
                    root().join("plugins/js-example/node_modules"),
                    dir.join("node_modules"),
                )
                .expect("node_modules linked");
            }
            Lang::JavaScript => run(dir, line, &[]),
        }
    }
}

async fn rpc(base: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new()
        .post(base)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Writes, builds, lists and serves a new plugin in `lang`; the tool's answer must be the task's.
async fn a_new_plugin_builds_loads_and_answers(lang: Lang, lang_name: &str) {
    a_new_plugin_builds_loads_and_answers_with(lang, lang_name, Sdk::Path).await;
}

/// Where a Rust plugin takes the guest SDK from in a test.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sdk {
    /// `--sdk-path` to this checkout's `plugins/sdk-rust`.
    Path,
    /// The git dependency as written, fetched from this checkout's own repository in place of
    /// GitHub (no network here): its committed `HEAD`.
    Git,
}

/// The environment that makes cargo fetch the SDK's repository from this checkout's.
fn git_from_this_repository() -> Vec<(&'static str, String)> {
    let output = Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(root())
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "the test of the git dependency needs a git checkout: {}",
        text(&output.stderr)
    );
    let repository = text(&output.stdout).trim().to_string();
    vec![
        ("CARGO_NET_GIT_FETCH_WITH_CLI", "true".into()),
        ("GIT_CONFIG_COUNT", "1".into()),
        ("GIT_CONFIG_KEY_0", format!("url.{repository}.insteadOf")),
        ("GIT_CONFIG_VALUE_0", SDK_GIT.into()),
    ]
}

async fn a_new_plugin_builds_loads_and_answers_with(lang: Lang, lang_name: &str, sdk_from: Sdk) {
    toolchains();
    let tmp = tempfile::tempdir().unwrap();
    let name = match sdk_from {
        Sdk::Path => format!("greeter-{lang_name}"),
        Sdk::Git => format!("greeter-{lang_name}-git"),
    };
    let dir = tmp.path().join(&name);
    let sdk = root().join("plugins/sdk-rust");
    let mut args = vec!["plugin", "new", &name, "--lang", lang_name];
    let dir_arg = dir.to_string_lossy().into_owned();
    args.extend(["--dir", &dir_arg]);
    let sdk_arg = sdk.to_string_lossy().into_owned();
    if lang == Lang::Rust && sdk_from == Sdk::Path {
        args.extend(["--sdk-path", &sdk_arg]);
    }
    let written = harness(&args);
    let stdout = text(&written.stdout);
    assert!(
        written.status.success(),
        "{stdout}{}",
        text(&written.stderr)
    );
    for line in build_commands(lang, &name).lines() {
        assert!(stdout.contains(line), "the build is not printed:\n{stdout}");
    }

    let started = Instant::now();
    let env = match sdk_from {
        Sdk::Path => vec![],
        Sdk::Git => git_from_this_repository(),
    };
    build(lang, &name, &dir, &env);
    let wasm = dir.join(format!("try/plugins/{name}.wasm"));
    eprintln!(
        "built {name}.wasm ({} bytes) in {:?}",
        std::fs::metadata(&wasm)
            .expect("the build wrote the plugin")
            .len(),
        started.elapsed()
    );

    // `harness plugins` compiles it into the try-out's cache, so `serve` starts from the cache.
    let config = dir.join("try/config.toml");
    let started = Instant::now();
    let listed = harness(&["plugins", "--config", &config.to_string_lossy()]);
    let listing = text(&listed.stdout);
    assert!(listed.status.success(), "{listing}{}", text(&listed.stderr));
    eprintln!("harness plugins: {:?}", started.elapsed());
    let tool = tool_name(&name);
    for shown in [
        format!("{name}.wasm"),
        format!("define {name}"),
        tool.clone(),
    ] {
        assert!(listing.contains(&shown), "{shown} not listed:\n{listing}");
    }

    let served = std::fs::read_to_string(&config)
        .unwrap()
        .replace("bind = \"127.0.0.1:8080\"", "bind = \"127.0.0.1:0\"");
    assert!(served.contains("127.0.0.1:0"), "{served}");
    std::fs::write(&config, served).unwrap();
    let (mut child, base) = serve(&config);
    let started = Instant::now();
    let sent = tokio::time::timeout(
        TASK_TIMEOUT,
        rpc(
            &base,
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER",
                               "parts": [{"text": "Greet Ada."}]}}),
        ),
    )
    .await
    .expect("the task ended in time");
    eprintln!("the try-out task: {:?}", started.elapsed());
    child.kill().unwrap();
    child.wait().unwrap();
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        format!("Hello, Ada, from {name}!"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_rust_plugin_builds_loads_and_its_tool_answers() {
    a_new_plugin_builds_loads_and_answers(Lang::Rust, "rust").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_rust_plugin_on_the_sdk_by_git_builds_loads_and_its_tool_answers() {
    a_new_plugin_builds_loads_and_answers_with(Lang::Rust, "rust", Sdk::Git).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_python_plugin_builds_loads_and_its_tool_answers() {
    a_new_plugin_builds_loads_and_answers(Lang::Python, "python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_javascript_plugin_builds_loads_and_its_tool_answers() {
    a_new_plugin_builds_loads_and_answers(Lang::JavaScript, "javascript").await;
}

#[test]
fn an_existing_folder_is_refused_with_exit_2_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "keep").unwrap();
    let output = harness(&[
        "plugin",
        "new",
        "mine",
        "--lang",
        "python",
        "--dir",
        &dir.to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: {}: already exists; nothing was written (choose another NAME or --dir)\n",
            dir.display()
        )
    );
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "keep"
    );
}

#[test]
fn a_name_the_loader_would_not_take_is_refused_with_the_rule_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x");
    let output = harness(&[
        "plugin",
        "new",
        "My_Plugin",
        "--lang",
        "rust",
        "--dir",
        &dir.to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).starts_with(
            "error: plugin name \"My_Plugin\" is not valid: use a lower-case ASCII letter"
        ),
        "{}",
        text(&output.stderr)
    );
    assert!(!dir.exists());
}

#[test]
fn an_unknown_language_is_a_usage_error_listing_the_three() {
    let output = harness(&["plugin", "new", "x", "--lang", "go"]);
    assert_eq!(output.status.code(), Some(64));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("[possible values: rust, python, javascript]"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_core_module_is_refused_saying_how_to_build_a_component() {
    let dir = tempfile::tempdir().unwrap();
    // The smallest core module: the magic and version 1, no sections.
    std::fs::write(dir.path().join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let settings = PluginSettings {
        dir: Some(dir.path().to_path_buf()),
        dir_required: true,
        ..PluginSettings::default()
    };
    let err = PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .err()
    .expect("a core module does not load")
    .to_string();
    assert_eq!(
        err,
        "plugin core.wasm: cannot load: it is a core WebAssembly module, not a component: build \
         it as a component (Rust: `cargo build --target wasm32-wasip2 --release`; Python: \
         componentize-py; JavaScript: componentize-js; `harness plugin new` writes a project \
         that does), or wrap a wasip1 module with `wasm-tools component new MODULE.wasm --adapt \
         wasi_snapshot_preview1.reactor.wasm -o PLUGIN.wasm`"
    );
}
