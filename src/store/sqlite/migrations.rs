//! Numbered schema migrations, applied in order inside one transaction each. The database's
//! `user_version` records how many have run; never edit a released migration, add a new one.
//!
//! A migration is SQL, optionally followed by a Rust step in the same transaction for changes SQL
//! cannot express (migration 3 derives each session's owner by parsing its key).

use hermes_adapter::SessionKey;
use rusqlite::{Connection, Transaction, params};

use super::{Result, StoreError};

/// One schema version: its SQL, then an optional Rust step.
struct Migration {
    sql: &'static str,
    then: Option<fn(&Transaction<'_>) -> Result<()>>,
}

impl Migration {
    const fn sql(sql: &'static str) -> Self {
        Migration { sql, then: None }
    }
}

const MIGRATIONS: &[Migration] = &[
    // 1: sessions, messages (+ FTS5), inbox, outbox, turns.
    Migration::sql(
        r#"
    CREATE TABLE sessions (
        id          INTEGER PRIMARY KEY,
        key         TEXT NOT NULL,
        platform    TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        ended_at    INTEGER,
        end_reason  TEXT,
        model       TEXT
    );
    CREATE UNIQUE INDEX sessions_active_key ON sessions(key) WHERE ended_at IS NULL;
    CREATE INDEX sessions_key ON sessions(key, id);

    CREATE TABLE messages (
        id            INTEGER PRIMARY KEY,
        session_id    INTEGER NOT NULL REFERENCES sessions(id),
        role          TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content       TEXT NOT NULL DEFAULT '',
        tool_calls    TEXT,
        tool_call_id  TEXT,
        tool_name     TEXT,
        inbox_id      INTEGER UNIQUE,
        created_at    INTEGER NOT NULL
    );
    CREATE INDEX messages_session ON messages(session_id, id);

    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, content = 'messages', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;

    CREATE TABLE inbox (
        id            INTEGER PRIMARY KEY,
        platform      TEXT NOT NULL,
        chat_id       TEXT NOT NULL,
        message_id    TEXT NOT NULL,
        payload       TEXT NOT NULL,
        received_at   INTEGER NOT NULL,
        status        TEXT NOT NULL DEFAULT 'new'
                      CHECK (status IN ('new', 'queued', 'done', 'ignored')),
        session_key   TEXT,
        outcome       TEXT,
        processed_at  INTEGER,
        UNIQUE (platform, chat_id, message_id)
    );
    CREATE INDEX inbox_open ON inbox(status, id) WHERE status IN ('new', 'queued');
    CREATE INDEX inbox_session ON inbox(session_key, id) WHERE status = 'queued';

    CREATE TABLE outbox (
        id               INTEGER PRIMARY KEY,
        idempotency_key  TEXT NOT NULL UNIQUE,
        platform         TEXT NOT NULL,
        chat_id          TEXT NOT NULL,
        payload          TEXT NOT NULL,
        status           TEXT NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'sent', 'failed')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  INTEGER NOT NULL,
        last_error       TEXT,
        sent_id          TEXT,
        created_at       INTEGER NOT NULL,
        sent_at          INTEGER
    );
    CREATE INDEX outbox_pending ON outbox(platform, chat_id, id) WHERE status = 'pending';

    CREATE TABLE turns (
        id                 INTEGER PRIMARY KEY,
        session_id         INTEGER NOT NULL REFERENCES sessions(id),
        started_at         INTEGER NOT NULL,
        finished_at        INTEGER NOT NULL,
        iterations         INTEGER NOT NULL,
        prompt_tokens      INTEGER NOT NULL,
        completion_tokens  INTEGER NOT NULL,
        cached_tokens      INTEGER NOT NULL,
        model              TEXT NOT NULL,
        outcome            TEXT NOT NULL
    );
    CREATE INDEX turns_session ON turns(session_id, id);
    "#,
    ),
    // 2: small named settings per scope (a session's permission level and todo list, a user's
    // standing tool grants).
    Migration::sql(
        r#"
    CREATE TABLE settings (
        scope       TEXT NOT NULL,
        name        TEXT NOT NULL,
        value       TEXT NOT NULL,
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (scope, name)
    ) WITHOUT ROWID;
    "#,
    ),
    // 3: history search. A trigram index for text without word boundaries (Chinese, Japanese,
    // Korean) and substrings, over the user-visible messages only: its content table is the view
    // `messages_visible` (user and assistant rows), so tool results never fill it and `rebuild` /
    // `integrity-check` agree with the triggers. Sessions get the owner of their key (see
    // `SessionKey::owner`), the privacy boundary of a search; it is filled in Rust below.
    Migration {
        sql: r#"
        CREATE VIEW messages_visible AS
            SELECT id, content FROM messages WHERE role IN ('user', 'assistant');
        CREATE VIRTUAL TABLE messages_trigram USING fts5(
            content, content = 'messages_visible', content_rowid = 'id', tokenize = 'trigram'
        );
        CREATE TRIGGER messages_trigram_insert AFTER INSERT ON messages
        WHEN new.role IN ('user', 'assistant') BEGIN
            INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER messages_trigram_delete AFTER DELETE ON messages
        WHEN old.role IN ('user', 'assistant') BEGIN
            INSERT INTO messages_trigram(messages_trigram, rowid, content)
                VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER messages_trigram_update AFTER UPDATE OF content, role ON messages BEGIN
            INSERT INTO messages_trigram(messages_trigram, rowid, content)
                SELECT 'delete', old.id, old.content WHERE old.role IN ('user', 'assistant');
            INSERT INTO messages_trigram(rowid, content)
                SELECT new.id, new.content WHERE new.role IN ('user', 'assistant');
        END;
        INSERT INTO messages_trigram(messages_trigram) VALUES ('rebuild');

        ALTER TABLE sessions ADD COLUMN owner TEXT;
        CREATE INDEX sessions_owner ON sessions(owner, id);
        "#,
        then: Some(backfill_owners),
    },
    // 4: scheduled jobs and their runs; the turns table learns cache-write tokens.
    Migration::sql(
        r#"
    CREATE TABLE cron_jobs (
        id             INTEGER PRIMARY KEY,
        name           TEXT NOT NULL,
        schedule       TEXT NOT NULL,
        timezone       TEXT NOT NULL,
        prompt         TEXT NOT NULL,
        skills         TEXT NOT NULL DEFAULT '[]',
        session        TEXT NOT NULL DEFAULT 'isolated' CHECK (session IN ('isolated', 'origin')),
        origin         TEXT,
        owner          TEXT,
        deliver        TEXT NOT NULL DEFAULT '["origin"]',
        enabled        INTEGER NOT NULL DEFAULT 1,
        timeout_secs   INTEGER NOT NULL DEFAULT 600,
        anchor_at      INTEGER NOT NULL,
        next_run_at    INTEGER,
        last_run_at    INTEGER,
        created_at     INTEGER NOT NULL
    );
    CREATE INDEX cron_jobs_due ON cron_jobs(next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL;

    CREATE TABLE cron_runs (
        id             INTEGER PRIMARY KEY,
        job_id         INTEGER NOT NULL REFERENCES cron_jobs(id) ON DELETE CASCADE,
        scheduled_at   INTEGER NOT NULL,
        started_at     INTEGER NOT NULL,
        finished_at    INTEGER,
        status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'silent', 'failed', 'skipped')),
        output         TEXT,
        UNIQUE (job_id, scheduled_at)
    );
    CREATE INDEX cron_runs_job ON cron_runs(job_id, id);

