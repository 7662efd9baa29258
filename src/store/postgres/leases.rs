//! `Leases` in PostgreSQL: the `processes` table (one row per process, renewed by its
//! heartbeat) and the `leases` table (one row per lease: holder and token). A lease is held while
//! its holder's registration is live; taking it from a lapsed holder grows its token. Times are
//! the database's (`hermes_now()`).

use async_trait::async_trait;

use super::PgStore;
use crate::store::{Beat, Leases, ProcessInfo, ProcessRow, Result};

/// The holder of a lease row `l` is live (its registration has not expired).
pub(super) const HOLDER_LIVE: &str =
    "EXISTS (SELECT 1 FROM processes p WHERE p.id = l.holder AND p.expires_at > hermes_now())";

#[async_trait]
impl Leases for PgStore {
    fn shared(&self) -> bool {
        true
    }

    async fn process_beat(&self, me: &ProcessInfo, ttl_ms: i64) -> Result<Beat> {
        let c = self.client().await?;
        // `lapsed`: the row existed and had expired before this beat (read before the update
        // in the same statement).
        let row = c
            .query_one(
                "WITH old AS (SELECT expires_at FROM processes WHERE id = $1),
                      up AS (
                        INSERT INTO processes (id, host, pid, version, started_at, beat_at, expires_at)
                        VALUES ($1, $2, $3, $4, hermes_now(), hermes_now(), hermes_now() + $5)
                        ON CONFLICT (id) DO UPDATE
                           SET beat_at = hermes_now(), expires_at = hermes_now() + $5
                        RETURNING 1)
                 SELECT COALESCE((SELECT expires_at < hermes_now() FROM old), FALSE)
                   FROM up",
                &[&me.id, &me.host, &i64::from(me.pid), &me.version, &ttl_ms],
            )
            .await?;
        Ok(Beat { lapsed: row.get(0) })
    }

    async fn process_leave(&self, me: &str) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        tx.execute("UPDATE leases SET holder = NULL WHERE holder = $1", &[&me])
            .await?;
        tx.execute(
            "UPDATE processes SET expires_at = hermes_now() WHERE id = $1",
            &[&me],
        )
        .await?;
        tx.execute(
            "UPDATE inbox SET claimed_by = NULL WHERE claimed_by = $1 AND status = 'new'",
            &[&me],
        )
        .await?;
        tx.execute(
            "UPDATE outbox SET claimed_by = NULL, next_attempt_at = LEAST(next_attempt_at, hermes_now())
              WHERE claimed_by = $1 AND status = 'pending'",
            &[&me],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn lease_take(&self, name: &str, me: &str) -> Result<Option<i64>> {
        let c = self.client().await?;
        // The same holder keeps its token; a new holder (the lease was free, or its holder
        // lapsed) makes it grow.
        let row = c
            .query_opt(
                &format!(
                    "INSERT INTO leases AS l (name, holder, token, since)
                     VALUES ($1, $2, 1, hermes_now())
                     ON CONFLICT (name) DO UPDATE
                        SET holder = $2,
                            token = CASE WHEN l.holder = $2 THEN l.token ELSE l.token + 1 END,
                            since = CASE WHEN l.holder = $2 THEN l.since ELSE hermes_now() END
                      WHERE l.holder IS NULL OR l.holder = $2 OR NOT {HOLDER_LIVE}
                     RETURNING token"
                ),
                &[&name, &me],
            )
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn lease_held(&self, name: &str, me: &str, token: i64) -> Result<bool> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND token = $3",
                &[&name, &me, &token],
            )
            .await?;
        Ok(row.is_some())
    }

    async fn lease_release(&self, name: &str, me: &str, token: i64) -> Result<()> {
        self.update(
            "UPDATE leases SET holder = NULL WHERE name = $1 AND holder = $2 AND token = $3",
            &[&name, &me, &token],
        )
        .await
    }

    async fn lease_holder(&self, name: &str) -> Result<Option<String>> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                &format!("SELECT l.holder FROM leases l WHERE l.name = $1 AND {HOLDER_LIVE}"),
                &[&name],
            )
            .await?;
        Ok(row.and_then(|r| r.get(0)))
    }

    async fn inbox_hand(&self, id: i64, to: &str) -> Result<()> {
        let c = self.client().await?;
        // `to:<process>` is claimed for that process's router alone; the notification wakes it.
        c.execute(
            "WITH handed AS (
                 UPDATE inbox SET claimed_by = 'to:' || $2 WHERE id = $1 AND status = 'new'
                 RETURNING id)
             SELECT pg_notify('hermes_inbox', id::TEXT) FROM handed",
            &[&id, &to],
        )
        .await?;
        Ok(())
    }

    fn watch_inbox(
        &self,
        signal: std::sync::Arc<tokio::sync::Notify>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        tokio::spawn(super::listen::run(self.config.clone(), signal, stop));
    }

    async fn deployment(&self, recent_ms: i64) -> Result<Vec<ProcessRow>> {
        let c = self.client().await?;
        let rows = c
            .query(
                "SELECT p.id, p.host, p.pid, p.version, p.started_at, p.beat_at,
                        p.expires_at > hermes_now(),
                        COALESCE(array_agg(l.name ORDER BY l.name)
                                 FILTER (WHERE l.name NOT LIKE 'session:%'), '{}'),
                        COUNT(l.name) FILTER (WHERE l.name LIKE 'session:%')
                   FROM processes p LEFT JOIN leases l ON l.holder = p.id
                  WHERE p.beat_at > hermes_now() - $1
                  GROUP BY p.id ORDER BY p.started_at DESC",
                &[&recent_ms],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| ProcessRow {
                id: r.get(0),
                host: r.get(1),
                pid: r.get(2),
                version: r.get(3),
                started_at: r.get(4),
                beat_at: r.get(5),
                live: r.get(6),
                roles: r.get(7),
                sessions: r.get::<_, i64>(8) as u64,
            })
            .collect())
    }
}
