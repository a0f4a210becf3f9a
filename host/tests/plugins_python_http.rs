//! A Python plugin with an `http` grant (`plugins/python-http`, built by componentize-py through
//! `scripts/build-plugins`) against real loopback servers: a server it is granted answers and
//! one it is not is never contacted; a redirect to an ungranted host is refused; a secret is
//! injected for its host and the guest only ever sees it masked; a Python exception leaves its
//! traceback in the harness log, escaped and capped, and the model a tool error. Building the
//! plugin needs Python 3.9+ with venv (and Node.js 20+ with npm for the other examples the same
//! script builds): without them these tests fail saying what to install.

mod support {
    pub mod captured_logs;
    pub mod example_plugins;
    pub mod granted_server;
}

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::captured_logs::CapturedLogs;
use support::example_plugins::{built, folder, settings};
use support::granted_server::{Server, TOKEN};
use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::base::config::{Config, PluginGrant};
use tiny_harness::base::model::ToolCall;
use tiny_harness::base::protocol::types::TaskStatus;
use tiny_harness::base::text::log_field::MAX_LOG_FIELD_CHARS;
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;
use tiny_harness::work::engine::{ToolContext, ToolHost, ToolOutcome};
use tiny_harness::work::plugins::{CallLimits, PluginHost, SECRET_MASK};

const PLUGIN: &str = "python-http.wasm";

fn test_secrets(name: &str) -> Option<String> {
    (name == "WEATHER_TOKEN").then(|| TOKEN.to_string())
}

/// Loads the python-http example alone with its grant (TOML of `[plugins.grants.python-http]`).
async fn load(grant: &str) -> PluginHost {
    let dir = folder(&[PLUGIN]);
    let mut settings = settings(built());
    settings.dir = Some(dir.path().to_path_buf());
    // Loopback answers in milliseconds; the interpreter's first call takes longer than the
    // examples' default deadline on a loaded machine.
    settings.limits = CallLimits {
        memory_bytes: 64 * 1024 * 1024,
        deadline: Duration::from_secs(20),
    };
    let grant: PluginGrant = toml::from_str(grant).expect("a grant");
    settings.grants = BTreeMap::from([("python-http".to_string(), grant)]);
    settings.secrets_from = test_secrets;
    PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap_or_else(|err| panic!("python-http does not load: {err}"))
}

async fn call(host: &PluginHost, name: &str, arguments: Value) -> ToolOutcome {
    let record = TaskRecord {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::default(),
        artifacts: vec![],
        metadata: Default::default(),
        ext: TaskExtension::from_text("goal"),
        owner: "user".into(),
    };
    host.toolbox()
        .invoke(
            &ToolContext {
                record: &record,
                call_id: "c1",
                skills: &[],
            },
            &ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: arguments.to_string(),
            },
        )
        .await
}

async fn get(host: &PluginHost, url: &str) -> ToolOutcome {
    call(host, "http_get", json!({ "url": url })).await
}

#[tokio::test]
async fn a_python_plugin_reaches_a_granted_server_and_never_contacts_an_ungranted_one() {
    let granted = Server::start().await;
    let other = Server::start().await;
    let host = load(&format!("http = [\"{}\"]", granted.address)).await;

    let ok = get(&host, &granted.url("/hello")).await;
    assert_eq!(
        ok.text(),
        "status 200\n\nhello from the granted server",
        "the granted server answers"
    );
    assert_eq!(granted.hits(), 1);

    let json_field = call(
        &host,
        "http_get_json",
        json!({ "url": granted.url("/json"), "field": "city.temperatures.1" }),
    )
    .await;
    assert_eq!(json_field.text(), "14");

    let refused = get(&host, &other.url("/hello")).await;
    assert_eq!(refused.text(), "[http.refused] ErrorCode_HttpRequestDenied");
    assert_eq!(other.hits(), 0, "no request reached the ungranted server");
}

