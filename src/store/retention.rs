//! Retention: finished inbox rows (kept to recognise redelivered messages) and finished outbox
//! rows (kept as a delivery log) are deleted once old; the conversation history stays.
//!
//! The newest row of each table is never deleted: SQLite gives a new row the highest id plus
//! one, so an emptied table would hand out ids again, and inbox ids are referenced by the
//! history and by reply idempotency keys.

use rusqlite::params;

use super::{Result, Store};

/// Rows deleted by one pruning pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub inbox: usize,
    pub outbox: usize,
}

impl Store {
    /// Delete finished rows received or created before `before` (ms since the epoch).
    pub async fn prune_delivery_log(&self, before: i64) -> Result<Pruned> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let inbox = tx.execute(
                "DELETE FROM inbox WHERE status IN ('done', 'ignored') AND received_at < ?1
                   AND id < (SELECT MAX(id) FROM inbox)",
                params![before],
            )?;
            let outbox = tx.execute(
                "DELETE FROM outbox WHERE status IN ('sent', 'failed') AND created_at < ?1
                   AND id < (SELECT MAX(id) FROM outbox)",
                params![before],
            )?;
            tx.commit()?;
            Ok(Pruned { inbox, outbox })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use hermes_adapter::now_millis;

    use super::*;
    use crate::store::InboxOutcome;
    use crate::store::tests::{message, reply};

    #[tokio::test]
    async fn old_finished_rows_go_the_newest_and_open_ones_stay() {
        let store = Store::open_in_memory().unwrap();
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
        let due = store.outbox_due(now_millis() + 1, 10).await.unwrap();
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
}
