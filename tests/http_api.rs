//! The OpenAI-compatible HTTP API through the real binary, driven by the official `openai`
//! Python client (PyPI, `tests/api/openai_client.py`): a completion whole and streamed, the
//! model list, a conversation kept by name across requests, a wrong key and an unknown model
//! refused as OpenAI refuses them; a confirmation an API turn waits for, answered from outside.
//!
//! Needs `.ci/mcp-tools` (the venv holds `openai`); without it these tests fail saying so.

mod support;

use serde_json::{Value, json};
use support::daemon::World;
use support::llm::Reply;
use support::mcp::python;

const KEY: &str = "api-test-key-0123456789abcdef";

async fn world() -> (World, String) {
    let port = support::http::free_port();
    let mut w = World::new("").await;
    w.set_env("HERMES_API_KEY", KEY);
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    (w, format!("http://127.0.0.1:{port}/v1"))
}

/// Run the `openai` client with `steps`; one answer per step.
fn openai(w: &World, base: &str, key: &str, steps: &[Value]) -> Vec<Value> {
    let mut cmd = w.command_for(&python());
    cmd.arg(format!(
        "{}/tests/api/openai_client.py",
        env!("CARGO_MANIFEST_DIR")
    ))
    .args([base, key]);
    cmd.args(steps.iter().map(Value::to_string));
    let out = cmd.output().expect("run the openai client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "openai client failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_client_completes_streams_keeps_a_conversation_and_is_refused_properly() {
    let (mut w, base) = world().await;
    let _daemon = w.start_logging("HTTP API listening").await;
    w.llm
        .push(Reply::text("Hi from hermes.").with_usage(120, 7));
    w.llm
        .push(Reply::text("Streaming works, one piece at a time."));
    w.llm.set_default(|req| {
        let seen = req.messages().iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("one piece at a time"))
        });
        Reply::text(format!("I remember: {seen}"))
    });
    let user = |text: &str| json!([{"role": "user", "content": text}]);
    let answers = openai(
        &w,
        &base,
        KEY,
        &[
            json!({"do": "complete", "messages": user("say hi")}),
            json!({"do": "complete", "messages": user("stream please"), "stream": true, "user": "notes"}),
            json!({"do": "complete", "messages": user("what did you say?"), "user": "notes"}),
            json!({"do": "models"}),
            json!({"do": "complete", "messages": user("x"), "model": "gpt-none"}),
        ],
    );
    assert_eq!(answers[0]["text"], "Hi from hermes.", "{}", answers[0]);
    assert_eq!(answers[0]["finish"], "stop");
    assert_eq!(
        answers[0]["usage"]["prompt_tokens"], 120,
        "usage is the turn's"
    );
    assert_eq!(answers[0]["usage"]["completion_tokens"], 7);
    assert_eq!(
        answers[1]["text"], "Streaming works, one piece at a time.",
        "{}",
        answers[1]
    );
    assert_eq!(answers[1]["finish"], "stop");
    assert!(
        w.llm.requests()[1].is_stream() && answers[1]["chunks"].as_u64() >= Some(4),
        "streamed from the model through to the client: {}",
        answers[1]
    );
    assert!(
        answers[1]["usage"]["total_tokens"].as_u64().is_some(),
        "{}",
        answers[1]
    );
    assert_eq!(
        answers[2]["text"], "I remember: true",
        "the named conversation keeps its history: {}",
        answers[2]
    );
    assert_eq!(answers[3]["models"], json!(["hermes", "test-model"]));
    assert_eq!(answers[4]["error"], "NotFoundError", "{}", answers[4]);
    assert_eq!(answers[4]["status"], 404);

    // A wrong key: refused before anything reaches the agent.
    let requests = w.llm.requests().len();
    let refused = openai(
        &w,
        &base,
        "not-the-key-0123456789",
        &[
            json!({"do": "complete", "messages": user("hello")}),
            json!({"do": "models"}),
        ],
    );
    for r in &refused {
        assert_eq!(r["error"], "AuthenticationError", "{r}");
        assert_eq!(r["status"], 401);
    }
    assert_eq!(
        w.llm.requests().len(),
        requests,
        "no model call for a wrong key"
    );
    // Without a name the request's own messages are the conversation.
    w.llm.set_default(|req| {
        let text = req.last_user_text().unwrap_or_default();
        Reply::text(format!(
            "context seen: {}",
            text.contains("user: my name is Ada")
        ))
    });
    let stateless = openai(
        &w,
        &base,
        KEY,
        &[json!({"do": "complete", "messages": [
            {"role": "user", "content": "my name is Ada"},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "what is my name?"}
        ]})],
    );
    assert_eq!(
        stateless[0]["text"], "context seen: true",
        "{}",
        stateless[0]
    );
}
