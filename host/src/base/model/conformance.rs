//! The conformance model: plays the scenarios the A2A TCK drives through `messageId` prefixes,
//! so that `harness serve` with `[model] provider = "conformance"` is a system under test for
//! the TCK, exercising the real task service, engine, store and protocol bindings.
//!
//! The TCK cannot tell an agent what to do except through the message it sends, so each test
//! names a scenario in the prefix of its `messageId` (`tck-complete-task-…`,
//! `tck-artifact-file-…`). The scenarios mirror the TCK's own `scenarios/*.feature` files
//! (branch `1.0-dev`). Artifacts arrive whole: the task hub has no chunked artifact updates, so
//! `tck-stream-artifact-chunked` sends its two chunks as two parts of one artifact.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::{Finish, FinishState, Model, ModelError, ModelReply, ModelRequest, Purpose};
use crate::base::protocol::types::{Artifact, Part};

/// How long the resubscription scenario keeps its task working: twice the TCK's two-second
/// streaming timeout, so a client can drop its stream and subscribe again before it ends.
pub const RESUBSCRIBE_DELAY: Duration = Duration::from_secs(4);

/// The text part the completion scenario answers with, and the TCK checks for.
pub const COMPLETE_TEXT: &str = "Hello from TCK";
/// The text of the direct message the message-response scenario replies with.
pub const MESSAGE_RESPONSE_TEXT: &str = "Direct message response";

/// The bytes of the file artifacts, `tck`, as protobuf-JSON writes `bytes`: base64.
const FILE_BYTES_BASE64: &str = "dGNr";
const FILE_NAME: &str = "output.txt";
const FILE_MEDIA_TYPE: &str = "text/plain";
const FILE_URL: &str = "https://example.com/output.txt";

/// One scenario the TCK can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `tck-complete-task`: completed with [`COMPLETE_TEXT`] and no artifact.
    CompleteTask,
    /// `tck-artifact-text`: completed with one text artifact.
    ArtifactText,
    /// `tck-artifact-file`: completed with one file artifact, its bytes inline.
    ArtifactFile,
    /// `tck-artifact-file-url`: completed with one file artifact that points to a URL.
    ArtifactFileUrl,
    /// `tck-artifact-data`: completed with one structured-data artifact.
    ArtifactData,
    /// `tck-message-response`: answered with a direct message rather than a task's result.
    MessageResponse,
    /// `tck-input-required`: the task waits for the requester's answer.
    InputRequired,
    /// `tck-reject-task`: the agent declines the task.
    Reject,
    /// A streamed task that produces one text artifact.
    StreamText(&'static str),
    /// A streamed task that completes without an artifact.
    StreamStatusOnly,
    /// `tck-stream-artifact-file`: a streamed task that produces one file artifact.
    StreamFile,
    /// `tck-stream-artifact-chunked`: a streamed task whose one artifact has two text parts.
    StreamChunked,
    /// A task that stays working for [`RESUBSCRIBE_DELAY`] before it completes.
    LongRunning,
    /// Any other message: completed, naming the id it did not recognise.
    Unhandled,
}

/// Prefixes and their scenarios. A prefix that extends another comes first, so the longest
/// match wins (`tck-artifact-file-url` before `tck-artifact-file`).
const SCENARIOS: &[(&str, Scenario)] = &[
    ("tck-stream-artifact-chunked", Scenario::StreamChunked),
    (
        "tck-stream-artifact-text",
        Scenario::StreamText("Streamed text content"),
    ),
    ("tck-stream-artifact-file", Scenario::StreamFile),
    (
        "tck-stream-ordering-001",
        Scenario::StreamText("Ordered output"),
    ),
    (
        "tck-stream-001",
        Scenario::StreamText("Stream hello from TCK"),
    ),
    ("tck-stream-002", Scenario::StreamStatusOnly),
    (
        "tck-stream-003",
        Scenario::StreamText("Stream task lifecycle"),
    ),
    ("test-resubscribe-message-id", Scenario::LongRunning),
    ("tck-artifact-file-url", Scenario::ArtifactFileUrl),
    ("tck-artifact-file", Scenario::ArtifactFile),
    ("tck-artifact-text", Scenario::ArtifactText),
    ("tck-artifact-data", Scenario::ArtifactData),
    ("tck-message-response", Scenario::MessageResponse),
    ("tck-input-required", Scenario::InputRequired),
    ("tck-complete-task", Scenario::CompleteTask),
    ("tck-reject-task", Scenario::Reject),
];

