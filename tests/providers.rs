//! Both model providers (OpenAI-compatible and Anthropic) against the fake LLM server, plain and
//! streamed: text deltas, tool calls, usage and prompt-cache fields, error classification, cut
//! streams, images, and keys kept out of errors.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use hermes::config::{ProviderKind, Secret};
use hermes::llm::{
    ChatMessage, ChatRequest, ChatResponse, FinishReason, Image, LlmError, Provider,
    ProviderSettings, ToolCall, ToolSchema, build,
};
use serde_json::{Value, json};
use support::llm::{FakeLlm, RecordedRequest, Reply};
use tokio::sync::mpsc;

const KEY: &str = "sk-test-0123456789abcdef";
const ANSWER: &str = "The quick brown fox jumps over the lazy dog, twice over.";

async fn fake_and(kind: ProviderKind) -> (FakeLlm, Arc<dyn Provider>) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let fake = FakeLlm::start().await;
    let provider = provider(kind, &fake.base_url(), KEY);
    (fake, provider)
}

fn provider(kind: ProviderKind, base_url: &str, key: &str) -> Arc<dyn Provider> {
    let settings = ProviderSettings {
        base_url: base_url.into(),
        api_key: Secret::new(key),
        timeout: Duration::from_secs(20),
        concurrency: hermes::llm::limit::Concurrency::Fixed(4),
    };
    build(kind, &settings).expect("provider builds")
}

fn request(messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        model: "fake-model".into(),
        messages,
        tools: vec![tool("read_file"), tool("current_time")],
        max_output_tokens: None,
    }
}

fn tool(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

fn ask(text: &str) -> ChatRequest {
    request(vec![
        ChatMessage::system("You are hermes, a helpful agent."),
        ChatMessage::user(text),
    ])
}

/// A streamed call: the answer and every delta sent while it ran.
async fn stream(
    p: &dyn Provider,
    req: &ChatRequest,
) -> (Result<ChatResponse, LlmError>, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let resp = p.stream(req, &tx).await;
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (resp, deltas)
}

fn last_request(fake: &FakeLlm) -> RecordedRequest {
    fake.requests().pop().expect("a request reached the fake")
}

fn args(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).expect("arguments are JSON")
}

const BOTH: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];

#[tokio::test]
async fn streamed_text_arrives_in_deltas_that_add_up_to_the_answer() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::text(ANSWER));
        let (resp, deltas) = stream(p.as_ref(), &ask("fox?")).await;
        let resp = resp.unwrap();
        assert!(deltas.len() > 3, "{kind:?}: {deltas:?}");
        assert_eq!(deltas.concat(), ANSWER, "{kind:?}");
        assert_eq!(resp.content, ANSWER);
        assert_eq!(resp.finish, FinishReason::Stop);
        assert!(last_request(&fake).is_stream());
    }
}

#[tokio::test]
async fn the_first_delta_arrives_while_the_answer_is_still_streaming() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::text(ANSWER).chunk_delay(Duration::from_millis(40)));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let call = tokio::spawn(async move { p.stream(&ask("fox?"), &tx).await });
        let first = rx.recv().await.expect("a delta");
        assert!(ANSWER.starts_with(&first));
        assert!(
            !call.is_finished(),
            "{kind:?}: the whole answer came at once"
        );
        assert_eq!(call.await.unwrap().unwrap().content, ANSWER);
    }
}

#[tokio::test]
async fn plain_answers_carry_text_and_usage() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::text("plain answer").with_usage(1234, 56));
        let resp = p.complete(&ask("hi")).await.unwrap();
        assert_eq!(resp.content, "plain answer");
        assert_eq!(resp.usage.completion_tokens, 56, "{kind:?}");
        assert_eq!(resp.model, "fake-model");
        assert!(!last_request(&fake).is_stream());
    }
}

