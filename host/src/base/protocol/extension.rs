//! The harness's A2A extension as the wire sees it: its URI (on the card and in
//! `A2A-Extensions`), the metadata key that carries it, the envelope's media type, and the roles
//! and participant kinds it names. The extension's full shape, as stored, is
//! `crate::state::records::extension`.

use serde::{Deserialize, Serialize};

/// The key under `Task.metadata` that holds the extension.
pub const METADATA_KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
/// The extension's URI, as advertised on the card and named in `A2A-Extensions`.
pub const EXTENSION_URI: &str = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1";
/// The media type of the inbound envelope data part.
pub const ENVELOPE_MEDIA_TYPE: &str = "application/vnd.tiny-harness.event+json";
/// The metadata key that marks a message as a stand-in's report of a child. The parent's loop
/// reads such a message as an untrusted note from source `agent`, never as a participant's words.
pub const CHILD_REPORT_KEY: &str = "io.github.madarauchiha-314.tiny-harness/subTask";

/// Who may do what on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Works the task; on a `participant` lifecycle task, their reply is the answer.
    Assignee,
    /// Asked for the task; shown to the model, with no rights beyond a participant's.
    Reporter,
    /// Follows the task; shown to the model, with no rights beyond a participant's.
    Watcher,
    /// May change the participants and their roles; the creator joins as one, and the last cannot be demoted.
    Admin,
}

impl Role {
    /// The lower-case name used on the wire and in the context.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Assignee => "assignee",
            Role::Reporter => "reporter",
            Role::Watcher => "watcher",
            Role::Admin => "admin",
        }
    }
}

/// Whether a participant is a person or another agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParticipantKind {
    /// A person.
    Human,
    /// Another agent; its messages reach the model fenced as untrusted.
    Agent,
}

impl ParticipantKind {
    /// The lower-case name used on the wire and in the context.
    pub fn as_str(self) -> &'static str {
        match self {
            ParticipantKind::Human => "human",
            ParticipantKind::Agent => "agent",
        }
    }
}
