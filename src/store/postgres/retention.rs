//! `Maintenance` in PostgreSQL: pruning the delivery log (finished inbox and outbox rows), and
//! the readiness probe. The conversation history stays. The newest row of each table stays too,
//! as in SQLite (there it keeps ids from being handed out again; here sequences never do, but
//! the behaviour is the suite's, the same on every backend).

use async_trait::async_trait;

use super::PgStore;
use crate::store::{Maintenance, Pruned, Result};

#[async_trait]
impl Maintenance for PgStore {
    async fn ping(&self) -> Result<()> {
        self.client().await?.query_one("SELECT 1", &[]).await?;
        Ok(())
    }

    async fn prune_delivery_log(&self, before: i64) -> Result<Pruned> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let inbox = tx
            .execute(
                "DELETE FROM inbox WHERE status IN ('done', 'ignored') AND received_at < $1
                   AND id < (SELECT MAX(id) FROM inbox)",
                &[&before],
            )
            .await?;
        let outbox = tx
            .execute(
                "DELETE FROM outbox WHERE status IN ('sent', 'failed') AND created_at < $1
                   AND id < (SELECT MAX(id) FROM outbox)",
                &[&before],
            )
            .await?;
        tx.commit().await?;
        Ok(Pruned {
            inbox: inbox as usize,
            outbox: outbox as usize,
        })
    }
}