#[tokio::test]
async fn a_streamed_tool_call_is_assembled() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        let input = json!({"path": "notes/a very long file name.md", "lines": [1, 2, 3]});
        fake.push(Reply::tool_call("read_file", input.clone()));
        let (resp, deltas) = stream(p.as_ref(), &ask("read it")).await;
        let resp = resp.unwrap();
        assert!(deltas.is_empty(), "{kind:?}: {deltas:?}");
        assert_eq!(resp.finish, FinishReason::ToolCalls);
        assert_eq!(resp.tool_calls.len(), 1);
        assert_eq!(resp.tool_calls[0].name, "read_file");
        assert!(!resp.tool_calls[0].id.is_empty());
        assert_eq!(args(&resp.tool_calls[0]), input, "{kind:?}");
    }
}

#[tokio::test]
async fn parallel_streamed_tool_calls_are_assembled_in_order() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        let (a, b) = (
            json!({"path": "first/file.txt"}),
            json!({"timezone": "Europe/Paris"}),
        );
        fake.push(Reply::text_and_tool_calls(
            "Looking both up.",
            vec![("read_file", a.clone()), ("current_time", b.clone())],
        ));
        let (resp, deltas) = stream(p.as_ref(), &ask("both")).await;
        let resp = resp.unwrap();
        assert_eq!(deltas.concat(), "Looking both up.");
        let calls = &resp.tool_calls;
        assert_eq!(calls.len(), 2, "{kind:?}");
        assert_eq!((calls[0].name.as_str(), args(&calls[0])), ("read_file", a));
        assert_eq!(
            (calls[1].name.as_str(), args(&calls[1])),
            ("current_time", b)
        );
        assert_ne!(calls[0].id, calls[1].id);
    }
}

#[tokio::test]
async fn tool_results_go_back_in_the_shape_each_api_accepts() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::tool_calls(vec![
            ("read_file", json!({"path": "a"})),
            ("read_file", json!({"path": "b"})),
        ]));
        fake.push(Reply::text("done"));
        let mut req = ask("read a and b");
        let (first, _) = stream(p.as_ref(), &req).await;
        let first = first.unwrap();
        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = first.tool_calls.clone();
        req.messages.push(asked);
        for (call, text) in first.tool_calls.iter().zip(["A", "B"]) {
            req.messages.push(ChatMessage::tool_result(call, text));
        }
        // The fake rejects unpaired tool calls (and, for Anthropic, results split over turns).
        let (second, _) = stream(p.as_ref(), &req).await;
        assert_eq!(second.unwrap().content, "done", "{kind:?}");
        let results = last_request(&fake).tool_results();
        let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
        let got: Vec<(&str, &str)> = results
            .iter()
            .map(|(i, t)| (i.as_str(), t.as_str()))
            .collect();
        assert_eq!(got, vec![(ids[0], "A"), (ids[1], "B")]);
    }
}

