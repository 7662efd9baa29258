//! The OpenAI-compatible HTTP API through the real binary, driven by the official `openai`
//! Python client (PyPI, `tests/api/openai_client.py`): a completion whole and streamed, the
//! model list, a conversation kept by name across requests, a wrong key and an unknown model
//! refused as OpenAI refuses them; the Responses API continuing a conversation by
//! `previous_response_id`, whole and streamed, and reading a response again; a confirmation an
//! API turn waits for, answered from outside; 200 concurrent streams, none mixed up.
//!
//! Needs `.ci/mcp-tools` (the venv holds `openai`); without it these tests fail saying so.

use crate::support;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_an_api_turn_waits_for_is_answered_from_outside() {
    const MCP_TOKEN: &str = "mcp-test-token-0123456789";
    let port = support::http::free_port();
    let mut w = World::new("[mcp.serve]\nallow_send = true\n").await;
    w.set_env("HERMES_API_KEY", KEY);
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    w.set_env("HERMES_MCP_TOKEN", MCP_TOKEN);
    let base = format!("http://127.0.0.1:{port}/v1");
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo api-ok-$((40 + 2))"}),
    ));
    let _daemon = w.start_logging("HTTP API listening").await;
    let asking = {
        let base = base.clone();
        let w_env = w.command_for(&python());
        tokio::task::spawn_blocking(move || {
            let mut cmd = w_env;
            cmd.arg(format!("{}/tests/api/openai_client.py", env!("CARGO_MANIFEST_DIR")))
                .args([&base, KEY])
                .arg(json!({"do": "complete", "messages": [{"role": "user", "content": "run the check"}]}).to_string());
            cmd.output().expect("run the openai client")
        })
    };
    // The MCP service sees it as the key's...
    let url = format!("{}/mcp", w.admin_url().await);
    let mut mcp = support::mcp::Client::http(&w, &url, MCP_TOKEN).await;
    let deadline = std::time::Instant::now() + support::WAIT;
    let approval = loop {
        let pending = mcp.ok("approvals_list", json!({})).await;
        if let Some(a) = pending["approvals"].as_array().and_then(|a| a.first()) {
            break a.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no confirmation asked: {}",
            w.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(approval["platform"], "api");
    assert_eq!(approval["requester"], "default", "the key is the person");
    // ... and the key answers it through the API's approvals endpoint.
    let http = reqwest::Client::new();
    let listed: Value = http
        .get(format!("{base}/hermes/approvals"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let prompt = &listed["data"][0];
    assert_eq!(prompt["id"], approval["id"], "{listed}");
    assert!(
        prompt["text"]
            .as_str()
            .unwrap()
            .contains("echo api-ok-$((40 + 2))"),
        "{listed}"
    );
    let other = http
        .post(format!(
            "{base}/hermes/approvals/{}",
            prompt["id"].as_str().unwrap()
        ))
        .bearer_auth("not-the-key-0123456789")
        .json(&json!({"answer": "once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 401);
    let answered = http
        .post(format!(
            "{base}/hermes/approvals/{}",
            prompt["id"].as_str().unwrap()
        ))
        .bearer_auth(KEY)
        .json(&json!({"answer": "once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200, "{:?}", answered.text().await);
    let out = asking.await.unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(
        answer["text"]
            .as_str()
            .unwrap_or_default()
            .contains("api-ok-42"),
        "the answer carries the confirmed call's output: {answer}"
    );
}

/// The deltas of one streamed response, joined, and whether it ended with `[DONE]`.
fn streamed_text(body: &str) -> (String, bool) {
    let mut text = String::new();
    let mut done = false;
    for data in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let v: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
        if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
            text.push_str(t);
        }
    }
    (text, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_streams_each_get_their_own_answer() {
    const KEYS: usize = 10;
    const PER_KEY: usize = 20;
    let port = support::http::free_port();
    let mut config = String::new();
    for k in 0..KEYS {
        config.push_str(&format!("[api.keys.k{k}]\ntoken_env = \"LOAD_KEY_{k}\"\n"));
    }
    let mut w = World::new(&config).await;
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    for k in 0..KEYS {
        w.set_env(
            &format!("LOAD_KEY_{k}"),
            &format!("load-key-{k}-0123456789abcdef"),
        );
    }
    w.llm.set_default(|req| {
        Reply::text(format!(
            "echo: {}",
            req.last_user_text().unwrap_or_default()
        ))
    });
    let daemon = w.start_logging("HTTP API listening").await;
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let http = reqwest::Client::new();
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..KEYS * PER_KEY {
        let (http, url) = (http.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let key = format!("load-key-{}-0123456789abcdef", i % KEYS);
            let said = format!("request {i} nonce {}", i * 7919);
            let t = std::time::Instant::now();
            let r = http
                .post(&url)
                .timeout(std::time::Duration::from_secs(120))
                .bearer_auth(key)
                .json(
                    &json!({"model": "hermes", "stream": true, "user": format!("load-{i}"),
                              "messages": [{"role": "user", "content": said}]}),
                )
                .send()
                .await
                .expect("send");
            assert_eq!(r.status(), 200, "request {i}");
            let body = r
                .text()
                .await
                .unwrap_or_else(|e| panic!("request {i} ({said}) got no whole answer: {e}"));
            (i, said, body, t.elapsed())
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        let (i, said, body, took) = task.await.unwrap();
        let (text, done) = streamed_text(&body);
        assert!(done, "request {i} ended with [DONE]: {body}");
        assert!(
            text.starts_with("echo: ") && text.ends_with(&said),
            "request {i} got its own answer, not another's: {text:?}"
        );
        latencies.push(took);
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    println!(
        "200 concurrent streams: all in {:?}, p50 {:?}, p99 {:?}, daemon RSS {} KiB",
        started.elapsed(),
        at(0.5),
        at(0.99),
        support::sandboxed::rss_kib(daemon.pid())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_continue_a_conversation_held_here_whole_and_streamed() {
    let (mut w, base) = world().await;
    let _daemon = w.start_logging("HTTP API listening").await;
    w.llm.push(Reply::text("Noted: the launch code is tulip."));
    w.llm.set_default(|req| {
        let seen = req.messages().iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("launch code is tulip"))
        });
        Reply::text(format!("Earlier answer in view: {seen}."))
    });
    let answers = openai(
        &w,
        &base,
        KEY,
        &[
            json!({"do": "respond", "input": "remember: the launch code is tulip"}),
            json!({"do": "respond", "input": "what was the code?", "previous_from": 0}),
            json!({"do": "respond", "input": "and now?", "previous_from": 1, "stream": true}),
            json!({"do": "retrieve", "id_from": 1}),
            json!({"do": "respond", "input": "a fresh start"}),
        ],
    );
    assert_eq!(
        answers[0]["text"], "Noted: the launch code is tulip.",
        "{}",
        answers[0]
    );
    assert_eq!(answers[0]["status"], "completed");
    assert_eq!(
        answers[1]["text"], "Earlier answer in view: true.",
        "previous_response_id continues the conversation: {}",
        answers[1]
    );
    assert_eq!(
        answers[2]["text"], "Earlier answer in view: true.",
        "{}",
        answers[2]
    );
    assert_eq!(
        answers[2]["deltas"], answers[2]["text"],
        "the deltas add up"
    );
    let kinds: Vec<&str> = answers[2]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kinds.first(), Some(&"response.created"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"response.completed"), "{kinds:?}");
    assert!(kinds.contains(&"response.output_text.delta"), "{kinds:?}");
    assert_eq!(
        answers[3]["id"], answers[1]["id"],
        "retrieved: {}",
        answers[3]
    );
    assert_eq!(answers[3]["text"], answers[1]["text"]);
    assert_eq!(
        answers[4]["text"], "Earlier answer in view: false.",
        "without a previous response it is a new conversation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_over_its_share_is_told_to_retry_and_nothing_is_lost() {
    let port = support::http::free_port();
    let mut w = World::new("[api]\nrequests_per_key = 1\n").await;
    w.set_env("HERMES_API_KEY", KEY);
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    let gate = support::llm::Gate::new();
    w.llm
        .push(Reply::text("the first, when let through").after(gate.clone()));
    let _daemon = w.start_logging("HTTP API listening").await;
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let http = reqwest::Client::new();
    let ask = |conversation: &str| {
        http.post(&url).bearer_auth(KEY).json(&json!({
            "model": "hermes", "user": conversation,
            "messages": [{"role": "user", "content": "hello"}]
        }))
    };
    let first = tokio::spawn(ask("one").send());
    w.llm.wait_requests(1, support::WAIT).await;
    let second = ask("two").send().await.unwrap();
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "2");
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
    gate.open();
    let first: Value = first.await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(
        first["choices"][0]["message"]["content"],
        "the first, when let through"
    );
    // Its share back, the key is served again.
    w.llm.push(Reply::text("and the next"));
    let again: Value = ask("two").send().await.unwrap().json().await.unwrap();
    assert_eq!(again["choices"][0]["message"]["content"], "and the next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_header_names_the_conversation_and_cors_is_only_for_listed_origins() {
    let port = support::http::free_port();
    let mut w = World::new("[api]\ncors_origins = [\"https://chat.example.com\"]\n").await;
    w.set_env("HERMES_API_KEY", KEY);
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    w.llm.push(Reply::text("Noted: blue."));
    w.llm.set_default(|req| {
        let seen = req.messages().iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Noted: blue."))
        });
        Reply::text(format!("remembered: {seen}"))
    });
    let _daemon = w.start_logging("HTTP API listening").await;
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let http = reqwest::Client::new();
    let ask = |text: &str, origin: &str| {
        http.post(&url)
            .bearer_auth(KEY)
            .header("X-Hermes-Session", "colours")
            .header("Origin", origin)
            .json(&json!({"model": "hermes", "messages": [{"role": "user", "content": text}]}))
            .send()
    };
    let first = ask("my colour is blue", "https://chat.example.com")
        .await
        .unwrap();
    assert_eq!(
        first.headers()["access-control-allow-origin"],
        "https://chat.example.com"
    );
    let second = ask("which colour?", "https://evil.example").await.unwrap();
    assert!(
        second
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "an origin not listed gets no CORS header"
    );
    let body: Value = second.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"], "remembered: true",
        "the header names one conversation across requests: {body}"
    );
    // Over the body limit: refused before anything is stored.
    let requests = w.llm.requests().len();
    let huge = "x".repeat(5 << 20);
    let r = http
        .post(&url)
        .bearer_auth(KEY)
        .json(&json!({"model": "hermes", "messages": [{"role": "user", "content": huge}]}))
        .send()
        .await;
    // The listener refuses it from its Content-Length: a 413, or the connection closed while
    // the client is still writing.
    match r {
        Ok(r) => assert_eq!(r.status(), 413),
        Err(e) => assert!(e.is_request(), "{e}"),
    }
    assert_eq!(
        w.llm.requests().len(),
        requests,
        "nothing reached the agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_replaces_its_streamed_preview_ends_the_request() {
    // The model writes slowly, so the preview is posted (and edited) before the turn ends; the
    // answer then replaces the preview through the outbox. That replacement once reached the
    // API as a plain edit, which could not say "this is the answer": the request waited for
    // its timeout.
    let port = support::http::free_port();
    let mut w = World::new("[api]\nrequest_timeout_secs = 60\n").await;
    w.set_env("HERMES_API_KEY", KEY);
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    let base = format!("http://127.0.0.1:{port}/v1");
    let _daemon = w.start_logging("HTTP API listening").await;
    w.llm.push(
        Reply::text("Slowly, one careful piece after another, the answer arrives.")
            .chunk_delay(std::time::Duration::from_millis(250)),
    );
    let http = reqwest::Client::new();
    let started = std::time::Instant::now();
    let r = http
        .post(format!("{base}/chat/completions"))
        .bearer_auth(KEY)
        .timeout(std::time::Duration::from_secs(45))
        .json(&json!({"model": "hermes", "messages": [{"role": "user", "content": "go slowly"}]}))
        .send()
        .await
        .expect("an answer before the client's timeout");
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Slowly, one careful piece after another, the answer arrives.",
        "{body}"
    );
    assert!(
        w.llm.requests()[0].is_stream(),
        "the model call streamed (a preview was posted)"
    );
    println!("answered in {:?}", started.elapsed());
}
