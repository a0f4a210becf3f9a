//! Per-task models over real HTTP: a harness with a default OpenAI-compatible model and two named
//! ones (`fast`, OpenAI-compatible; `deep`, Anthropic), each a stub endpoint on loopback. A
//! trusted delegator's brief picks the model and the effort; the request lands on that endpoint
//! with the effort as its provider spells it. Untrusted or unknown choices create nothing.

mod models_support;

use serde_json::{Value, json};

use models_support::{EXT, Harness, ModelStub, STUB_INPUT_TOKENS, STUB_OUTPUT_TOKENS, status_text};

/// The three stubs and a harness pointed at them; `deep` answers at most 8192 tokens, so `high`
/// thinking is cut to half of that.
async fn harness() -> (Harness, ModelStub, ModelStub, ModelStub) {
    let default = ModelStub::start("default").await;
    let fast = ModelStub::start("fast").await;
    let deep = ModelStub::start("deep").await;
    let config = format!(
        "[model]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"house\"\n\
         [models.fast]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"small-and-quick\"\n\
         [models.deep]\nprovider = \"anthropic\"\nbase_url = \"{}\"\nmodel = \"claude-test\"\n\
         max_output_tokens = 8192\n",
        default.url, fast.url, deep.url
    );
    (Harness::start(&config).await, default, fast, deep)
}

fn brief(extra: Value) -> Value {
    let mut brief = json!({"name": "Summarise", "goal": "Summarise the March ledger"});
    brief
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    brief
}

#[tokio::test]
async fn a_trusted_brief_naming_a_model_runs_on_it_with_the_effort_as_that_provider_spells_it() {
    let (harness, default, fast, deep) = harness().await;

    let task = harness
        .create(
            true,
            brief(json!({"model": "deep", "reasoning_effort": "high"})),
        )
        .await
        .unwrap();
    let done = harness.finished(true, task["id"].as_str().unwrap()).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(status_text(&done), "answered by deep");
    let sent = deep.only_request("/v1/messages");
    assert_eq!(sent["model"], "claude-test");
    assert_eq!(sent["max_tokens"], 8192);
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096}),
        "high is 16384 tokens of thinking, cut to half of max_tokens"
    );
    assert!(default.requests().is_empty() && fast.requests().is_empty());
    assert_eq!(
        done["metadata"][EXT]["usage"],
        json!({"input_tokens": STUB_INPUT_TOKENS, "output_tokens": STUB_OUTPUT_TOKENS}),
        "the task shows what its model reported"
    );

    let task = harness
        .create(
            true,
            brief(json!({"model": "fast", "reasoning_effort": "low"})),
        )
        .await
        .unwrap();
    let done = harness.finished(true, task["id"].as_str().unwrap()).await;
    assert_eq!(status_text(&done), "answered by fast");
    let sent = fast.only_request("/v1/chat/completions");
    assert_eq!(sent["model"], "small-and-quick");
    assert_eq!(sent["reasoning_effort"], "low");
    assert!(default.requests().is_empty());

    // An effort without a model is the default model's.
    let task = harness
        .create(true, brief(json!({"reasoning_effort": "medium"})))
        .await
        .unwrap();
    let done = harness.finished(true, task["id"].as_str().unwrap()).await;
    assert_eq!(status_text(&done), "answered by default");
    let sent = default.only_request("/v1/chat/completions");
    assert_eq!(sent["model"], "house");
    assert_eq!(sent["reasoning_effort"], "medium");
    assert_eq!(deep.requests().len(), 1, "deep was not asked again");
    harness.stop().await;
}

#[tokio::test]
async fn a_task_without_a_model_or_effort_runs_on_the_default_with_no_effort_field() {
    let (harness, default, fast, deep) = harness().await;
    let task = harness.create(false, brief(json!({}))).await.unwrap();
    let done = harness.finished(false, task["id"].as_str().unwrap()).await;
    assert_eq!(status_text(&done), "answered by default");
    let sent = default.only_request("/v1/chat/completions");
    assert!(sent.get("reasoning_effort").is_none(), "{sent}");
    assert!(fast.requests().is_empty() && deep.requests().is_empty());
    harness.stop().await;
}

#[tokio::test]
async fn an_untrusted_creators_brief_naming_a_configured_model_is_refused_and_creates_nothing() {
    let (harness, default, fast, deep) = harness().await;
    for extra in [json!({"model": "fast"}), json!({"reasoning_effort": "low"})] {
        let error = harness.create(false, brief(extra)).await.unwrap_err();
        assert_eq!(error["code"], -32602);
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("only a trusted delegator may set this on a new task"),
            "{message}"
        );
    }
    assert_eq!(harness.task_count(false).await, 0);
    assert!(default.requests().is_empty() && fast.requests().is_empty());
    assert!(deep.requests().is_empty());
    harness.stop().await;
}

#[tokio::test]
async fn an_unknown_model_is_refused_naming_the_valid_ones_and_creates_nothing() {
    let (harness, default, fast, deep) = harness().await;
    let error = harness
        .create(true, brief(json!({"model": "gpt-9"})))
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32602, "invalid params");
    assert_eq!(
        error["message"],
        r#"invalid params: task.model: no model named "gpt-9"; valid models: deep, fast (or leave model out for the default)"#
    );
    let error = harness
        .create(
            true,
            brief(json!({"model": "fast", "reasoning_effort": "max"})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        error["message"],
        r#"invalid params: task.reasoning_effort: "max" is not an effort; use low, medium, high"#
    );
    assert_eq!(harness.task_count(true).await, 0);
    for stub in [&default, &fast, &deep] {
        assert!(stub.requests().is_empty());
    }
    harness.stop().await;
}
