//! The journal: every step of a task's loop, recorded before the loop goes on. [`Replay`] folds
//! the entries into what the next step needs, the same way after a restart as during a run.

use serde::{Deserialize, Serialize};

use crate::base::model::{ChatMessage, ModelReply, ToolCall, Usage};
use crate::work::context::HistoryItem;
use crate::work::skills::loading;
use crate::work::tools::Effect;

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JournalEntry {
    /// A message from a participant, drained from the task's history.
    Inbound {
        /// Where the message sits in the task's history: the drain reads on from here.
        message_seq: i64,
        /// The participant who sent it, named to the model.
        from: String,
        /// False for an agent's words, which the model reads inside an untrusted block.
        trusted: bool,
        /// The message as the model reads it (its text and data parts).
        text: String,
    },
    /// News from elsewhere for the model (a sub-task's answer), untrusted; drained from the
    /// task's history at `message_seq` when it came as a report message.
    Note {
        /// Who the news is from (`agent` for a child's report), named to the model.
        source: String,
        /// The news as the model reads it, untrusted.
        text: String,
        /// The report message's place in the history; `None` for a note not drained from it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_seq: Option<i64>,
    },
    /// A participant's command (`/sub-task …`), carried out by the harness without a model
    /// turn; `outcome` says what it did.
    Command {
        /// Where the command sits in the task's history: the drain reads on from here.
        message_seq: i64,
        /// The participant who sent it.
        from: String,
        /// The command as sent.
        text: String,
        /// What the harness did, as it answered the participant.
        outcome: String,
    },
    /// The earlier exchanges of the task's context, read when it was created
    /// (`tasks::conversation`): sent as the `conversation` section with every turn.
    Conversation {
        /// The section's text, cleaned when it was written.
        text: String,
    },
    /// A turn's model call and its reply.
    ModelCall {
        /// The reply as the model gave it: replayed instead of calling the model again.
        reply: ModelReply,
    },
    /// A tool call's result and the effects applied with it.
    ToolResult {
        /// The call this answers: a reply's calls without a result are still pending.
        call_id: String,
        /// The tool called, for the history the model reads.
        name: String,
        /// The result (or the `[code] message` error) as the model reads it.
        content: String,
        /// Whether the call failed, so the model sees it as an error.
        is_error: bool,
        /// What the call changed in the task; a replay folds the skills it loaded from here.
        #[serde(default)]
        effects: Vec<Effect>,
    },
    /// The oldest history replaced by a summary: `folded_through` items from the start of the
    /// task are now represented by `summary`.
    Compaction {
        /// The model's summary of the folded history, sent in its place from now on.
        summary: String,
        /// History items from the start of the task the summary stands for.
        folded_through: usize,
        /// Items this compaction folded, for the logs and the tests.
        removed_items: usize,
        /// Characters of history the summary request carried, for the logs and the tests.
        removed_chars: usize,
        /// What the summary call cost, counted against the task's token budget.
        usage: Usage,
    },
}