    ALTER TABLE turns ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
    "#,
    ),
    // 5: finished inbox and outbox rows are pruned by age.
    Migration::sql(
        r#"
    CREATE INDEX inbox_finished ON inbox(received_at) WHERE status IN ('done', 'ignored');
    CREATE INDEX outbox_finished ON outbox(created_at) WHERE status IN ('sent', 'failed');
    "#,
    ),
    // 6: a row that cannot be decoded (a corrupt payload, a variant from a newer hermes) is moved
    // aside as `poisoned` instead of blocking the rows behind it. SQLite cannot change a CHECK
    // constraint in place, so both tables are rebuilt (no other table references them).
    Migration::sql(
        r#"
    CREATE TABLE inbox_v6 (
        id            INTEGER PRIMARY KEY,
        platform      TEXT NOT NULL,
        chat_id       TEXT NOT NULL,
        message_id    TEXT NOT NULL,
        payload       TEXT NOT NULL,
        received_at   INTEGER NOT NULL,
        status        TEXT NOT NULL DEFAULT 'new'
                      CHECK (status IN ('new', 'queued', 'done', 'ignored', 'poisoned')),
        session_key   TEXT,
        outcome       TEXT,
        processed_at  INTEGER,
        UNIQUE (platform, chat_id, message_id)
    );
    INSERT INTO inbox_v6 (id, platform, chat_id, message_id, payload, received_at, status,
                          session_key, outcome, processed_at)
        SELECT id, platform, chat_id, message_id, payload, received_at, status, session_key,
               outcome, processed_at FROM inbox;
    DROP TABLE inbox;
    ALTER TABLE inbox_v6 RENAME TO inbox;
    CREATE INDEX inbox_open ON inbox(status, id) WHERE status IN ('new', 'queued');
    CREATE INDEX inbox_session ON inbox(session_key, id) WHERE status = 'queued';
    CREATE INDEX inbox_finished ON inbox(received_at) WHERE status IN ('done', 'ignored');

    CREATE TABLE outbox_v6 (
        id               INTEGER PRIMARY KEY,
        idempotency_key  TEXT NOT NULL UNIQUE,
        platform         TEXT NOT NULL,
        chat_id          TEXT NOT NULL,
        payload          TEXT NOT NULL,
        status           TEXT NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'sent', 'failed', 'poisoned')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  INTEGER NOT NULL,
        last_error       TEXT,
        sent_id          TEXT,
        created_at       INTEGER NOT NULL,
        sent_at          INTEGER
    );
    INSERT INTO outbox_v6 (id, idempotency_key, platform, chat_id, payload, status, attempts,
                           next_attempt_at, last_error, sent_id, created_at, sent_at)
        SELECT id, idempotency_key, platform, chat_id, payload, status, attempts,
               next_attempt_at, last_error, sent_id, created_at, sent_at FROM outbox;
    DROP TABLE outbox;
    ALTER TABLE outbox_v6 RENAME TO outbox;
    CREATE INDEX outbox_pending ON outbox(platform, chat_id, id) WHERE status = 'pending';
    CREATE INDEX outbox_finished ON outbox(created_at) WHERE status IN ('sent', 'failed');
    "#,
    ),
    // 7: a session remembers the chat it is held in (a direct message's chat is not always the
    // person's id: Discord, Slack and Matrix give it its own), from the messages it received.
    Migration::sql(
        r#"
    ALTER TABLE sessions ADD COLUMN chat_id TEXT;
    UPDATE sessions SET chat_id = (
        SELECT i.chat_id FROM messages m JOIN inbox i ON i.id = m.inbox_id
         WHERE m.session_id = sessions.id ORDER BY m.id DESC LIMIT 1);
    CREATE INDEX sessions_chat ON sessions(platform, chat_id);
    "#,
    ),
    // 8: history search, faster. (a) The word index holds the user-visible messages only, each
    // with its session's owner as one token (`o` + the owner in hex), so a search scoped to one
    // person intersects that person's posting list with the words' instead of reading
    // everybody's matches newest first until enough of theirs turn up (a common word and a person
    // with few matching sessions read the whole list: p99 over a million messages 200-300 ms).
    // (b) New messages reach both full-text indexes in batches, not in the transaction that wrote
    // them (FTS5 writes and merges a segment per commit: ~120 us per transaction): the store
    // thread indexes every message after `search_indexed.upto` about once a second and before
    // every search (`search::index_pending`), and edits and deletes touch the indexes only for
    // rows already in them. Message ids only grow (no code deletes messages), so `upto` marks
    // what is indexed; a session's owner never changes once written, so the delete triggers can
    // recompute the token a row was indexed with.
    Migration::sql(
        r#"
    CREATE TABLE search_indexed (upto INTEGER NOT NULL);
    INSERT INTO search_indexed (upto) SELECT COALESCE(MAX(id), 0) FROM messages;

    DROP TRIGGER messages_fts_insert;
    DROP TRIGGER messages_fts_delete;
    DROP TRIGGER messages_fts_update;
    DROP TABLE messages_fts;
    CREATE VIEW messages_words AS
        SELECT m.id, m.content, 'o' || hex(s.owner) AS owner
          FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.role IN ('user', 'assistant');
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, owner, content = 'messages_words', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
        WHEN old.role IN ('user', 'assistant') AND old.id <= (SELECT upto FROM search_indexed) BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, owner) VALUES ('delete', old.id,
            old.content, (SELECT 'o' || hex(owner) FROM sessions WHERE id = old.session_id));
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, role, session_id ON messages
        WHEN old.id <= (SELECT upto FROM search_indexed) BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, owner)
            SELECT 'delete', old.id, old.content, 'o' || hex(owner) FROM sessions
             WHERE id = old.session_id AND old.role IN ('user', 'assistant');
        INSERT INTO messages_fts(rowid, content, owner)
            SELECT new.id, new.content, 'o' || hex(owner) FROM sessions
             WHERE id = new.session_id AND new.role IN ('user', 'assistant');
    END;

    DROP TRIGGER messages_trigram_insert;
    DROP TRIGGER messages_trigram_delete;
    DROP TRIGGER messages_trigram_update;
    CREATE TRIGGER messages_trigram_delete AFTER DELETE ON messages
        WHEN old.role IN ('user', 'assistant') AND old.id <= (SELECT upto FROM search_indexed) BEGIN
        INSERT INTO messages_trigram(messages_trigram, rowid, content)
            VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER messages_trigram_update AFTER UPDATE OF content, role ON messages
        WHEN old.id <= (SELECT upto FROM search_indexed) BEGIN
        INSERT INTO messages_trigram(messages_trigram, rowid, content)
            SELECT 'delete', old.id, old.content WHERE old.role IN ('user', 'assistant');
        INSERT INTO messages_trigram(rowid, content)
            SELECT new.id, new.content WHERE new.role IN ('user', 'assistant');
    END;
    "#,
    ),
    // 9: nothing; PostgreSQL's version 9 adds what several processes sharing one database need
    // (processes, leases, row claims), and a SQLite store serves one process.
    Migration::sql(""),
];

