//! The store suite on SQLite, and what only SQLite has: migrations, the full-text indexes.

use hermes_adapter::{Platform, SessionKey};
use rusqlite::Connection;

use super::*;
use crate::conversation::ChatMessage;
use crate::store::{Inbox, Outbox, Search, SearchScope, Sessions};

/// Every case of the store suite, on a fresh in-memory database each.
mod suite {
    crate::store::suite::store_suite!(crate::store::Store::open_in_memory().unwrap());
}

#[tokio::test]
async fn migrations_are_recorded_and_reopening_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    let v: usize = store
        .call(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(v, migrations::latest());
    drop(store);
    SqliteStore::open(&path, Durability::Normal).unwrap();
}

#[tokio::test]
async fn reset_starts_a_new_session_and_keeps_the_old_history_searchable() {
    let store = SqliteStore::open_in_memory().unwrap();
    let key = SessionKey::direct(Platform::Telegram, "5");
    let old = store.session_active(&key).await.unwrap();
    store
        .append_messages(old.id, vec![ChatMessage::user("the zebra password")])
        .await
        .unwrap();
    let new = store.session_reset(&key, "user /new").await.unwrap();
    assert_ne!(new.id, old.id);
    assert_eq!(store.session_active(&key).await.unwrap().id, new.id);
    assert!(store.history(new.id, 10).await.unwrap().is_empty());
    let hits: i64 = store
        .call(|c| {
            search::index_pending(c)?;
            Ok(c.query_row(
                "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'zebra'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(hits, 1);
}

#[tokio::test]
async fn migration_3_backfills_owner_and_trigram_index_of_existing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        migrations::apply_to_version(&mut conn, 2).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, key, platform, created_at, updated_at)
                 VALUES (1, 'telegram:-100:7', 'telegram', 0, 0),
                        (2, 'telegram:-100:*', 'telegram', 0, 0),
                        (3, 'not a key', 'telegram', 0, 0);
             INSERT INTO messages (session_id, role, content, created_at)
                 VALUES (1, 'user', '他说你好世界', 0),
                        (1, 'tool', '工具输出你好世界', 0),
                        (2, 'assistant', '你好世界 again', 0),
                        (3, 'user', '你好世界 lost', 0);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    let owners: Vec<Option<String>> = store
        .call(|c| {
            Ok(c.prepare("SELECT owner FROM sessions ORDER BY id")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?)
        })
        .await
        .unwrap();
    assert_eq!(
        owners,
        [
            Some("telegram:-100:7".to_owned()),
            Some("telegram:-100:*".to_owned()),
            None
        ]
    );
    let indexed: i64 = store
        .call(|c| {
            c.execute(
                "INSERT INTO messages_trigram(messages_trigram) VALUES ('integrity-check')",
                [],
            )?;
            Ok(c.query_row(
                "SELECT COUNT(*) FROM messages_trigram WHERE messages_trigram MATCH '\"你好世界\"'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(indexed, 3, "user and assistant rows, not the tool result");
    let found = store
        .search_messages(
            "你好世界",
            SearchScope::Owner("telegram:-100:7".into()),
            5,
            0,
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].excerpts[0][0].content, "他说你好世界");
    let shared = store
        .search_messages(
            "你好世界",
            SearchScope::Owner("telegram:-100:*".into()),
            5,
            0,
        )
        .await
        .unwrap();
    assert_eq!(shared[0].excerpts[0][0].content, "你好世界 again");
    // New sessions get their owner when they are created.
    let s = store
        .session_active(&SessionKey::direct(Platform::Telegram, "9"))
        .await
        .unwrap();
    let owner: Option<String> = store
        .call(move |c| {
            Ok(
                c.query_row("SELECT owner FROM sessions WHERE id = ?1", [s.id], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap();
    assert_eq!(owner.as_deref(), Some("telegram:9"));
}

#[tokio::test]
async fn an_unreadable_inbox_row_is_set_aside_and_the_rows_behind_it_go_on() {
    let store = SqliteStore::open_in_memory().unwrap();
    let first = store
        .inbox_insert(&crate::store::suite::message("5", "1", "before"))
        .await
        .unwrap()
        .unwrap();
    store
        .call(|c| {
            c.execute(
                "INSERT INTO inbox (platform, chat_id, message_id, payload, received_at)
                 VALUES ('telegram', '5', '2', '{\"not\": \"a message\"}', 0)",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let third = store
        .inbox_insert(&crate::store::suite::message("5", "3", "after"))
        .await
        .unwrap()
        .unwrap();
    let rows = store.inbox_new("me", 0, 10).await.unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    assert_eq!(ids, [first, third]);
    assert_eq!(store.inbox_poisoned_count().await.unwrap(), 1);
    assert_eq!(
        store.inbox_new("me", 0, 10).await.unwrap().len(),
        2,
        "poisoned once, not again"
    );

    // A queued row whose session key no longer parses is set aside too.
    store
        .call(move |c| {
            c.execute(
                "UPDATE inbox SET status = 'queued', session_key = 'nonsense:1' WHERE id = ?1",
                [first],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    assert!(store.inbox_queued_sessions().await.unwrap().is_empty());
    assert_eq!(store.inbox_poisoned_count().await.unwrap(), 2);
}

#[tokio::test]
async fn an_unreadable_outbox_row_is_set_aside_and_its_chat_goes_on() {
    let store = SqliteStore::open_in_memory().unwrap();
    store
        .call(|c| {
            c.execute(
                "INSERT INTO outbox (idempotency_key, platform, chat_id, payload, next_attempt_at, created_at)
                 VALUES ('bad', 'telegram', '5', 'not json', 0, 0)",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    store
        .outbox_enqueue(vec![crate::store::suite::reply("5", "good")])
        .await
        .unwrap();
    let now = hermes_adapter::now_millis() + 1;
    assert!(
        store
            .outbox_due("me", now, 10, &[])
            .await
            .unwrap()
            .is_empty(),
        "the bad head is set aside"
    );
    let due = store.outbox_due("me", now, 10, &[]).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].outbound.idempotency_key, "good");
    assert_eq!(store.outbox_stats().await.unwrap().poisoned, 1);
}

#[tokio::test]
async fn the_database_is_private_and_as_durable_as_asked() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("state");
    let path = home.join("hermes.db");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let store = SqliteStore::open(&path, Durability::Full).unwrap();
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&path), 0o600);
    let level: i64 = store
        .call(|c| Ok(c.query_row("PRAGMA synchronous", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(level, 2, "FULL");
    drop(store);
    // A database left readable by others is tightened when opened.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    assert_eq!(mode(&path), 0o600);
    let level: i64 = store
        .call(|c| Ok(c.query_row("PRAGMA synchronous", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(level, 1, "NORMAL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_waiting_together_commit_as_one_group_and_a_failed_job_loses_only_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    store
        .call(|c| Ok(c.execute_batch("CREATE TABLE t (x INTEGER NOT NULL)")?))
        .await
        .unwrap();
    // Hold the store thread so that the next jobs queue up behind it.
    let hold = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .call(|_| {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    Ok(())
                })
                .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let jobs = (0..40).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .call(move |c| {
                    // Inside a group, a job runs within the group's open transaction.
                    let grouped = !c.is_autocommit();
                    let sp = c.savepoint()?;
                    sp.execute("INSERT INTO t (x) VALUES (?1)", [i])?;
                    if i == 20 {
                        return Err(StoreError::Corrupt("this job fails".into()));
                    }
                    sp.commit()?;
                    Ok(grouped)
                })
                .await
        })
    });
    let jobs: Vec<_> = jobs.collect();
    hold.await.unwrap().unwrap();
    let mut grouped = 0;
    for (i, job) in jobs.into_iter().enumerate() {
        match job.await.unwrap() {
            Ok(g) => grouped += usize::from(g),
            Err(e) => assert_eq!(i, 20, "{e}"),
        }
    }
    assert!(grouped > 0, "no job ran in a group");
    // Every caller was answered after the commit: another connection sees all of it at once.
    let other = Connection::open(&path).unwrap();
    let (n, failed): (i64, i64) = other
        .query_row(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE x = 20) FROM t",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n, failed), (39, 0));
}
