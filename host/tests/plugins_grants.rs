//! Plugin grants with real components and real loopback HTTP servers: a Rust plugin
//! (`fixtures/fetch`) calling over wasi:http a server it is granted by address and refused one
//! it is not, a name that resolves to loopback refused, a redirect to an ungranted host refused
//! when the guest follows it, a secret injected for its host and masked in what the guest sees,
//! a response over the cap refused, and a plugin's standard error in the log; settings read by a
//! Rust plugin; a plugin built against contract 0.1.0 loading beside 0.2.0 ones; and
//! `harness plugins` listing the grants.

mod support {
    pub mod captured_logs;
    pub mod fixtures;
    pub mod granted_server;
    pub mod harness_process;
}

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::captured_logs::CapturedLogs;
use support::fixtures;
use support::granted_server::{Server, TOKEN};
use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::base::config::{Config, PluginGrant};
use tiny_harness::base::model::ToolCall;
use tiny_harness::base::protocol::types::TaskStatus;
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;
use tiny_harness::work::engine::{ToolContext, ToolHost, ToolOutcome};
use tiny_harness::work::plugins::{
    CallLimits, MAX_RESPONSE_BYTES, PluginHost, PluginSettings, SECRET_MASK,
};

fn grant(toml_text: &str) -> PluginGrant {
    toml::from_str(toml_text).expect("a grant")
}

fn test_secrets(name: &str) -> Option<String> {
    (name == "FETCH_TOKEN").then(|| TOKEN.to_string())
}

/// Loads the fetch fixture as `fetch.wasm` with `grants`.
async fn load(grants: BTreeMap<String, PluginGrant>) -> Result<PluginHost, String> {
    let dir = fixtures::folder(&[("fetch", "fetch.wasm")]);
    let settings = PluginSettings {
        dir: Some(dir.path().to_path_buf()),
        dir_required: true,
        limits: CallLimits {
            memory_bytes: 64 * 1024 * 1024,
            deadline: Duration::from_secs(10),
        },
        grants,
        secrets_from: test_secrets,
        ..PluginSettings::default()
    };
    PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .map_err(|err| err.to_string())
}

async fn load_granted(text: &str) -> PluginHost {
    load(BTreeMap::from([("fetch".to_string(), grant(text))]))
        .await
        .unwrap()
}

async fn call(host: &PluginHost, name: &str, url: &str) -> ToolOutcome {
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
                arguments: json!({ "url": url }).to_string(),
            },
        )
        .await
}

fn refusal(outcome: &ToolOutcome) -> String {
    let err = outcome.result.as_ref().expect_err("refused");
    assert_eq!(err.code, "fetch.refused", "{err:?}");
    err.message.clone()
}

#[tokio::test]
async fn a_granted_address_is_reached_and_an_ungranted_one_is_refused_before_any_connection() {
    let granted = Server::start().await;
    let other = Server::start().await;
    let host = load_granted(&format!("http = [\"{}\"]", granted.address)).await;

    let ok = call(&host, "fetch_get", &granted.url("/hello")).await;
    let text = ok.result.expect("the granted server answers");
    assert!(text.starts_with("status 200"), "{text}");
    assert!(text.ends_with("hello from the granted server"), "{text}");
    assert_eq!(granted.hits(), 1);

    let refused = call(&host, "fetch_get", &other.url("/hello")).await;
    assert_eq!(refusal(&refused), "ErrorCode::HttpRequestDenied");
    assert_eq!(other.hits(), 0, "no request reached the ungranted server");
}