impl Scenario {
    /// The scenario a message id asks for.
    pub fn of(message_id: &str) -> Scenario {
        SCENARIOS
            .iter()
            .find(|(prefix, _)| message_id.starts_with(prefix))
            .map(|(_, scenario)| *scenario)
            .unwrap_or(Scenario::Unhandled)
    }

    /// How long the agent works before it answers.
    pub fn delay(self) -> Duration {
        match self {
            Scenario::LongRunning => RESUBSCRIBE_DELAY,
            _ => Duration::ZERO,
        }
    }

    /// The reply text (the status message) and how the task ends.
    pub fn play(self, message_id: &str) -> (String, Finish) {
        let done = |text: &str, artifacts: Vec<Artifact>| {
            let finish = Finish {
                artifacts: Some(artifacts),
                ..Finish::default()
            };
            (text.to_string(), finish)
        };
        match self {
            Scenario::CompleteTask => done(COMPLETE_TEXT, vec![]),
            Scenario::ArtifactText => done("Done.", vec![text_artifact("Generated text content")]),
            Scenario::ArtifactFile | Scenario::StreamFile => {
                let part = Part {
                    raw: Some(FILE_BYTES_BASE64.to_string()),
                    ..file_part()
                };
                done("Done.", vec![artifact(vec![part])])
            }
            Scenario::ArtifactFileUrl => {
                let part = Part {
                    url: Some(FILE_URL.to_string()),
                    ..file_part()
                };
                done("Done.", vec![artifact(vec![part])])
            }
            Scenario::ArtifactData => {
                let part = Part {
                    data: Some(json!({"key": "value", "count": 42})),
                    ..Part::default()
                };
                done("Done.", vec![artifact(vec![part])])
            }
            Scenario::StreamText(text) => done("Done.", vec![text_artifact(text)]),
            Scenario::StreamChunked => {
                let parts = vec![Part::text("chunk-1 "), Part::text("chunk-2")];
                done("Done.", vec![artifact(parts)])
            }
            Scenario::StreamStatusOnly | Scenario::LongRunning => done("Done.", vec![]),
            Scenario::MessageResponse => {
                let finish = Finish {
                    state: FinishState::DirectMessage,
                    artifacts: Some(vec![]),
                };
                (MESSAGE_RESPONSE_TEXT.to_string(), finish)
            }
            Scenario::InputRequired => {
                let finish = Finish {
                    state: FinishState::InputRequired,
                    artifacts: Some(vec![]),
                };
                ("More input is required.".to_string(), finish)
            }
            Scenario::Reject => {
                let finish = Finish {
                    state: FinishState::Rejected,
                    artifacts: Some(vec![]),
                };
                ("rejected".to_string(), finish)
            }
            Scenario::Unhandled => {
                done(&format!("Unhandled messageId prefix: {message_id}"), vec![])
            }
        }
    }
}

fn file_part() -> Part {
    Part {
        filename: FILE_NAME.to_string(),
        media_type: FILE_MEDIA_TYPE.to_string(),
        ..Part::default()
    }
}

fn text_artifact(text: &str) -> Artifact {
    artifact(vec![Part::text(text)])
}

fn artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: uuid::Uuid::new_v4().to_string(),
        parts,
        ..Artifact::default()
    }
}

/// The model behind `provider = "conformance"`. It needs no network, key or file.
#[derive(Debug, Default)]
pub struct ConformanceModel;

impl ConformanceModel {
    /// The model.
    pub fn new() -> ConformanceModel {
        ConformanceModel
    }
}

#[async_trait]
impl Model for ConformanceModel {
    fn describe(&self) -> String {
        "conformance (A2A TCK scenarios by messageId prefix)".to_string()
    }

    fn context_window(&self) -> Option<usize> {
        None
    }

