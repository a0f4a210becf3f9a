//! The example plugins in Rust, Python and JavaScript (`plugins/*-example`), built from source by
//! `scripts/build-plugins` (into `target/example-plugins/`, compiled components cached in
//! `target/example-plugins-cache/`) and loaded together from one plugins folder: their section
//! edits in the composed prompt, their tools through the toolbox, and their tools called by a
//! model over A2A. Building them needs Python 3.9+ with venv and Node.js 20+ with npm; without
//! them these tests fail saying what to install.

mod support {
    pub mod example_plugins;
}

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Value, json};
use support::example_plugins::{built, settings};
use tiny_harness::app::runtime::{Runtime, offline_prompt_context};
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, ToolCall,
};
use tiny_harness::base::protocol::types::TaskStatus;
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;
use tiny_harness::work::engine::{ToolContext, ToolHost, ToolOutcome};
use tiny_harness::work::plugins::{CacheOutcome, PluginHost};

/// The example plugins' file names in the plugins folder (load order).
const PLUGINS: [&str; 3] = [
    "js-example.wasm",
    "python-example.wasm",
    "rust-example.wasm",
];

/// A fresh plugins folder holding the three examples.
fn folder() -> tempfile::TempDir {
    support::example_plugins::folder(&PLUGINS)
}

async fn load() -> PluginHost {
    let dir = folder();
    let mut settings = settings(built());
    settings.dir = Some(dir.path().to_path_buf());
    PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap_or_else(|err| panic!("the example plugins do not load: {err}"))
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

#[tokio::test]
async fn the_three_example_plugins_load_together_and_edit_the_prompt() {
    let host = load().await;
    let summaries: Vec<(String, String, Vec<String>, Vec<String>)> = host
        .summaries()
        .into_iter()
        .skip(1)
        .map(|s| (s.file, s.name, s.sections, s.tools))
        .collect();
    let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        summaries,
        [
            (
                "js-example.wasm".to_string(),
                "js-example".to_string(),
                owned(&["extend tools"]),
                owned(&["slugify"])
            ),
            (
                "python-example.wasm".to_string(),
                "python-example".to_string(),
                owned(&["define word-play"]),
                owned(&["reverse_words"])
            ),
            (
                "rust-example.wasm".to_string(),
                "rust-example".to_string(),
                owned(&["extend rules"]),
                owned(&["word_count"])
            ),
        ]
    );
    let prompt = host.prompt().render();
    for edit in [
        "To name a file or a heading anchor after a title, call `slugify`.",
        "## word-play\n",
        "can reverse the order of the words in a text with `reverse_words`",
        "- Before you state how long a text is, count its words with `word_count`.",
    ] {
        assert!(
            prompt.contains(edit),
            "the prompt lacks {edit:?}:\n{prompt}"
        );
    }
    // Extends land at the end of their sections; the new section comes after the builtin ones.
    let at = |text: &str| prompt.find(text).unwrap();
    assert!(at("call `slugify`") < at("## skills"));
    assert!(at("## rules") < at("count its words") && at("count its words") < at("## word-play"));
}

#[tokio::test]
async fn each_example_plugin_tool_runs_through_the_toolbox_and_reports_errors() {
    let host = load().await;
    let cases = [
        ("word_count", "three little words", "3 words"),
        ("reverse_words", "one two  three", "three two one"),
        (
            "slugify",
            "Hello, World: 2 Plugins!",
            "hello-world-2-plugins",
        ),
        (
            "reverse_words",
            "   ",
            "[reverse_words.empty] the text has no words",
        ),
        (
            "slugify",
            "?!",
            "[slugify.empty] the text has no letters or digits",
        ),
    ];
    for (tool, text, expected) in cases {
        let outcome = call(&host, tool, json!({ "text": text })).await;
        assert_eq!(outcome.text(), expected, "{tool}({text:?})");
        assert!(outcome.effects.is_empty());
    }
    // The host checks the schemas each plugin declared before the plugin runs.
    for tool in ["word_count", "reverse_words", "slugify"] {
        let outcome = call(&host, tool, json!({ "text": 7 })).await;
        assert!(
            outcome
                .text()
                .starts_with(&format!("[tool.invalid_arguments] {tool}: /text: 7")),
            "{}",
            outcome.text()
        );
    }
}

