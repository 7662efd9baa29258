//! Housekeeping: finished rows pruned, open ones and the newest kept.

use hermes_adapter::now_millis;

use super::{message, reply};
use crate::store::*;

pub(crate) async fn old_finished_rows_go_the_newest_and_open_ones_stay(store: Store) {
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            store
                .inbox_insert(&message("1", &format!("m{i}"), "hi"))
                .await
                .unwrap()
                .unwrap(),
        );
    }
    store
        .inbox_finish(vec![ids[0], ids[1], ids[3]], InboxOutcome::Replied)
        .await
        .unwrap();
    store
        .outbox_enqueue(vec![reply("1", "a"), reply("2", "b")])
        .await
        .unwrap();
    let due = store
        .outbox_due("me", now_millis() + 1, 10, &[])
        .await
        .unwrap();
    store
        .outbox_mark_sent(due[0].id, "s1".into())
        .await
        .unwrap();
    store
        .outbox_mark_sent(due[1].id, "s2".into())
        .await
        .unwrap();

    let pruned = store.prune_delivery_log(now_millis() + 1000).await.unwrap();
    // ids[2] is still queued; ids[3] is the newest.
    assert_eq!(
        pruned,
        Pruned {
            inbox: 2,
            outbox: 1
        }
    );
    let next = store
        .inbox_insert(&message("1", "m4", "hi"))
        .await
        .unwrap()
        .unwrap();
    assert!(next > ids[3], "ids are never handed out again");
    // A redelivery of a pruned message would be stored again, but never one still open.
    assert_eq!(
        store.inbox_insert(&message("1", "m2", "hi")).await.unwrap(),
        None
    );
    assert_eq!(
        store.prune_delivery_log(0).await.unwrap(),
        Pruned::default(),
        "nothing is younger than the epoch"
    );
}
