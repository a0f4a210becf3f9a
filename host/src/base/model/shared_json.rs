//! The parts of a model request that every turn shares, written as JSON once: the instructions
//! (the whole static prefix) and the tool definitions. Each turn's request holds the same `Arc`s
//! (see [`ModelRequest`]), so the text written for the last request is reused while the next
//! one holds them too, instead of escaping kilobytes of prefix and serialising every tool schema
//! again on every call.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::value::RawValue;

use super::{ModelRequest, ToolSpec};

/// The shared parts as written for one pair of instructions and tools.
pub(crate) struct Written {
    /// Held so that the pointers compared in [`SharedJson::written`] cannot be reused by other
    /// text while this is kept.
    instructions: Arc<str>,
    tools: Arc<[ToolSpec]>,
    /// The instructions as a JSON string.
    pub instructions_json: Box<RawValue>,
    /// The tools in the provider's shape, as a JSON list; `None` when there are none.
    pub tools_json: Option<Box<RawValue>>,
}

/// The last [`Written`], for the next request that shares its parts.
#[derive(Default)]
pub(crate) struct SharedJson {
    last: Mutex<Option<Arc<Written>>>,
}

impl SharedJson {
    /// The request's instructions and tools as JSON: the kept text when the request shares
    /// them with the last one written (the same `Arc`s), else written now with `tools` (the
    /// provider's shape of the list, called only for a list that is not empty) and kept. A
    /// request without tools (a compaction's summary request) is written without displacing
    /// what the turns share.
    pub(crate) fn written(
        &self,
        request: &ModelRequest,
        tools: impl FnOnce(&[ToolSpec]) -> serde_json::Result<Box<RawValue>>,
    ) -> serde_json::Result<Arc<Written>> {
        if let Some(last) = lock(&self.last).as_ref()
            && Arc::ptr_eq(&last.instructions, &request.instructions)
            && Arc::ptr_eq(&last.tools, &request.tools)
        {
            return Ok(last.clone());
        }
        let tools_json = if request.tools.is_empty() {
            None
        } else {
            Some(tools(&request.tools)?)
        };
        let written = Arc::new(Written {
            instructions: request.instructions.clone(),
            tools: request.tools.clone(),
            instructions_json: serde_json::value::to_raw_value(&*request.instructions)?,
            tools_json,
        });
        let mut last = lock(&self.last);
        // The turns' parts come with tools; a request without them (a summary) is one-off.
        if last.is_none() || !request.tools.is_empty() {
            *last = Some(written.clone());
        }
        Ok(written)
    }
}

fn lock(slot: &Mutex<Option<Arc<Written>>>) -> MutexGuard<'_, Option<Arc<Written>>> {
    // One assignment under the lock: a panic cannot leave it half made.
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(instructions: &Arc<str>, tools: &Arc<[ToolSpec]>) -> ModelRequest {
        ModelRequest {
            instructions: instructions.clone(),
            messages: Vec::new(),
            tools: tools.clone(),
            max_output_tokens: None,
            purpose: Default::default(),
            ..ModelRequest::default()
        }
    }

    fn tools(name: &str) -> Arc<[ToolSpec]> {
        vec![ToolSpec {
            name: name.into(),
            description: "d \"quoted\"".into(),
            parameters: json!({"type": "object"}),
        }]
        .into()
    }

    #[test]
    fn shared_parts_are_written_once_and_other_parts_anew() {
        let shared = SharedJson::default();
        let (text, listed): (Arc<str>, _) = ("Be \"brief\".\n".into(), tools("a"));
        let name = |tools: &[ToolSpec]| {
            let listed: Vec<_> = tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description}))
                .collect();
            serde_json::value::to_raw_value(&listed)
        };
        let first = shared.written(&request(&text, &listed), name).unwrap();
        assert_eq!(first.instructions_json.get(), r#""Be \"brief\".\n""#);
        assert_eq!(
            first.tools_json.as_ref().unwrap().get(),
            r#"[{"description":"d \"quoted\"","name":"a"}]"#
        );
        let again = shared.written(&request(&text, &listed), name).unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "the same parts are not written again"
        );
        // Equal text in another allocation is written anew: only shared parts are reused.
        let copy: Arc<str> = Arc::from(&*text);
        let other = shared.written(&request(&copy, &listed), name).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.instructions_json.get(), first.instructions_json.get());
    }

    #[test]
    fn a_request_without_tools_does_not_displace_the_turns_parts() {
        let shared = SharedJson::default();
        let (text, listed): (Arc<str>, _) = ("prefix".into(), tools("a"));
        let name = |tools: &[ToolSpec]| {
            let listed: Vec<_> = tools.iter().map(|t| json!({"name": t.name})).collect();
            serde_json::value::to_raw_value(&listed)
        };
        let turn = shared.written(&request(&text, &listed), name).unwrap();
        let summary_text: Arc<str> = "summarise".into();
        let summary = shared
            .written(&request(&summary_text, &Vec::new().into()), name)
            .unwrap();
        assert!(summary.tools_json.is_none());
        assert_eq!(summary.instructions_json.get(), r#""summarise""#);
        let next = shared.written(&request(&text, &listed), name).unwrap();
        assert!(Arc::ptr_eq(&turn, &next));
    }
}
