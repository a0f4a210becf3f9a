//! The delegation example (`examples/delegation/`) run as a user runs it: the ledger and the
//! front desk as two `harness serve` processes on loopback ports, configured from the example's
//! own configurations, scripts and data, the ledger plugin built from source. A question that
//! names no agent reaches the ledger by the front desk's own choice, and the answer carries the
//! ledger's figure. `run.sh` is run as well. An opt-in test does the same with a real
//! OpenAI-compatible model as the front desk's (see the example's README).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use tiny_harness::state::records::extension::{ENVELOPE_MEDIA_TYPE, EXTENSION_URI, METADATA_KEY};

const HARNESS: &str = env!("CARGO_BIN_EXE_harness");
/// The token that makes the front desk a trusted delegator of the ledger (both read it).
const FRONT_DESK_TOKEN: &str = "example-front-desk-token-for-tests-0123456789";
/// What the user asks: it matches the ledger's card and names no agent.
const QUESTION: &str = "What is the current balance of the Acme Corp account?";
/// The account the question is about, as the data set names it.
const ACCOUNT: &str = "Acme Corp";
/// How long a server may take to start: the plugins compile on a cold cache.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the question may take to be answered; a real model may be slow.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The variables that turn the real-model test on.
const MODEL_URL_VAR: &str = "TINY_HARNESS_E2E_MODEL_URL";
const MODEL_VAR: &str = "TINY_HARNESS_E2E_MODEL";
const API_KEY_ENV_VAR: &str = "TINY_HARNESS_E2E_API_KEY_ENV";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ is in the repository")
        .to_path_buf()
}

fn example() -> PathBuf {
    root().join("examples/delegation")
}

/// The ledger plugin, built once per test binary from `examples/delegation/ledger-plugin` with a
/// nested cargo into this checkout's `target/`, where `run.sh` builds it too: not the cargo
/// target dir, which several checkouts may share.
fn ledger_plugin() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let target = root().join("target/plugin-builds/example-ledger");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "--release",
                "--locked",
                "--target",
                "wasm32-wasip2",
                "--manifest-path",
            ])
            .arg(example().join("ledger-plugin/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the ledger plugin failed");
        target.join("wasm32-wasip2/release/tiny_harness_example_ledger.wasm")
    })
}

