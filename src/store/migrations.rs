//! Numbered schema migrations, applied in order inside one transaction each. The database's
//! `user_version` records how many have run; never edit a released migration, add a new one.

use rusqlite::Connection;

use super::{Result, StoreError};

const MIGRATIONS: &[&str] = &[
    // 1: sessions, messages (+ FTS5), inbox, outbox, turns.
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
    // 2: small named settings per scope (a session's permission level and todo list, a user's
    // standing tool grants).
    r#"
    CREATE TABLE settings (
        scope       TEXT NOT NULL,
        name        TEXT NOT NULL,
        value       TEXT NOT NULL,
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (scope, name)
    ) WITHOUT ROWID;
    "#,
];

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
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index + 1)?;
        tx.commit()?;
    }
    Ok(())
}

/// Number of migrations this build knows.
#[cfg(test)]
pub(super) fn latest() -> usize {
    MIGRATIONS.len()
}
