//! Numbered schema migrations, applied in order, each in its own transaction, under an advisory
//! lock (several processes may start at once). `schema_version` records how many have run.
//!
//! The numbers are SQLite's (`../sqlite/migrations.rs`): a PostgreSQL database starts at the
//! schema of SQLite's version 8 in one step (there were no PostgreSQL databases before it), and
//! every later migration is added to both lists under the same number.

use super::{Client, Result, StoreError};

/// The key of the advisory lock migrations hold (any constant unique to hermes).
const LOCK: i64 = 0x6865_726d_6573; // "hermes"

/// The version a migration brings the schema to, and its SQL.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        8,
        r#"
    CREATE EXTENSION IF NOT EXISTS pg_trgm;

    CREATE TABLE sessions (
        id          BIGSERIAL PRIMARY KEY,
        key         TEXT NOT NULL,
        platform    TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        updated_at  BIGINT NOT NULL,
        ended_at    BIGINT,
        end_reason  TEXT,
        model       TEXT,
        owner       TEXT,
        chat_id     TEXT
    );
    CREATE UNIQUE INDEX sessions_active_key ON sessions(key) WHERE ended_at IS NULL;
    CREATE INDEX sessions_key ON sessions(key, id);
    CREATE INDEX sessions_owner ON sessions(owner, id);
    CREATE INDEX sessions_chat ON sessions(platform, chat_id);

    CREATE TABLE messages (
        id            BIGSERIAL PRIMARY KEY,
        session_id    BIGINT NOT NULL REFERENCES sessions(id),
        role          TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content       TEXT NOT NULL DEFAULT '',
        tool_calls    TEXT,
        tool_call_id  TEXT,
        tool_name     TEXT,
        inbox_id      BIGINT UNIQUE,
        created_at    BIGINT NOT NULL
    );
    CREATE INDEX messages_session ON messages(session_id, id);
    -- History search over what people and the agent said (never tool output): words, and
    -- trigrams for text without word boundaries (Chinese, Japanese, Korean) and substrings.
    -- (A text search vector over 1 MB is an error: the words of the first 200,000 characters.)
    CREATE INDEX messages_words ON messages USING GIN (to_tsvector('simple', left(content, 200000)))
        WHERE role IN ('user', 'assistant');
    CREATE INDEX messages_trigram ON messages USING GIN (content gin_trgm_ops)
        WHERE role IN ('user', 'assistant');

    CREATE TABLE inbox (
        id            BIGSERIAL PRIMARY KEY,
        platform      TEXT NOT NULL,
        chat_id       TEXT NOT NULL,
        message_id    TEXT NOT NULL,
        payload       TEXT NOT NULL,
        received_at   BIGINT NOT NULL,
        status        TEXT NOT NULL DEFAULT 'new'
                      CHECK (status IN ('new', 'queued', 'done', 'ignored', 'poisoned')),
        session_key   TEXT,
        outcome       TEXT,
        processed_at  BIGINT,
        UNIQUE (platform, chat_id, message_id)
    );
    CREATE INDEX inbox_open ON inbox(status, id) WHERE status IN ('new', 'queued');
    CREATE INDEX inbox_session ON inbox(session_key, id) WHERE status = 'queued';
    CREATE INDEX inbox_finished ON inbox(received_at) WHERE status IN ('done', 'ignored');

    CREATE TABLE outbox (
        id               BIGSERIAL PRIMARY KEY,
        idempotency_key  TEXT NOT NULL UNIQUE,
        platform         TEXT NOT NULL,
        chat_id          TEXT NOT NULL,
        payload          TEXT NOT NULL,
        status           TEXT NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'sent', 'failed', 'poisoned')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  BIGINT NOT NULL,
        last_error       TEXT,
        sent_id          TEXT,
        created_at       BIGINT NOT NULL,
        sent_at          BIGINT
    );
    CREATE INDEX outbox_pending ON outbox(platform, chat_id, id) WHERE status = 'pending';
    CREATE INDEX outbox_finished ON outbox(created_at) WHERE status IN ('sent', 'failed');

    CREATE TABLE turns (
        id                  BIGSERIAL PRIMARY KEY,
        session_id          BIGINT NOT NULL REFERENCES sessions(id),
        started_at          BIGINT NOT NULL,
        finished_at         BIGINT NOT NULL,
        iterations          INTEGER NOT NULL,
        prompt_tokens       BIGINT NOT NULL,
        completion_tokens   BIGINT NOT NULL,
        cached_tokens       BIGINT NOT NULL,
        cache_write_tokens  BIGINT NOT NULL DEFAULT 0,
        model               TEXT NOT NULL,
        outcome             TEXT NOT NULL
    );
    CREATE INDEX turns_session ON turns(session_id, id);

    CREATE TABLE settings (
        scope       TEXT NOT NULL,
        name        TEXT NOT NULL,
        value       TEXT NOT NULL,
        updated_at  BIGINT NOT NULL,
        PRIMARY KEY (scope, name)
    );

    CREATE TABLE cron_jobs (
        id             BIGSERIAL PRIMARY KEY,
        name           TEXT NOT NULL,
        schedule       TEXT NOT NULL,
        timezone       TEXT NOT NULL,
        prompt         TEXT NOT NULL,
        skills         TEXT NOT NULL DEFAULT '[]',
        session        TEXT NOT NULL DEFAULT 'isolated' CHECK (session IN ('isolated', 'origin')),
        origin         TEXT,
        owner          TEXT,
        deliver        TEXT NOT NULL DEFAULT '["origin"]',
        enabled        BOOLEAN NOT NULL DEFAULT TRUE,
        timeout_secs   BIGINT NOT NULL DEFAULT 600,
        anchor_at      BIGINT NOT NULL,
        next_run_at    BIGINT,
        last_run_at    BIGINT,
        created_at     BIGINT NOT NULL
    );
    CREATE INDEX cron_jobs_due ON cron_jobs(next_run_at) WHERE enabled AND next_run_at IS NOT NULL;

    CREATE TABLE cron_runs (
        id             BIGSERIAL PRIMARY KEY,
        job_id         BIGINT NOT NULL REFERENCES cron_jobs(id) ON DELETE CASCADE,
        scheduled_at   BIGINT NOT NULL,
        started_at     BIGINT NOT NULL,
        finished_at    BIGINT,
        status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'silent', 'failed', 'skipped')),
        output         TEXT,
        UNIQUE (job_id, scheduled_at)
    );
    CREATE INDEX cron_runs_job ON cron_runs(job_id, id);
    "#,
    ),
    (
        9,
        r#"
    -- Scale-out: the processes of a deployment, the leases they hold, and who claimed which
    -- inbox and outbox rows. Times come from the database's clock, so hosts need not agree.
    CREATE FUNCTION hermes_now() RETURNS BIGINT LANGUAGE sql VOLATILE
        AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT $$;

    CREATE TABLE processes (
        id          TEXT PRIMARY KEY,
        host        TEXT NOT NULL,
        pid         BIGINT NOT NULL,
        version     TEXT NOT NULL,
        started_at  BIGINT NOT NULL,
        beat_at     BIGINT NOT NULL,
        expires_at  BIGINT NOT NULL
    );
    CREATE TABLE leases (
        name    TEXT PRIMARY KEY,
        holder  TEXT,
        token   BIGINT NOT NULL,
        since   BIGINT NOT NULL
    );
    CREATE INDEX leases_holder ON leases(holder) WHERE holder IS NOT NULL;
    ALTER TABLE inbox ADD COLUMN claimed_by TEXT;
    ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
    "#,
    ),
];