/// The figure the ledger's books give for [`ACCOUNT`], read from the example's data set.
fn ledger_balance() -> String {
    let text = std::fs::read_to_string(example().join("data/ledger.json")).unwrap();
    let data: Value = serde_json::from_str(&text).unwrap();
    data["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|account| account["name"] == ACCOUNT)
        .and_then(|account| account["balance"].as_str())
        .expect("the data set has the account the question is about")
        .to_string()
}

/// Whether `answer` states `figure`, allowing the thousands separators a model may add
/// (`12,480.50`).
fn states_figure(answer: &str, figure: &str) -> bool {
    let plain: String = answer
        .chars()
        .filter(|c| !matches!(c, ',' | ' ' | '\u{a0}' | '\u{202f}'))
        .collect();
    plain.contains(figure)
}

/// One of the example's configurations, made to run here: port 0, its script and skills folders
/// resolved against the example folder, its state (store, compile cache, plugins folder) in
/// `dir`.
fn example_config(name: &str, dir: &Path) -> toml::Table {
    let text = std::fs::read_to_string(example().join(format!("{name}.toml"))).unwrap();
    let mut config: toml::Table = toml::from_str(&text).unwrap();
    let table = |config: &toml::Table, key: &str| -> toml::Table {
        config
            .get(key)
            .and_then(|v| v.as_table())
            .cloned()
            .unwrap_or_default()
    };
    let mut server = table(&config, "server");
    server.insert("bind".into(), "127.0.0.1:0".into());
    config.insert("server".into(), server.into());
    let mut model = table(&config, "model");
    if let Some(script) = model.get("script").and_then(|v| v.as_str()) {
        let script = example().join(script);
        assert!(script.exists(), "{} is missing", script.display());
        model.insert("script".into(), path_value(&script));
    }
    config.insert("model".into(), model.into());
    let mut store = table(&config, "store");
    store.insert("path".into(), path_value(&dir.join(format!("{name}.db"))));
    config.insert("store".into(), store.into());
    let mut plugins = table(&config, "plugins");
    plugins.insert("cache_dir".into(), path_value(&dir.join("cache")));
    if plugins.contains_key("dir") {
        let folder = dir.join(format!("{name}-plugins"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::copy(ledger_plugin(), folder.join("ledger.wasm")).unwrap();
        plugins.insert("dir".into(), path_value(&folder));
    }
    config.insert("plugins".into(), plugins.into());
    let mut skills = table(&config, "skills");
    if let Some(dirs) = skills.get("dirs").and_then(|v| v.as_array()).cloned() {
        let resolved: Vec<toml::Value> = dirs
            .iter()
            .map(|dir| {
                let dir = example().join(dir.as_str().expect("a skills folder is a path"));
                assert!(dir.is_dir(), "{} is missing", dir.display());
                path_value(&dir)
            })
            .collect();
        skills.insert("dirs".into(), resolved.into());
        config.insert("skills".into(), skills.into());
    }
    config
}

fn path_value(path: &Path) -> toml::Value {
    path.display().to_string().into()
}

/// Writes a configuration to `dir/{name}.toml`.
fn write_config(dir: &Path, name: &str, config: &toml::Table) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, toml::to_string(config).unwrap()).unwrap();
    path
}

/// The front desk's configuration with its one agent, the ledger, at `ledger_url`.
fn front_desk_config(dir: &Path, ledger_url: &str) -> toml::Table {
    let mut config = example_config("front-desk", dir);
    let agents = config
        .get_mut("agents")
        .and_then(|v| v.as_array_mut())
        .expect("the front desk lists agents");
    assert_eq!(agents.len(), 1, "the front desk lists exactly the ledger");
    let ledger = agents[0].as_table_mut().unwrap();
    assert_eq!(ledger["id"].as_str(), Some("ledger"));
    ledger.insert("url".into(), ledger_url.into());
    config
}

/// A `harness serve` process; killed when dropped, printing its log if the test failed.
struct Server {
    name: &'static str,
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts one and waits until it serves its card.
    async fn start(name: &'static str, config: &Path) -> Server {
        let mut child = Command::new(HARNESS)
            .args(["serve", "--config"])
            .arg(config)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .env("FRONT_DESK_TOKEN", FRONT_DESK_TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("harness starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let url = rest.split_whitespace().next().unwrap_or("").to_string();
                    let _ = tx.send(url);
                }
                let mut log = lines.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = rx
            .recv_timeout(START_TIMEOUT)
            .unwrap_or_else(|_| panic!("the {name} did not start: {}", log.lock().unwrap()));
        let server = Server {
            name,
            child,
            url,
            log,
        };
        server.wait_for_card().await;
        server
    }

    async fn wait_for_card(&self) {
        let card_url = format!("{}/.well-known/agent-card.json", self.url);
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(response) = reqwest::get(&card_url).await
                && response.status().is_success()
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the {}'s card is not served at {card_url}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn card(&self) -> Value {
        reqwest::get(format!("{}/.well-known/agent-card.json", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// A JSON-RPC call as `caller` (`X-Participant-Id`), or as the anonymous user.
    async fn rpc(&self, method: &str, params: Value, caller: Option<&str>) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = reqwest::Client::new()
            .post(format!("{}/", self.url))
            .timeout(ANSWER_TIMEOUT)
            .header("A2A-Version", "1.0")
            .header("A2A-Extensions", EXTENSION_URI)
            .json(&body);
        if let Some(caller) = caller {
            request = request.header("X-Participant-Id", caller);
        }
        request.send().await.unwrap().json().await.unwrap()
    }

    /// Asks a question and waits for the task to settle (a blocking `SendMessage`).
    async fn ask(&self, question: &str) -> Value {
        let response = self
            .rpc(
                "SendMessage",
                json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(),
                    "role": "ROLE_USER", "parts": [{"text": question}]}}),
                None,
            )
            .await;
        response["result"]["task"].clone()
    }

    async fn get_task(&self, id: &str, caller: Option<&str>) -> Value {
        self.rpc("GetTask", json!({"id": id}), caller).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- {} log ---\n{}", self.name, self.log.lock().unwrap());
        }
    }
}

