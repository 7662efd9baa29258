//! hermes as an MCP server, driven by the Python SDK's client (`mcp` from PyPI,
//! `tests/mcp/client.py`): over stdio through `hermes mcp serve` and over Streamable HTTP at
//! `/mcp` on the admin listener. It lists and reads a conversation held through the fake
//! Telegram, finds it by search, sends to the chat exactly once per idempotency key (repeated
//! over both transports), answers a confirmation the person was asked; read only without
//! `allow_send`, blind to chats out of its reach, closed without the token.
//!
//! Needs `.ci/mcp-tools` (the venv); without it these tests fail saying so.

use crate::support;

use serde_json::{Value, json};
use support::daemon::{ALICE, BOB, World};
use support::llm::Reply;
use support::mcp::Client;
use support::{WAIT, wait_for};

const MCP_TOKEN: &str = "mcp-test-token-0123456789";

async fn world(serve: &str) -> World {
    let mut w = World::new(&format!("[mcp.serve]\n{serve}\n")).await;
    w.set_env("HERMES_MCP_TOKEN", MCP_TOKEN);
    w
}

/// The Telegram messages whose text holds `needle`.
fn copies(w: &World, needle: &str) -> usize {
    w.tg.sent()
        .iter()
        .filter(|m| m.visible_text.contains(needle))
        .count()
}

