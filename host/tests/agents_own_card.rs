//! `[card]`: what a harness says about itself on the card it serves, the defaults it keeps when
//! a key is absent, the configuration errors that stop it (exit 2, naming the setting), and a
//! second harness reading the first one's card into its own roster.

mod agents_support;

use std::process::Command;

use tiny_harness::base::protocol::card::default_card;
use tiny_harness::work::agents::own_card::{DEFAULT_SKILL_ID, default_skill};

use agents_support::{Harness, StubModel, agents_config, agents_section, instructions};

const HARNESS: &str = env!("CARGO_BIN_EXE_harness");

const LEDGER_CARD: &str = r#"
[card]
name = "Ledger"
description = "Answers questions about accounts and balances."
version = "2.1.0"

[[card.skills]]
id = "balances"
name = "Balances"
description = "The balance of one account on a date."
tags = ["accounts", "balances"]
examples = ["What was the balance of 1001 on 1 March?"]

[[card.skills]]
id = "transfers"
name = "Transfers"
"#;

#[tokio::test]
async fn the_served_card_carries_what_card_sets_and_its_skills_replace_the_default() {
    let harness = Harness::start(LEDGER_CARD).await;
    let card = harness.client.fetch_card().await.unwrap();
    assert_eq!(card.name, "Ledger");
    assert_eq!(
        card.description,
        "Answers questions about accounts and balances."
    );
    assert_eq!(card.version, "2.1.0");
    assert_eq!(
        card.skills.len(),
        2,
        "the configured skills replace the default one"
    );
    assert_eq!(card.skills[0].id, "balances");
    assert_eq!(card.skills[0].tags, ["accounts", "balances"]);
    assert_eq!(
        card.skills[0].examples,
        ["What was the balance of 1001 on 1 March?"]
    );
    assert_eq!(card.skills[1].description, "");
    assert_eq!(card.supported_interfaces[0].url, harness.base_url);
    harness.stop().await;
}

#[tokio::test]
async fn without_card_the_served_card_is_the_default_one_with_the_default_skill() {
    let harness = Harness::start("").await;
    let card = harness.client.fetch_card().await.unwrap();
    let default = default_card(&harness.base_url);
    assert_eq!(card.skills, [default_skill()]);
    assert_eq!(card.skills[0].id, DEFAULT_SKILL_ID);
    assert_eq!(
        card.skills[0].examples.len(),
        2,
        "the default skill carries its examples"
    );
    assert_eq!(
        tiny_harness::base::protocol::card::AgentCard {
            skills: default.skills.clone(),
            ..card
        },
        default
    );
    harness.stop().await;
}

#[tokio::test]
async fn an_absent_card_key_keeps_its_default() {
    let harness = Harness::start("[card]\nname = \"front-desk\"\n").await;
    let card = harness.client.fetch_card().await.unwrap();
    let default = default_card(&harness.base_url);
    assert_eq!(card.name, "front-desk");
    assert_eq!(card.description, default.description);
    assert_eq!(card.version, default.version);
    assert_eq!(card.skills, [default_skill()]);
    assert_eq!(card.capabilities, default.capabilities);
    harness.stop().await;
}

#[tokio::test]
async fn a_second_harness_lists_the_first_by_its_card_and_itself_by_its_own() {
    let ledger = Harness::start(LEDGER_CARD).await;
    let model = StubModel::start(vec![]).await;
    let front = Harness::start(&format!(
        "{}[card]\nname = \"Front desk\"\ndescription = \"Talks to customers.\"\n{}",
        model.config(),
        agents_config(&[("ledger", &ledger.base_url)])
    ))
    .await;
    front.run_task("What is the balance of 1001?").await;
    let section = agents_section(&instructions(&model.turn_requests()[0]));
    assert!(
        section.contains(
            "- self: Front desk — Talks to customers.\n  skills:\n  - General tasks: Works a task described in plain language with a language model and the tools its plugins provide: plans the work, asks the task's participants when it needs them, delegates sub-tasks to other A2A agents, and reports progress as it goes.\n\
- ledger: Ledger — Answers questions about accounts and balances.\n  skills:\n  - Balances: The balance of one account on a date.\n  - Transfers\n</untrusted>"
        ),
        "{section}"
    );
    assert!(!section.contains("2.1.0") && !section.contains("balances\""));
    front.stop().await;
    ledger.stop().await;
}

fn check(config: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, config).unwrap();
    let output = Command::new(HARNESS)
        .args(["check", "--config"])
        .arg(&path)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn each_invalid_card_setting_is_named_and_exits_2() {
    let cases = [
        ("[card]\nname = \"  \"\n", "card.name: must not be blank"),
        (
            "[card]\ndescription = \"\"\n",
            "card.description: must not be blank",
        ),
        (
            "[card]\nversion = \"\"\n",
            "card.version: must not be blank",
        ),
        (
            "[[card.skills]]\nid = \"a\"\nname = \"A\"\n[[card.skills]]\nid = \" \"\nname = \"B\"\n",
            "card.skills[1].id: must not be blank",
        ),
        (
            "[[card.skills]]\nid = \"a\"\nname = \"\"\n",
            "card.skills[0].name: must not be blank",
        ),
        (
            "[[card.skills]]\nid = \"a\"\nname = \"A\"\n[[card.skills]]\nid = \"a\"\nname = \"B\"\n",
            "card.skills[1].id: duplicate skill id `a`",
        ),
        ("[card]\nurl = \"http://x\"\n", "card.url: unknown setting"),
        (
            "[[card.skills]]\nid = \"a\"\nname = \"A\"\nsecret = 1\n",
            "card.skills[0].secret: unknown setting",
        ),
        (
            "[[card.skills]]\nname = \"A\"\n",
            "card.skills[0].id: is required but missing",
        ),
        (
            "[card]\nskills = []\n",
            "card.skills: must list at least one skill",
        ),
    ];
    for (config, expected) in cases {
        let (code, stderr) = check(config);
        assert_eq!(code, 2, "{config}: {stderr}");
        assert!(stderr.contains(expected), "{config}: {stderr}");
    }
}