#[tokio::test]
async fn a_plugin_without_a_grant_has_every_request_refused() {
    let server = Server::start().await;
    let host = load(BTreeMap::new()).await.unwrap();
    let refused = call(&host, "fetch_get", &server.url("/hello")).await;
    assert_eq!(refusal(&refused), "ErrorCode::HttpRequestDenied");
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_granted_name_that_resolves_to_loopback_is_refused_unless_listed_by_address() {
    let server = Server::start().await;
    let port = server.address.port();
    let host = load_granted(&format!("http = [\"localhost:{port}\"]")).await;
    let refused = call(
        &host,
        "fetch_get",
        &format!("http://localhost:{port}/hello"),
    )
    .await;
    assert_eq!(refusal(&refused), "ErrorCode::DestinationIpProhibited");
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_redirect_to_an_ungranted_host_is_refused_when_the_guest_follows_it() {
    let granted = Server::start().await;
    let other = Server::start().await;
    let host = load_granted(&format!("http = [\"{}\"]", granted.address)).await;
    let to = other.url("/hello");
    let refused = call(
        &host,
        "fetch_follow",
        &granted.url(&format!("/redirect?to={to}")),
    )
    .await;
    assert_eq!(refusal(&refused), "ErrorCode::HttpRequestDenied");
    assert_eq!(granted.hits(), 1, "the first request was sent");
    assert_eq!(other.hits(), 0, "the redirect's target was never contacted");

    // Followed to the granted host itself, it goes through.
    let back = granted.url("/hello");
    let followed = call(
        &host,
        "fetch_follow",
        &granted.url(&format!("/redirect?to={back}")),
    )
    .await;
    assert!(
        followed
            .result
            .unwrap()
            .ends_with("hello from the granted server"),
        "a redirect within the grant is followed"
    );
}

#[tokio::test]
async fn a_secret_is_injected_for_its_host_and_masked_in_what_the_guest_sees() {
    let server = Server::start().await;
    let other = Server::start().await;
    let host = load_granted(&format!(
        "http = [\"{a}\", \"{b}\"]\n[[secrets]]\nenv = \"FETCH_TOKEN\"\nhost = \"{a}\"",
        a = server.address,
        b = other.address
    ))
    .await;

    let seen = call(&host, "fetch_get", &server.url("/echo-auth"))
        .await
        .result
        .unwrap();
    assert_eq!(
        server.authorizations.lock().unwrap().as_slice(),
        [Some(format!("Bearer {TOKEN}"))],
        "the server got the secret"
    );
    assert!(!seen.contains(TOKEN), "the guest never sees it: {seen}");
    assert!(
        seen.contains(&format!("x-echo: Bearer {SECRET_MASK}")),
        "{seen}"
    );
    assert!(
        seen.contains("x-accept-encoding: identity"),
        "a request carrying a secret asks for an uncompressed answer: {seen}"
    );
    assert!(
        seen.ends_with(&format!("you sent: Bearer {SECRET_MASK}")),
        "{seen}"
    );

    call(&host, "fetch_get", &other.url("/echo-auth"))
        .await
        .result
        .unwrap();
    assert_eq!(
        other.authorizations.lock().unwrap().as_slice(),
        [None],
        "another granted host does not get it"
    );
}

#[tokio::test]
async fn a_response_over_the_cap_is_refused() {
    let server = Server::start().await;
    let host = load_granted(&format!("http = [\"{}\"]", server.address)).await;
    let refused = call(&host, "fetch_get", &server.url("/big")).await;
    assert_eq!(
        refusal(&refused),
        format!("ErrorCode::HttpResponseBodySize(Some({MAX_RESPONSE_BYTES}))")
    );
}

#[tokio::test]
async fn a_grant_naming_no_loaded_plugin_stops_start_up() {
    let err = load(BTreeMap::from([(
        "fetchh".to_string(),
        grant("http = [\"example.com:443\"]"),
    )]))
    .await
    .err()
    .expect("refused");
    assert_eq!(
        err,
        "plugins.grants.fetchh: no plugin file fetchh.wasm is loaded; plugins: fetch"
    );
}

#[tokio::test]
async fn a_secret_whose_variable_is_not_set_stops_start_up_naming_it() {
    let err = load(BTreeMap::from([(
        "fetch".to_string(),
        grant("http = [\"example.com:443\"]\n[[secrets]]\nenv = \"NOT_SET_ANYWHERE\"\nhost = \"example.com:443\""),
    )]))
    .await
    .err()
    .expect("refused");
    assert_eq!(
        err,
        "plugins.grants.fetch.secrets[0].env: the environment variable NOT_SET_ANYWHERE is not set"
    );
}

#[tokio::test]
async fn harness_plugins_shows_the_grants_without_secret_values() {
    let host = load_granted(
        "http = [\"api.example.com:443\"]\nconfig = { units = \"metric\" }\n[[secrets]]\nenv = \"FETCH_TOKEN\"\nhost = \"api.example.com:443\"",
    )
    .await;
    let fetch = host
        .summaries()
        .into_iter()
        .find(|p| p.file == "fetch.wasm")
        .unwrap();
    assert_eq!(
        fetch.grants,
        [
            "http api.example.com:443",
            "config units",
            "secret $FETCH_TOKEN as authorization to api.example.com:443"
        ]
    );
}

#[tokio::test]
async fn a_plugins_standard_error_and_output_are_its_escaped_log_lines() {
    let logs = CapturedLogs::process_wide();
    let host = load(BTreeMap::new()).await.unwrap();
    let outcome = call(&host, "fetch_stderr", "").await;
    assert_eq!(outcome.result.unwrap(), "wrote");
    drop(host);
    let text = logs.text();
    assert!(
        text.contains("INFO") && text.contains("to stdout plugin=fetch.wasm"),
        "{text}"
    );
    assert!(
        text.contains("Traceback (most recent call last): plugin=fetch.wasm"),
        "{text}"
    );
    assert!(
        text.contains("ValueError: \\u{1b}[31mboom plugin=fetch.wasm"),
        "escaped: {text}"
    );
}

#[tokio::test]
async fn a_rust_plugin_reads_the_settings_of_its_grant_typed_as_written() {
    let host =
        load_granted("config = { units = \"metric\", retries = 3, ratio = 0.5, verbose = true }")
            .await;
    let seen = call(&host, "fetch_config", "").await.result.unwrap();
    assert_eq!(
        seen,
        "ratio = number 0.5\nretries = integer 3\nunits = text metric\nverbose = flag true\nnot-set missing: true"
    );
    let bare = load(BTreeMap::new()).await.unwrap();
    assert_eq!(
        call(&bare, "fetch_config", "").await.result.unwrap(),
        "\nnot-set missing: true",
        "a plugin without a grant has no settings"
    );
}

#[tokio::test]
async fn a_plugin_built_against_the_0_1_0_contract_still_loads_and_answers() {
    let legacy = std::fs::read(fixtures::wasm("legacy")).unwrap();
    let imports_old = legacy
        .windows(b"tiny-harness:plugin/host@0.1.0".len())
        .any(|w| w == b"tiny-harness:plugin/host@0.1.0");
    assert!(imports_old, "the fixture is built against 0.1.0");

    let dir = fixtures::folder(&[("legacy", "legacy.wasm"), ("fetch", "fetch.wasm")]);
    let settings = PluginSettings {
        dir: Some(dir.path().to_path_buf()),
        dir_required: true,
        ..PluginSettings::default()
    };
    let host = PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    let files: Vec<String> = host.summaries().into_iter().map(|p| p.file).collect();
    assert_eq!(files, ["builtin", "fetch.wasm", "legacy.wasm"]);
    let answer = call(&host, "legacy_echo", "x").await.result.unwrap();
    assert_eq!(answer, "legacy: {\"url\":\"x\"}");
}

/// `harness plugins` with a plugins folder holding the fetch fixture and `grants` (TOML), the
/// secret's variable set in the harness's environment: its exit status, stdout and stderr.
fn harness_plugins(grants: &str) -> (bool, String, String) {
    let dir = fixtures::folder(&[("fetch", "fetch.wasm")]);
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[plugins]\ndir = \".\"\ncache_dir = \"cache\"\n{grants}"),
    )
    .unwrap();
    let output = std::process::Command::new(support::harness_process::HARNESS)
        .args(["plugins", "--config"])
        .arg(&config)
        .env("FETCH_TOKEN", TOKEN)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn harness_plugins_lists_each_plugins_grants_and_never_a_secret() {
    let (ok, out, err) = harness_plugins(
        "[plugins.grants.fetch]\nhttp = [\"api.example.com:443\", \"127.0.0.1:8080\"]\n\
         config = { units = \"metric\" }\n\
         [[plugins.grants.fetch.secrets]]\nenv = \"FETCH_TOKEN\"\nhost = \"api.example.com:443\"\n",
    );
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "  grants:   http api.example.com:443, 127.0.0.1:8080\n            config units\n            secret $FETCH_TOKEN as authorization to api.example.com:443\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("builtin — builtin 0.1.0\n") && out.contains("  grants:   (none)\n"),
        "{out}"
    );
    assert!(!out.contains(TOKEN) && !err.contains(TOKEN), "{out}{err}");
}

#[test]
fn harness_plugins_refuses_a_grant_for_a_plugin_that_is_not_there() {
    let (ok, _, err) =
        harness_plugins("[plugins.grants.wether]\nhttp = [\"api.example.com:443\"]\n");
    assert!(!ok);
    assert!(
        err.contains("plugins.grants.wether: no plugin file wether.wasm is loaded; plugins: fetch"),
        "{err}"
    );
}
