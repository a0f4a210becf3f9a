//! The whole harness over real HTTP on loopback: configuration → runtime → A2A server → engine →
//! scripted model → SQLite, driven with the harness's own A2A client.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{
    Message, Part, Role, SendMessageResponse, StreamResponse, Task, TaskState,
};
use tiny_harness::state::records::extension::EXTENSION_URI;
use tiny_harness::work::agents::client::A2aClient;
use tokio::sync::oneshot;

struct Server {
    client: A2aClient,
    store: std::sync::Arc<tiny_harness::state::store::Store>,
    base_url: String,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }
}

/// Starts a harness whose scripted model plays `script` (TOML), with extra config appended.
async fn start(script: &str, extra_config: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.toml"), script).unwrap();
    let text =
        format!("[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n{extra_config}");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, &text).unwrap();
    start_config(dir, &path).await
}

async fn start_config(dir: tempfile::TempDir, path: &Path) -> Server {
    let config = Config::load(path).unwrap();
    let env = |name: &str| match name {
        "SERVE_HTTP_PAGER_TOKEN" => Some(PAGER_TOKEN.to_string()),
        other => std::env::var(other).ok(),
    };
    let runtime = Runtime::build_with_env(config, env).await.unwrap();
    let base_url = format!("http://{}", runtime.local_addr());
    let store = runtime.store.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        runtime
            .serve(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    Server {
        // These tests read the task extension, so they activate it, as a tiny-harness client does.
        client: A2aClient::new(base_url.clone())
            .unwrap()
            .with_extensions(vec![EXTENSION_URI.to_string()]),
        base_url,
        store,
        stop: Some(stop),
        done,
        _dir: dir,
    }
}

const SCRIPTED: &str = "[model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n";

/// A token caller some tests configure: only a caller that proves who it is lists its tasks.
const PAGER: &str = "[[server.callers]]\nid = \"pager\"\ntoken_env = \"SERVE_HTTP_PAGER_TOKEN\"\n";
const PAGER_TOKEN: &str = "serve-http-pager-token-d3d9446802a44259";

fn request(text: &str, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
    }
}

#[tokio::test]
async fn a_blocking_send_message_returns_the_completed_task_with_the_answer() {
    let server = start(
        "[[reply]]\ntext = \"Plan first.\"\n[[reply.tool_calls]]\nname = \"create_plan\"\narguments = { steps = [{ name = \"Add\", description = \"add them\" }] }\n[[reply]]\ntext = \"2 + 2 = 4\"\n",
        SCRIPTED,
    )
    .await;
    let task = task_of(
        server
            .client
            .send_message(request("What is 2 + 2?", false))
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.message.as_ref().unwrap().text(), "2 + 2 = 4");
    let ext = &task.metadata.as_ref().unwrap()["io.github.madarauchiha-314.tiny-harness/task"];
    assert_eq!(ext["name"], "What is 2 + 2?");
    assert_eq!(ext["plan"]["steps"][0]["id"], "add");
    let fetched = server.client.get_task(&task.id, Some(1)).await.unwrap();
    assert_eq!(fetched.history.unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_blocking_answer_is_the_task_as_stored_without_reading_the_task_again() {
    let server = start("[[reply]]\ntext = \"4\"\n", SCRIPTED).await;
    // Once the server has answered, its start-up reads (tasks to resume) are behind it.
    server.client.fetch_card().await.unwrap();
    let reads = server.store.read_count();
    let task = task_of(
        server
            .client
            .send_message(request("What is 2 + 2?", false))
            .await
            .unwrap(),
    );
    // One read: the answer's history. The loop read nothing (the message was journaled with
    // the new task), and the record came with the event that completed the task.
    assert_eq!(server.store.read_count() - reads, 1);
    assert_eq!(task.status.state, TaskState::Completed);
    let fetched = server.client.get_task(&task.id, None).await.unwrap();
    assert_eq!(
        serde_json::to_value(&task).unwrap(),
        serde_json::to_value(&fetched).unwrap(),
        "the answer is the task as GetTask reads it from the store"
    );
    let history = task.history.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].text(), "4");
    server.stop().await;
}

