//! Delegation hops across harnesses over loopback: two harnesses whose models always delegate
//! to each other end at once with a handful of tasks and keep serving; a new task whose chain
//! holds the harness, or has come too many hops, is refused on every binding with nothing
//! created; hostile chains are refused naming the field; the parent's model reads
//! `[agent.cycle]` or `[agent.depth]`.

mod delegation_support;
mod support {
    pub mod harness_process;
}

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use serde_json::{Value, json};

use delegation_support::*;
use tiny_harness::base::model::ModelRequest;
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role, SendMessageResponse, TaskState};
use tiny_harness::state::records::extension::{ENVELOPE_MEDIA_TYPE, EXTENSION_URI};
use tiny_harness::state::tasks::hops::{CYCLE_REASON, HOPS_REASON, METADATA_KEY, REFUSAL_KEY};
use tiny_harness::work::agents::client::{A2aClient, ClientError};

/// How long a liveness check waits for an answer: a harness that stopped serving never answers,
/// so this guards against a hang and is no measure of speed (the time taken is printed).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// The goal a third client sends to check a harness still answers.
const PING: &str = "ping";

/// A model that always delegates its task to `other` (unless it is a ping), then answers with
/// whatever came back: the child's note, or the tool's refusal, after `linger` (so the test can
/// check both harnesses while the delegation is under way).
fn delegating_model(other: &'static str, linger: Duration) -> Arc<FnModel> {
    FnModel::new(move |request: &ModelRequest| {
        if has_goal(request, PING) {
            return Answer::Reply(text("pong"));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("from {other}: {note}")));
        }
        match last_tool_result(request) {
            Some(result) if result.contains("[agent.") => {
                // The tool error, without the untrusted block it reaches the model in.
                let error = result
                    .lines()
                    .find(|l| l.starts_with("[agent."))
                    .unwrap_or("");
                Answer::After(linger, text(&format!("refused: {error}")))
            }
            Some(_) => Answer::Reply(text("waiting for the sub-task")),
            None => Answer::Reply(tool(
                "spawn_subtask",
                json!({"name": "hand over", "goal": "Do the work.", "agent": other}),
            )),
        }
    })
}

/// An A2A front for a harness that does not exist yet: it serves a card (with the task
/// extension) whose interface URL is the front itself, and forwards every other request to the
/// target set later. It lets two harnesses bound to port 0 list each other.
struct Front {
    url: String,
    target: Arc<Mutex<Option<String>>>,
}

impl Front {
    async fn start(name: &'static str) -> Front {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let target: Arc<Mutex<Option<String>>> = Arc::default();
        let card = stub_card(&url, name, true);
        let app = axum::Router::new()
            .route(
                "/.well-known/agent-card.json",
                get(move || {
                    let card = card.clone();
                    async move { axum::Json(card) }
                }),
            )
            .fallback(forward)
            .with_state((target.clone(), reqwest::Client::new()));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Front { url, target }
    }

    fn forward_to(&self, url: &str) {
        *self.target.lock().unwrap() = Some(url.to_string());
    }
}

/// Forwards one request to the front's target, streaming the answer back.
async fn forward(
    State((target, http)): State<(Arc<Mutex<Option<String>>>, reqwest::Client)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(target) = target.lock().unwrap().clone() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = http.request(method, format!("{target}{path}")).body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let Ok(answer) = request.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            response = response.header(name, value);
        }
    }
    let stream = answer
        .bytes_stream()
        .map(|chunk| chunk.map_err(std::io::Error::other));
    response.body(Body::from_stream(stream)).unwrap()
}

/// How many tasks `participant` is on in `node`'s store. Read from the store itself: a
/// participant that proves no identity lists nothing over A2A.
fn count_tasks(node: &Node, participant: &str) -> usize {
    count_tasks_in(&node.dir().join("harness.db"), participant)
}

/// How many tasks `participant` is on in the store at `db`.
fn count_tasks_in(db: &std::path::Path, participant: &str) -> usize {
    let store = tiny_harness::state::store::Store::open(db).unwrap();
    let filter = tiny_harness::state::store::TaskFilter {
        participant_id: participant.to_string(),
        context_id: None,
        state: None,
        updated_after: None,
        cursor: None,
        limit: 100,
    };
    store.list_tasks(&filter).unwrap().total
}

