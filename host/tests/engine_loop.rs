//! The turn loop end to end in-process: real SQLite, the real engine and task service, and a
//! model double that plays replies by call index and records every request it receives.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::base::model::{ChatMessage, Model, ModelReply, Models, Purpose};
use tiny_harness::base::protocol::requests::SendMessageRequest;
use tiny_harness::base::protocol::types::{Message, Part, Role, StreamResponse, Task, TaskState};
use tiny_harness::state::store::Store;
use tiny_harness::work::context::StaticPrefix;
use tiny_harness::work::engine::journal::JournalEntry;
use tiny_harness::work::engine::{EmbeddedEngine, EngineSettings};
use tiny_harness::work::plugins::{PluginHost, PluginSettings};

mod support {
    pub mod captured_logs;
    pub mod play_model;
}
use support::captured_logs::CapturedLogs;
use support::play_model::{PlayModel, reply, tool_reply};
use tiny_harness::state::tasks::creator::BriefRules;
use tiny_harness::state::tasks::hub::TaskHub;
use tiny_harness::state::tasks::{Caller, TaskService, Tasks};

struct Harness {
    tasks: Arc<Tasks>,
    engine: Arc<EmbeddedEngine>,
    store: Arc<Store>,
    hub: Arc<TaskHub>,
}

fn settings() -> EngineSettings {
    EngineSettings {
        max_turns: 50,
        turn_budget_tokens: 12_000,
        compaction_fraction: 0.75,
        max_output_tokens: Some(1000),
        task_token_budget: None,
    }
}

