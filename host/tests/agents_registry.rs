//! Start-up registration over real HTTP on loopback: which agents' cards are accepted, why the
//! others are refused, that all cards are fetched at once, and that resolving an id never
//! contacts anything.

mod agents_support;
mod support {
    pub mod captured_logs;
}

use std::time::Duration;

use serde_json::{Value, json};
use tiny_harness::base::config::AgentConfig;
use tiny_harness::base::protocol::card::default_card;
use tiny_harness::state::records::extension::EXTENSION_URI;
use tiny_harness::work::agents::{CardProblem, Discovery, FetchError, Refusal, Registry};

use agents_support::{Behaviour, CardServer, Gate, card_json, closed_port_url};

/// Short, so the slow agents make the tests wait one second, not five.
const TIMEOUT: Duration = Duration::from_secs(1);

fn agent(id: &str, url: &str) -> AgentConfig {
    AgentConfig {
        id: id.into(),
        url: url.into(),
        version: None,
        token_env: None,
        api_key_env: None,
        delegator: None,
        oauth2: None,
    }
}

async fn discover(agents: &[AgentConfig]) -> Discovery {
    let own = default_card("http://127.0.0.1:8080");
    Registry::discover(own, "http://127.0.0.1:8080", agents, TIMEOUT).await
}

fn refusal_of<'a>(discovery: &'a Discovery, id: &str) -> &'a Refusal {
    &discovery
        .refused
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("{id} was not refused: {:?}", discovery.refused))
        .reason
}

fn with(card: Value, key: &str, value: Value) -> Value {
    let mut card = card;
    card[key] = value;
    card
}

#[tokio::test]
async fn a_well_behaved_agent_is_registered_with_its_card_and_interface_url() {
    let ledger = CardServer::card(|url| card_json(url, "Ledger", "Accounts.", &[])).await;
    let discovery = discover(&[agent("ledger", &ledger.url)]).await;
    assert!(discovery.refused.is_empty(), "{:?}", discovery.refused);
    let registered = discovery.registry.resolve(Some("ledger")).unwrap();
    assert_eq!(registered.card.name, "Ledger");
    assert_eq!(registered.interface_url(), ledger.url);
    assert_eq!(discovery.registry.ids(), ["self", "ledger"]);
}

#[tokio::test]
async fn each_faulty_agent_is_refused_with_its_reason_and_the_rest_are_registered() {
    let good = CardServer::card(|url| card_json(url, "Good", "Fine.", &[])).await;
    let slow = CardServer::start(Behaviour::Slow(
        Duration::from_secs(30),
        std::sync::Arc::new(|url: &str| card_json(url, "Slow", "Late.", &[])),
    ))
    .await;
    let down = closed_port_url().await;
    let secured = CardServer::card(|url| {
        with(
            card_json(url, "Secured", "Needs a token.", &[]),
            "securitySchemes",
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}),
        )
    })
    .await;
    let required = CardServer::card(|url| {
        with(
            card_json(url, "Payments", "Pays.", &[]),
            "capabilities",
            json!({"extensions": [{"uri": "https://example.com/ext/payments/v1", "required": true}]}),
        )
    })
    .await;
    let old = CardServer::card(|url| {
        json!({"name": "Old", "description": "0.3", "url": url, "protocolVersion": "0.3.0",
               "version": "1", "capabilities": {}, "skills": []})
    })
    .await;
    let missing = CardServer::start(Behaviour::Raw(404, "no card here".into())).await;
    let garbage = CardServer::start(Behaviour::Raw(200, "<html>hello</html>".into())).await;
    let discovery = discover(&[
        agent("good", &good.url),
        agent("slow", &slow.url),
        agent("down", &down),
        agent("secured", &secured.url),
        agent("payments", &required.url),
        agent("old", &old.url),
        agent("missing", &missing.url),
        agent("garbage", &garbage.url),
    ])
    .await;

    assert_eq!(discovery.registry.ids(), ["self", "good"]);
    assert_eq!(
        refusal_of(&discovery, "slow"),
        &Refusal::Fetch(FetchError::Timeout(TIMEOUT))
    );
    assert!(matches!(
        refusal_of(&discovery, "down"),
        Refusal::Fetch(FetchError::Unreachable { .. })
    ));
    assert_eq!(
        refusal_of(&discovery, "secured").to_string(),
        "the card requires authentication this harness is not configured for: scheme \"bearer\" (HTTP Bearer) needs a token: set agents[3].token_env"
    );
    assert_eq!(
        refusal_of(&discovery, "payments"),
        &Refusal::Card(CardProblem::RequiredExtension(
            "\"https://example.com/ext/payments/v1\"".into()
        ))
    );
    assert_eq!(
        refusal_of(&discovery, "old"),
        &Refusal::Card(CardProblem::NotVersion1)
    );
    assert!(matches!(
        refusal_of(&discovery, "missing"),
        Refusal::Fetch(FetchError::Status { status: 404, .. })
    ));
    assert!(matches!(
        refusal_of(&discovery, "garbage"),
        Refusal::Fetch(FetchError::Malformed(_))
    ));
    let order: Vec<&str> = discovery.refused.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        order,
        [
            "slow", "down", "secured", "payments", "old", "missing", "garbage"
        ],
        "refusals are reported in configuration order"
    );
}