#[tokio::test]
async fn openai_stream_asks_for_and_reads_usage() {
    let (fake, p) = fake_and(ProviderKind::Openai).await;
    fake.push(Reply::text("counted").with_usage(321, 7));
    let (resp, _) = stream(p.as_ref(), &ask("count")).await;
    let usage = resp.unwrap().usage;
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (321, 7));
    let sent = last_request(&fake);
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn anthropic_requests_carry_the_version_key_and_max_tokens() {
    let (fake, p) = fake_and(ProviderKind::Anthropic).await;
    fake.push(Reply::text("ok"));
    p.complete(&ask("hi")).await.unwrap();
    let sent = last_request(&fake);
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert!(
        sent.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(sent.body["max_tokens"], 8192);
    assert_eq!(
        sent.system_text().as_deref(),
        Some("You are hermes, a helpful agent.")
    );
    assert_eq!(sent.tool_names(), ["read_file", "current_time"]);
}

/// Every `cache_control` breakpoint of an Anthropic request body, by place.
fn breakpoints(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut scan = |place: String, blocks: &Value| {
        let blocks = blocks.as_array().into_iter().flatten().enumerate();
        for (i, _) in blocks.filter(|(_, b)| b.get("cache_control").is_some()) {
            out.push(format!("{place}[{i}]"));
        }
    };
    scan("tools".into(), &body["tools"]);
    scan("system".into(), &body["system"]);
    for (n, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        scan(format!("messages[{n}]"), &m["content"]);
    }
    out
}

/// Tools, system and the first `n` messages, serialized in cache order.
fn prefix(body: &Value, n: usize) -> String {
    let msgs = &body["messages"].as_array().unwrap()[..n];
    format!(
        "{}{}{}",
        body["tools"],
        body["system"],
        Value::from(msgs.to_vec())
    )
}

#[tokio::test]
async fn anthropic_prompt_cache_is_read_back_on_the_next_turn() {
    let (fake, p) = fake_and(ProviderKind::Anthropic).await;
    fake.push(Reply::text("First answer."));
    fake.push(Reply::text("Second answer."));
    let mut req = ask("First question?");
    req.messages[0].content = "You are hermes. ".repeat(50);
    let first = p.complete(&req).await.unwrap();
    req.messages
        .push(ChatMessage::assistant(first.content.clone()));
    req.messages.push(ChatMessage::user("Second question?"));
    let (second, _) = stream(p.as_ref(), &req).await;
    let second = second.unwrap();

    assert_eq!(first.usage.cached_tokens, 0);
    assert!(first.usage.cache_write_tokens > 0);
    assert!(second.usage.cached_tokens > 0);
    // The whole first request was the cached prefix of the second.
    assert_eq!(second.usage.cached_tokens, first.usage.cache_write_tokens);
    assert!(
        second.usage.prompt_tokens > second.usage.cached_tokens + second.usage.cache_write_tokens
    );

    let sent = fake.requests();
    let (one, two) = (&sent[0].body, &sent[1].body);
    assert_eq!(
        breakpoints(one),
        ["tools[1]", "system[0]", "messages[0][0]"]
    );
    assert_eq!(
        breakpoints(two),
        ["tools[1]", "system[0]", "messages[0][0]", "messages[2][0]"]
    );
    assert_eq!(prefix(one, 1), prefix(two, 1));
}

#[tokio::test]
async fn rate_limits_are_classified_with_retry_after() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        let limited = LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
        };
        fake.push(Reply::rate_limited(7));
        assert_eq!(p.complete(&ask("hi")).await.unwrap_err(), limited);
        fake.push(Reply::rate_limited(7));
        let (resp, deltas) = stream(p.as_ref(), &ask("hi")).await;
        assert_eq!(resp.unwrap_err(), limited, "{kind:?}");
        assert!(deltas.is_empty());
    }
}

#[tokio::test]
async fn overload_is_retryable_and_bad_requests_are_not() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::overloaded());
        let (resp, _) = stream(p.as_ref(), &ask("hi")).await;
        assert!(
            matches!(resp, Err(LlmError::Unavailable(_))),
            "{kind:?}: {resp:?}"
        );
        let body = match kind {
            ProviderKind::Openai => json!({"error": {"message": "model not found"}}),
            ProviderKind::Anthropic => json!({"type": "error",
                "error": {"type": "not_found_error", "message": "model not found"}}),
        };
        fake.push(Reply::error(404, body));
        let err = p.complete(&ask("hi")).await.unwrap_err();
        assert_eq!(err, LlmError::Rejected("HTTP 404: model not found".into()));
        assert!(!err.is_retryable());
    }
}

#[tokio::test]
async fn a_stream_cut_midway_is_an_error_not_a_short_answer() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::text(ANSWER).cut_stream_after(3));
        let (resp, _) = stream(p.as_ref(), &ask("fox?")).await;
        let err = resp.expect_err("a cut stream must fail");
        assert!(err.is_retryable(), "{kind:?}: {err:?}");
        assert!(matches!(err, LlmError::Unavailable(_)), "{kind:?}: {err:?}");
    }
}