/// A message creating a task, carrying `delegation` in its metadata when given.
fn new_task_message(text: &str, delegation: Option<Value>) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            metadata: delegation
                .map(|value| [(METADATA_KEY.to_string(), value)].into_iter().collect()),
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

/// The JSON-RPC error `client` gets for `request`, and how long the refusal took.
async fn refused(
    client: &A2aClient,
    request: SendMessageRequest,
) -> (i32, String, Value, Duration) {
    let started = Instant::now();
    let err = client.send_message(request).await.unwrap_err();
    let took = started.elapsed();
    match err {
        ClientError::Rpc {
            code,
            message,
            data,
        } => (code, message, data.unwrap_or(Value::Null), took),
        other => panic!("expected a JSON-RPC error, got {other}"),
    }
}

/// The harness answers its card and a third client's `SendMessage`.
async fn assert_serving(node: &Node, who: &str) {
    assert_serving_at(&node.url, who, false).await;
}

/// [`assert_serving`] for the harness at `url`; with `immediately`, the `SendMessage` asks for
/// the task at once rather than its answer (a scripted harness delegates a ping like any task).
async fn assert_serving_at(url: &str, who: &str, immediately: bool) {
    let started = Instant::now();
    let card = tokio::time::timeout(
        ANSWER_WITHIN,
        reqwest::get(format!("{url}/.well-known/agent-card.json")),
    )
    .await
    .unwrap_or_else(|_| panic!("{who} did not answer its card"))
    .unwrap();
    assert!(card.status().is_success(), "{who}: {}", card.status());
    let carol = A2aClient::new(url.to_string())
        .unwrap()
        .with_participant("carol");
    let task = tokio::time::timeout(ANSWER_WITHIN, send_text(&carol, "", PING, immediately))
        .await
        .unwrap_or_else(|_| panic!("{who} did not answer a SendMessage"));
    if !immediately {
        assert_eq!(answer(&task), "pong", "{who}");
    }
    eprintln!(
        "{who} answered its card and a ping in {:?}",
        started.elapsed()
    );
}

