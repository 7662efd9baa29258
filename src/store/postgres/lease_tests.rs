//! Several processes on one PostgreSQL store, played by several registrations on one pool:
//! leases change hands only when their holder stops beating, a stale holder's writes are
//! fenced, and inbox and outbox rows are claimed by one process each.

use std::collections::HashSet;

use hermes_adapter::{Platform, now_millis};

use super::tests::fresh;
use crate::conversation::ChatMessage;
use crate::store::fence::{self, Fence};
use crate::store::suite::{dm, message, reply};
use crate::store::{ProcessInfo, Store, StoreError, session_lease};

fn process(name: &str) -> ProcessInfo {
    ProcessInfo {
        id: name.into(),
        host: "test".into(),
        pid: 1,
        version: "0".into(),
    }
}

/// Let `who`'s registration lapse (as if it had been paused or killed).
async fn lapse(store: &Store, who: &ProcessInfo) {
    store.process_beat(who, 1).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
}

#[tokio::test]
async fn a_lease_passes_only_when_its_holder_stops_beating_and_the_stale_holder_is_fenced() {
    let store = fresh().await;
    let (a, b) = (process("a"), process("b"));
    store.process_beat(&a, 60_000).await.unwrap();
    store.process_beat(&b, 60_000).await.unwrap();
    let key = dm("7");
    let lease = session_lease(&key);
    let first = store
        .lease_take(&lease, &a.id)
        .await
        .unwrap()
        .expect("free");
    assert_eq!(
        store.lease_take(&lease, &a.id).await.unwrap(),
        Some(first),
        "renewed, same token"
    );
    assert_eq!(
        store.lease_take(&lease, &b.id).await.unwrap(),
        None,
        "a is live"
    );

    let session = store.session_active(&key).await.unwrap();
    let stale = Fence {
        lease: lease.clone(),
        token: first,
    };
    fence::scope(
        stale.clone(),
        store.append_messages(session.id, vec![ChatMessage::user("a1")]),
    )
    .await
    .expect("the holder writes");

    lapse(&store, &a).await;
    let second = store
        .lease_take(&lease, &b.id)
        .await
        .unwrap()
        .expect("a lapsed");
    assert!(
        second > first,
        "the token grows when the lease changes hands"
    );
    assert!(!store.lease_held(&lease, &a.id, first).await.unwrap());
    assert!(
        store.process_beat(&a, 60_000).await.unwrap().lapsed,
        "a learns it lapsed"
    );
    assert_eq!(
        store.lease_take(&lease, &a.id).await.unwrap(),
        None,
        "b is live now"
    );

    // a resumes and tries to write its stale turn: refused, nothing stored.
    let err = fence::scope(
        stale.clone(),
        store.append_messages(session.id, vec![ChatMessage::user("stale")]),
    )
    .await
    .expect_err("fenced");
    assert!(matches!(err, StoreError::Fenced(_)), "{err}");
    let fresh_fence = Fence {
        lease: lease.clone(),
        token: second,
    };
    fence::scope(
        fresh_fence,
        store.append_messages(session.id, vec![ChatMessage::user("b1")]),
    )
    .await
    .expect("the new holder writes");
    let texts: Vec<String> = store
        .history(session.id, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(texts, ["a1", "b1"]);

    // Released, the lease is free for anyone, with a new token.
    store.lease_release(&lease, &b.id, second).await.unwrap();
    let third = store
        .lease_take(&lease, &a.id)
        .await
        .unwrap()
        .expect("released");
    assert!(third > second);
}

#[tokio::test]
async fn each_inbox_row_is_claimed_by_one_router_and_a_vanished_routers_rows_pass_on() {
    let store = fresh().await;
    let (a, b) = (process("a"), process("b"));
    store.process_beat(&a, 60_000).await.unwrap();
    store.process_beat(&b, 60_000).await.unwrap();
    for i in 0..40 {
        store
            .inbox_insert(&message(&format!("c{}", i % 5), &i.to_string(), "hi"))
            .await
            .unwrap();
    }
    let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
    loop {
        let (x, y) = tokio::join!(store.inbox_new(&a.id, 0, 8), store.inbox_new(&b.id, 0, 8));
        let (x, y) = (x.unwrap(), y.unwrap());
        if x.is_empty() && y.is_empty() {
            break;
        }
        seen_a.extend(x.iter().map(|r| r.id));
        seen_b.extend(y.iter().map(|r| r.id));
    }
    let all: HashSet<i64> = seen_a.iter().chain(&seen_b).copied().collect();
    assert_eq!(all.len(), 40, "every row claimed");
    assert_eq!(seen_a.len() + seen_b.len(), 40, "no row claimed twice");

    // a claimed rows and vanished before routing them: b gets them once a lapsed.
    assert!(store.inbox_new(&b.id, 0, 100).await.unwrap().is_empty());
    lapse(&store, &a).await;
    let taken: HashSet<i64> = store
        .inbox_new(&b.id, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(taken, seen_a.iter().copied().collect());
}

#[tokio::test]
async fn each_reply_is_claimed_by_one_pump_and_a_vanished_pumps_replies_pass_on() {
    let store = fresh().await;
    let (a, b) = (process("a"), process("b"));
    store.process_beat(&a, 60_000).await.unwrap();
    store.process_beat(&b, 60_000).await.unwrap();
    store
        .outbox_enqueue(vec![reply("x", "x1"), reply("x", "x2"), reply("y", "y1")])
        .await
        .unwrap();
    let now = now_millis();
    let claimed = store.outbox_due(&a.id, now, 10, &[]).await.unwrap();
    assert_eq!(claimed.len(), 2, "the head of each chat");
    assert!(
        store
            .outbox_due(&b.id, now, 10, &[])
            .await
            .unwrap()
            .is_empty(),
        "claimed by a"
    );
    assert!(
        store
            .outbox_due(&a.id, now, 10, &[])
            .await
            .unwrap()
            .is_empty(),
        "in flight at a"
    );
    store
        .outbox_mark_sent(claimed[0].id, "s".into())
        .await
        .unwrap();
    // x's next reply is due, for whoever looks first; only one gets it.
    let next = store.outbox_due(&b.id, now, 10, &[]).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].outbound.idempotency_key, "x2");

    lapse(&store, &a).await;
    let left = store.outbox_due(&b.id, now, 10, &[]).await.unwrap();
    assert_eq!(left.len(), 1, "a's unsent claim passes on");
    assert_eq!(left[0].outbound.idempotency_key, "y1");

    // A platform this process cannot send on is left to others.
    store.outbox_enqueue(vec![reply("z", "z1")]).await.unwrap();
    assert!(
        store
            .outbox_due(&b.id, now, 10, &[Platform::Telegram])
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn queued_sessions_a_live_process_runs_are_left_to_it() {
    let store = fresh().await;
    let a = process("a");
    store.process_beat(&a, 60_000).await.unwrap();
    let m = message("5", "1", "hi");
    let id = store.inbox_insert(&m).await.unwrap().unwrap();
    let key = dm("5");
    store.inbox_queue(id, &key).await.unwrap();
    assert_eq!(
        store.inbox_queued_sessions().await.unwrap(),
        vec![key.clone()]
    );
    store
        .lease_take(&session_lease(&key), &a.id)
        .await
        .unwrap()
        .unwrap();
    assert!(store.inbox_queued_sessions().await.unwrap().is_empty());
    lapse(&store, &a).await;
    assert_eq!(store.inbox_queued_sessions().await.unwrap(), vec![key]);
    let rows = store.deployment(60_000).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].live);
    assert_eq!(rows[0].sessions, 1);
}

