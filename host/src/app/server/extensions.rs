//! The extensions one request activated, and what that changes in its answer: the task
//! extension's data reaches only clients that asked for it, and the answer names what was
//! activated. Every binding asks [`Activated`]; none decides on its own.
//!
//! A2A extensions are opt-in (§4.6): a client that did not name one in `A2A-Extensions` reads
//! plain A2A. The task extension's data under `Task.metadata` has its own key names
//! (snake_case, fixed by the extension), which a client that never asked for them must not be
//! made to read. What the harness does is the same either way: the extension is stored with
//! every task, inbound envelopes are read whether or not the header came, and only what goes out
//! is shaped here.

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

use crate::app::server::headers::{self};
use crate::base::protocol::headers::{A2A_EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER};
use crate::base::protocol::jsonrpc::RpcError;
use crate::base::protocol::types::{SendMessageResponse, StreamResponse, Struct, Task};
use crate::state::records::extension::{EXTENSION_URI, METADATA_KEY};

/// The extensions a request activated, all of them ones this server implements, and the header
/// name its answer echoes them under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activated {
    uris: Vec<String>,
    echo_header: &'static str,
}

impl Activated {
    /// What a request's headers activate. A 0.3 method (`legacy`) may name them under 0.3's
    /// `X-A2A-Extensions` too, and is answered under that name. A URI this server does not
    /// implement is ignored (see [`headers::activated_extensions`]).
    pub fn from_headers(
        request_headers: &axum::http::HeaderMap,
        legacy: bool,
        supported: &[String],
    ) -> Result<Activated, RpcError> {
        let uris = headers::activated_extensions(request_headers, legacy, supported)?;
        let echo_header = if legacy {
            LEGACY_EXTENSIONS_HEADER
        } else {
            A2A_EXTENSIONS_HEADER
        };
        Ok(Activated { uris, echo_header })
    }

    /// A request that activated nothing.
    pub fn none() -> Activated {
        Activated {
            uris: Vec::new(),
            echo_header: A2A_EXTENSIONS_HEADER,
        }
    }

    /// The URIs activated, in the order the request named them.
    pub fn uris(&self) -> &[String] {
        &self.uris
    }

    /// Whether the task extension is in force: its data goes out with every task.
    pub fn task_extension(&self) -> bool {
        self.uris.iter().any(|uri| uri == EXTENSION_URI)
    }

    /// A task as this client may read it: without the extension's entry in its metadata unless
    /// the extension was activated. Other metadata keys stay; metadata left empty is omitted.
    pub fn shape_task(&self, task: &mut Task) {
        if !self.task_extension() {
            strip(&mut task.metadata);
        }
    }

    /// Every task in a listing, shaped as [`Activated::shape_task`].
    pub fn shape_tasks(&self, tasks: &mut [Task]) {
        tasks.iter_mut().for_each(|task| self.shape_task(task));
    }

    /// A `SendMessage` answer: the task shaped; a direct message is not a task and stays.
    pub fn shape_send(&self, response: &mut SendMessageResponse) {
        if let SendMessageResponse::Task(task) = response {
            self.shape_task(task);
        }
    }

    /// One stream event: a task shaped, and any update that carries metadata likewise, so no
    /// event hands out what the answers do not.
    pub fn shape_event(&self, event: &mut StreamResponse) {
        if self.task_extension() {
            return;
        }
        match event {
            StreamResponse::Task(task) => strip(&mut task.metadata),
            StreamResponse::StatusUpdate(update) => strip(&mut update.metadata),
            StreamResponse::ArtifactUpdate(update) => strip(&mut update.metadata),
            StreamResponse::Message(_) => {}
        }
    }

    /// The answer with its extensions header naming what was activated (nothing added when
    /// nothing was).
    pub fn echo(&self, mut response: Response) -> Response {
        if self.uris.is_empty() {
            return response;
        }
        // The URIs were matched against the card's, which are header-safe; one that somehow is
        // not is left out rather than failing the answer.
        if let Ok(value) = HeaderValue::from_str(&self.uris.join(", ")) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(self.echo_header), value);
        }
        response
    }
}