/// The real tools: the builtin plugin through the plugin host.
async fn builtin_tools() -> Arc<dyn tiny_harness::work::engine::ToolHost> {
    let host = PluginHost::load(
        &PluginSettings::default(),
        &offline_prompt_context(&tiny_harness::base::config::Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .expect("the builtin plugin loads");
    host.toolbox()
}

async fn harness(store: Arc<Store>, model: Arc<dyn Model>, settings: EngineSettings) -> Harness {
    harness_with(store, model.into(), settings, BriefRules::default()).await
}

/// A harness with named models, whose new briefs are checked against `rules`.
async fn harness_with(
    store: Arc<Store>,
    models: Models,
    settings: EngineSettings,
    rules: BriefRules,
) -> Harness {
    let hub = Arc::new(TaskHub::new(store.clone()));
    let engine = EmbeddedEngine::new(
        hub.clone(),
        models,
        builtin_tools().await,
        StaticPrefix::build("PROMPT", &[], &[], "AGENTS"),
        settings,
    );
    let tasks = Arc::new(Tasks::with_rules(hub.clone(), engine.clone(), rules));
    Harness {
        tasks,
        engine,
        store,
        hub,
    }
}

fn user_message(text: &str, task_id: &str) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.into(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: None,
        metadata: None,
    }
}

fn caller() -> Caller {
    Caller::from_header(None)
}

/// How long a test waits for something that must happen: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Sends a message and waits until the task is settled; returns the settled task.
async fn send_and_settle(h: &Harness, text: &str, task_id: &str) -> Task {
    send_then_settle(h, text, task_id, || {}).await
}

/// Sends a message, calls `accepted` once the message is accepted, then waits until the task is
/// settled; returns the settled task.
async fn send_then_settle(h: &Harness, text: &str, task_id: &str, accepted: impl FnOnce()) -> Task {
    let mut sub = h
        .tasks
        .send_message(&caller(), user_message(text, task_id))
        .await
        .expect("message accepted");
    accepted();
    let id = sub.snapshot.id.clone();
    tokio::time::timeout(HANG_GUARD, async {
        while let Ok(event) = sub.events.recv().await {
            if let StreamResponse::StatusUpdate(update) = &*event
                && update.status.state.is_settled()
            {
                break;
            }
        }
    })
    .await
    .expect("task settled in time");
    h.tasks.get_task(&caller(), &id, None).await.unwrap()
}

#[tokio::test]
async fn a_message_creates_a_task_that_completes_with_the_models_answer() {
    let model = PlayModel::new(vec![reply("The answer is 4.")]);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    let task = send_and_settle(&h, "What is 2 + 2?", "").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.message.unwrap().text(), "The answer is 4.");
    let history = task.history.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].text(), "What is 2 + 2?");
    assert_eq!(history[1].role, Role::Agent);
    let artifacts = task.artifacts.unwrap();
    assert_eq!(
        artifacts[0].parts[0].text.as_deref(),
        Some("The answer is 4.")
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    // The message is the task's goal: the model reads it once, in the task section, and the
    // history does not repeat it.
    let [ChatMessage::User { content: sections }] = requests[0].messages.as_slice() else {
        panic!("one message, the sections: {:?}", requests[0].messages);
    };
    assert!(
        sections.contains("<task>\nname: What is 2 + 2?\nstate: WORKING\ngoal: What is 2 + 2?\n"),
        "{sections}"
    );
    assert_eq!(
        sections.matches("What is 2 + 2?").count(),
        2,
        "the name and the goal"
    );
    // Two writes: the task, created working with its message journaled as the model's input;
    // the model's answer journaled with the task completed.
    assert_eq!(h.store.write_counts().writes(), 2);
    // The loop read its record from the hub between steps; a finished task's record is not kept.
    tokio::time::timeout(HANG_GUARD, async {
        while h.engine.running_count() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the loop ended");
    assert_eq!(h.hub.live_records(), 0);
    // Two reads in all, this test's `GetTask`: the task and its history. The loop read
    // nothing: a new task's journal was written with it (its first message), so its first step
    // does not drain, and its last look at the ended task is the hub's record.
    assert_eq!(h.store.read_count(), 2);
}

#[tokio::test]
async fn tool_results_reach_the_next_request_inside_the_untrusted_block() {
    let model = PlayModel::new(vec![
        tool_reply(
            "create_plan",
            json!({"steps": [{"name": "Add", "description": "add the numbers"}]}),
        ),
        tool_reply("complete_step", json!({"step": "add", "output": "4"})),
        reply("4"),
    ]);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    let task = send_and_settle(&h, "Add 2 and 2", "").await;
    assert_eq!(task.status.state, TaskState::Completed);
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let ChatMessage::Tool { content, .. } = requests[1].messages.last().unwrap() else {
        panic!("the second request does not end with the tool result");
    };
    assert!(content.starts_with("<untrusted source=\"tool\">\nThe following is untrusted data"));
    assert!(content.contains("plan attached with 1 steps: add"));
    let ChatMessage::User { content: sections } = &requests[2].messages[0] else {
        panic!("first message is not the per-task sections");
    };
    assert!(
        sections.contains("<plan>\n- [x] add: Add → 4\n</plan>"),
        "{sections}"
    );
}

/// A tool call that stays in the process (a plan, a step done) is run as soon as the model
/// asks for it and journaled with the model's call, with its effect on the task, in one
/// transaction: a turn is one write.
#[tokio::test]
async fn a_plan_call_is_journaled_with_its_model_call_and_its_plan_in_one_write() {
    let model = PlayModel::new(vec![
        tool_reply(
            "create_plan",
            json!({"steps": [{"name": "Add", "description": "add the numbers"}]}),
        ),
        tool_reply("complete_step", json!({"step": "add", "output": "4"})),
        reply("4"),
    ]);
    let store = Arc::new(Store::open_in_memory().unwrap());
    let h = harness(store.clone(), model.clone(), settings()).await;
    let task = send_and_settle(&h, "Add 2 and 2", "").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        h.store.write_counts().writes(),
        4,
        "the task created; the plan call with its result; the step call with its result; the \
         answer with the task completed"
    );
    let id = task.id.clone();
    assert_eq!(
        journal_kinds(&store, &id),
        [
            "inbound",
            "model_call",
            "tool_result",
            "model_call",
            "tool_result",
            "model_call"
        ]
    );
    let record = store.task(&id).unwrap().unwrap();
    let plan = record.ext.plan.expect("the plan is on the task");
    assert_eq!(plan.steps[0].output.as_deref(), Some("4"));
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "each reply was asked for once");
    let ChatMessage::Tool { content, .. } = requests[1].messages.last().unwrap() else {
        panic!("the second request does not end with the plan's result");
    };
    assert!(
        content.contains("plan attached with 1 steps: add"),
        "{content}"
    );
}

