//! Tests of the `session_search` tool: its output for the model, reading on, arguments.

use hermes_adapter::{Platform, SessionKey};
use serde_json::json;

use super::*;
use crate::llm::ChatMessage;
use crate::store::{Sessions, SqliteStore};

fn ctx_of(user: &str) -> ToolContext {
    ToolContext {
        session: SessionKey::direct(Platform::Telegram, user),
        ..ToolContext::for_tests()
    }
}

/// A session of `user` with `texts` (user and assistant in turn), started 2025-03-01 14:02 UTC.
async fn session(store: &SqliteStore, user: &str, texts: &[&str]) -> i64 {
    let key = SessionKey::direct(Platform::Telegram, user);
    let s = store.session_reset(&key, "test").await.unwrap();
    let msgs = texts
        .iter()
        .enumerate()
        .map(|(i, t)| match i % 2 {
            0 => ChatMessage::user(*t),
            _ => ChatMessage::assistant(*t),
        })
        .collect();
    store.append_messages(s.id, msgs).await.unwrap();
    store
        .call(move |c| {
            c.execute(
                "UPDATE sessions SET created_at = 1740837720000 WHERE id = ?1",
                [s.id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    s.id
}

#[tokio::test]
async fn output_shows_sessions_marked_hits_and_how_to_read_on() {
    let sqlite = SqliteStore::open_in_memory().unwrap();
    let store = &sqlite;
    let tool = SessionSearch::new(Store::new(sqlite.clone()));
    session(
        store,
        "1",
        &[
            "book a flight to Lisbon",
            "Done: TP 1234 on Friday",
            "thanks",
        ],
    )
    .await;
    session(store, "1", &["what was that Lisbon flight again?"]).await;
    session(store, "2", &["my flight to Lisbon is secret"]).await;

    let out = tool
        .call(json!({"query": "Lisbon flight", "limit": 5}), &ctx_of("1"))
        .await
        .unwrap();
    assert_eq!(
        out,
        "Conversations matching \"Lisbon\" \"flight\", newest first (* marks a match):\n\
         \n\
         Session 2 (telegram:1), started 2025-03-01 14:02 (this conversation)\n\
         * [#4] user: what was that Lisbon flight again?\n\
         \n\
         Session 1 (telegram:1), started 2025-03-01 14:02\n\
         * [#1] user: book a flight to Lisbon\n\
         [#2] assistant: Done: TP 1234 on Friday\n\
         [#3] user: thanks\n\
         \n\
         To read on in a conversation, call session_search with {\"read_from\": <message id>} \
         (e.g. the last id of an excerpt)."
    );
    assert!(!out.contains("secret"), "another user's history: {out}");

    let out = tool
        .call(json!({"query": "zanzibar"}), &ctx_of("1"))
        .await
        .unwrap();
    assert!(
        out.starts_with("No earlier conversation mentions \"zanzibar\""),
        "{out}"
    );
}

#[tokio::test]
async fn read_from_continues_after_the_id_and_only_in_scope() {
    let sqlite = SqliteStore::open_in_memory().unwrap();
    let store = &sqlite;
    let tool = SessionSearch::new(Store::new(sqlite.clone()));
    let texts: Vec<String> = (0..6).map(|i| format!("step {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    session(store, "1", &texts).await;
    session(store, "2", &["bob's own words"]).await;

    let out = tool
        .call(json!({"read_from": 2, "limit": 2}), &ctx_of("1"))
        .await
        .unwrap();
    assert_eq!(
        out,
        "Session 1 (telegram:1), started 2025-03-01 14:02; messages after #2:\n\
         [#3] user: step 2\n\
         [#4] assistant: step 3\n\
         To read on, call session_search with {\"read_from\": 4}."
    );
    let out = tool
        .call(json!({"read_from": 4}), &ctx_of("1"))
        .await
        .unwrap();
    assert!(
        out.ends_with("[#6] assistant: step 5\nEnd of this conversation."),
        "{out}"
    );

    let err = tool
        .call(json!({"read_from": 7}), &ctx_of("1"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no message #7"), "{err}");
    let out = tool.call(json!({"read_from": 6}), &ctx_of("2")).await;
    assert!(out.is_err(), "Bob cannot read Ann's conversation: {out:?}");
}

#[tokio::test]
async fn arguments_the_model_gets_wrong_are_explained() {
    let tool = SessionSearch::new(Store::open_in_memory().unwrap());
    let ctx = ctx_of("1");
    for (args, expected) in [
        (json!({}), "give `query`"),
        (json!({"query": "x", "read_from": 1}), "not both"),
        (json!({"query": "\"*\" ( -"}), "no words"),
        (json!({"read_from": "#12"}), "invalid type"),
        (json!({"query": "x", "limti": 2}), "unknown field"),
    ] {
        let err = tool.call(args.clone(), &ctx).await.unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(_)) && err.to_string().contains(expected),
            "{args}: {err}"
        );
    }
    let out = tool.call(json!({"query": "NEAR(a AND"}), &ctx).await;
    assert!(out.is_ok(), "{out:?}");
}

#[test]
fn long_messages_are_cut_around_the_match() {
    let long = format!(
        "{} the Zeppelin landed {}",
        "a".repeat(800),
        "b".repeat(800)
    );
    let cut = clip(&long, &["zeppelin".into()], 100);
    assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
    assert!(cut.contains("the Zeppelin landed"), "{cut}");
    assert_eq!(cut.chars().count(), 102);

    let head = clip(&long, &[], 100);
    assert_eq!(head, format!("{}…", "a".repeat(100)));
    assert_eq!(clip("two\n\nlines  here", &[], 100), "two lines here");
}