/// What the journal says so far.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// Every history item since the task began; the first `folded_through` are summarised.
    items: Vec<HistoryItem>,
    /// Each item as the model receives it, cleaned once when it is recorded rather than at
    /// every turn (`HistoryItem::to_message`).
    messages: Vec<ChatMessage>,
    /// The summary of the folded history, sent before the live history.
    pub summary: Option<String>,
    /// The earlier exchanges of the task's context, when it was created in one that had some.
    pub conversation: Option<String>,
    /// History items the summary stands for: only those after it are sent.
    pub folded_through: usize,
    /// Turn calls recorded, which is also the scripted model's position.
    pub turn_calls: usize,
    /// Tool results recorded.
    pub tool_results: usize,
    /// The newest message drained, by its place in the history: the next drain reads after it,
    /// and an answer is final only if nothing the loop reads came after it.
    pub last_inbound_seq: i64,
    /// Tool calls of the last reply that have no recorded result yet.
    pending: Vec<ToolCall>,
    /// The last reply, when it made no tool call: the task's answer.
    pub final_reply: Option<String>,
    /// Participant messages and notes recorded: input the model answers.
    pub inputs: usize,
    /// Commands carried out.
    pub commands: usize,
    /// The tokens every recorded model call used (turns and summaries), as the providers
    /// reported them: what a token budget is checked against, the same after a restart.
    pub usage: Usage,
    /// The tokens the last model call used: what the next one is expected to cost at least,
    /// as a task's history only grows between compactions.
    pub last_call: Usage,
    /// The skills loaded on the task, sorted by name: the recorded tool results' effects, folded.
    skills: Vec<String>,
    /// The newest message this loop drained: its sequence number and, when a participant sent
    /// it, its id. Not journaled: it spares the turn a store read, and a loop that did not
    /// drain the message itself (after a restart) reads it from the store.
    pub newest_drained: Option<(i64, Option<String>)>,
    /// Whether the next step may skip its drain: set for a task whose first message was
    /// journaled when it was created, so its first step goes to the model without a read.
    /// Anything that landed in between is still found: no answer completes a task while a
    /// message is unread (the completing transaction asks), and every later step drains.
    pub skip_drain_once: bool,
    /// Entries applied here but not yet written: what a drain found that changes nothing else
    /// (participants' messages and children's reports on a working task). They are written in
    /// the loop's next journaling transaction, before its own entry, so the journal keeps
    /// their order and a task's turn costs one transaction less. Until then the messages are
    /// unread in the store: a loop that ends without writing them (a crash, a store error)
    /// leaves them to the next loop's drain.
    pub unjournaled: Vec<JournalEntry>,
}