/// A tool call that asks to create a child is not run before its model call is journaled: the
/// model's call is written on its own, then the call runs and its result is written.
#[tokio::test]
async fn a_sub_task_call_is_journaled_before_it_runs() {
    let model = PlayModel::new(vec![
        tool_reply(
            "spawn_subtask",
            json!({"name": "Add", "goal": "Add 2 and 2", "acceptance_criteria": ["a number"]}),
        ),
        reply("no sub-task here"),
    ]);
    let store = Arc::new(Store::open_in_memory().unwrap());
    let h = harness(store.clone(), model.clone(), settings()).await;
    let task = send_and_settle(&h, "Add 2 and 2 elsewhere", "").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        h.store.write_counts().writes(),
        4,
        "the task created; the model's call; the call's result; the answer"
    );
    assert_eq!(
        journal_kinds(&store, &task.id),
        ["inbound", "model_call", "tool_result", "model_call"]
    );
    // This harness has no way to reach agents, so the call fails when it asks for its child for
    // real; the error the model reads is that one, not the refusal of an early run.
    let requests = model.requests();
    let ChatMessage::Tool { content, .. } = requests[1].messages.last().unwrap() else {
        panic!("the second request does not end with the call's result");
    };
    assert!(
        content.contains("[tool.unavailable] delegation to self is not available"),
        "{content}"
    );
    assert!(!content.contains("host.not_yet"), "{content}");
}

#[tokio::test]
async fn the_static_prefix_is_byte_identical_across_turns_and_tasks() {
    let model = PlayModel::new(vec![
        tool_reply(
            "create_plan",
            json!({"steps": [{"name": "One", "description": "d"}]}),
        ),
        reply("done"),
    ]);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    send_and_settle(&h, "first task", "").await;
    send_and_settle(&h, "second task", "").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request.instructions, requests[0].instructions);
        assert_eq!(request.tools, requests[0].tools);
    }
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ask_participant",
            "complete_step",
            "create_plan",
            "create_task_for_participant",
            "list_skills",
            "load_skill",
            "message_subtask",
            "set_participant_role",
            "spawn_subtask",
            "unload_skill"
        ]
    );
}

