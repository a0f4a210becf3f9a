//! What one message may bring to the model of the task it creates or continues: its text, and
//! the task's brief, each at most a share of that model's turn budget. Over it, the message is
//! refused whole before anything is written, naming the field, its size and the limit.

use std::collections::BTreeMap;

use super::envelope::BriefChange;
use super::service::TaskError;
use crate::base::protocol::types::Message;
use crate::state::records::extension::{Lifecycle, TaskExtension};

/// The setting the budget comes from, as a refusal names it. The runtime fills the numbers
/// from `[context]` and each model's `context_window_tokens` (`context::budget`), so this
/// module stays plain data.
const BUDGET_SETTINGS: &str =
    "context.turn_budget_tokens, or the model's context_window_tokens when smaller";
/// The fields of a brief the model reads in its `task` section, in the order a refusal
/// names the largest of equals.
const BRIEF_FIELDS: [&str; 5] = [
    "goal",
    "description",
    "acceptance_criteria",
    "name",
    "participants",
];

/// What one model can take from one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimit {
    /// The model's turn budget: the smaller of `context.turn_budget_tokens` and its window.
    pub budget_tokens: usize,
    /// What a brief, or one message's text, may take of it.
    pub max_tokens: usize,
    /// The bytes the context's estimate counts as a token.
    pub bytes_per_token: usize,
}

impl InputLimit {
    fn max_bytes(&self) -> usize {
        self.max_tokens * self.bytes_per_token
    }

    fn tokens(&self, bytes: usize) -> usize {
        bytes.div_ceil(self.bytes_per_token.max(1))
    }
}

/// The limit of each model a task may run on. Empty (no limit) only where no model is built:
/// tests of the task service alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputLimits {
    /// `[model]`'s, for every task that names no model.
    pub default: Option<InputLimit>,
    /// Each `[models.NAME]`'s.
    pub named: BTreeMap<String, InputLimit>,
}

impl InputLimits {
    /// The limit of the model a task runs on, and how a refusal names that model. A name no
    /// entry has (a model removed while its task was open) gets the smallest limit there is.
    fn of(&self, model: Option<&str>) -> Option<(InputLimit, String)> {
        match model {
            None => self.default.map(|l| (l, "the default model".to_string())),
            Some(name) => match self.named.get(name) {
                Some(limit) => Some((*limit, format!("model {name}"))),
                None => self
                    .named
                    .values()
                    .chain(&self.default)
                    .min_by_key(|l| l.max_tokens)
                    .map(|l| (*l, "the smallest model".to_string())),
            },
        }
    }

    /// The bytes the earlier exchanges of a new task's context may take
    /// (`tasks::conversation`): the share of its model's budget a brief may take, as they are
    /// sent with every turn beside it, and at most `cap`.
    pub fn conversation_bytes(&self, model: Option<&str>, cap: usize) -> usize {
        self.of(model)
            .map_or(cap, |(limit, _)| limit.max_bytes().min(cap))
    }

    /// Refuses a new task's first message whose text, or whose envelope brief, is more than
    /// the task's model may take. A task a participant works has no model: nothing is checked.
    pub fn check_new(
        &self,
        message: &Message,
        brief: &TaskExtension,
        from_envelope: bool,
    ) -> Result<(), TaskError> {
        if brief.lifecycle == Lifecycle::Participant {
            return Ok(());
        }
        let Some((limit, model)) = self.of(brief.model.as_deref()) else {
            return Ok(());
        };
        check_text(message, &limit, &model)?;
        if let Some(index) = envelope_index(message).filter(|_| from_envelope) {
            let fields = brief_fields(brief);
            check_brief(&fields, &fields, index, &limit, &model)?;
        }
        Ok(())
    }