#[tokio::test]
async fn a_row_handed_to_the_sessions_process_is_routed_there_and_passes_on_if_it_vanishes() {
    let store = fresh().await;
    let (a, b, c) = (process("a"), process("b"), process("c"));
    for p in [&a, &b, &c] {
        store.process_beat(p, 60_000).await.unwrap();
    }
    let lease = session_lease(&dm("7"));
    assert_eq!(store.lease_holder(&lease).await.unwrap(), None);
    store
        .lease_take(&lease, &b.id)
        .await
        .unwrap()
        .expect("free");
    assert_eq!(
        store.lease_holder(&lease).await.unwrap(),
        Some(b.id.clone())
    );

    let id = store
        .inbox_insert(&message("7", "1", "yes"))
        .await
        .unwrap()
        .unwrap();
    let claimed = store.inbox_new(&a.id, 0, 10).await.unwrap();
    assert_eq!(claimed.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
    // a finds b running the session and hands the row over: only b's router gets it.
    store.inbox_hand(id, &b.id).await.unwrap();
    assert!(store.inbox_new(&a.id, 0, 10).await.unwrap().is_empty());
    assert!(store.inbox_new(&c.id, 0, 10).await.unwrap().is_empty());
    let got = store.inbox_new(&b.id, 0, 10).await.unwrap();
    assert_eq!(got.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
    assert!(
        store.inbox_new(&b.id, 0, 10).await.unwrap().is_empty(),
        "b's own claim now"
    );

    // Handed to a process that then vanishes: the row passes on; a vanished holder holds nothing.
    store.inbox_hand(id, &c.id).await.unwrap();
    lapse(&store, &c).await;
    let got = store.inbox_new(&a.id, 0, 10).await.unwrap();
    assert_eq!(got.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
    lapse(&store, &b).await;
    assert_eq!(store.lease_holder(&lease).await.unwrap(), None);
    // A routed row is not handed back to `new`.
    store.inbox_queue(id, &dm("7")).await.unwrap();
    store.inbox_hand(id, &a.id).await.unwrap();
    assert!(store.inbox_new(&a.id, 0, 10).await.unwrap().is_empty());
}