#[tokio::test]
async fn cancel_interrupts_an_in_flight_model_call_at_once() {
    // Never released: the call is in flight until the cancel interrupts it.
    let model = PlayModel::gated(vec![reply("too late")], false);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    let sub = h
        .tasks
        .send_message(&caller(), user_message("slow work", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    while model.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let canceled = h.tasks.cancel_task(&caller(), &id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    tokio::time::timeout(HANG_GUARD, async {
        while h.engine.running_count() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the loop stopped without waiting for the model");
    let again = h.tasks.cancel_task(&caller(), &id).await.unwrap_err();
    assert!(again.to_string().contains("cannot be canceled"), "{again}");
}

#[tokio::test]
async fn a_task_that_reaches_max_turns_fails_with_the_setting_named() {
    let looping: Vec<ModelReply> = (0..10)
        .map(|_| {
            tool_reply(
                "create_plan",
                json!({"steps": [{"name": "x", "description": "d"}]}),
            )
        })
        .collect();
    let model = PlayModel::new(looping);
    let mut limited = settings();
    limited.max_turns = 3;
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        limited,
    )
    .await;
    let task = send_and_settle(&h, "never ends", "").await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(
        task.status.message.unwrap().text(),
        "the task reached limits.max_turns (3) without finishing"
    );
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn a_question_waits_for_the_participant_and_the_answer_reaches_the_model() {
    let model = PlayModel::new(vec![
        tool_reply(
            "ask_participant",
            json!({"participant_id": "user", "question": "Which month?"}),
        ),
        reply("March it is."),
    ]);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    let task = send_and_settle(&h, "Reconcile the books", "").await;
    assert_eq!(task.status.state, TaskState::InputRequired);
    assert_eq!(task.status.message.unwrap().text(), "Which month?");
    // A waiting task keeps no loop in memory; the answer starts one from the journal.
    tokio::time::timeout(HANG_GUARD, async {
        while h.engine.running_count() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the waiting task's loop ended");
    assert_eq!(
        h.hub.live_records(),
        0,
        "nor its record: the next loop reads the store"
    );
    let done = send_and_settle(&h, "March", &task.id).await;
    assert_eq!(done.status.state, TaskState::Completed);
    // Each turn names the participant message it answers, the one its loop drained last.
    let sent: Vec<_> = done
        .history
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .map(|m| Some(m.message_id))
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(model.message_ids(), sent);
    let last = model.requests().pop().unwrap();
    assert!(last.messages.contains(&ChatMessage::User {
        content: "March".into()
    }));
}

#[tokio::test]
async fn a_waiting_task_canceled_before_its_loop_wakes_leaves_no_record_in_memory() {
    let model = PlayModel::new(vec![tool_reply(
        "ask_participant",
        json!({"participant_id": "user", "question": "Which month?"}),
    )]);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    let task = send_and_settle(&h, "Reconcile the books", "").await;
    assert_eq!(task.status.state, TaskState::InputRequired);
    tokio::time::timeout(HANG_GUARD, async {
        while h.engine.running_count() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the waiting task's loop ended");
    // A change lands on the waiting task with no loop running (as a child's state written to
    // a waiting parent does): its record is kept for the loop the news would start.
    h.hub
        .change(&task.id, |rec, _| {
            rec.metadata.insert("note".into(), json!("a child moved"));
            Ok(())
        })
        .await
        .expect("changed");
    assert_eq!(h.hub.live_records(), 1);
    // Canceled before any loop woke: no loop will read or drop the ended record, so it is not
    // kept.
    let canceled = h.tasks.cancel_task(&caller(), &task.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(h.engine.running_count(), 0);
    assert_eq!(
        h.hub.live_records(),
        0,
        "the ended task's record is dropped"
    );
}

#[tokio::test]
async fn a_restarted_engine_resumes_from_the_journal_without_repeating_a_recorded_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.db");
    let plan = tool_reply(
        "create_plan",
        json!({"steps": [{"name": "Only", "description": "d"}]}),
    );
    // First life: the first call is answered and recorded, the second hangs until shutdown.
    let first = PlayModel::hanging_after(vec![plan.clone()]);
    let h1 = harness(
        Arc::new(Store::open(&path).unwrap()),
        first.clone(),
        settings(),
    )
    .await;
    let sub = h1
        .tasks
        .send_message(&caller(), user_message("resume me", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    // Wait until the second call is in flight: the tool result is journaled by then.
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            if first.requests().len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    h1.engine.shutdown().await;
    assert_eq!(
        h1.store.task(&id).unwrap().unwrap().state(),
        TaskState::Working
    );
    drop(h1);
    // Second life on the same file.
    let second = PlayModel::new(vec![plan, reply("resumed and done")]);
    let h2 = harness(
        Arc::new(Store::open(&path).unwrap()),
        second.clone(),
        settings(),
    )
    .await;
    assert_eq!(h2.engine.resume_open().unwrap(), 1);
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = h2.tasks.get_task(&caller(), &id, Some(0)).await.unwrap();
            if task.status.state.is_terminal() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let task = h2.tasks.get_task(&caller(), &id, None).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    let indices = second.turns();
    assert_eq!(indices, [1], "only the unrecorded call is made again");
}

#[tokio::test]
async fn an_over_budget_history_is_compacted_into_a_summary_and_recorded() {
    let big = "x".repeat(1200);
    let mut replies: Vec<ModelReply> = (0..4)
        .map(|i| {
            tool_reply(
                "create_plan",
                json!({"steps": [{"name": format!("step {i}"), "description": big}]}),
            )
        })
        .collect();
    replies.push(reply("finished"));
    let model = PlayModel::new(replies);
    // Room for the builtin tools' definitions (about 1,000 tokens), which every request
    // carries, and a little history: a few turns pass the threshold.
    let mut small = settings();
    small.turn_budget_tokens = 2_000;
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        small,
    )
    .await;
    // The whole binary's log (a subscriber of this thread alone races the other tests for
    // tracing's per-callsite interest), read for this task's lines only.
    let logs = CapturedLogs::process_wide();
    let task = send_and_settle(&h, "grow the context", "").await;
    assert_eq!(task.status.state, TaskState::Completed);
    let requests = model.requests();
    assert!(requests.iter().any(|r| r.purpose == Purpose::Summary));
    // A summary is a model call like a turn: logged (and counted, and traced) as one.
    let logged = logs
        .text()
        .lines()
        .filter(|line| line.contains("model call") && line.contains(task.id.as_str()))
        .count();
    assert_eq!(logged, requests.len(), "{}", logs.text());
    let after = requests
        .iter()
        .rev()
        .find(|r| r.purpose == Purpose::Turn)
        .unwrap();
    let ChatMessage::User { content } = &after.messages[0] else {
        panic!();
    };
    assert!(content.contains("<state_summary>\nSUMMARY-OF-EARLIER-WORK\n</state_summary>"));
    let journal: Vec<(i64, JournalEntry)> = h.store.journal(&task.id).unwrap();
    assert!(journal.iter().any(|(_, e)| matches!(
        e,
        JournalEntry::Compaction { removed_items, .. } if *removed_items > 0
    )));
}

#[tokio::test]
async fn a_task_on_a_named_model_has_its_turns_and_its_summaries_made_by_that_model() {
    let big = "x".repeat(1200);
    let mut replies: Vec<ModelReply> = (0..4)
        .map(|i| {
            tool_reply(
                "create_plan",
                json!({"steps": [{"name": format!("step {i}"), "description": big}]}),
            )
        })
        .collect();
    replies.push(reply("finished on deep"));
    let default = PlayModel::new(Vec::new());
    let deep = PlayModel::new(replies);
    let deep_model: Arc<dyn Model> = deep.clone();
    let models = Models::new(
        default.clone(),
        std::collections::BTreeMap::from([("deep".to_string(), deep_model)]),
    );
    // Room for the builtin tools' definitions (about 1,000 tokens), which every request
    // carries, and a little history: a few turns pass the threshold.
    let mut small = settings();
    small.turn_budget_tokens = 2_000;
    let rules = BriefRules {
        models: vec!["deep".to_string()],
        task_token_budget: None,
        ..BriefRules::default()
    };
    let h = harness_with(
        Arc::new(Store::open_in_memory().unwrap()),
        models,
        small,
        rules,
    )
    .await;
    let mut request = user_message("", "");
    request.message.parts = vec![Part::data(
        json!({"kind": "task", "payload": {"name": "grow", "goal": "grow the context", "model": "deep"}}),
        tiny_harness::state::records::extension::ENVELOPE_MEDIA_TYPE,
    )];
    let delegator = Caller::delegator("front-desk");
    let sub = h.tasks.send_message(&delegator, request).await.unwrap();
    let id = sub.snapshot.id.clone();
    let task = tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = h.tasks.get_task(&delegator, &id, Some(0)).await.unwrap();
            if task.status.state.is_terminal() {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(
        default.requests().is_empty(),
        "the default model was never asked"
    );
    let purposes: Vec<Purpose> = deep.requests().iter().map(|r| r.purpose).collect();
    assert!(purposes.contains(&Purpose::Summary), "{purposes:?}");
    assert_eq!(purposes.iter().filter(|p| **p == Purpose::Turn).count(), 5);
}

#[tokio::test]
async fn a_participant_not_on_the_task_gets_not_found() {
    let model = PlayModel::new(vec![reply("ok")]);
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model,
        settings(),
    )
    .await;
    let task = send_and_settle(&h, "private", "").await;
    let stranger = Caller::from_header(Some("mallory"));
    let err = h
        .tasks
        .get_task(&stranger, &task.id, None)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), format!("task not found: {}", task.id));
    let listed = h
        .tasks
        .list_tasks(&stranger, Default::default())
        .await
        .unwrap();
    assert!(listed.tasks.is_empty());
}

/// Answers at once, but first links an open sub-task to the task, as a delegation would.
struct LinksSubtask {
    hub: std::sync::OnceLock<Arc<TaskHub>>,
}

#[async_trait::async_trait]
impl Model for LinksSubtask {
    fn describe(&self) -> String {
        "links a sub-task".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(
        &self,
        request: &tiny_harness::base::model::ModelRequest,
    ) -> Result<ModelReply, tiny_harness::base::model::ModelError> {
        let ChatMessage::User { content } = &request.messages[0] else {
            unreachable!()
        };
        let id = content
            .lines()
            .find_map(|l| l.strip_prefix("goal: "))
            .unwrap_or_default()
            .to_string();
        let hub = self.hub.get().expect("hub set");
        let tasks = hub
            .store()
            .list_tasks(&tiny_harness::state::store::TaskFilter {
                participant_id: "user".into(),
                limit: 10,
                ..Default::default()
            });
        let task_id = tasks.unwrap().tasks[0].id.clone();
        hub.change(&task_id, move |record, _| {
            record
                .ext
                .sub_tasks
                .push(tiny_harness::state::records::extension::TaskLink {
                    task_id: format!("child-of-{id}"),
                    agent: None,
                    state: Some("TASK_STATE_WORKING".into()),
                    deadline: None,
                    ..Default::default()
                });
            Ok(())
        })
        .await
        .unwrap();
        Ok(reply("all done"))
    }
}

#[tokio::test]
async fn a_task_does_not_complete_while_a_sub_task_is_open() {
    let model = Arc::new(LinksSubtask {
        hub: std::sync::OnceLock::new(),
    });
    let store = Arc::new(Store::open_in_memory().unwrap());
    let h = harness(store.clone(), model.clone(), settings()).await;
    // The test double needs the same hub the engine writes through: the store is shared, and
    // the hub's changes are transactions on it.
    let _ = model.hub.set(Arc::new(TaskHub::new(store.clone())));
    let sub = h
        .tasks
        .send_message(&caller(), user_message("wait for the child", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    // The model answered, but the sub-task is open: the task waits, WORKING.
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let journal: Vec<(i64, JournalEntry)> = store.journal(&id).unwrap();
            if journal
                .iter()
                .any(|(_, e)| matches!(e, JournalEntry::ModelCall { .. }))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    // The loop has nothing more to do until the sub-task ends: it stops, the task left waiting
    // (a loop that completed the task would have stopped too, and the state below says which).
    tokio::time::timeout(HANG_GUARD, async {
        while h.engine.running_count() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the loop stopped");
    let waiting = h.tasks.get_task(&caller(), &id, Some(0)).await.unwrap();
    assert_eq!(waiting.status.state, TaskState::Working);
    // The child finishes; the parent is told and completes with its answer.
    let hub = TaskHub::new(store.clone());
    hub.change(&id, |record, _| {
        record.ext.sub_tasks[0].state = Some("TASK_STATE_COMPLETED".into());
        Ok(())
    })
    .await
    .unwrap();
    tiny_harness::work::engine::Engine::wake(h.engine.as_ref(), &id);
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = h.tasks.get_task(&caller(), &id, Some(0)).await.unwrap();
            if task.status.state == TaskState::Completed {
                assert_eq!(task.status.message.unwrap().text(), "all done");
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the task completed once its sub-task did");
}

#[tokio::test]
async fn an_answer_recorded_with_news_unread_is_not_the_answer_after_a_restart_either() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.db");
    // First life: the task's first call hangs; the engine stops with it in flight.
    let first = PlayModel::hanging_after(vec![]);
    let h1 = harness(
        Arc::new(Store::open(&path).unwrap()),
        first.clone(),
        settings(),
    )
    .await;
    let sub = h1
        .tasks
        .send_message(&caller(), user_message("close the books", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    tokio::time::timeout(HANG_GUARD, async {
        while first.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    h1.engine.shutdown().await;
    // As the journal stands when the call's answer was recorded while a participant's message
    // landed during the call (and the process died before reading it).
    let hub = TaskHub::new(h1.store.clone());
    let task_id = id.clone();
    hub.change(&id, move |record, tx| {
        tx.append_journal(
            &task_id,
            &JournalEntry::ModelCall {
                reply: reply("written before the message"),
            },
        )?;
        let message = Message {
            message_id: "late-news".into(),
            task_id: task_id.clone(),
            context_id: record.context_id.clone(),
            role: Role::User,
            parts: vec![Part::text("also count March")],
            ..Message::default()
        };
        tx.append_message(&task_id, &message)?;
        Ok(())
    })
    .await
    .unwrap();
    drop(h1);
    // Second life: the message is read and the model answers again; only that answer counts.
    let second = PlayModel::new(vec![reply("unused"), reply("counted March too")]);
    let h2 = harness(
        Arc::new(Store::open(&path).unwrap()),
        second.clone(),
        settings(),
    )
    .await;
    assert_eq!(h2.engine.resume_open().unwrap(), 1);
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = h2.tasks.get_task(&caller(), &id, Some(0)).await.unwrap();
            if task.status.state.is_terminal() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let task = h2.tasks.get_task(&caller(), &id, None).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.message.unwrap().text(), "counted March too");
    let requests = second.requests();
    assert_eq!(requests.len(), 1);
    let transcript = serde_json::to_string(&requests[0].messages).unwrap();
    let early = transcript.find("written before the message").unwrap();
    let news = transcript.find("also count March").unwrap();
    assert!(early < news, "{transcript}");
}

#[tokio::test]
async fn a_message_landing_during_a_new_tasks_first_model_call_is_answered_not_lost() {
    // The task is created working with its first message journaled, and its first step goes to
    // the model without a drain: a message sent while that call is in flight must still reach
    // the model before the task completes.
    // The first call answers only once the message has landed.
    let model = PlayModel::gated(
        vec![reply("only January"), reply("January and March")],
        false,
    );
    let h = harness(
        Arc::new(Store::open_in_memory().unwrap()),
        model.clone(),
        settings(),
    )
    .await;
    let sub = h
        .tasks
        .send_message(&caller(), user_message("count January", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    tokio::time::timeout(HANG_GUARD, async {
        while model.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let task = send_then_settle(&h, "also count March", &id, || model.release(2)).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        task.status.message.as_ref().unwrap().text(),
        "January and March"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the model answered again with the news");
    assert!(
        requests[1].messages.iter().any(
            |m| matches!(m, ChatMessage::User { content } if content.contains("also count March"))
        ),
        "the second call carries the message that landed during the first"
    );
}

/// The kinds of the task's journal entries, in order.
fn journal_kinds(store: &Store, id: &str) -> Vec<&'static str> {
    store
        .journal::<JournalEntry>(id)
        .unwrap()
        .into_iter()
        .map(|(_, entry)| match entry {
            JournalEntry::Inbound { .. } => "inbound",
            JournalEntry::Note { .. } => "note",
            JournalEntry::Command { .. } => "command",
            JournalEntry::ModelCall { .. } => "model_call",
            JournalEntry::ToolResult { .. } => "tool_result",
            JournalEntry::Compaction { .. } => "compaction",
            JournalEntry::Conversation { .. } => "conversation",
        })
        .collect()
}

/// Waits until the model has been asked `calls` times.
async fn until_asked(model: &PlayModel, calls: usize) {
    tokio::time::timeout(HANG_GUARD, async {
        while model.requests().len() < calls {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the model was asked");
}

#[tokio::test]
async fn a_message_drained_while_the_task_works_is_journaled_with_the_next_model_call() {
    // The first call answers only once the message has landed.
    let model = PlayModel::gated(
        vec![reply("only January"), reply("January and March")],
        false,
    );
    let store = Arc::new(Store::open_in_memory().unwrap());
    let h = harness(store.clone(), model.clone(), settings()).await;
    let sub = h
        .tasks
        .send_message(&caller(), user_message("count January", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    until_asked(&model, 1).await;
    let before = store.write_counts().commits();
    let task = send_then_settle(&h, "also count March", &id, || model.release(2)).await;
    assert_eq!(
        task.status.message.as_ref().unwrap().text(),
        "January and March"
    );
    assert_eq!(
        store.write_counts().commits() - before,
        3,
        "the message's arrival, the first answer (recorded, not final: news came), and the \
         second answer with the drained message and the completion: the drain has no \
         transaction of its own"
    );
    assert_eq!(
        journal_kinds(&store, &id),
        ["inbound", "model_call", "inbound", "model_call"],
        "the drained message is journaled before the answer to it"
    );
}

#[tokio::test]
async fn a_message_drained_but_not_yet_journaled_when_the_process_stops_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.db");
    // First life: the message lands during the first call; the second call, which carries
    // it, hangs, and the engine stops with it in flight.
    // The first call answers only once the message has landed; the second hangs.
    let first = PlayModel::gated(vec![reply("only January")], true);
    let store = Arc::new(Store::open(&path).unwrap());
    let h1 = harness(store.clone(), first.clone(), settings()).await;
    let sub = h1
        .tasks
        .send_message(&caller(), user_message("count January", ""))
        .await
        .unwrap();
    let id = sub.snapshot.id.clone();
    until_asked(&first, 1).await;
    h1.tasks
        .send_message(&caller(), user_message("also count March", &id))
        .await
        .unwrap();
    first.release(2);
    until_asked(&first, 2).await;
    assert!(
        serde_json::to_string(&first.requests()[1].messages)
            .unwrap()
            .contains("also count March"),
        "the second call carries the message"
    );
    h1.engine.shutdown().await;
    drop(h1);
    drop(store);

    // Second life: the message is read again from the store and answered once.
    let second = PlayModel::new(vec![reply("unused"), reply("January and March")]);
    let store = Arc::new(Store::open(&path).unwrap());
    let h2 = harness(store.clone(), second.clone(), settings()).await;
    assert_eq!(h2.engine.resume_open().unwrap(), 1);
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = h2.tasks.get_task(&caller(), &id, Some(0)).await.unwrap();
            if task.status.state.is_terminal() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let task = h2.tasks.get_task(&caller(), &id, None).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.message.unwrap().text(), "January and March");
    let requests = second.requests();
    assert_eq!(requests.len(), 1);
    let transcript = serde_json::to_string(&requests[0].messages).unwrap();
    assert_eq!(
        transcript.matches("also count March").count(),
        1,
        "the message reaches the model once: {transcript}"
    );
    assert_eq!(
        journal_kinds(&store, &id),
        ["inbound", "model_call", "inbound", "model_call"]
    );
}
