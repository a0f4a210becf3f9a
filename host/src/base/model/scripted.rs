//! The scripted model: a TOML file of replies played in order, for tests and offline demos that
//! must behave the same on every run without a network or a key. A reply's text may hold
//! placeholders ([`placeholders`]) filled from the request, so a demo can repeat real data.

pub mod placeholders;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{Finish, Model, ModelError, ModelReply, ModelRequest, Purpose, ToolCall, Usage};

/// Why a script could not be loaded. Every message names the file, and the dotted key where
/// there is one, so a typo in a demo script is found without reading the parser.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read (missing, unreadable).
    #[error("cannot read {path}: {source}")]
    Read {
        /// The script's path, resolved against the configuration file.
        path: PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{path}: TOML syntax error: {message}")]
    Syntax {
        /// The script's path.
        path: PathBuf,
        /// The TOML parser's message.
        message: String,
    },
    /// The file is TOML but a reply is not one the scripted model can play.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The script's path.
        path: PathBuf,
        /// The dotted key at fault (`reply[2].text`).
        key: String,
        /// What is wrong with it and what to write instead.
        message: String,
    },
}

/// The file: a list of `[[reply]]` tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default)]
    reply: Vec<ScriptedReply>,
}

/// One `[[reply]]`: what the model says on one call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedReply {
    /// May hold [`placeholders::KNOWN`], filled when the reply is played.
    #[serde(default)]
    text: String,
    /// Waited before answering, so tests can cancel a task mid-call.
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    /// The tokens the reply reports having used (`{ input_tokens, output_tokens }`), so a
    /// script can show token budgets at work; none by default.
    #[serde(default)]
    usage: ScriptedUsage,
}

/// A `[[reply]]`'s `usage` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// One `[[reply.tool_calls]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default)]
    arguments: Arguments,
}

/// A table becomes JSON text; a string is sent verbatim, so a script can also feed the engine
/// arguments that are not valid JSON.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Arguments {
    Table(toml::Table),
    Text(String),
}

impl Default for Arguments {
    fn default() -> Arguments {
        Arguments::Table(toml::Table::new())
    }
}

impl Arguments {
    fn to_json_text(&self) -> String {
        match self {
            Arguments::Text(text) => text.clone(),
            Arguments::Table(table) => {
                let object = table
                    .iter()
                    .map(|(key, value)| (key.clone(), to_json(value)))
                    .collect();
                Value::Object(object).to_string()
            }
        }
    }
}

/// TOML to JSON. Dates become their TOML text; a float JSON cannot hold (NaN, inf) becomes null.
fn to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(text) => Value::String(text.clone()),
        toml::Value::Integer(n) => Value::from(*n),
        toml::Value::Float(x) => serde_json::Number::from_f64(*x)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(date) => Value::String(date.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .iter()
                .map(|(key, value)| (key.clone(), to_json(value)))
                .collect(),
        ),
    }
}

/// A model that answers call `n` of a task with reply `n` of its script, so a resumed task
/// continues where it stopped, and summaries with a fixed sentence.
#[derive(Debug)]
pub struct ScriptedModel {
    path: PathBuf,
    replies: Vec<ScriptedReply>,
    context_window: Option<usize>,
}

impl ScriptedModel {
    /// Reads and checks a script file.
    pub fn load(path: &Path) -> Result<ScriptedModel, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        ScriptedModel::parse(&text, path)
    }

    /// Checks script text; `path` is used in messages and [`Model::describe`].
    pub fn parse(text: &str, path: &Path) -> Result<ScriptedModel, ScriptError> {
        let deserializer = toml::Deserializer::parse(text).map_err(|err| ScriptError::Syntax {
            path: path.to_path_buf(),
            message: err.message().to_string(),
        })?;
        let script: Script = serde_path_to_error::deserialize(deserializer).map_err(|err| {
            let (key, message) = locate(&err);
            ScriptError::Invalid {
                path: path.to_path_buf(),
                key,
                message,
            }
        })?;
        check_placeholders(&script, path)?;
        Ok(ScriptedModel {
            path: path.to_path_buf(),
            replies: script.reply,
            context_window: None,
        })
    }

    /// Sets what [`Model::context_window`] reports (`model.context_window_tokens`).
    pub fn with_context_window(mut self, tokens: Option<usize>) -> ScriptedModel {
        self.context_window = tokens;
        self
    }

    /// How many replies the script holds.
    pub fn len(&self) -> usize {
        self.replies.len()
    }

    /// Whether the script holds no replies (every turn call then fails).
    pub fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }
}