#[tokio::test]
async fn a_second_load_takes_the_example_plugins_from_the_compile_cache() {
    built();
    let started = Instant::now();
    let host = load().await;
    let elapsed = started.elapsed();
    let outcomes: Vec<(String, CacheOutcome)> = host
        .summaries()
        .into_iter()
        .map(|s| (s.file, s.cache))
        .collect();
    assert!(
        outcomes
            .iter()
            .all(|(_, cache)| *cache == CacheOutcome::Hit),
        "{outcomes:?}"
    );
    eprintln!("cached load of the builtin and the three examples: {elapsed:?}");
}

/// Calls the tool named by the first word of the task's text with the rest as `text`, then
/// answers with what the tool returned.
#[derive(Default)]
struct ToolCallingModel {
    requests: Mutex<Vec<ModelRequest>>,
}

#[async_trait]
impl Model for ToolCallingModel {
    fn describe(&self) -> String {
        "tool-calling model".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        // The first turn: no tool has answered yet.
        if !request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }))
        {
            // The task's text is its goal, which the model reads once: in the task section.
            let Some(content) = goal_of(request) else {
                return Err(ModelError::InvalidResponse(
                    "no goal in the task section".into(),
                ));
            };
            let content = content.as_str();
            let (tool, text) = content.trim().split_once(' ').unwrap_or((content, ""));
            return Ok(ModelReply {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call-1".into(),
                    name: tool.to_string(),
                    arguments: json!({ "text": text }).to_string(),
                }],
                usage: Default::default(),
                ..ModelReply::default()
            });
        }
        let result = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Ok(ModelReply {
            text: format!("tool said: {result}"),
            ..ModelReply::default()
        })
    }
}

async fn send(url: &str, text: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": text}]}}});
    let response: Value = reqwest::Client::new()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    response["result"]["task"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_example_plugin_tool_result_reaches_the_model_over_a2a() {
    let dir = folder();
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"h.db\"\n[plugins]\ndir = \".\"\ncache_dir = {}\n",
            toml_string(&built().cache)
        ),
    )
    .unwrap();
    let model = Arc::new(ToolCallingModel::default());
    let runtime = Runtime::build_with_model(Config::load(&config_path).unwrap(), model.clone())
        .await
        .unwrap();
    let url = format!("http://{}/", runtime.local_addr());
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(runtime.serve(async {
        let _ = stopped.await;
    }));

    for (message, result) in [
        ("word_count a b c d", "4 words"),
        ("reverse_words over the wire", "wire the over"),
        ("slugify Plugins Over A2A", "plugins-over-a2a"),
    ] {
        model.requests.lock().unwrap().clear();
        let task = send(&url, message).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
        let answer = task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(answer.contains(result), "{message}: {answer}");
        let requests = model.requests.lock().unwrap().clone();
        let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
        for tool in ["slugify", "reverse_words", "word_count"] {
            assert!(offered.contains(&tool), "{tool} not offered: {offered:?}");
        }
        let ChatMessage::Tool { content, .. } = requests[1].messages.last().unwrap() else {
            panic!("the tool result is not the last message");
        };
        assert!(
            content.starts_with("<untrusted source=\"tool\">") && content.contains(result),
            "{content}"
        );
    }
}

/// A TOML basic string holding a path.
fn toml_string(path: &Path) -> String {
    Value::String(path.display().to_string()).to_string()
}

/// The goal line of the request's task section (the first message holds the sections).
fn goal_of(request: &ModelRequest) -> Option<String> {
    let ChatMessage::User { content } = request.messages.first()? else {
        return None;
    };
    content
        .lines()
        .find_map(|line| line.strip_prefix("goal: "))
        .map(str::to_string)
}