#[tokio::test]
async fn an_agent_that_requires_our_own_task_extension_is_registered() {
    let peer = CardServer::card(|url| {
        with(
            card_json(url, "Peer", "Another harness.", &[]),
            "capabilities",
            json!({"extensions": [{"uri": EXTENSION_URI, "required": true}]}),
        )
    })
    .await;
    let discovery = discover(&[agent("peer", &peer.url)]).await;
    assert!(discovery.refused.is_empty(), "{:?}", discovery.refused);
}

#[tokio::test]
async fn an_agent_whose_card_points_back_at_this_harness_is_not_registered_and_the_log_says_so() {
    let (logs, _guard) = support::captured_logs::CapturedLogs::on_this_thread();
    // The card is served elsewhere, but its interface is this harness under another spelling.
    let mirror =
        CardServer::card(|_| card_json("HTTP://127.0.0.1:8080/", "Mirror", "Me.", &[])).await;
    let good = CardServer::card(|url| card_json(url, "Good", "Fine.", &[])).await;
    let discovery = discover(&[
        agent("mirror", &mirror.url),
        // Listed at this harness's own base URL: refused without a fetch.
        agent("itself", "http://127.0.0.1:8080/"),
        agent("good", &good.url),
    ])
    .await;
    assert_eq!(discovery.registry.ids(), ["self", "good"]);
    assert_eq!(
        refusal_of(&discovery, "mirror").to_string(),
        "its card's interface URL \"HTTP://127.0.0.1:8080/\" is this harness's own base URL: the agent would be `self` under another id, and delegating to it would loop back here; give sub-tasks to self instead"
    );
    assert!(matches!(
        refusal_of(&discovery, "itself"),
        Refusal::OwnUrl {
            what: "the agent's url",
            ..
        }
    ));
    let log = logs.text();
    assert!(
        log.lines().any(|line| line.contains("agent=mirror")
            && line.contains("agents: not registered: its card's interface URL")
            && line.contains("own base URL")),
        "{log}"
    );
}

#[tokio::test]
async fn a_card_larger_than_the_body_cap_is_refused_without_being_read_whole() {
    let huge = "x".repeat(tiny_harness::work::agents::card_fetch::MAX_CARD_BYTES + 1);
    let big = CardServer::card(move |url| card_json(url, "Big", &huge, &[])).await;
    let discovery = discover(&[agent("big", &big.url)]).await;
    assert_eq!(
        refusal_of(&discovery, "big"),
        &Refusal::Fetch(FetchError::TooLarge)
    );
}

#[tokio::test]
async fn all_cards_are_fetched_at_once_so_start_up_waits_for_the_slowest_not_the_sum() {
    const AGENTS: usize = 5;
    // Each card server holds its answer until all five requests are in flight: fetched one
    // after another, no card would be answered before the gate gives up.
    let gate = Gate::new(AGENTS);
    let mut servers = Vec::new();
    for _ in 0..AGENTS {
        servers.push(
            CardServer::start(Behaviour::Gated(
                gate.clone(),
                std::sync::Arc::new(|url: &str| card_json(url, "Slowish", "Takes a while.", &[])),
            ))
            .await,
        );
    }
    let agents: Vec<AgentConfig> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| agent(&format!("a{i}"), &s.url))
        .collect();
    // A fetch timeout longer than the gate's guard, so that only the order of the fetches
    // decides the outcome, never how busy the machine is.
    let own = default_card("http://127.0.0.1:8080");
    let discovery = Registry::discover(
        own,
        "http://127.0.0.1:8080",
        &agents,
        Gate::GIVE_UP + Duration::from_secs(10),
    )
    .await;
    assert_eq!(
        gate.most_in_flight(),
        AGENTS,
        "the card fetches did not all run at once"
    );
    assert_eq!(
        discovery.registry.ids().len(),
        AGENTS + 1,
        "{:?}",
        discovery.refused
    );
}

#[tokio::test]
async fn resolving_an_unknown_id_or_a_url_contacts_nothing() {
    let ledger = CardServer::card(|url| card_json(url, "Ledger", "Accounts.", &[])).await;
    let stranger = CardServer::card(|url| card_json(url, "Stranger", "Not configured.", &[])).await;
    let discovery = discover(&[agent("ledger", &ledger.url)]).await;
    let hits = (ledger.hits(), stranger.hits());
    for id in [
        stranger.url.as_str(),
        ledger.url.as_str(),
        "stranger",
        "",
        "../ledger",
    ] {
        let err = discovery.registry.resolve(Some(id)).unwrap_err();
        assert_eq!(err.code(), "agent.unknown");
        assert_eq!(err.valid_ids, ["self", "ledger"]);
    }
    assert_eq!(
        (ledger.hits(), stranger.hits()),
        hits,
        "no card server was contacted"
    );
    assert_eq!(hits, (1, 0));
}