/// Removes the extension's entry; metadata that held nothing else is omitted.
fn strip(metadata: &mut Option<Struct>) {
    if let Some(map) = metadata {
        map.remove(METADATA_KEY);
        if map.is_empty() {
            *metadata = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;
    use axum::response::IntoResponse;
    use serde_json::json;

    use crate::base::protocol::types::{Message, TaskStatusUpdateEvent};

    fn supported() -> Vec<String> {
        vec![EXTENSION_URI.to_string()]
    }

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    fn task_with(metadata: serde_json::Value) -> Task {
        Task {
            id: "t".into(),
            metadata: metadata.as_object().cloned(),
            ..Task::default()
        }
    }

    #[test]
    fn without_the_header_a_task_loses_only_the_extension_entry() {
        let activated = Activated::from_headers(&HeaderMap::new(), false, &supported()).unwrap();
        let mut task = task_with(json!({METADATA_KEY: {"name": "n"}, "client": 1}));
        activated.shape_task(&mut task);
        assert_eq!(task.metadata, json!({"client": 1}).as_object().cloned());
        let mut only_extension = task_with(json!({METADATA_KEY: {"name": "n"}}));
        activated.shape_task(&mut only_extension);
        assert_eq!(only_extension.metadata, None);
    }

    #[test]
    fn with_the_header_a_task_keeps_the_extension_entry() {
        let request = headers(A2A_EXTENSIONS_HEADER, EXTENSION_URI);
        let activated = Activated::from_headers(&request, false, &supported()).unwrap();
        assert!(activated.task_extension());
        let mut task = task_with(json!({METADATA_KEY: {"name": "n"}}));
        activated.shape_task(&mut task);
        assert_eq!(task.metadata.unwrap()[METADATA_KEY]["name"], "n");
    }

    #[test]
    fn every_event_that_carries_metadata_is_shaped_and_messages_are_left_alone() {
        let activated = Activated::none();
        let entry = json!({METADATA_KEY: {"name": "n"}}).as_object().cloned();
        let mut update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: Default::default(),
            metadata: entry.clone(),
        });
        activated.shape_event(&mut update);
        let StreamResponse::StatusUpdate(update) = update else {
            unreachable!()
        };
        assert_eq!(update.metadata, None);
        let mut message = Message::agent_text("t", "c", "hi");
        message.metadata = entry.clone();
        let mut event = StreamResponse::Message(message);
        activated.shape_event(&mut event);
        let StreamResponse::Message(message) = event else {
            unreachable!()
        };
        assert_eq!(message.metadata, entry);
        let mut answer = SendMessageResponse::Task(task_with(json!({METADATA_KEY: {}})));
        activated.shape_send(&mut answer);
        assert_eq!(answer, SendMessageResponse::Task(task_with(json!(null))));
    }

    #[test]
    fn the_answer_echoes_what_was_activated_under_the_name_it_came_by() {
        let request = headers(A2A_EXTENSIONS_HEADER, EXTENSION_URI);
        let activated = Activated::from_headers(&request, false, &supported()).unwrap();
        let response = activated.echo(().into_response());
        assert_eq!(response.headers()[A2A_EXTENSIONS_HEADER], EXTENSION_URI);
        let request = headers(LEGACY_EXTENSIONS_HEADER, EXTENSION_URI);
        let legacy = Activated::from_headers(&request, true, &supported()).unwrap();
        assert_eq!(legacy.uris(), [EXTENSION_URI]);
        let response = legacy.echo(().into_response());
        assert_eq!(response.headers()[LEGACY_EXTENSIONS_HEADER], EXTENSION_URI);
        assert!(!response.headers().contains_key(A2A_EXTENSIONS_HEADER));
        let response = Activated::none().echo(().into_response());
        assert!(!response.headers().contains_key(A2A_EXTENSIONS_HEADER));
    }
}