impl Replay {
    /// Folds a journal, oldest entry first.
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a JournalEntry>) -> Replay {
        let mut replay = Replay::default();
        for entry in entries {
            replay.apply(entry);
        }
        replay
    }

    /// Adds one entry, as it is recorded.
    pub fn apply(&mut self, entry: &JournalEntry) {
        match entry {
            JournalEntry::Inbound {
                message_seq,
                from,
                trusted,
                text,
            } => {
                self.last_inbound_seq = self.last_inbound_seq.max(*message_seq);
                self.inputs += 1;
                self.final_reply = None;
                self.push(HistoryItem::Inbound {
                    from: from.clone(),
                    trusted: *trusted,
                    text: text.clone(),
                });
            }
            JournalEntry::Note {
                source,
                text,
                message_seq,
            } => {
                if let Some(seq) = message_seq {
                    self.last_inbound_seq = self.last_inbound_seq.max(*seq);
                }
                self.inputs += 1;
                self.final_reply = None;
                self.push(HistoryItem::Note {
                    source: source.clone(),
                    text: text.clone(),
                });
            }
            JournalEntry::Command {
                message_seq,
                from,
                text,
                outcome,
            } => {
                // The model learns of the command, but it is no question for it: a waiting
                // task keeps waiting.
                self.last_inbound_seq = self.last_inbound_seq.max(*message_seq);
                self.commands += 1;
                self.push(HistoryItem::Inbound {
                    from: from.clone(),
                    trusted: true,
                    text: format!("{text}\n({outcome})"),
                });
            }
            JournalEntry::Conversation { text } => {
                self.conversation = Some(text.clone());
            }
            JournalEntry::ModelCall { reply } => {
                self.turn_calls += 1;
                self.usage = self.usage.plus(reply.usage);
                self.last_call = reply.usage;
                self.pending = reply.tool_calls.clone();
                self.final_reply = reply.tool_calls.is_empty().then(|| reply.text.clone());
                self.push(HistoryItem::Reply {
                    text: reply.text.clone(),
                    tool_calls: reply.tool_calls.clone(),
                });
            }
            JournalEntry::ToolResult {
                call_id,
                name,
                content,
                effects,
                ..
            } => {
                for effect in effects {
                    loading::fold(&mut self.skills, effect);
                }
                self.tool_results += 1;
                self.pending.retain(|call| &call.id != call_id);
                self.push(HistoryItem::ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content: content.clone(),
                });
            }
            JournalEntry::Compaction {
                summary,
                folded_through,
                usage,
                ..
            } => {
                self.usage = self.usage.plus(*usage);
                self.summary = Some(summary.clone());
                self.folded_through = (*folded_through).min(self.items.len());
            }
        }
    }

    /// The history the model sees: what has not been folded into the summary.
    pub fn live_history(&self) -> &[HistoryItem] {
        &self.items[self.folded_through..]
    }

    /// [`Replay::live_history`] as the model receives it.
    pub fn live_messages(&self) -> &[ChatMessage] {
        &self.messages[self.folded_through..]
    }

    /// [`Replay::live_messages`] as a turn sends them: without the task's first message when
    /// its text is the task's goal. The `task` section, which is never compacted, carries the
    /// goal already; the model reads it once, there.
    pub fn turn_messages(&self, goal: &str) -> &[ChatMessage] {
        let live = self.live_messages();
        let goal = goal.trim();
        match self.items.first() {
            Some(HistoryItem::Inbound { text, .. })
                if self.folded_through == 0 && !goal.is_empty() && text.trim() == goal =>
            {
                &live[1..]
            }
            _ => live,
        }
    }

    fn push(&mut self, item: HistoryItem) {
        self.messages.push(item.to_message());
        self.items.push(item);
    }

    /// The newest message from a participant `matches` accepts, for a task a participant works.
    pub fn last_inbound_from(&self, matches: impl Fn(&str) -> bool) -> Option<&str> {
        self.items.iter().rev().find_map(|item| match item {
            HistoryItem::Inbound { from, text, .. } if matches(from) => Some(text.as_str()),
            _ => None,
        })
    }

    /// Model calls and tool calls recorded: what a step that did real work changes.
    pub fn calls_made(&self) -> usize {
        self.turn_calls + self.tool_results
    }

    /// True when all that was ever recorded is commands: the task was made to carry one out,
    /// and its model has nothing to answer until news arrives.
    pub fn only_commands(&self) -> bool {
        self.commands > 0 && self.inputs == 0 && self.turn_calls == 0
    }

    /// The skills loaded on the task, sorted by name.
    pub fn skills(&self) -> &[String] {
        &self.skills
    }

    /// The next tool call that has no result yet.
    pub fn next_pending_call(&self) -> Option<&ToolCall> {
        self.pending.first()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn replay_tracks_pending_calls_turns_and_the_final_reply() {
        let entries = vec![
            JournalEntry::Inbound {
                message_seq: 1,
                from: "user".into(),
                trusted: true,
                text: "hi".into(),
            },
            JournalEntry::ModelCall {
                reply: ModelReply {
                    text: String::new(),
                    tool_calls: vec![call("a"), call("b")],
                    usage: Usage::default(),
                    ..ModelReply::default()
                },
            },
            JournalEntry::ToolResult {
                call_id: "a".into(),
                name: "t".into(),
                content: "ok".into(),
                is_error: false,
                effects: vec![],
            },
        ];
        let mut replay = Replay::from_entries(&entries);
        assert_eq!(replay.turn_calls, 1);
        assert_eq!(replay.next_pending_call().map(|c| c.id.as_str()), Some("b"));
        assert!(replay.final_reply.is_none());
        replay.apply(&JournalEntry::ModelCall {
            reply: ModelReply {
                text: "done".into(),
                ..ModelReply::default()
            },
        });
        assert_eq!(replay.final_reply.as_deref(), Some("done"));
        assert_eq!(replay.last_inbound_seq, 1);
    }

    #[test]
    fn the_first_message_is_left_out_of_a_turn_when_it_is_the_goal_and_only_then() {
        let inbound = |seq: i64, text: &str| JournalEntry::Inbound {
            message_seq: seq,
            from: "user".into(),
            trusted: true,
            text: text.into(),
        };
        let said = |replay: &Replay, goal: &str| -> Vec<ChatMessage> {
            replay.turn_messages(goal).to_vec()
        };
        let replay = Replay::from_entries(&[inbound(1, " Add 2 and 2\n"), inbound(2, "and 3")]);
        assert_eq!(
            said(&replay, "Add 2 and 2"),
            vec![ChatMessage::User {
                content: "and 3".into()
            }],
            "the goal is in the task section already"
        );
        assert_eq!(said(&replay, "Something else").len(), 2);
        assert_eq!(said(&replay, "").len(), 2);
        let mut folded = replay.clone();
        folded.apply(&JournalEntry::Compaction {
            summary: "s".into(),
            folded_through: 1,
            removed_items: 1,
            removed_chars: 11,
            usage: Usage::default(),
        });
        assert_eq!(
            said(&folded, "and 3").len(),
            1,
            "only the task's first message, never a later one"
        );
    }

    #[test]
    fn usage_sums_every_turn_and_every_summary() {
        let used = |input_tokens, output_tokens| Usage {
            input_tokens,
            output_tokens,
        };
        let entries = vec![
            JournalEntry::ModelCall {
                reply: ModelReply {
                    tool_calls: vec![call("a")],
                    usage: used(1_000, 50),
                    ..ModelReply::default()
                },
            },
            JournalEntry::Compaction {
                summary: "s".into(),
                folded_through: 1,
                removed_items: 1,
                removed_chars: 10,
                usage: used(400, 100),
            },
            JournalEntry::ModelCall {
                reply: ModelReply {
                    text: "done".into(),
                    usage: used(700, 20),
                    ..ModelReply::default()
                },
            },
        ];
        let replay = Replay::from_entries(&entries);
        assert_eq!(replay.usage, used(2_100, 170));
        assert_eq!(replay.usage.total(), 2_270);
    }

    #[test]
    fn loaded_skills_are_folded_from_recorded_results_so_a_restart_keeps_them() {
        let result = |id: &str, effects: Vec<Effect>| JournalEntry::ToolResult {
            call_id: id.into(),
            name: "load_skill".into(),
            content: "ok".into(),
            is_error: false,
            effects,
        };
        let load = |name: &str| Effect::LoadSkill { name: name.into() };
        let entries = [
            result("a", vec![load("style")]),
            result("b", vec![load("bookkeeping"), load("style")]),
            result(
                "c",
                vec![Effect::UnloadSkill {
                    name: "style".into(),
                }],
            ),
        ];
        // Stored as JSON and read back, as a restart reads the journal: the name, never a body.
        let stored: Vec<String> = entries
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        assert!(
            stored[0].contains(r#""effects":[{"effect":"load_skill","name":"style"}]"#),
            "{}",
            stored[0]
        );
        let read: Vec<JournalEntry> = stored
            .iter()
            .map(|s| serde_json::from_str(s).unwrap())
            .collect();
        assert_eq!(Replay::from_entries(&read).skills(), ["bookkeeping"]);
        assert_eq!(
            Replay::from_entries(&read[..2]).skills(),
            ["bookkeeping", "style"]
        );
    }

    #[test]
    fn compaction_hides_the_folded_items() {
        let mut replay = Replay::default();
        for seq in 1..=4 {
            replay.apply(&JournalEntry::Inbound {
                message_seq: seq,
                from: "u".into(),
                trusted: true,
                text: seq.to_string(),
            });
        }
        replay.apply(&JournalEntry::Compaction {
            summary: "s".into(),
            folded_through: 2,
            removed_items: 2,
            removed_chars: 2,
            usage: Usage::default(),
        });
        assert_eq!(replay.live_history().len(), 2);
        assert_eq!(replay.summary.as_deref(), Some("s"));
    }
}