/// Refuses a `{{name}}` that is not a placeholder: a typo would otherwise reach the demo's answer
/// verbatim, on every run.
fn check_placeholders(script: &Script, path: &Path) -> Result<(), ScriptError> {
    for (index, reply) in script.reply.iter().enumerate() {
        if let Some(token) = placeholders::unknown(&reply.text) {
            return Err(ScriptError::Invalid {
                path: path.to_path_buf(),
                key: format!("reply[{index}].text"),
                message: format!(
                    "unknown placeholder {token}; a reply's text may hold {}",
                    placeholders::KNOWN.join(" and ")
                ),
            });
        }
    }
    Ok(())
}

/// The dotted key an error is about and its message. For an unknown or missing field serde
/// reports the enclosing table, so the field's own name is appended.
fn locate(err: &serde_path_to_error::Error<toml::de::Error>) -> (String, String) {
    let path = err.path().to_string();
    let message = err.inner().message().to_string();
    let field = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next());
    let key = match (path.as_str(), field) {
        ("." | "", Some(field)) => field.to_string(),
        (_, Some(field)) => format!("{path}.{field}"),
        ("." | "", None) => "(top level)".to_string(),
        (_, None) => path,
    };
    (key, message)
}

impl ScriptedModel {
    /// Reply `index` of the script; a summary request gets a fixed summary.
    async fn play(&self, request: &ModelRequest, index: usize) -> Result<ModelReply, ModelError> {
        if request.purpose == Purpose::Summary {
            return Ok(ModelReply {
                text: format!("Summary of {} earlier messages.", request.messages.len()),
                ..ModelReply::default()
            });
        }
        let reply = self.replies.get(index).ok_or(ModelError::ScriptExhausted {
            index,
            len: self.replies.len(),
        })?;
        if reply.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(reply.delay_ms)).await;
        }
        let tool_calls = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, call)| ToolCall {
                id: format!("call_{index}_{n}"),
                name: call.name.clone(),
                arguments: call.arguments.to_json_text(),
            })
            .collect();
        Ok(ModelReply {
            text: placeholders::fill(&reply.text, request),
            tool_calls,
            usage: Usage {
                input_tokens: reply.usage.input_tokens,
                output_tokens: reply.usage.output_tokens,
            },
            finish: Finish::default(),
        })
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn describe(&self) -> String {
        format!("scripted {}", self.path.display())
    }

    fn context_window(&self) -> Option<usize> {
        self.context_window
    }

    /// Plays the reply at the task's recorded turn count (`origin.turn`), so a resumed task
    /// continues where it stopped; a call made for no task plays the script from its start.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.play(request, request.origin.turn).await
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::base::model::ChatMessage;

    const SCRIPT: &str = r#"
[[reply]]
text = "Let me plan."
[[reply.tool_calls]]
name = "create_plan"
arguments = { steps = [{ name = "Look up", description = "Find it" }], when = 1979-05-27 }
[[reply.tool_calls]]
name = "raw"
arguments = "{not json"