/// The task's final answer: its status message's text.
fn answer_of(task: &Value) -> &str {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// The one sub-task row of a task, as GetTask shows it.
fn only_sub_task(task: &Value) -> &Value {
    let rows = task["metadata"][METADATA_KEY]["sub_tasks"]
        .as_array()
        .expect("the task extension lists sub_tasks");
    assert_eq!(
        rows.len(),
        1,
        "the front desk should have delegated once: {rows:?}"
    );
    &rows[0]
}

/// The ledger and the front desk running, the front desk configured by `front_desk`.
struct Pair {
    _dir: tempfile::TempDir,
    ledger: Server,
    front_desk: Server,
    front_desk_config: PathBuf,
}

impl Pair {
    async fn start(front_desk: impl FnOnce(&mut toml::Table)) -> Pair {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        let ledger_config = write_config(&dir, "ledger", &example_config("ledger", &dir));
        let ledger = Server::start("ledger", &ledger_config).await;
        let mut config = front_desk_config(&dir, &ledger.url);
        front_desk(&mut config);
        let front_desk_config = write_config(&dir, "front-desk", &config);
        let front_desk = Server::start("front desk", &front_desk_config).await;
        Pair {
            _dir: temp,
            ledger,
            front_desk,
            front_desk_config,
        }
    }

    /// Checks what the flow left behind: the front desk's task completed with the ledger's
    /// figure, one sub-task row on `ledger`, and the ledger's own task for it created from the
    /// task envelope the front desk sent (`expected_brief`: its name and goal, when known).
    async fn check_delegated(&self, task: &Value, expected_brief: Option<(&str, &str)>) {
        let figure = ledger_balance();
        let task_id = task["id"].as_str().expect("the front desk created a task");
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "the front desk's task: {task:#}"
        );

        let parent = self.front_desk.get_task(task_id, None).await["result"].clone();
        let row = only_sub_task(&parent);
        assert_eq!(row["agent"]["kind"], "agent", "{row}");
        assert_eq!(row["agent"]["id"], "ledger", "{row}");
        let child_id = row["task_id"].as_str().expect("the row names the child");

        let answer = answer_of(task);
        assert!(
            states_figure(answer, &figure),
            "the front desk's answer does not carry the ledger's figure {figure}: {answer}"
        );

        check_ledger_task(&self.ledger, "front-desk", child_id, expected_brief).await;
    }
}

/// Checks the ledger's task `id`, asked of the ledger with GetTask by the user who asked the
/// front desk: the front desk is a trusted delegator of the ledger, so it named that user a
/// participant of the child. Completed with the figure from the ledger's books, and created
/// from a task envelope (a name and a goal; `expected_brief` when known) by `creator`.
async fn check_ledger_task(
    ledger: &Server,
    creator: &str,
    id: &str,
    expected_brief: Option<(&str, &str)>,
) {
    let task = ledger.get_task(id, None).await;
    let participants = &task["result"]["metadata"][METADATA_KEY]["participants"];
    assert!(
        participants
            .as_array()
            .is_some_and(|all| all.iter().any(|p| p["id"] == creator)),
        "the child names its creator {creator} among its participants: {participants:#}"
    );
    let task = &task["result"];
    assert_eq!(task["id"], id, "GetTask on the ledger: {task:#}");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task:#}");
    assert!(
        states_figure(answer_of(task), &ledger_balance()),
        "the ledger's answer: {task:#}"
    );
    let brief = &task["metadata"][METADATA_KEY];
    assert!(
        brief["name"].as_str().is_some_and(|n| !n.is_empty())
            && brief["goal"].as_str().is_some_and(|g| !g.is_empty()),
        "the ledger's task carries no envelope: {task:#}"
    );
    if let Some((name, goal)) = expected_brief {
        assert_eq!(brief["name"], name, "{task:#}");
        assert_eq!(brief["goal"], goal, "{task:#}");
    }
}