#[tokio::test]
async fn a_redirect_a_python_plugin_follows_to_an_ungranted_host_is_refused() {
    let granted = Server::start().await;
    let other = Server::start().await;
    let host = load(&format!("http = [\"{}\"]", granted.address)).await;

    let away = granted.url(&format!("/redirect?to={}", other.url("/hello")));
    assert_eq!(
        get(&host, &away).await.text(),
        "[http.refused] ErrorCode_HttpRequestDenied"
    );
    assert_eq!(granted.hits(), 1, "the first request was sent");
    assert_eq!(other.hits(), 0, "the redirect's target was never contacted");

    let back = granted.url(&format!("/redirect?to={}", granted.url("/hello")));
    assert_eq!(
        get(&host, &back).await.text(),
        "status 200\n\nhello from the granted server",
        "a redirect within the grant is followed"
    );
}

#[tokio::test]
async fn a_secret_is_injected_for_a_python_plugins_granted_host_and_the_guest_sees_it_masked() {
    let server = Server::start().await;
    let other = Server::start().await;
    let host = load(&format!(
        "http = [\"{a}\", \"{b}\"]\n[[secrets]]\nenv = \"WEATHER_TOKEN\"\nhost = \"{a}\"",
        a = server.address,
        b = other.address
    ))
    .await;

    let seen = get(&host, &server.url("/echo-auth")).await.text();
    assert_eq!(
        server.authorizations.lock().unwrap().as_slice(),
        [Some(format!("Bearer {TOKEN}"))],
        "the server got the secret"
    );
    assert_eq!(
        seen,
        format!("status 200\n\nyou sent: Bearer {SECRET_MASK}")
    );
    assert!(!seen.contains(TOKEN));

    get(&host, &other.url("/echo-auth")).await;
    assert_eq!(
        other.authorizations.lock().unwrap().as_slice(),
        [None],
        "another granted host does not get it"
    );
}

#[tokio::test]
async fn a_python_exception_leaves_its_traceback_in_the_log_and_the_model_a_tool_error() {
    let logs = CapturedLogs::process_wide();
    let server = Server::start().await;
    let host = load(&format!("http = [\"{}\"]", server.address)).await;

    // `/hello` answers text, not JSON: json.loads raises and nothing catches it.
    let failed = call(
        &host,
        "http_get_json",
        json!({ "url": server.url("/hello"), "field": "city" }),
    )
    .await;
    let text = failed.text();
    assert!(
        text.starts_with(
            "[plugin.failed] plugin python-http.wasm failed in http_get_json: it trapped"
        ),
        "{text}"
    );
    let log = logs.text();
    for line in [
        "Traceback (most recent call last): plugin=python-http.wasm",
        "plugin call failed: it trapped: wasm trap: wasm `unreachable` instruction executed plugin=python-http.wasm tool=http_get_json",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0) plugin=python-http.wasm",
    ] {
        assert!(log.contains(line), "the log lacks {line:?}:\n{log}");
    }
    let traceback = log
        .lines()
        .find(|l| l.contains("Traceback (most recent call last)"))
        .unwrap();
    assert!(
        traceback.contains("WARN"),
        "standard error logs at warn: {traceback}"
    );

    // A field named with a control character and far past the log's line cap: the line the
    // exception prints is escaped and cut.
    let field = format!("\u{1b}[31m{}", "k".repeat(3 * MAX_LOG_FIELD_CHARS));
    let failed = call(
        &host,
        "http_get_json",
        json!({ "url": server.url("/json"), "field": field }),
    )
    .await;
    assert!(
        failed.text().starts_with("[plugin.failed]"),
        "{}",
        failed.text()
    );
    let log = logs.text();
    let key_error = log
        .lines()
        .find(|l| l.starts_with("KeyError") || l.contains(" KeyError: "))
        .unwrap_or_else(|| panic!("no KeyError line:\n{log}"));
    assert!(!key_error.contains('\u{1b}'), "escaped: {key_error}");
    assert!(key_error.contains("… (cut: "), "capped: {key_error}");
    let (_, message) = key_error.split_once("plugin_log: ").unwrap();
    assert!(
        message.chars().count() < MAX_LOG_FIELD_CHARS + 100,
        "{} characters",
        message.chars().count()
    );
}
