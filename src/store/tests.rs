//! Unit tests of the store against a real SQLite database.

use hermes_adapter::{
    Chat, ChatKind, GroupSessions, Message, Outbound, Platform, Sender, SessionKey, Trigger,
};

use super::*;
use crate::conversation::{ChatMessage, ToolCall, Usage};

pub(super) fn message(chat: &str, id: &str, text: &str) -> Message {
    Message {
        platform: Platform::Telegram,
        id: id.into(),
        chat: Chat {
            id: chat.into(),
            kind: ChatKind::Direct,
            title: None,
        },
        thread: None,
        sender: Sender {
            id: chat.into(),
            display_name: "Ann".into(),
            handle: None,
            is_bot: false,
        },
        text: text.into(),
        attachments: vec![],
        reply_to: None,
        sent_at: 0,
        subject: None,
        trigger: Trigger::Direct,
    }
}

pub(super) fn reply(chat: &str, key: &str) -> (Platform, Outbound) {
    (
        Platform::Telegram,
        Outbound::text(chat.into(), format!("re {key}"), key),
    )
}

#[tokio::test]
async fn migrations_are_recorded_and_reopening_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = Store::open(&path).unwrap();
    let v: usize = store
        .call(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(v, migrations::latest());
    drop(store);
    Store::open(&path).unwrap();
}