/// Bring the schema to the latest version.
pub(super) async fn apply(client: &mut Client) -> Result<()> {
    // The lock first: two `CREATE TABLE IF NOT EXISTS` racing each other fail on PostgreSQL's
    // catalog (a unique violation in pg_type), as the test of processes starting together found.
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK])
        .await?;
    let result = match client
        .batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .await
    {
        Ok(()) => apply_locked(client).await,
        Err(e) => Err(e.into()),
    };
    client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK])
        .await?;
    result
}

async fn apply_locked(client: &mut Client) -> Result<()> {
    let current: i32 = client
        .query_opt("SELECT version FROM schema_version", &[])
        .await?
        .map_or(0, |r| r.get(0));
    let latest = MIGRATIONS.last().map_or(0, |(v, _)| *v);
    if current > latest {
        return Err(StoreError::Corrupt(format!(
            "the database schema is version {current}, newer than this hermes knows ({latest}); \
             run the newer hermes or restore a backup"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        let tx = client.transaction().await?;
        tx.batch_execute(sql).await?;
        tx.execute("DELETE FROM schema_version", &[]).await?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[version],
        )
        .await?;
        tx.commit().await?;
    }
    Ok(())
}

/// Number of the latest migration this build knows.
#[cfg(test)]
pub(super) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |(v, _)| *v)
}
