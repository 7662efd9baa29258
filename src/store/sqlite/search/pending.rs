//! Bringing the full-text indexes up to the newest message, in batches (see migration 8).
//!
//! Messages are written without touching the indexes; the store thread calls [`index_pending`]
//! about once a second and every search calls it first, so a search always sees every message
//! while a turn's commit costs no index work. What is indexed is recorded in the same
//! transaction as the index writes (`search_indexed.upto`), so a crash loses nothing: the rows
//! after `upto` are indexed by the next call.

use rusqlite::Connection;

use super::super::Cached;
use crate::store::Result;

/// Index every message after `search_indexed.upto`; returns how many rows were looked at.
pub(in crate::store::sqlite) fn index_pending(c: &mut Connection) -> Result<i64> {
    let (upto, newest): (i64, i64) = c.one(
        "SELECT upto, (SELECT COALESCE(MAX(id), 0) FROM messages) FROM search_indexed",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if newest <= upto {
        return Ok(0);
    }
    let tx = c.savepoint()?;
    tx.exec(
        "INSERT INTO messages_fts (rowid, content, owner)
         SELECT id, content, owner FROM messages_words WHERE id > ?1 AND id <= ?2",
        [upto, newest],
    )?;
    tx.exec(
        "INSERT INTO messages_trigram (rowid, content)
         SELECT id, content FROM messages_visible WHERE id > ?1 AND id <= ?2",
        [upto, newest],
    )?;
    tx.exec("UPDATE search_indexed SET upto = ?1", [newest])?;
    tx.commit()?;
    Ok(newest - upto)
}
