//! The SQLite side of a backup: a consistent snapshot of the live database, its row counts, and
//! the checks a restore makes of a snapshot and of the store it would replace.
//!
//! The snapshot is `VACUUM INTO`, not the online backup API: it runs as one read transaction,
//! which in WAL mode never blocks the daemon's writer and sees one committed state, whereas the
//! backup API copying in steps restarts whenever another connection writes between them (and
//! copying in one step is the same read transaction with more code); it needs no rusqlite
//! feature; and it writes a compact file without the free pages.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long a statement waits for a lock the daemon holds (a checkpoint, WAL recovery).
const BUSY: Duration = Duration::from_secs(10);

/// The tables a store with conversations has rows in.
const CONTENT_TABLES: [&str; 5] = ["sessions", "messages", "inbox", "outbox", "cron_jobs"];

fn failed(path: &Path, what: &str) -> impl Fn(rusqlite::Error) -> String {
    let path = path.display().to_string();
    let what = what.to_owned();
    move |e| format!("{path}: cannot {what}: {e}")
}

/// Write a consistent copy of the database at `source` (which a daemon may be writing) to
/// `dest`, a path that must not exist yet. The copy is left in rollback-journal mode, one
/// self-contained file; the daemon turns WAL on again when it opens it.
pub fn snapshot(source: &Path, dest: &Path) -> Result<(), String> {
    let conn = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(failed(source, "open the database"))?;
    conn.busy_timeout(BUSY)
        .map_err(failed(source, "set a busy timeout"))?;
    let into = dest
        .to_str()
        .ok_or_else(|| format!("{}: not a UTF-8 path", dest.display()))?;
    conn.execute("VACUUM INTO ?1", [into])
        .map_err(failed(source, "copy the database"))?;
    drop(conn);
    let copy = Connection::open(dest).map_err(failed(dest, "open the snapshot"))?;
    copy.pragma_update(None, "journal_mode", "DELETE")
        .map_err(failed(dest, "set the snapshot's journal mode"))?;
    Ok(())
}

/// Open a snapshot read-only (its bytes stay what was checked).
fn open_read_only(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(failed(path, "open the database"))?;
    conn.busy_timeout(BUSY)
        .map_err(failed(path, "set a busy timeout"))?;
    Ok(conn)
}

/// The schema version (`user_version`) and the rows of every table of the database at `path`
/// (virtual tables are left out: their shadow tables hold their rows and are counted).
pub fn count_rows(path: &Path) -> Result<(i64, BTreeMap<String, u64>), String> {
    let conn = open_read_only(path)?;
    let count = failed(path, "count rows");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(&count)?;
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        )
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(&count)?;
    let mut rows = BTreeMap::new();
    for table in tables {
        let sql = format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\"\""));
        let n: i64 = conn.query_row(&sql, [], |r| r.get(0)).map_err(&count)?;
        rows.insert(table, n as u64);
    }
    Ok((version, rows))
}

/// SQLite's own check of the file's structure (`PRAGMA quick_check`).
pub fn check(path: &Path) -> Result<(), String> {
    let conn = open_read_only(path)?;
    let problems: Vec<String> = conn
        .prepare("PRAGMA quick_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(failed(path, "check the database"))?;
    if problems == ["ok"] {
        Ok(())
    } else {
        Err(format!(
            "the database in the archive is damaged: {}",
            problems.join("; ")
        ))
    }
}

/// Whether the store at `path` holds anything a restore would lose: a conversation, a queued
/// message or reply, a scheduled job. A file that cannot be read counts as holding something.
pub fn holds_data(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.len() == 0 {
        return false;
    }
    let Ok(conn) = open_read_only(path) else {
        return true;
    };
    CONTENT_TABLES.iter().any(|table| {
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {table})");
        conn.query_row(&sql, [], |r| r.get::<_, bool>(0))
            .unwrap_or(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(path: &Path, rows: usize) {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (id INTEGER PRIMARY KEY, key TEXT);
             CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT);
             CREATE TABLE inbox (id INTEGER PRIMARY KEY);
             CREATE TABLE outbox (id INTEGER PRIMARY KEY);
             CREATE TABLE cron_jobs (id INTEGER PRIMARY KEY);
             CREATE VIRTUAL TABLE messages_fts USING fts5(content);
             PRAGMA user_version = 8;",
        )
        .unwrap();
        for i in 0..rows {
            conn.execute("INSERT INTO sessions (key) VALUES (?1)", [i.to_string()])
                .unwrap();
            conn.execute("INSERT INTO messages_fts (content) VALUES ('hello')", [])
                .unwrap();
        }
    }

    #[test]
    fn a_snapshot_of_an_open_wal_database_has_its_committed_rows() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live.db");
        store_with(&live, 3);
        // A writer keeps the database open (and its WAL un-checkpointed) during the copy.
        let writer = Connection::open(&live).unwrap();
        writer
            .execute("INSERT INTO sessions (key) VALUES ('late')", [])
            .unwrap();
        let copy = dir.path().join("copy.db");
        snapshot(&live, &copy).unwrap();
        drop(writer);
        let (version, rows) = count_rows(&copy).unwrap();
        assert_eq!(version, 8);
        assert_eq!(rows["sessions"], 4);
        assert_eq!(rows["messages"], 0);
        assert!(
            !rows.contains_key("messages_fts"),
            "virtual tables are not counted"
        );
        assert!(
            rows.contains_key("messages_fts_data"),
            "their shadow tables are"
        );
        check(&copy).unwrap();
        assert!(holds_data(&copy));
        assert!(!dir.path().join("copy.db-wal").exists());
    }

    #[test]
    fn an_empty_or_missing_store_holds_nothing_and_garbage_holds_something() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.db");
        store_with(&empty, 0);
        assert!(!holds_data(&empty));
        assert!(!holds_data(&dir.path().join("missing.db")));
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, b"not a database at all, not at all").unwrap();
        assert!(holds_data(&garbage));
        assert!(count_rows(&garbage).is_err());
    }
}