#[tokio::test]
async fn streaming_shows_submitted_then_working_then_its_progress_then_completed() {
    let server = start("[[reply]]\ntext = \"done\"\n", SCRIPTED).await;
    let mut stream = server
        .client
        .send_streaming_message(request("stream it", false))
        .await
        .unwrap();
    let mut states = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("stream event in time")
    {
        match event.unwrap() {
            StreamResponse::Task(task) => states.push(format!("{:?}", task.status.state)),
            StreamResponse::StatusUpdate(update) => {
                let note = update.status.message.as_ref().filter(|m| {
                    m.metadata.as_ref().and_then(|m| m.get("progress"))
                        == Some(&serde_json::Value::Bool(true))
                });
                states.push(match note {
                    Some(note) => format!("{:?}: {}", update.status.state, note.text()),
                    None => format!("{:?}", update.status.state),
                });
            }
            _ => {}
        }
    }
    assert_eq!(
        states,
        [
            "Submitted",
            "Working",
            "Working: Calling the model",
            "Completed"
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn cancel_task_ends_a_working_task_canceled_without_waiting_for_the_model() {
    let server = start("[[reply]]\ntext = \"late\"\ndelay_ms = 3600000\n", SCRIPTED).await;
    let task = task_of(
        server
            .client
            .send_message(request("slow", true))
            .await
            .unwrap(),
    );
    // Wait until the task is being worked, then cancel it.
    loop {
        let now = server.client.get_task(&task.id, Some(0)).await.unwrap();
        if now.status.state == TaskState::Working {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The model's reply is an hour away: a cancel that waited for it would trip the guard.
    let canceled =
        tokio::time::timeout(Duration::from_secs(30), server.client.cancel_task(&task.id))
            .await
            .expect("the cancel did not wait for the model")
            .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let again = server.client.cancel_task(&task.id).await.unwrap_err();
    assert_eq!(again.rpc_code(), Some(-32002));
    let send = server
        .client
        .send_message(SendMessageRequest {
            message: Message {
                task_id: task.id.clone(),
                ..request("more", false).message
            },
            ..request("more", false)
        })
        .await
        .unwrap_err();
    assert_eq!(
        send.rpc_code(),
        Some(-32004),
        "a message to a terminal task is refused"
    );
    server.stop().await;
}

#[tokio::test]
async fn with_no_model_configured_each_task_fails_at_once_with_the_explanation() {
    let server = start("", "").await;
    let task = task_of(
        server
            .client
            .send_message(request("anything", false))
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Failed);
    let reason = task.status.message.unwrap().text();
    assert!(reason.contains("OPENAI_API_KEY"), "{reason}");
    assert!(reason.contains("[model]"), "{reason}");
    server.stop().await;
}

#[tokio::test]
async fn a_script_that_runs_out_fails_the_task_clearly() {
    let server = start(
        "[[reply]]\n[[reply.tool_calls]]\nname = \"create_plan\"\narguments = { steps = [{ name = \"A\", description = \"d\" }] }\n",
        SCRIPTED,
    )
    .await;
    let task = task_of(
        server
            .client
            .send_message(request("go", false))
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Failed);
    let reason = task.status.message.unwrap().text();
    assert!(reason.contains("no reply 1"), "{reason}");
    server.stop().await;
}

#[tokio::test]
async fn list_tasks_pages_through_the_callers_tasks_newest_first() {
    let server = start("[[reply]]\ntext = \"ok\"\n", &format!("{SCRIPTED}{PAGER}")).await;
    // A token caller: one that proves nothing lists nothing.
    let pager = A2aClient::new(server.base_url.clone())
        .unwrap()
        .with_bearer(PAGER_TOKEN);
    let mut ids = Vec::new();
    for n in 0..3 {
        let task = task_of(
            pager
                .send_message(request(&format!("task {n}"), false))
                .await
                .unwrap(),
        );
        ids.push(task.id);
    }
    let first = pager
        .list_tasks(tiny_harness::base::protocol::requests::ListTasksRequest {
            page_size: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.total_size, 3);
    assert_eq!(first.tasks.len(), 2);
    assert_eq!(first.tasks[0].id, ids[2]);
    assert!(
        first.tasks[0].artifacts.is_none(),
        "artifacts are left out by default"
    );
    let second = pager
        .list_tasks(tiny_harness::base::protocol::requests::ListTasksRequest {
            page_size: Some(2),
            page_token: first.next_page_token.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(second.tasks.len(), 1);
    assert_eq!(second.tasks[0].id, ids[0]);
    assert_eq!(second.next_page_token, "");
    let other = A2aClient::new(server.base_url.clone())
        .unwrap()
        .with_participant("mallory");
    let theirs = other.list_tasks(Default::default()).await.unwrap();
    assert!(theirs.tasks.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn the_card_is_served_at_the_well_known_path_with_the_base_url() {
    let server = start("", "").await;
    let card = server.client.fetch_card().await.unwrap();
    assert_eq!(card.name, "tiny-harness");
    assert_eq!(card.version, "0.1.0");
    assert_eq!(card.supported_interfaces[0].url, server.base_url);
    let skills: Vec<&str> = card.skills.iter().map(|skill| skill.id.as_str()).collect();
    assert_eq!(
        skills,
        ["general"],
        "an unconfigured harness lists the default skill"
    );
    server.stop().await;
}

fn envelope_change(task_id: &str, payload: serde_json::Value) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.to_string(),
            role: Role::User,
            parts: vec![Part::data(
                serde_json::json!({"kind": "task", "payload": payload}),
                "application/vnd.tiny-harness.event+json",
            )],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

#[tokio::test]
async fn an_existing_task_accepts_brief_changes_by_role_and_refuses_the_rest() {
    let server = start(
        "[[reply]]\n[[reply.tool_calls]]\nname = \"ask_participant\"\narguments = { participant_id = \"user\", question = \"Which month?\" }\n[[reply]]\ntext = \"done\"\n",
        SCRIPTED,
    )
    .await;
    let task = task_of(
        server
            .client
            .send_message(request("Reconcile", false))
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::InputRequired);
    let ext_of = |task: &Task| {
        task.metadata.as_ref().unwrap()["io.github.madarauchiha-314.tiny-harness/task"].clone()
    };
    // Any participant may rename the task and set its criteria.
    server
        .client
        .send_message(envelope_change(
            &task.id,
            serde_json::json!({"name": "Reconcile March", "acceptance_criteria": [{"text": "totals match"}]}),
        ))
        .await
        .unwrap();
    let now = server.client.get_task(&task.id, Some(0)).await.unwrap();
    assert_eq!(ext_of(&now)["name"], "Reconcile March");
    assert_eq!(
        ext_of(&now)["acceptance_criteria"][0]["text"],
        "totals match"
    );
    // Fields that belong to the harness are refused, and nothing changes.
    let refused = server
        .client
        .send_message(envelope_change(
            &task.id,
            serde_json::json!({"lifecycle": "participant"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.rpc_code(), Some(-32602));
    assert!(refused.to_string().contains("lifecycle"), "{refused}");
    // Only an admin may change participants: a watcher added by the admin cannot.
    server
        .client
        .send_message(envelope_change(
            &task.id,
            serde_json::json!({"participants": [
                {"id": "user", "kind": "human", "role": "admin"},
                {"id": "bob", "kind": "human", "role": "watcher"}]}),
        ))
        .await
        .unwrap();
    let bob = A2aClient::new(server.base_url.clone())
        .unwrap()
        .with_participant("bob");
    let denied = bob
        .send_message(envelope_change(
            &task.id,
            serde_json::json!({"participants": [{"id": "bob", "kind": "human", "role": "admin"}]}),
        ))
        .await
        .unwrap_err();
    assert!(denied.to_string().contains("only an admin"), "{denied}");
    let after = server.client.get_task(&task.id, Some(0)).await.unwrap();
    assert_eq!(ext_of(&after)["participants"][1]["role"], "watcher");
    server.stop().await;
}

#[tokio::test]
async fn a_new_task_from_an_envelope_carries_its_brief_and_may_not_name_others() {
    let server = start("[[reply]]\ntext = \"ok\"\n", SCRIPTED).await;
    let mut with_brief = envelope_change(
        "",
        serde_json::json!({
        "name": "Invoice check", "goal": "Check invoice 42", "description": "Against the PO",
        "acceptance_criteria": [{"text": "amount matches"}]}),
    );
    with_brief.configuration = None;
    let task = task_of(server.client.send_message(with_brief).await.unwrap());
    let ext = &task.metadata.as_ref().unwrap()["io.github.madarauchiha-314.tiny-harness/task"];
    assert_eq!(ext["goal"], "Check invoice 42");
    assert_eq!(ext["participants"][0]["id"], "user");
    let naming_others = envelope_change(
        "",
        serde_json::json!({
        "name": "n", "goal": "g",
        "participants": [{"id": "mallory", "kind": "human", "role": "admin"}]}),
    );
    let refused = server.client.send_message(naming_others).await.unwrap_err();
    assert!(
        refused.to_string().contains("trusted delegator"),
        "{refused}"
    );
    // Its creator proved nothing, so it lists nothing: the store says what there is.
    let stored = server
        .store
        .list_tasks(&tiny_harness::state::store::TaskFilter {
            participant_id: "user".to_string(),
            context_id: None,
            state: None,
            updated_after: None,
            cursor: None,
            limit: 10,
        })
        .unwrap();
    assert_eq!(stored.tasks.len(), 1, "the refused request created nothing");
    server.stop().await;
}