[[reply]]
text = "Done: 42."
delay_ms = 150
usage = { input_tokens = 1200, output_tokens = 30 }
"#;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    fn request(purpose: Purpose) -> ModelRequest {
        ModelRequest {
            instructions: "".into(),
            messages: vec![
                ChatMessage::User {
                    content: "a".into(),
                },
                ChatMessage::User {
                    content: "b".into(),
                },
            ],
            tools: Vec::new().into(),
            max_output_tokens: None,
            purpose,
            ..ModelRequest::default()
        }
    }

    async fn turn(model: &ScriptedModel, turn: usize) -> ModelReply {
        let request = ModelRequest {
            origin: crate::base::model::Origin {
                task_id: "t".into(),
                message_id: None,
                turn,
            },
            ..request(Purpose::Turn)
        };
        model.complete(&request).await.unwrap()
    }

    #[tokio::test]
    async fn each_turn_plays_its_own_reply() {
        let file = write(SCRIPT);
        let model = ScriptedModel::load(file.path()).unwrap();
        assert_eq!(model.len(), 2);
        let first = turn(&model, 0).await;
        assert_eq!(first.text, "Let me plan.");
        assert_eq!(first.tool_calls[0].id, "call_0_0");
        assert_eq!(first.tool_calls[1].id, "call_0_1");
        let arguments: Value = serde_json::from_str(&first.tool_calls[0].arguments).unwrap();
        assert_eq!(arguments["steps"][0]["name"], "Look up");
        assert_eq!(arguments["when"], "1979-05-27");
        assert_eq!(first.tool_calls[1].arguments, "{not json");
        let second = turn(&model, 1).await;
        assert_eq!(second.text, "Done: 42.");
        assert!(second.tool_calls.is_empty());
        assert_eq!(
            first.usage,
            Usage::default(),
            "no usage unless the script says"
        );
        assert_eq!(
            second.usage,
            Usage {
                input_tokens: 1200,
                output_tokens: 30
            }
        );
    }

    #[tokio::test]
    async fn a_call_past_the_end_reports_the_script_exhausted() {
        let file = write(SCRIPT);
        let model = ScriptedModel::load(file.path()).unwrap();
        let err = model.play(&request(Purpose::Turn), 2).await.unwrap_err();
        assert!(matches!(
            err,
            ModelError::ScriptExhausted { index: 2, len: 2 }
        ));
    }

    #[tokio::test]
    async fn a_summary_request_does_not_use_the_script() {
        let file = write(SCRIPT);
        let model = ScriptedModel::load(file.path()).unwrap();
        let reply = model.play(&request(Purpose::Summary), 9).await.unwrap();
        assert_eq!(reply.text, "Summary of 2 earlier messages.");
        assert!(reply.tool_calls.is_empty());
    }

    #[tokio::test]
    async fn a_delay_is_waited_before_answering() {
        let file = write(SCRIPT);
        let model = ScriptedModel::load(file.path()).unwrap();
        let started = std::time::Instant::now();
        model.play(&request(Purpose::Turn), 1).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(150));
        let cut_short = tokio::time::timeout(
            Duration::from_millis(20),
            model.play(&request(Purpose::Turn), 1),
        )
        .await;
        assert!(cut_short.is_err(), "dropping the call cancels the delay");
    }

    #[test]
    fn an_unknown_key_is_refused_by_its_dotted_name() {
        let file = write("[[reply]]\ntext = \"a\"\n[[reply.tool_calls]]\nnmae = \"x\"\n");
        let err = ScriptedModel::load(file.path()).unwrap_err().to_string();
        assert!(err.contains("reply[0].tool_calls[0].nmae"), "{err}");
        assert!(err.contains(&file.path().display().to_string()), "{err}");
    }

    #[test]
    fn a_missing_file_and_bad_syntax_name_the_file() {
        let missing = ScriptedModel::load(Path::new("/no/such/script.toml")).unwrap_err();
        assert!(missing.to_string().contains("/no/such/script.toml"));
        let file = write("[[reply]\n");
        let err = ScriptedModel::load(file.path()).unwrap_err();
        assert!(matches!(err, ScriptError::Syntax { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_reply_repeats_the_tool_result_and_the_note_its_request_holds() {
        use crate::base::text::untrusted::untrusted;
        let file = write(
            "[[reply]]\ntext = \"Ledger: {{last_tool_result}}\"\n\
             [[reply]]\ntext = \"Front desk: {{last_note}}\"\n",
        );
        let model = ScriptedModel::load(file.path()).unwrap();
        let mut first = request(Purpose::Turn);
        first.messages.push(ChatMessage::Tool {
            call_id: "call_0_0".into(),
            name: "account_balance".into(),
            content: untrusted("tool", "12480.50 EUR"),
        });
        let reply = model.play(&first, 0).await.unwrap();
        assert_eq!(reply.text, "Ledger: 12480.50 EUR");
        let mut second = request(Purpose::Turn);
        second.messages.push(ChatMessage::User {
            content: untrusted("agent", "Sub-task t on ledger is COMPLETED: 12480.50 EUR"),
        });
        let reply = model.play(&second, 1).await.unwrap();
        assert_eq!(
            reply.text,
            "Front desk: Sub-task t on ledger is COMPLETED: 12480.50 EUR"
        );
    }

    #[test]
    fn an_unknown_placeholder_is_refused_by_its_reply() {
        let file = write("[[reply]]\ntext = \"a\"\n[[reply]]\ntext = \"{{last_answer}}\"\n");
        let err = ScriptedModel::load(file.path()).unwrap_err().to_string();
        assert!(err.contains("reply[1].text"), "{err}");
        assert!(err.contains("unknown placeholder {{last_answer}}"), "{err}");
        assert!(
            err.contains("{{last_tool_result}} and {{last_note}}"),
            "{err}"
        );
    }

    #[test]
    fn the_context_window_is_the_configured_one() {
        let model = ScriptedModel::parse("", Path::new("s.toml"))
            .unwrap()
            .with_context_window(Some(8000));
        assert_eq!(model.context_window(), Some(8000));
        assert!(model.is_empty());
        assert_eq!(model.describe(), "scripted s.toml");
    }
}