/// Two harnesses, each listing the other (`b` on `a` through a front, as neither's port is
/// known before it starts), whose models always delegate to the other.
async fn mutual(linger: Duration) -> (Node, Node, Front) {
    let front = Front::start("harness-a").await;
    let b = Node::start(
        &format!(
            "[card]\nname = \"harness-b\"\n[[agents]]\nid = \"a\"\nurl = \"{}\"\n",
            front.url
        ),
        delegating_model("a", linger),
    )
    .await;
    let a = Node::start(
        &format!(
            "[card]\nname = \"harness-a\"\n[[agents]]\nid = \"b\"\nurl = \"{}\"\n",
            b.url
        ),
        delegating_model("b", linger),
    )
    .await;
    front.forward_to(&a.url);
    (a, b, front)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_harnesses_that_always_delegate_to_each_other_stop_at_the_loop_and_keep_serving() {
    let (a, b, _front) = mutual(Duration::from_secs(2)).await;
    let started = Instant::now();
    let root = a.send("Balance the books.", true).await;

    // While B's model holds its answer, both harnesses still serve other callers.
    wait_for(&a.client, &root.id, |t| !sub_tasks(t).is_empty()).await;
    assert_serving(&a, "harness a (during)").await;
    assert_serving(&b, "harness b (during)").await;

    let done = wait_for(&a.client, &root.id, is_terminal).await;
    let ended = started.elapsed();
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert!(
        answer(&done).contains("[agent.cycle] a refused the sub-task: this delegation has already passed through a, so it would go round in a loop between harnesses; do this work in this task instead"),
        "{}",
        answer(&done)
    );

    // One task on each: the root on A, its child on B; B's child on A was refused.
    let on_a = count_tasks(&a, "user");
    let on_a_from_b = count_tasks(&a, "harness-b");
    let on_b = count_tasks(&b, "harness-a");
    eprintln!(
        "mutual delegation: {on_a} task(s) on A from its caller, {on_a_from_b} on A from B, {on_b} on B from A; settled in {ended:?}"
    );
    assert_eq!((on_a, on_a_from_b, on_b), (1, 0, 1));

    // The child on B keeps the chain it came with: A's instance, one hop.
    let row = &sub_tasks(&done)[0];
    let child_on_b = b
        .client_as("harness-a")
        .get_task(row["task_id"].as_str().unwrap(), None)
        .await
        .unwrap();
    let delegation = &extension(&child_on_b)["delegation"];
    assert_eq!(delegation["hops"], 1, "{delegation}");
    assert_eq!(delegation["chain"].as_array().map(Vec::len), Some(1));

    assert_serving(&a, "harness a (after)").await;
    assert_serving(&b, "harness b (after)").await;
}

/// A's instance id, as the chain of a child it made on `b` shows it.
async fn instance_of(a: &Node, b: &Node) -> String {
    let root = a.send("Balance the books.", false).await;
    let row = &sub_tasks(&root)[0];
    let child = b
        .client_as("harness-a")
        .get_task(row["task_id"].as_str().unwrap(), None)
        .await
        .unwrap();
    extension(&child)["delegation"]["chain"][0]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_task_whose_chain_holds_this_harness_is_refused_with_nothing_created() {
    let (a, b, _front) = mutual(Duration::ZERO).await;
    let instance = instance_of(&a, &b).await;
    let mallory = a.client_as("mallory");
    let chain = json!({"chain": ["elsewhere", instance], "hops": 2});
    let (code, message, data, took) =
        refused(&mallory, new_task_message("loop back", Some(chain))).await;
    eprintln!("a chain holding the harness was refused in {took:?}");
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        format!(
            "invalid params: message.metadata.{METADATA_KEY}.chain: already holds this harness (instance {instance}): the delegation went round in a loop between harnesses, so no task was created"
        )
    );
    assert_eq!(data[0]["metadata"][REFUSAL_KEY], CYCLE_REASON);
    assert_eq!(count_tasks(&a, "mallory"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn hops_over_the_limit_are_refused_alike_on_json_rpc_rest_and_0_3() {
    let node = Node::start(
        "[limits]\nmax_delegation_hops = 2\n",
        delegating_model("x", Duration::ZERO),
    )
    .await;
    let client = node.client_as("mallory");
    let far = json!({"chain": ["i-1", "i-2", "i-3"], "hops": 3});
    let (code, message, data, took) =
        refused(&client, new_task_message("far away", Some(far.clone()))).await;
    eprintln!("too many hops were refused in {took:?}");
    assert_eq!(code, -32602);
    assert!(
        message.ends_with("hops: 3 hops from harness to harness is over this harness's limits.max_delegation_hops (2), so no task was created"),
        "{message}"
    );
    let info = &data[0]["metadata"];
    assert_eq!(
        (
            &info[REFUSAL_KEY],
            &info["hops"],
            &info["maxDelegationHops"]
        ),
        (&json!(HOPS_REASON), &json!("3"), &json!("2"))
    );

    // HTTP+JSON: the same error as a google.rpc.Status under 400.
    let body = json!({"message": {"messageId": "m-rest", "role": "ROLE_USER",
        "parts": [{"text": "far away"}], "metadata": {METADATA_KEY: far}}});
    let http = reqwest::Client::new();
    let rest = http
        .post(format!("{}/message:send", node.url))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "mallory")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 400);
    let rest: Value = rest.json().await.unwrap();
    assert_eq!(
        rest["error"]["details"][0]["metadata"][REFUSAL_KEY],
        HOPS_REASON
    );

    // The 0.3 dialect: the same JSON-RPC error.
    let v03 = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "m-03", "role": "user",
            "parts": [{"kind": "text", "text": "far away"}], "metadata": {METADATA_KEY: far}}}});
    let v03: Value = http
        .post(&node.url)
        .header("A2A-Version", "0.3")
        .header("X-Participant-Id", "mallory")
        .json(&v03)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v03["error"]["code"], -32602, "{v03}");
    assert_eq!(
        v03["error"]["data"][0]["metadata"][REFUSAL_KEY],
        HOPS_REASON
    );

    assert_eq!(count_tasks(&node, "mallory"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_chains_are_refused_naming_the_field_and_create_nothing() {
    let node = Node::start("", delegating_model("x", Duration::ZERO)).await;
    let client = node.client_as("mallory");
    let many: Vec<String> = (0..33).map(|i| format!("i-{i}")).collect();
    let field = format!("message.metadata.{METADATA_KEY}");
    let cases = [
        (
            json!({"chain": many, "hops": 1}),
            format!("{field}.chain: holds 33 instances"),
        ),
        (
            json!({"chain": ["ok", ""]}),
            format!("{field}.chain[1]: an instance id must not be empty"),
        ),
        (
            json!({"chain": ["x".repeat(65)]}),
            format!("{field}.chain[0]: an instance id is at most 64"),
        ),
        (
            json!({"chain": ["a\nINFO forged"]}),
            format!("{field}.chain[0]: an instance id holds only"),
        ),
        (json!({"chain": [], "hops": -1}), format!("{field}: ")),
        (json!({"chain": [], "hops": 1e12}), format!("{field}: ")),
        (
            json!({"chain": [], "owner": "root"}),
            format!("{field}: unknown field"),
        ),
        (json!("i-1,i-2"), format!("{field}: ")),
    ];
    for (delegation, start) in cases {
        let (code, message, _, _) = refused(
            &client,
            new_task_message("hostile", Some(delegation.clone())),
        )
        .await;
        assert_eq!(code, -32602, "{delegation}");
        let message = message.trim_start_matches("invalid params: ");
        assert!(message.starts_with(&start), "{delegation}: {message}");
    }

    // In the envelope the field is the brief's; and one delegation in both places is refused.
    let envelope = |delegation: Value| {
        Part::data(
            json!({"kind": "task", "payload": {"name": "n", "goal": "g", "delegation": delegation}}),
            ENVELOPE_MEDIA_TYPE,
        )
    };
    let mut request = new_task_message("", None);
    request.message.parts = vec![envelope(json!({"chain": ["bad id"], "hops": 1}))];
    let (_, message, _, _) = refused(&client, request).await;
    assert!(
        message.starts_with("invalid params: task.delegation.chain[0]: an instance id holds only"),
        "{message}"
    );
    let mut both = new_task_message("", Some(json!({"chain": [], "hops": 1})));
    both.message.parts = vec![envelope(json!({"chain": [], "hops": 1}))];
    let (_, message, _, _) = refused(&client, both).await;
    assert!(message.contains("carry it once"), "{message}");

    assert_eq!(count_tasks(&node, "mallory"), 0);
}

/// A ledger that answers at once, and a desk that delegates to it, with the desk's limit.
async fn desk_and_ledger(desk_limit: u32, ledger_limit: u32) -> (Node, Node, Arc<FnModel>) {
    let ledger = Node::start(
        &format!("[card]\nname = \"ledger\"\n[limits]\nmax_delegation_hops = {ledger_limit}\n"),
        FnModel::new(|_| Answer::Reply(text("1,250.00 EUR"))),
    )
    .await;
    let model = delegating_model("ledger", Duration::ZERO);
    let desk = Node::start(
        &format!(
            "[card]\nname = \"desk\"\n[limits]\nmax_delegation_hops = {desk_limit}\n[[agents]]\nid = \"ledger\"\nurl = \"{}\"\n",
            ledger.url
        ),
        model.clone(),
    )
    .await;
    (desk, ledger, model)
}

/// Sends the desk a task that has already come one hop, and returns its answer.
async fn one_hop_in(desk: &Node) -> String {
    let client = desk.client_as("upstream");
    let request = new_task_message(
        "Balance the books.",
        Some(json!({"chain": ["up-1"], "hops": 1})),
    );
    let SendMessageResponse::Task(task) = client.send_message(request).await.unwrap() else {
        panic!("expected a task")
    };
    answer(&wait_for(&client, &task.id, is_terminal).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parent_at_its_own_limit_refuses_the_sub_task_before_sending_it() {
    let (desk, ledger, _) = desk_and_ledger(1, 4).await;
    let answer = one_hop_in(&desk).await;
    assert_eq!(
        answer,
        "refused: [agent.depth] a sub-task on ledger would be hop 2 from harness to harness, over limits.max_delegation_hops (1): do this work in this task, or give the sub-task to self"
    );
    assert_eq!(count_tasks(&ledger, "desk"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_past_its_limit_refuses_and_the_parent_reads_agent_depth() {
    let (desk, ledger, _) = desk_and_ledger(4, 1).await;
    let answer = one_hop_in(&desk).await;
    assert_eq!(
        answer,
        "refused: [agent.depth] ledger refused the sub-task: it would be hop 2 from harness to harness, over ledger's limits.max_delegation_hops (1); do this work in this task instead"
    );
    assert_eq!(count_tasks(&ledger, "desk"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_pointing_back_at_the_harness_under_another_spelling_is_stopped_by_the_chain() {
    // The front's card names the front, so the URL check cannot see it is the harness itself;
    // the chain does, on the first hop.
    let front = Front::start("loop").await;
    let node = Node::start(
        &format!(
            "[card]\nname = \"solo\"\n[[agents]]\nid = \"loop\"\nurl = \"{}\"\n",
            front.url
        ),
        delegating_model("loop", Duration::ZERO),
    )
    .await;
    front.forward_to(&node.url);
    let task = node.send("Balance the books.", true).await;
    let done = wait_for(&node.client, &task.id, is_terminal).await;
    assert!(
        answer(&done).starts_with("refused: [agent.cycle] loop refused the sub-task"),
        "{}",
        answer(&done)
    );
    assert_eq!(count_tasks(&node, "user"), 1);
    assert_eq!(count_tasks(&node, "solo"), 0);
}

/// A harness process whose scripted model delegates every task to `other`, waits, then answers.
const DELEGATING_SCRIPT: &str = r#"
[[reply]]
[[reply.tool_calls]]
name = "spawn_subtask"
arguments = { name = "hand over", goal = "Do the work.", agent = "OTHER" }

[[reply]]
delay_ms = 1500
text = "waiting for the other harness"

[[reply]]
text = "done"
"#;

/// A `harness serve` process, killed when dropped.
struct Process(std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `harness serve` named `name` in `dir`, listing `other` at `other_url`.
fn harness_process(
    dir: &std::path::Path,
    name: &str,
    other: &str,
    other_url: &str,
) -> (Process, String) {
    std::fs::write(
        dir.join(format!("{name}.script.toml")),
        DELEGATING_SCRIPT.replace("OTHER", other),
    )
    .unwrap();
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"{name}.db\"\n\
             [model]\nprovider = \"scripted\"\nscript = \"{name}.script.toml\"\n\
             [card]\nname = \"{name}\"\n[[agents]]\nid = \"{other}\"\nurl = \"{other_url}\"\n"
        ),
    )
    .unwrap();
    let (child, url) = support::harness_process::serve(&config);
    (Process(child), url)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_harness_processes_listing_each_other_create_a_bounded_number_of_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let front = Front::start("harness-a").await;
    let (_b, b_url) = harness_process(dir.path(), "harness-b", "a", &front.url);
    let (_a, a_url) = harness_process(dir.path(), "harness-a", "b", &b_url);
    front.forward_to(&a_url);
    let started = Instant::now();
    let user = A2aClient::new(a_url.clone())
        .unwrap()
        .with_extensions(vec![EXTENSION_URI.to_string()]);
    let root = send_text(&user, "", "Balance the books.", true).await;

    // While the models wait, each harness answers its card and a third client at once; each
    // ping is a task that delegates like the root, and is bounded the same way.
    wait_for(&user, &root.id, |t| !sub_tasks(t).is_empty()).await;
    assert_serving_at(&a_url, "harness-a process (during)", true).await;
    assert_serving_at(&b_url, "harness-b process (during)", true).await;
    let done = wait_for(&user, &root.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    eprintln!("two processes: the root settled in {:?}", started.elapsed());

    // Root on A -> its child on B (refused onward as a loop). Carol's ping on A -> a child on B;
    // her ping on B -> a child on A, whose own child on B is refused as a loop.
    let count = |name: &str, who: &str| {
        let tasks = count_tasks_in(&dir.path().join(format!("{name}.db")), who);
        async move { tasks }
    };
    let settle = Instant::now() + Duration::from_secs(30);
    let expected = (1, 1, 1, 2, 1);
    let mut counts;
    loop {
        counts = (
            count("harness-a", "user").await,
            count("harness-a", "carol").await,
            count("harness-a", "harness-b").await,
            count("harness-b", "harness-a").await,
            count("harness-b", "carol").await,
        );
        if counts == expected || Instant::now() > settle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("two processes: tasks (A user, A carol, A from B, B from A, B carol) = {counts:?}");
    assert_eq!(counts, expected);
    assert_serving_at(&a_url, "harness-a process (after)", true).await;
    assert_serving_at(&b_url, "harness-b process (after)", true).await;
}