    /// Refuses a message to an open task whose text is more than the task's model may take, or
    /// whose brief change would make the brief so (a change that shrinks a brief is let
    /// through, so an old task over the limit can still be mended).
    pub fn check_continue(
        &self,
        message: &Message,
        change: Option<&BriefChange>,
        ext: &TaskExtension,
    ) -> Result<(), TaskError> {
        if ext.lifecycle == Lifecycle::Participant {
            return Ok(());
        }
        let Some((limit, model)) = self.of(ext.model.as_deref()) else {
            return Ok(());
        };
        check_text(message, &limit, &model)?;
        if let (Some(change), Some(index)) = (change, envelope_index(message)) {
            let before = brief_fields(ext);
            let mut changed = ext.clone();
            change.apply(&mut changed);
            let after = brief_fields(&changed);
            if total(&after) > total(&before) {
                let named: Vec<(&'static str, usize)> = after
                    .iter()
                    .copied()
                    .filter(|(field, _)| change.sets(field))
                    .collect();
                check_brief(&named, &after, index, &limit, &model)?;
            }
        }
        Ok(())
    }
}

/// Each part the model reads (every part but a task envelope) and its size in bytes, as the
/// engine renders it: a text, a data part as JSON, a file as its URL.
fn model_parts(message: &Message) -> Vec<(String, usize)> {
    message
        .parts
        .iter()
        .enumerate()
        .filter(|(_, part)| {
            part.media_type != crate::state::records::extension::ENVELOPE_MEDIA_TYPE
        })
        .filter_map(|(index, part)| {
            let at = |kind: &str| format!("message.parts[{index}].{kind}");
            if let Some(text) = &part.text {
                Some((at("text"), text.len()))
            } else if let Some(data) = &part.data {
                Some((
                    at("data"),
                    serde_json::to_string(data).map_or(0, |s| s.len()),
                ))
            } else {
                part.url.as_ref().map(|url| (at("url"), url.len()))
            }
        })
        .collect()
}

fn check_text(message: &Message, limit: &InputLimit, model: &str) -> Result<(), TaskError> {
    let parts = model_parts(message);
    let bytes: usize = parts.iter().map(|(_, len)| len + 1).sum::<usize>();
    let bytes = bytes.saturating_sub(1);
    if bytes <= limit.max_bytes() {
        return Ok(());
    }
    let field = match parts.as_slice() {
        [(field, _)] => field.clone(),
        _ => "message.parts".to_string(),
    };
    Err(TaskError::InvalidParams(format!(
        "{field}: {bytes} bytes, about {} tokens, over the {} tokens one message may bring to this task's model ({model}, whose turn budget is {} tokens: {BUDGET_SETTINGS}); send less, or split it over several messages",
        limit.tokens(bytes),
        limit.max_tokens,
        limit.budget_tokens
    )))
}

/// The index of the message's task envelope part.
fn envelope_index(message: &Message) -> Option<usize> {
    message
        .parts
        .iter()
        .position(|part| part.media_type == crate::state::records::extension::ENVELOPE_MEDIA_TYPE)
}

/// The brief's fields the model reads, each with its size in bytes.
fn brief_fields(ext: &TaskExtension) -> [(&'static str, usize); 5] {
    let sizes = [
        ext.goal.len(),
        ext.description.as_deref().map_or(0, str::len),
        ext.acceptance_criteria.iter().map(|c| c.text.len()).sum(),
        ext.name.len(),
        ext.participants
            .iter()
            .map(|p| p.id.len() + p.display_name.as_deref().map_or(0, str::len))
            .sum(),
    ];
    std::array::from_fn(|i| (BRIEF_FIELDS[i], sizes[i]))
}

fn total(fields: &[(&'static str, usize)]) -> usize {
    fields.iter().map(|(_, len)| len).sum()
}

/// Refuses a brief of `all` fields over the limit, naming the largest of `named`.
fn check_brief(
    named: &[(&'static str, usize)],
    all: &[(&'static str, usize)],
    index: usize,
    limit: &InputLimit,
    model: &str,
) -> Result<(), TaskError> {
    let bytes = total(all);
    if bytes <= limit.max_bytes() {
        return Ok(());
    }
    let (field, size) = named
        .iter()
        .copied()
        .fold(None, |best: Option<(&str, usize)>, field| match best {
            Some(best) if best.1 >= field.1 => Some(best),
            _ => Some(field),
        })
        .unwrap_or(("goal", 0));
    Err(TaskError::InvalidParams(format!(
        "message.parts[{index}].data.payload.{field}: {size} bytes, and the brief about {} tokens, over the {} tokens a task's brief may take (its name, goal, description, acceptance_criteria and participants together) of this task's model ({model}, whose turn budget is {} tokens: {BUDGET_SETTINGS}); shorten it, or send the material as messages",
        limit.tokens(bytes),
        limit.max_tokens,
        limit.budget_tokens
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::base::protocol::types::Part;
    use crate::state::records::extension::ENVELOPE_MEDIA_TYPE;

    fn limits() -> InputLimits {
        let limit = |budget: usize| InputLimit {
            budget_tokens: budget,
            max_tokens: budget / 4,
            bytes_per_token: 4,
        };
        InputLimits {
            default: Some(limit(12_000)),
            named: BTreeMap::from([("small".to_string(), limit(4_000))]),
        }
    }

    fn said(parts: Vec<Part>) -> Message {
        Message {
            parts,
            ..Message::default()
        }
    }

    fn refused(result: Result<(), TaskError>) -> String {
        match result {
            Err(TaskError::InvalidParams(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_text_over_a_quarter_of_the_budget_is_refused_naming_the_part_golden() {
        let text = "x".repeat(12_001);
        let message = said(vec![Part::text(&text)]);
        let brief = TaskExtension::from_text(&text);
        assert_eq!(
            refused(limits().check_new(&message, &brief, false)),
            "message.parts[0].text: 12001 bytes, about 3001 tokens, over the 3000 tokens one message may bring to this task's model (the default model, whose turn budget is 12000 tokens: context.turn_budget_tokens, or the model's context_window_tokens when smaller); send less, or split it over several messages"
        );
        let fits = said(vec![Part::text("x".repeat(12_000))]);
        assert_eq!(
            limits().check_new(&fits, &TaskExtension::from_text("x"), false),
            Ok(())
        );
    }

    #[test]
    fn the_limit_is_the_model_the_task_runs_on() {
        let message = said(vec![Part::text("x".repeat(5_000))]);
        let mut brief = TaskExtension::from_text("x");
        assert_eq!(limits().check_new(&message, &brief, false), Ok(()));
        brief.model = Some("small".into());
        assert!(
            refused(limits().check_new(&message, &brief, false))
                .contains("over the 1000 tokens one message may bring to this task's model (model small, whose turn budget is 4000 tokens")
        );
        brief.model = Some("removed".into());
        assert!(
            refused(limits().check_new(&message, &brief, false)).contains("(the smallest model,")
        );
        brief.lifecycle = Lifecycle::Participant;
        assert_eq!(
            limits().check_new(&message, &brief, false),
            Ok(()),
            "no model reads it"
        );
        assert_eq!(
            InputLimits::default().check_new(&message, &TaskExtension::from_text("x"), false),
            Ok(())
        );
    }

    #[test]
    fn several_parts_are_counted_together_and_named_as_the_parts() {
        let message = said(vec![
            Part::text("x".repeat(8_000)),
            Part::data(json!({"rows": "y".repeat(8_000)}), "application/json"),
        ]);
        let message = refused(limits().check_new(&message, &TaskExtension::from_text("x"), false));
        assert!(
            message.starts_with("message.parts: 16012 bytes, about 4003 tokens"),
            "{message}"
        );
    }

    #[test]
    fn a_brief_over_its_share_names_its_largest_field_golden() {
        let payload =
            json!({"name": "n", "goal": "g".repeat(6_000), "description": "d".repeat(7_000)});
        let message = said(vec![
            Part::text("a short note"),
            Part::data(
                json!({"kind": "task", "payload": payload}),
                ENVELOPE_MEDIA_TYPE,
            ),
        ]);
        let brief: TaskExtension = serde_json::from_value(payload).unwrap();
        assert_eq!(
            refused(limits().check_new(&message, &brief, true)),
            "message.parts[1].data.payload.description: 7000 bytes, and the brief about 3251 tokens, over the 3000 tokens a task's brief may take (its name, goal, description, acceptance_criteria and participants together) of this task's model (the default model, whose turn budget is 12000 tokens: context.turn_budget_tokens, or the model's context_window_tokens when smaller); shorten it, or send the material as messages"
        );
    }

    #[test]
    fn a_change_that_grows_the_brief_past_its_share_is_refused_and_one_that_shrinks_it_is_not() {
        let change = |payload: serde_json::Value| {
            said(vec![Part::data(
                json!({"kind": "task", "payload": payload}),
                ENVELOPE_MEDIA_TYPE,
            )])
        };
        let mut ext = TaskExtension::from_text("g".repeat(10_000).as_str());
        let growing = change(json!({"description": "d".repeat(3_000)}));
        let read = BriefChange::read(&growing).unwrap();
        let message = refused(limits().check_continue(&growing, read.as_ref(), &ext));
        assert!(
            message.starts_with(
                "message.parts[0].data.payload.description: 3000 bytes, and the brief about 3265 tokens"
            ),
            "the changed field is named, not the goal: {message}"
        );
        ext.description = Some("d".repeat(9_000));
        let shrinking = change(json!({"description": "short"}));
        let read = BriefChange::read(&shrinking).unwrap();
        assert_eq!(
            limits().check_continue(&shrinking, read.as_ref(), &ext),
            Ok(())
        );
    }
}
