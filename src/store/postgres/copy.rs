//! `hermes store migrate --to postgres`: a SQLite store copied into an empty PostgreSQL
//! database, ids kept (inbox ids are in the history and in reply idempotency keys), sequences
//! moved past them, and every table verified afterwards by its row count and a SHA-256 over its
//! rows read back from both sides in id order.

use std::path::Path;

use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};
use tokio_postgres::types::ToSql;

use super::PgStore;
use crate::store::{Result, StoreError};

/// How a column is typed in PostgreSQL (SQLite stores integers and text either way).
#[derive(Clone, Copy)]
enum Kind {
    Int8,
    Int4,
    Bool,
    Text,
}

use Kind::{Bool, Int4, Int8, Text};

/// Every table, in an order that satisfies the foreign keys, with its columns.
const TABLES: &[(&str, &[(&str, Kind)])] = &[
    (
        "sessions",
        &[
            ("id", Int8),
            ("key", Text),
            ("platform", Text),
            ("created_at", Int8),
            ("updated_at", Int8),
            ("ended_at", Int8),
            ("end_reason", Text),
            ("model", Text),
            ("owner", Text),
            ("chat_id", Text),
        ],
    ),
    (
        "inbox",
        &[
            ("id", Int8),
            ("platform", Text),
            ("chat_id", Text),
            ("message_id", Text),
            ("payload", Text),
            ("received_at", Int8),
            ("status", Text),
            ("session_key", Text),
            ("outcome", Text),
            ("processed_at", Int8),
        ],
    ),
    (
        "messages",
        &[
            ("id", Int8),
            ("session_id", Int8),
            ("role", Text),
            ("content", Text),
            ("tool_calls", Text),
            ("tool_call_id", Text),
            ("tool_name", Text),
            ("inbox_id", Int8),
            ("created_at", Int8),
        ],
    ),
    (
        "outbox",
        &[
            ("id", Int8),
            ("idempotency_key", Text),
            ("platform", Text),
            ("chat_id", Text),
            ("payload", Text),
            ("status", Text),
            ("attempts", Int4),
            ("next_attempt_at", Int8),
            ("last_error", Text),
            ("sent_id", Text),
            ("created_at", Int8),
            ("sent_at", Int8),
        ],
    ),
    (
        "turns",
        &[
            ("id", Int8),
            ("session_id", Int8),
            ("started_at", Int8),
            ("finished_at", Int8),
            ("iterations", Int4),
            ("prompt_tokens", Int8),
            ("completion_tokens", Int8),
            ("cached_tokens", Int8),
            ("cache_write_tokens", Int8),
            ("model", Text),
            ("outcome", Text),
        ],
    ),
    (
        "settings",
        &[
            ("scope", Text),
            ("name", Text),
            ("value", Text),
            ("updated_at", Int8),
        ],
    ),
    (
        "cron_jobs",
        &[
            ("id", Int8),
            ("name", Text),
            ("schedule", Text),
            ("timezone", Text),
            ("prompt", Text),
            ("skills", Text),
            ("session", Text),
            ("origin", Text),
            ("owner", Text),
            ("deliver", Text),
            ("enabled", Bool),
            ("timeout_secs", Int8),
            ("anchor_at", Int8),
            ("next_run_at", Int8),
            ("last_run_at", Int8),
            ("created_at", Int8),
        ],
    ),
    (
        "cron_runs",
        &[
            ("id", Int8),
            ("job_id", Int8),
            ("scheduled_at", Int8),
            ("started_at", Int8),
            ("finished_at", Int8),
            ("status", Text),
            ("output", Text),
        ],
    ),
];

/// One cell, as both sides can hold it.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Text(String),
}

impl Cell {
    /// Feed the canonical form of the cell to a checksum.
    fn digest(&self, h: &mut Sha256) {
        match self {
            Cell::Null => h.update([0u8]),
            Cell::Int(i) => {
                h.update([1u8]);
                h.update(i.to_le_bytes());
            }
            Cell::Text(t) => {
                h.update([2u8]);
                h.update((t.len() as u64).to_le_bytes());
                h.update(t.as_bytes());
            }
        }
    }
}

/// What was copied: rows and checksum per table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    pub tables: Vec<(String, u64, String)>,
}

/// The order rows are read in on both sides (settings have no id).
fn order_of(table: &str) -> &'static str {
    if table == "settings" {
        "scope, name"
    } else {
        "id"
    }
}

/// Rows of every table of the SQLite database at `path`, read in one transaction (a
/// consistent snapshot even while a daemon writes).
fn read_sqlite(path: &Path) -> Result<Vec<Vec<Vec<Cell>>>> {
    let mut conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    // Version 9 added nothing to SQLite (PostgreSQL's processes and leases are not copied).
    if version != 9 {
        return Err(StoreError::Corrupt(format!(
            "the SQLite store is at schema version {version}; open it once with this hermes \
             (hermes doctor) to bring it to version 9 before copying it"
        )));
    }
    let tx = conn.transaction()?;
    let mut out = Vec::new();
    for (table, columns) in TABLES {
        let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
        let sql = format!(
            "SELECT {} FROM {table} ORDER BY {}",
            names.join(", "),
            order_of(table)
        );
        let mut stmt = tx.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        let mut cells = Vec::new();
        while let Some(row) = rows.next()? {
            let mut one = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                one.push(match row.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(n) => Cell::Int(n),
                    ValueRef::Real(f) => Cell::Text(f.to_string()),
                    ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Cell::Text(String::from_utf8_lossy(b).into_owned()),
                });
            }
            cells.push(one);
        }
        out.push(cells);
    }
    Ok(out)
}