/// Set `owner` of every session from its key. A key that does not parse (written by hand, or by
/// a newer version that knows more platforms) keeps a NULL owner, so no user's search finds it;
/// failing the migration instead would keep the daemon from starting.
fn backfill_owners(tx: &Transaction<'_>) -> Result<()> {
    let keys: Vec<(i64, String)> = tx
        .prepare("SELECT id, key FROM sessions WHERE owner IS NULL")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = tx.prepare("UPDATE sessions SET owner = ?2 WHERE id = ?1")?;
    for (id, key) in keys {
        match key.parse::<SessionKey>() {
            Ok(key) => {
                update.execute(params![id, key.owner()])?;
            }
            Err(e) => tracing::warn!(session = id, error = %e, "session without an owner"),
        }
    }
    Ok(())
}

/// Bring the schema to the latest version.
pub(super) fn apply(conn: &mut Connection) -> Result<()> {
    let current: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "the database schema is version {current}, newer than this hermes knows ({}); \
             run the newer hermes or restore a backup",
            MIGRATIONS.len()
        )));
    }
    apply_up_to(conn, current, MIGRATIONS.len())
}

/// Apply the migrations after `current` up to version `target`.
fn apply_up_to(conn: &mut Connection, current: usize, target: usize) -> Result<()> {
    for (index, m) in MIGRATIONS.iter().enumerate().take(target).skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(m.sql)?;
        if let Some(step) = m.then {
            step(&tx)?;
        }
        tx.pragma_update(None, "user_version", index + 1)?;
        tx.commit()?;
    }
    Ok(())
}

/// Bring a new database to schema version `version` only (tests of later migrations on old
/// data).
#[cfg(test)]
pub(super) fn apply_to_version(conn: &mut Connection, version: usize) -> Result<()> {
    apply_up_to(conn, 0, version)
}

/// Number of migrations this build knows.
#[cfg(test)]
pub(super) fn latest() -> usize {
    MIGRATIONS.len()
}
