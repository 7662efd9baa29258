//! `Maintenance` in SQLite: pruning the delivery log (finished inbox and outbox rows), and the
//! readiness probe.
//!
//! Retention: finished inbox rows (kept to recognise redelivered messages) and finished outbox
//! rows (kept as a delivery log) are deleted once old; the conversation history stays.
//!
//! The newest row of each table is never deleted: SQLite gives a new row the highest id plus
//! one, so an emptied table would hand out ids again, and inbox ids are referenced by the
//! history and by reply idempotency keys.

use super::Cached;
use async_trait::async_trait;
use rusqlite::params;

use super::SqliteStore;
use crate::store::{Maintenance, Pruned, Result};

#[async_trait]
impl Maintenance for SqliteStore {
    async fn ping(&self) -> Result<()> {
        self.call(|c| Ok(c.one("SELECT 1", [], |r| r.get::<_, i64>(0))?))
            .await
            .map(drop)
    }

    async fn prune_delivery_log(&self, before: i64) -> Result<Pruned> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            let inbox = tx.exec(
                "DELETE FROM inbox WHERE status IN ('done', 'ignored') AND received_at < ?1
                   AND id < (SELECT MAX(id) FROM inbox)",
                params![before],
            )?;
            let outbox = tx.exec(
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