#[tokio::test]
async fn a_malformed_stream_is_an_error() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        fake.push(Reply::malformed());
        let (resp, _) = stream(p.as_ref(), &ask("hi")).await;
        let err = resp.expect_err("a malformed stream must fail");
        assert!(err.is_retryable(), "{kind:?}: {err:?}");
        fake.push(Reply::disconnect());
        let (resp, _) = stream(p.as_ref(), &ask("hi")).await;
        assert!(
            matches!(resp, Err(LlmError::Unavailable(_))),
            "{kind:?}: {resp:?}"
        );
    }
}

#[tokio::test]
async fn images_reach_each_api_in_its_shape() {
    for kind in BOTH {
        let (fake, p) = fake_and(kind).await;
        let mut look = ChatMessage::user("What is in this picture?");
        look.images = vec![Image {
            mime: "image/png".into(),
            base64: "iVBORw0KGgo=".into(),
        }];
        let (resp, _) = stream(p.as_ref(), &request(vec![look])).await;
        resp.unwrap();
        let sent = last_request(&fake);
        assert_eq!(
            sent.last_user_text().as_deref(),
            Some("What is in this picture?")
        );
        let content = &sent.messages()[0]["content"];
        match kind {
            ProviderKind::Openai => assert_eq!(
                content,
                &json!([
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ])
            ),
            ProviderKind::Anthropic => assert_eq!(
                content[0],
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                   "data": "iVBORw0KGgo="}})
            ),
        }
    }
}

#[tokio::test]
async fn a_wrong_key_is_unauthorized_and_never_echoed() {
    for kind in BOTH {
        let (fake, _) = fake_and(kind).await;
        fake.set_api_key(Some("the-right-key-0000"));
        let p = provider(kind, &fake.base_url(), KEY);
        let err = p.complete(&ask("hi")).await.unwrap_err();
        assert!(
            matches!(err, LlmError::Unauthorized(_)),
            "{kind:?}: {err:?}"
        );
        let (resp, _) = stream(p.as_ref(), &ask("hi")).await;
        let stream_err = resp.unwrap_err();
        if kind == ProviderKind::Openai {
            // This server quotes the key it was given; the error shows it masked.
            assert!(
                err.to_string().contains("Incorrect API key provided: ***"),
                "{err}"
            );
        }
        for e in [err, stream_err] {
            assert!(!e.to_string().contains(KEY), "{kind:?}: {e}");
            assert!(!format!("{e:?}").contains(KEY), "{kind:?}: {e:?}");
        }
    }
}

#[tokio::test]
async fn probes_list_models_and_a_missing_list_still_counts_as_reachable() {
    for kind in BOTH {
        let (_fake, p) = fake_and(kind).await;
        let said = p.probe().await.unwrap();
        assert!(said.contains("1 models listed"), "{kind:?}: {said}");
    }
    let (fake, _) = fake_and(ProviderKind::Anthropic).await;
    let p = provider(
        ProviderKind::Anthropic,
        &format!("{}/proxy/v1", fake.root_url()),
        KEY,
    );
    assert!(
        p.probe()
            .await
            .unwrap()
            .starts_with("anthropic @ 127.0.0.1")
    );
    let p = provider(
        ProviderKind::Openai,
        &format!("{}/proxy/v1", fake.root_url()),
        KEY,
    );
    assert!(matches!(p.probe().await, Err(LlmError::Rejected(_))));
}

#[tokio::test]
async fn a_server_that_ignores_stream_still_answers_in_one_delta() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let body = json!({"model": "local", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "whole answer"}}]});
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || async move { axum::Json(body) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let p = provider(
        ProviderKind::Openai,
        &format!("http://127.0.0.1:{port}/v1"),
        "",
    );
    let (resp, deltas) = stream(p.as_ref(), &ask("hi")).await;
    assert_eq!(resp.unwrap().content, "whole answer");
    assert_eq!(deltas, ["whole answer"]);
}