fn checksum(rows: &[Vec<Cell>]) -> String {
    let mut h = Sha256::new();
    for row in rows {
        for cell in row {
            cell.digest(&mut h);
        }
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

impl PgStore {
    /// Copy the SQLite store at `sqlite` into this (empty) database, then verify it. `progress`
    /// hears each table as it is done.
    pub async fn copy_from_sqlite(
        &self,
        sqlite: &Path,
        progress: &(dyn Fn(&str, u64) + Sync),
    ) -> Result<CopyReport> {
        let path = sqlite.to_owned();
        let source = tokio::task::spawn_blocking(move || read_sqlite(&path))
            .await
            .map_err(|e| StoreError::Corrupt(format!("the SQLite reader stopped: {e}")))??;
        let mut c = self.client().await?;
        for (table, _) in TABLES {
            let n: i64 = c
                .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
                .await?
                .get(0);
            if n > 0 {
                return Err(StoreError::Corrupt(format!(
                    "the PostgreSQL database is not empty ({table} has {n} rows); copy into a \
                     new database"
                )));
            }
        }
        let tx = c.transaction().await?;
        for ((table, columns), rows) in TABLES.iter().zip(&source) {
            let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
            let slots: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
            let stmt = tx
                .prepare(&format!(
                    "INSERT INTO {table} ({}) VALUES ({})",
                    names.join(", "),
                    slots.join(", ")
                ))
                .await?;
            for row in rows {
                let params = to_params(columns, row)?;
                let refs: Vec<&(dyn ToSql + Sync)> =
                    params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
                tx.execute(&stmt, &refs).await?;
            }
            if table != &"settings" {
                // New rows continue after the copied ids.
                tx.execute(
                    &format!(
                        "SELECT setval(pg_get_serial_sequence('{table}', 'id'),
                                GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), 1))"
                    ),
                    &[],
                )
                .await?;
            }
            progress(table, rows.len() as u64);
        }
        tx.commit().await?;
        self.verify(&source).await
    }

    /// Read every table back and compare counts and checksums with `source`.
    async fn verify(&self, source: &[Vec<Vec<Cell>>]) -> Result<CopyReport> {
        let c = self.client().await?;
        let mut report = CopyReport { tables: Vec::new() };
        for ((table, columns), expected) in TABLES.iter().zip(source) {
            let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
            let rows = c
                .query(
                    &format!(
                        "SELECT {} FROM {table} ORDER BY {}",
                        names.join(", "),
                        order_of(table)
                    ),
                    &[],
                )
                .await?;
            let copied: Vec<Vec<Cell>> = rows
                .iter()
                .map(|r| {
                    columns
                        .iter()
                        .enumerate()
                        .map(|(i, (_, kind))| from_pg(r, i, *kind))
                        .collect()
                })
                .collect();
            let (want, got) = (checksum(expected), checksum(&copied));
            if copied.len() != expected.len() || want != got {
                return Err(StoreError::Corrupt(format!(
                    "verification failed for {table}: {} rows and checksum {want} in SQLite, \
                     {} rows and checksum {got} in PostgreSQL",
                    expected.len(),
                    copied.len()
                )));
            }
            report
                .tables
                .push(((*table).to_owned(), copied.len() as u64, got));
        }
        Ok(report)
    }
}

/// A row's cells as PostgreSQL parameters of the columns' types.
fn to_params(columns: &[(&str, Kind)], row: &[Cell]) -> Result<Vec<Box<dyn ToSql + Sync + Send>>> {
    columns
        .iter()
        .zip(row)
        .map(|((name, kind), cell)| {
            let wrong = || StoreError::Corrupt(format!("column {name} holds {cell:?}"));
            Ok(match (kind, cell) {
                (Int8, Cell::Null) => Box::new(None::<i64>) as Box<dyn ToSql + Sync + Send>,
                (Int4, Cell::Null) => Box::new(None::<i32>),
                (Bool, Cell::Null) => Box::new(None::<bool>),
                (Text, Cell::Null) => Box::new(None::<String>),
                (Int8, Cell::Int(n)) => Box::new(*n),
                (Int4, Cell::Int(n)) => Box::new(i32::try_from(*n).map_err(|_| wrong())?),
                (Bool, Cell::Int(n)) => Box::new(*n != 0),
                (Text, Cell::Text(t)) => Box::new(t.clone()),
                (Text, Cell::Int(n)) => Box::new(n.to_string()),
                _ => return Err(wrong()),
            })
        })
        .collect()
}

/// A PostgreSQL cell in the form SQLite holds it (booleans as 0 and 1).
fn from_pg(r: &tokio_postgres::Row, i: usize, kind: Kind) -> Cell {
    match kind {
        Int8 => r.get::<_, Option<i64>>(i).map_or(Cell::Null, Cell::Int),
        Int4 => r
            .get::<_, Option<i32>>(i)
            .map_or(Cell::Null, |n| Cell::Int(n.into())),
        Bool => r
            .get::<_, Option<bool>>(i)
            .map_or(Cell::Null, |b| Cell::Int(b.into())),
        Text => r.get::<_, Option<String>>(i).map_or(Cell::Null, Cell::Text),
    }
}