/// The conversation of `chat` in a `conversations_list` answer.
fn conversation_of(list: &Value, chat: &str) -> Option<Value> {
    list["conversations"]
        .as_array()?
        .iter()
        .find(|c| c["platform"] == "telegram" && c["chat"] == chat)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_reads_the_chat_sends_once_per_key_and_answers_a_confirmation() {
    let mut w = world("allow_send = true").await;
    w.llm.echo_tool_results();
    let _daemon = w.start().await;
    w.llm.push(Reply::text("The answer is forty-two."));
    w.tg.private_text(ALICE, "Alice", "what is the answer to everything?");
    w.tg.wait_sent(1, WAIT).await;

    // Over stdio: `hermes mcp serve`, started by the client.
    let mut stdio = Client::stdio(&w).await;
    assert_eq!(
        stdio.tools,
        [
            "approval_answer",
            "approvals_list",
            "conversation_read",
            "conversations_list",
            "message_send",
            "messages_search"
        ]
    );
    let list = stdio.ok("conversations_list", json!({})).await;
    let alice = conversation_of(&list, &ALICE.to_string()).unwrap_or_else(|| panic!("{list}"));
    assert_eq!(alice["kind"], "direct");
    let read = stdio
        .ok("conversation_read", json!({"conversation_id": alice["id"]}))
        .await;
    let texts: Vec<(String, String)> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().into(),
                m["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("user".into(), "what is the answer to everything?".into()),
            ("assistant".into(), "The answer is forty-two.".into())
        ],
        "{read}"
    );
    let found = stdio
        .ok("messages_search", json!({"query": "forty-two"}))
        .await;
    assert_eq!(
        found["results"][0]["conversation_id"], alice["id"],
        "{found}"
    );

    // Sent once, however often the call is repeated with its key.
    let send = json!({
        "platform": "telegram", "chat": ALICE.to_string(),
        "text": "A note from your coding agent.", "idempotency_key": "note-1"
    });
    let first = stdio.ok("message_send", send.clone()).await;
    assert_eq!(first["status"], "sent", "{first}");
    assert_eq!(first["repeat"], false);
    let again = stdio.ok("message_send", send.clone()).await;
    assert_eq!(again["repeat"], true, "{again}");
    assert_eq!(again["message_ids"], first["message_ids"]);
    let other = stdio
        .call(
            "message_send",
            json!({"platform": "telegram", "chat": ALICE.to_string(),
                   "text": "something else", "idempotency_key": "note-1"}),
        )
        .await;
    assert_eq!(other["isError"], true);
    assert!(
        other["text"]
            .as_str()
            .unwrap()
            .contains("was used for another message"),
        "{other}"
    );
    drop(stdio);

    // Over Streamable HTTP on the admin listener: the same service, the same key.
    let url = format!("{}/mcp", w.admin_url().await);
    let mut http = Client::http(&w, &url, MCP_TOKEN).await;
    let third = http.ok("message_send", send).await;
    assert_eq!(third["repeat"], true, "{third}");
    // A chat nobody allowed wrote in is out of reach.
    let stranger = http
        .call(
            "message_send",
            json!({"platform": "telegram", "chat": "999", "text": "hi", "idempotency_key": "x"}),
        )
        .await;
    assert!(
        stranger["text"].as_str().unwrap().contains("out of reach"),
        "{stranger}"
    );
    // The chat's rows go out in order: once this later one arrived, a second copy would have too.
    http.ok(
        "message_send",
        json!({"platform": "telegram", "chat": ALICE.to_string(),
               "text": "Second note.", "idempotency_key": "note-2"}),
    )
    .await;
    wait_for(
        WAIT,
        "the second note",
        || (copies(&w, "Second note.") == 1).then_some(()),
        || format!("{:?}", w.tg.sent()),
    )
    .await;
    assert_eq!(
        copies(&w, "A note from your coding agent."),
        1,
        "exactly once"
    );

    // A confirmation the person was asked, answered by the agent.
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo via-mcp-$((40 + 2))"}),
    ));
    let before = w.tg.sent().len();
    w.tg.private_text(ALICE, "Alice", "run the check");
    let ask = w.tg.wait_sent(before + 1, WAIT).await.remove(before);
    assert!(
        ask.visible_text.contains("Permission needed: terminal"),
        "{}",
        ask.visible_text
    );
    let pending = http.ok("approvals_list", json!({})).await;
    let approval = &pending["approvals"][0];
    assert_eq!(approval["tool"], "terminal", "{pending}");
    assert!(
        approval["detail"]
            .as_str()
            .unwrap()
            .contains("echo via-mcp-$((40 + 2))")
    );
    assert_eq!(approval["chat"], ALICE.to_string());
    let answered = http
        .ok(
            "approval_answer",
            json!({"id": approval["id"], "answer": "once"}),
        )
        .await;
    assert_eq!(answered["tool"], "terminal");
    wait_for(
        WAIT,
        "the confirmed command's output",
        || (copies(&w, "via-mcp-42") == 1).then_some(()),
        || format!("{:?}", w.tg.sent()),
    )
    .await;
    let gone = http
        .call(
            "approval_answer",
            json!({"id": approval["id"], "answer": "once"}),
        )
        .await;
    assert!(
        gone["text"].as_str().unwrap().contains("is waiting"),
        "{gone}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_by_default_blind_beyond_its_chats_and_closed_without_the_token() {
    let mut w = world(&format!("chats = [\"telegram:{BOB}\"]")).await;
    let _daemon = w.start().await;
    for (who, name, n) in [(ALICE, "Alice", 1), (BOB, "Bob", 2)] {
        w.llm.push(Reply::text(format!("hello {name}")));
        w.tg.private_text(who, name, &format!("hi, I am {name}"));
        w.tg.wait_sent(n, WAIT).await;
    }
    let url = format!("{}/mcp", w.admin_url().await);
    let mut client = Client::http(&w, &url, MCP_TOKEN).await;
    assert_eq!(
        client.tools,
        [
            "approvals_list",
            "conversation_read",
            "conversations_list",
            "messages_search"
        ],
        "nothing that acts"
    );
    let refused = client
        .call(
            "message_send",
            json!({"platform": "telegram", "chat": BOB.to_string(), "text": "x", "idempotency_key": "k"}),
        )
        .await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["text"].as_str().unwrap().contains("read only"),
        "{refused}"
    );

    // Only Bob's chat is within reach: Alice's conversation is not listed, read or found.
    let list = client.ok("conversations_list", json!({})).await;
    assert!(conversation_of(&list, &BOB.to_string()).is_some(), "{list}");
    assert!(
        conversation_of(&list, &ALICE.to_string()).is_none(),
        "{list}"
    );
    let found = client
        .ok("messages_search", json!({"query": "Alice"}))
        .await;
    assert_eq!(found["results"], json!([]), "{found}");
    let (_, out, _) = w.run(&["sessions", "list"]);
    let alice_id = out
        .lines()
        .find(|l| l.contains(&format!("telegram:{ALICE}")))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    let read = client
        .call(
            "conversation_read",
            json!({"conversation_id": alice_id.parse::<i64>().unwrap()}),
        )
        .await;
    assert!(
        read["text"]
            .as_str()
            .unwrap()
            .contains("there is no conversation"),
        "{read}"
    );

    // The bearer token guards /mcp; the admin endpoint's other paths are not its concern.
    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    for token in [None, Some("wrong-token-0123456789")] {
        let mut req = http
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401, "{token:?}");
    }
    // Without a token the service is off, and `hermes mcp serve` says how to turn it on.
    w.unset_env("HERMES_MCP_TOKEN");
    let (code, _, err) = w.run(&["mcp", "serve"]);
    assert!(
        !code.success() && err.contains("set mcp.serve.token"),
        "{err}"
    );
}
