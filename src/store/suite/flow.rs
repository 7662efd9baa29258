//! The inbox, the outbox and the history: deduplication, the status flow, per-chat order,
//! tool calls round-tripping, idempotent appends.

use hermes_adapter::{GroupSessions, Platform, SessionKey};

use super::{message, reply};
use crate::conversation::{ChatMessage, ToolCall, Usage};
use crate::store::*;

pub(crate) async fn inbox_deduplicates_redelivery(store: Store) {
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
    assert_eq!(store.inbox_new("me", 0, 10).await.unwrap().len(), 2);
}

pub(crate) async fn inbox_flows_from_new_to_queued_to_done(store: Store) {
    let m = message("5", "1", "hi");
    let id = store.inbox_insert(&m).await.unwrap().unwrap();
    let key = SessionKey::for_message(&m, GroupSessions::PerUser);
    store.inbox_queue(id, &key).await.unwrap();
    assert!(store.inbox_new("me", 0, 10).await.unwrap().is_empty());
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

pub(crate) async fn outbox_sends_one_chat_in_order_and_chats_independently(store: Store) {
    store
        .outbox_enqueue(vec![reply("a", "a1"), reply("a", "a2"), reply("b", "b1")])
        .await
        .unwrap();
    // Same key again: ignored.
    store.outbox_enqueue(vec![reply("a", "a1")]).await.unwrap();
    let now = hermes_adapter::now_millis();
    let due = store.outbox_due("me", now, 10, &[]).await.unwrap();
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
    assert!(
        store
            .outbox_due("me", now, 10, &[])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.outbox_next_due().await.unwrap(), Some(now + 60_000));

    let later = store.outbox_due("me", now + 60_000, 10, &[]).await.unwrap();
    assert_eq!(later[0].outbound.idempotency_key, "a1");
    store
        .outbox_mark_sent(later[0].id, "m2".into())
        .await
        .unwrap();
    let next = store.outbox_due("me", now + 60_000, 10, &[]).await.unwrap();
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
            failed: 1,
            poisoned: 0,
        }
    );
}

pub(crate) async fn history_round_trips_tool_calls_and_inbox_messages_are_idempotent(store: Store) {
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

pub(crate) async fn recent_chats_name_the_last_message_of_each_chat_and_thread(store: Store) {
    let before = hermes_adapter::now_millis();
    for (chat, id, thread) in [
        ("a", "1", None),
        ("b", "2", None),
        ("a", "3", None),
        ("a", "4", Some("t1")),
        ("b", "5", None),
    ] {
        let mut m = message(chat, id, "hi");
        m.thread = thread.map(Into::into);
        store.inbox_insert(&m).await.unwrap();
    }
    let mut other = message("c", "6", "hi");
    other.platform = Platform::Discord;
    store.inbox_insert(&other).await.unwrap();
    let seen = store
        .inbox_recent_chats(Platform::Telegram, before, 10)
        .await
        .unwrap();
    let got: Vec<(&str, Option<&str>, &str)> = seen
        .iter()
        .map(|s| {
            (
                s.chat.as_str(),
                s.thread.as_ref().map(|t| t.as_str()),
                s.last.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("b", None, "5"), ("a", Some("t1"), "4"), ("a", None, "3")],
        "most recent first, one per chat and thread, other platforms apart"
    );
    assert!(seen.iter().all(|s| s.at >= before));
    assert_eq!(
        store
            .inbox_recent_chats(Platform::Telegram, before, 1)
            .await
            .unwrap()
            .len(),
        1,
        "bounded"
    );
    assert!(
        store
            .inbox_recent_chats(
                Platform::Telegram,
                hermes_adapter::now_millis() + 60_000,
                10
            )
            .await
            .unwrap()
            .is_empty(),
        "nothing stored since then"
    );
}