#[tokio::test]
async fn inbox_deduplicates_redelivery() {
    let store = Store::open_in_memory().unwrap();
    let m = message("5", "77", "hi");
    let first = store.inbox_insert(&m).await.unwrap();
    assert!(first.is_some());
    assert_eq!(store.inbox_insert(&m).await.unwrap(), None);
    // Same message id in another chat is a different message.
    assert!(
        store
            .inbox_insert(&message("6", "77", "hi"))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(store.inbox_new(0, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn inbox_flows_from_new_to_queued_to_done() {
    let store = Store::open_in_memory().unwrap();
    let m = message("5", "1", "hi");
    let id = store.inbox_insert(&m).await.unwrap().unwrap();
    let key = SessionKey::for_message(&m, GroupSessions::PerUser);
    store.inbox_queue(id, &key).await.unwrap();
    assert!(store.inbox_new(0, 10).await.unwrap().is_empty());
    assert_eq!(
        store.inbox_queued_sessions().await.unwrap(),
        vec![key.clone()]
    );
    let queued = store.inbox_queued_for(&key, 10).await.unwrap();
    assert_eq!(queued[0].message, m);
    store
        .reply_and_finish(vec![id], InboxOutcome::Command, vec![reply("5", "k1")])
        .await
        .unwrap();
    assert!(store.inbox_queued_for(&key, 10).await.unwrap().is_empty());
    assert_eq!(store.inbox_open_count().await.unwrap(), 0);
    assert_eq!(store.outbox_stats().await.unwrap().pending, 1);
}

#[tokio::test]
async fn outbox_sends_one_chat_in_order_and_chats_independently() {
    let store = Store::open_in_memory().unwrap();
    store
        .outbox_enqueue(vec![reply("a", "a1"), reply("a", "a2"), reply("b", "b1")])
        .await
        .unwrap();
    // Same key again: ignored.
    store.outbox_enqueue(vec![reply("a", "a1")]).await.unwrap();
    let now = hermes_adapter::now_millis();
    let due = store.outbox_due(now, 10).await.unwrap();
    let keys: Vec<_> = due
        .iter()
        .map(|r| r.outbound.idempotency_key.as_str())
        .collect();
    assert_eq!(keys, ["a1", "b1"]);

    // a1 is rate limited: a2 must wait behind it, b is unaffected.
    store
        .outbox_defer(due[0].id, now + 60_000, "429".into())
        .await
        .unwrap();
    store
        .outbox_mark_sent(due[1].id, "m1".into())
        .await
        .unwrap();
    assert!(store.outbox_due(now, 10).await.unwrap().is_empty());
    assert_eq!(store.outbox_next_due().await.unwrap(), Some(now + 60_000));

    let later = store.outbox_due(now + 60_000, 10).await.unwrap();
    assert_eq!(later[0].outbound.idempotency_key, "a1");
    store
        .outbox_mark_sent(later[0].id, "m2".into())
        .await
        .unwrap();
    let next = store.outbox_due(now + 60_000, 10).await.unwrap();
    assert_eq!(next[0].outbound.idempotency_key, "a2");
    store
        .outbox_mark_failed(next[0].id, "forbidden".into())
        .await
        .unwrap();
    assert_eq!(
        store.outbox_stats().await.unwrap(),
        OutboxStats {
            pending: 0,
            sent: 2,
            failed: 1
        }
    );
}

#[tokio::test]
async fn history_round_trips_tool_calls_and_inbox_messages_are_idempotent() {
    let store = Store::open_in_memory().unwrap();
    let key = SessionKey::direct(Platform::Telegram, "5");
    let s = store.session_active(&key).await.unwrap();
    assert_eq!(store.session_active(&key).await.unwrap(), s);

    store
        .append_inbox_messages(s.id, vec![(Some(1), "what time is it?".into())])
        .await
        .unwrap();
    store
        .append_inbox_messages(s.id, vec![(Some(1), "what time is it?".into())])
        .await
        .unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "current_time".into(),
        arguments: "{}".into(),
    };
    let mut asked = ChatMessage::assistant("");
    asked.tool_calls = vec![call.clone()];
    store
        .append_messages(
            s.id,
            vec![asked.clone(), ChatMessage::tool_result(&call, "12:00")],
        )
        .await
        .unwrap();
    store
        .commit_turn(TurnCommit {
            session_id: s.id,
            messages: vec![ChatMessage::assistant("It is noon.")],
            replies: vec![reply("5", "t1")],
            inbox_ids: vec![],
            record: TurnRecord {
                started_at: 0,
                iterations: 2,
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 5,
                    cached_tokens: 0,
                    cache_write_tokens: 0,
                },
                model: "m".into(),
                outcome: InboxOutcome::Replied,
            },
        })
        .await
        .unwrap();

    let h: Vec<ChatMessage> = store
        .history(s.id, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(
        h,
        vec![
            ChatMessage::user("what time is it?"),
            asked,
            ChatMessage::tool_result(&call, "12:00"),
            ChatMessage::assistant("It is noon."),
        ]
    );
    assert_eq!(store.history(s.id, 2).await.unwrap().len(), 2);
    let stats = store.session_stats(s.id).await.unwrap();
    assert_eq!(
        (stats.messages, stats.turns, stats.usage.prompt_tokens),
        (4, 1, 10)
    );
}

#[tokio::test]
async fn reset_starts_a_new_session_and_keeps_the_old_history_searchable() {
    let store = Store::open_in_memory().unwrap();
    let key = SessionKey::direct(Platform::Telegram, "5");
    let old = store.session_active(&key).await.unwrap();
    store
        .append_messages(old.id, vec![ChatMessage::user("the zebra password")])
        .await
        .unwrap();
    let new = store.session_reset(&key, "user /new").await.unwrap();
    assert_ne!(new.id, old.id);
    assert_eq!(store.session_active(&key).await.unwrap().id, new.id);
    assert!(store.history(new.id, 10).await.unwrap().is_empty());
    let hits: i64 = store
        .call(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'zebra'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(hits, 1);
}

#[tokio::test]
async fn migration_3_backfills_owner_and_trigram_index_of_existing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        migrations::apply_to_version(&mut conn, 2).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, key, platform, created_at, updated_at)
                 VALUES (1, 'telegram:-100:7', 'telegram', 0, 0),
                        (2, 'telegram:-100:*', 'telegram', 0, 0),
                        (3, 'not a key', 'telegram', 0, 0);
             INSERT INTO messages (session_id, role, content, created_at)
                 VALUES (1, 'user', '他说你好世界', 0),
                        (1, 'tool', '工具输出你好世界', 0),
                        (2, 'assistant', '你好世界 again', 0),
                        (3, 'user', '你好世界 lost', 0);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let owners: Vec<Option<String>> = store
        .call(|c| {
            Ok(c.prepare("SELECT owner FROM sessions ORDER BY id")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?)
        })
        .await
        .unwrap();
    assert_eq!(
        owners,
        [
            Some("telegram:-100:7".to_owned()),
            Some("telegram:-100:*".to_owned()),
            None
        ]
    );
    let indexed: i64 = store
        .call(|c| {
            c.execute(
                "INSERT INTO messages_trigram(messages_trigram) VALUES ('integrity-check')",
                [],
            )?;
            Ok(c.query_row(
                "SELECT COUNT(*) FROM messages_trigram WHERE messages_trigram MATCH '\"你好世界\"'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(indexed, 3, "user and assistant rows, not the tool result");
    let found = store
        .search_messages(
            "你好世界",
            SearchScope::Owner("telegram:-100:7".into()),
            5,
            0,
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].excerpts[0][0].content, "他说你好世界");
    let shared = store
        .search_messages(
            "你好世界",
            SearchScope::Owner("telegram:-100:*".into()),
            5,
            0,
        )
        .await
        .unwrap();
    assert_eq!(shared[0].excerpts[0][0].content, "你好世界 again");
    // New sessions get their owner when they are created.
    let s = store
        .session_active(&SessionKey::direct(Platform::Telegram, "9"))
        .await
        .unwrap();
    let owner: Option<String> = store
        .call(move |c| {
            Ok(
                c.query_row("SELECT owner FROM sessions WHERE id = ?1", [s.id], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap();
    assert_eq!(owner.as_deref(), Some("telegram:9"));
}
