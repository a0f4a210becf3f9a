//! Checks on method params that serde cannot express (a non-empty id, one content per part, a
//! page size in range), made before the task service sees a request, and history trimming.

use crate::base::protocol::jsonrpc::RpcError;
use crate::base::protocol::types::{Message, Role, Task};

/// The smallest `pageSize` a `ListTasks` may ask for.
pub const MIN_PAGE_SIZE: i32 = 1;
/// The largest `pageSize` a `ListTasks` may ask for; bounds the work and the size of one answer.
pub const MAX_PAGE_SIZE: i32 = 100;

/// A message a client sends: it needs an id, must come from the user, and every part must carry
/// exactly one kind of content.
pub fn sent_message(message: &Message) -> Result<(), RpcError> {
    if message.message_id.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "message.messageId",
            "must not be empty",
        ));
    }
    if message.role != Role::User {
        return Err(RpcError::invalid_params(
            "message.role",
            "must be ROLE_USER",
        ));
    }
    if message.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts",
            "at least one part is required",
        ));
    }
    for (index, part) in message.parts.iter().enumerate() {
        let count = part.content_count();
        if count != 1 {
            return Err(RpcError::invalid_params(
                &format!("message.parts[{index}]"),
                format!(
                    "a part must set exactly one of text, raw, url and data; this one sets {count}"
                ),
            ));
        }
    }
    Ok(())
}

/// A task id the client must name.
pub fn task_id(field: &str, id: &str) -> Result<(), RpcError> {
    if id.trim().is_empty() {
        return Err(RpcError::invalid_params(field, "must not be empty"));
    }
    Ok(())
}

/// `historyLength`, when given, is a count and cannot be negative (§3.2.4).
pub fn history_length(field: &str, value: Option<i32>) -> Result<(), RpcError> {
    match value {
        Some(n) if n < 0 => Err(RpcError::invalid_params(
            field,
            format!("must be zero or more, got {n}"),
        )),
        _ => Ok(()),
    }
}

/// `pageSize`, when given, is within [`MIN_PAGE_SIZE`]..=[`MAX_PAGE_SIZE`].
pub fn page_size(value: Option<i32>) -> Result<(), RpcError> {
    match value {
        Some(n) if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&n) => Err(RpcError::invalid_params(
            "pageSize",
            format!("must be between {MIN_PAGE_SIZE} and {MAX_PAGE_SIZE} inclusive, got {n}"),
        )),
        _ => Ok(()),
    }
}

/// Keeps the `history_length` most recent messages of a task (all when `None`, and the field is
/// left out at 0, as §3.2.4 asks).
pub fn trim_history(task: &mut Task, history_length: Option<i32>) {
    let Some(limit) = history_length else {
        return;
    };
    let limit = usize::try_from(limit).unwrap_or(0);
    if limit == 0 {
        task.history = None;
        return;
    }
    if let Some(history) = task.history.as_mut()
        && history.len() > limit
    {
        history.drain(..history.len() - limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::Part;

    fn message(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m1".into(),
            role: Role::User,
            parts,
            ..Message::default()
        }
    }

    #[test]
    fn a_part_with_two_contents_is_refused_by_its_index() {
        let mut double = Part::text("a");
        double.url = Some("https://x".into());
        let err = sent_message(&message(vec![Part::text("ok"), double])).unwrap_err();
        assert!(err.message.contains("message.parts[1]"), "{}", err.message);
    }

    #[test]
    fn messages_need_an_id_the_user_role_and_a_part() {
        let mut m = message(vec![Part::text("hi")]);
        assert!(sent_message(&m).is_ok());
        m.role = Role::Agent;
        assert!(
            sent_message(&m)
                .unwrap_err()
                .message
                .contains("message.role")
        );
        let mut m = message(vec![]);
        assert!(
            sent_message(&m)
                .unwrap_err()
                .message
                .contains("message.parts")
        );
        m.message_id.clear();
        assert!(
            sent_message(&m)
                .unwrap_err()
                .message
                .contains("message.messageId")
        );
    }

    #[test]
    fn page_size_must_be_one_to_a_hundred() {
        assert!(page_size(None).is_ok());
        assert!(page_size(Some(1)).is_ok());
        assert!(page_size(Some(100)).is_ok());
        assert!(page_size(Some(0)).is_err());
        assert!(page_size(Some(101)).is_err());
    }

    #[test]
    fn history_is_trimmed_to_the_most_recent_messages() {
        let mut task = Task {
            history: Some(
                (0..5)
                    .map(|i| message(vec![Part::text(i.to_string())]))
                    .collect(),
            ),
            ..Task::default()
        };
        trim_history(&mut task, Some(2));
        let texts: Vec<String> = task
            .history
            .as_ref()
            .unwrap()
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts, ["3", "4"]);
        trim_history(&mut task, Some(0));
        assert!(task.history.is_none());
    }
}