    /// A turn plays the scenario its answered message's id names (the unhandled one when it
    /// answers none); a summary is a fixed text.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if request.purpose == Purpose::Summary {
            return Ok(ModelReply {
                text: format!("Summary of {} earlier messages.", request.messages.len()),
                ..ModelReply::default()
            });
        }
        let message_id = request.origin.message_id.as_deref().unwrap_or_default();
        let scenario = Scenario::of(message_id);
        let delay = scenario.delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let (text, finish) = scenario.play(message_id);
        tracing::debug!(
            task = request.origin.task_id,
            message_id,
            ?scenario,
            "conformance scenario"
        );
        Ok(ModelReply {
            text,
            finish,
            ..ModelReply::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::model::Origin;

    fn request(purpose: Purpose) -> ModelRequest {
        ModelRequest {
            instructions: "".into(),
            messages: Vec::new(),
            tools: Vec::new().into(),
            max_output_tokens: None,
            purpose,
            ..ModelRequest::default()
        }
    }

    async fn turn(message_id: &str) -> ModelReply {
        let request = ModelRequest {
            origin: Origin {
                task_id: "t".into(),
                message_id: Some(message_id.into()),
                turn: 0,
            },
            ..request(Purpose::Turn)
        };
        ConformanceModel::new().complete(&request).await.unwrap()
    }

    #[test]
    fn the_longest_matching_prefix_names_the_scenario() {
        assert_eq!(
            Scenario::of("tck-artifact-file-url-1a2b"),
            Scenario::ArtifactFileUrl
        );
        assert_eq!(
            Scenario::of("tck-artifact-file-1a2b"),
            Scenario::ArtifactFile
        );
        assert_eq!(
            Scenario::of("tck-stream-artifact-file-x"),
            Scenario::StreamFile
        );
        assert_eq!(
            Scenario::of("tck-complete-task-x-jsonrpc"),
            Scenario::CompleteTask
        );
        assert_eq!(Scenario::of("anything-else"), Scenario::Unhandled);
    }

    #[tokio::test]
    async fn completion_answers_with_the_tck_text_and_no_artifact() {
        let reply = turn("tck-complete-task-1").await;
        assert_eq!(reply.text, COMPLETE_TEXT);
        let finish = reply.finish;
        assert_eq!(finish.state, FinishState::Completed);
        assert_eq!(finish.artifacts, Some(vec![]));
    }

    #[tokio::test]
    async fn file_scenarios_carry_bytes_or_a_url_with_name_and_media_type() {
        let finish = turn("tck-artifact-file-1").await.finish;
        let part = &finish.artifacts.unwrap()[0].parts[0];
        assert_eq!(part.raw.as_deref(), Some("dGNr"));
        assert_eq!(
            (part.filename.as_str(), part.media_type.as_str()),
            ("output.txt", "text/plain")
        );
        let finish = turn("tck-artifact-file-url-1").await.finish;
        let part = &finish.artifacts.unwrap()[0].parts[0];
        assert_eq!(part.url.as_deref(), Some(FILE_URL));
        assert_eq!(part.content_count(), 1);
    }

    #[tokio::test]
    async fn the_data_scenario_carries_the_object_the_tck_expects() {
        let finish = turn("tck-artifact-data-1").await.finish;
        let artifacts = finish.artifacts.unwrap();
        assert_eq!(
            artifacts[0].parts[0].data,
            Some(json!({"key":"value","count":42}))
        );
        assert!(!artifacts[0].artifact_id.is_empty());
    }

    #[tokio::test]
    async fn message_input_and_reject_scenarios_choose_how_the_task_ends() {
        let finish = turn("tck-message-response-1").await.finish;
        assert_eq!(finish.state, FinishState::DirectMessage);
        let finish = turn("tck-input-required-1").await.finish;
        assert_eq!(finish.state, FinishState::InputRequired);
        let finish = turn("tck-reject-task-1").await.finish;
        assert_eq!(finish.state, FinishState::Rejected);
    }

    #[tokio::test]
    async fn the_long_running_scenario_waits_before_answering() {
        assert_eq!(
            Scenario::of("test-resubscribe-message-id-1").delay(),
            RESUBSCRIBE_DELAY
        );
        let cut_short = tokio::time::timeout(
            Duration::from_millis(50),
            turn("test-resubscribe-message-id-1"),
        )
        .await;
        assert!(cut_short.is_err(), "still working after 50 ms");
    }

    #[tokio::test]
    async fn summaries_are_plain_replies_without_a_finish() {
        let model = ConformanceModel::new();
        let reply = model.complete(&request(Purpose::Summary)).await.unwrap();
        assert_eq!(reply.finish, Finish::default());
        assert!(reply.text.starts_with("Summary of 0"));
        let unhandled = turn("x-1").await;
        assert!(unhandled.text.contains("x-1"));
    }
}