/// The name and goal the front desk's script sends with `spawn_subtask`.
fn scripted_brief() -> (String, String) {
    let text = std::fs::read_to_string(example().join("front-desk-script.toml")).unwrap();
    let script: toml::Table = toml::from_str(&text).unwrap();
    let call = &script["reply"][0]["tool_calls"][0];
    assert_eq!(call["name"].as_str(), Some("spawn_subtask"));
    let arguments = &call["arguments"];
    assert_eq!(arguments["agent"].as_str(), Some("ledger"));
    (
        arguments["name"].as_str().unwrap().to_string(),
        arguments["goal"].as_str().unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_about_an_account_is_answered_by_the_ledger_through_the_front_desk() {
    assert!(
        !QUESTION.to_lowercase().contains("ledger"),
        "the question must not name an agent"
    );
    let pair = Pair::start(|_| {}).await;

    let card = pair.ledger.card().await;
    assert_eq!(card["name"], "Ledger");
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(skills, ["balances", "invoices"]);

    // What the front desk's model reads before every call: the ledger in its roster, by id and
    // card name.
    let context = Command::new(HARNESS)
        .args(["context", "--config"])
        .arg(&pair.front_desk_config)
        .env("NO_COLOR", "1")
        .env("FRONT_DESK_TOKEN", FRONT_DESK_TOKEN)
        .output()
        .unwrap();
    let prefix = String::from_utf8_lossy(&context.stdout);
    assert!(context.status.success(), "harness context: {prefix}");
    assert!(
        prefix.contains("- ledger: Ledger — "),
        "the roster does not list the ledger: {prefix}"
    );

    let task = pair.front_desk.ask(QUESTION).await;
    let (name, goal) = scripted_brief();
    pair.check_delegated(&task, Some((&name, &goal))).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ledger_alone_answers_a_task_envelope_from_its_books() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "ledger", &example_config("ledger", dir.path()));
    let ledger = Server::start("ledger", &config).await;
    let (name, goal) = scripted_brief();
    // The brief as a delegating harness sends it: a task envelope data part.
    let envelope = json!({"kind": "task", "payload": {
        "name": name, "goal": goal,
        "acceptance_criteria": [{"text": "States the balance with its currency."}]}});
    let response = ledger
        .rpc(
            "SendMessage",
            json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"data": envelope, "mediaType": ENVELOPE_MEDIA_TYPE}]}}),
            None,
        )
        .await;
    let id = response["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("the ledger took no task: {response:#}"));
    check_ledger_task(&ledger, "user", id, Some((&name, &goal))).await;
}

#[test]
fn the_ledgers_bookkeeping_skill_loads_and_check_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "ledger", &example_config("ledger", dir.path()));
    let output = Command::new(HARNESS)
        .args(["check", "--config"])
        .arg(&config)
        .env("NO_COLOR", "1")
        .env("FRONT_DESK_TOKEN", FRONT_DESK_TOKEN)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "harness check: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let file = example().join("ledger/skills/bookkeeping/SKILL.md");
    let line = stdout
        .lines()
        .find(|line| line.starts_with("skill:"))
        .unwrap_or_else(|| panic!("no skill listed: {stdout}"));
    assert!(
        line.starts_with(&format!("skill:         bookkeeping from {} (", file.display()))
            && line.ends_with("The ledger's bookkeeping rules, how to read and state balances and invoices. Load it before answering a question about an account's money."),
        "{line}"
    );
    // The ledger's script loads it before it looks a balance up.
    let script = std::fs::read_to_string(example().join("ledger-script.toml")).unwrap();
    let script: toml::Table = toml::from_str(&script).unwrap();
    let first = &script["reply"][0]["tool_calls"][0];
    assert_eq!(first["name"].as_str(), Some("load_skill"));
    assert_eq!(first["arguments"]["name"].as_str(), Some("bookkeeping"));
}

#[tokio::test(flavor = "multi_thread")]
async fn run_sh_prints_the_ledger_answer_and_the_child_task_and_exits_0() {
    let output = Command::new(example().join("run.sh"))
        .env("HARNESS", HARNESS)
        .output()
        .expect("run.sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "run.sh failed:\n{stdout}\n{stderr}"
    );
    assert!(
        states_figure(&stdout, &ledger_balance()),
        "no figure:\n{stdout}"
    );
    assert!(stdout.contains("Sub-task on ledger"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a real model: set TINY_HARNESS_E2E_MODEL_URL and TINY_HARNESS_E2E_MODEL, then run with --ignored"]
async fn a_real_model_at_the_front_desk_chooses_the_ledger_by_itself() {
    let (Ok(url), Ok(model)) = (std::env::var(MODEL_URL_VAR), std::env::var(MODEL_VAR)) else {
        panic!(
            "set {MODEL_URL_VAR} (an OpenAI-compatible base URL) and {MODEL_VAR} (and \
             {API_KEY_ENV_VAR}, the variable holding its key, if it needs one) to run this test"
        );
    };
    let api_key_env = std::env::var(API_KEY_ENV_VAR).ok();
    let pair = Pair::start(|config| {
        // The front desk's own model; nothing in the configuration names an agent for the
        // question, and no script tells the model to delegate.
        let mut table = toml::Table::new();
        table.insert("provider".into(), "openai".into());
        table.insert("base_url".into(), url.clone().into());
        table.insert("model".into(), model.clone().into());
        if let Some(variable) = &api_key_env {
            table.insert("api_key_env".into(), variable.clone().into());
        }
        config.insert("model".into(), table.into());
    })
    .await;
    let task = pair.front_desk.ask(QUESTION).await;
    pair.check_delegated(&task, None).await;
}
