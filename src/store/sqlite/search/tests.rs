//! SQLite-only checks of history search (its behaviour is in `store::suite`): the queries use
//! the full-text indexes newest first, without sorting.

use super::*;

#[tokio::test]
async fn word_search_reads_the_index_newest_first_without_sorting() {
    let store = SqliteStore::open_in_memory().unwrap();
    let plans = store
        .call(|c| {
            let mut plans = Vec::new();
            for (q, scope) in [
                ("hello world", SearchScope::Owner("telegram:1".into())),
                ("你好世界", SearchScope::Owner("telegram:1".into())),
                ("你好世界 天气", SearchScope::All),
            ] {
                let (sql, args) = candidates(&Query::parse(q), Combine::All, &scope);
                let plan: Vec<String> = c
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
                    .query_map(params_from_iter(args), |r| r.get::<_, String>(3))?
                    .collect::<rusqlite::Result<_>>()?;
                plans.push(plan.join("\n"));
            }
            Ok(plans)
        })
        .await
        .unwrap();
    for plan in plans {
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert!(plan.contains("VIRTUAL TABLE"), "{plan}");
    }
}

/// How many rows of the word index match `expr` (an FTS5 query).
fn word_matches(c: &Connection, expr: &str) -> rusqlite::Result<i64> {
    c.query_row(
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?1",
        [expr],
        |r| r.get(0),
    )
}

#[tokio::test]
async fn migration_8_indexes_each_visible_message_with_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        super::super::migrations::apply_to_version(&mut conn, 7).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, key, platform, owner, created_at, updated_at)
                 VALUES (1, 'telegram:7', 'telegram', 'telegram:7', 0, 0),
                        (2, 'telegram:8', 'telegram', 'telegram:8', 0, 0);
             INSERT INTO messages (session_id, role, content, created_at)
                 VALUES (1, 'user', 'the zebra crossing', 0),
                        (1, 'tool', 'zebra zebra tool output', 0),
                        (2, 'assistant', 'a zebra for eight', 0);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, super::super::Durability::Normal).unwrap();
    let seven = owner_token("telegram:7");
    let counts = store
        .call(move |c| {
            c.execute(
                "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')",
                [],
            )?;
            let all = word_matches(c, "content : zebra")?;
            let sevens = word_matches(c, &format!("owner : {seven} AND content : zebra"))?;
            // A message arriving later is indexed with its owner (in the next batch); an edit and
            // a delete take the old entry out again.
            c.execute(
                "INSERT INTO messages (session_id, role, content, created_at)
                 VALUES (1, 'user', 'another zebra', 0)",
                [],
            )?;
            index_pending(c)?;
            let later = word_matches(c, &format!("owner : {seven} AND content : zebra"))?;
            c.execute(
                "UPDATE messages SET content = 'a horse now' WHERE content = 'another zebra'",
                [],
            )?;
            c.execute(
                "DELETE FROM messages WHERE content = 'a zebra for eight'",
                [],
            )?;
            c.execute(
                "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')",
                [],
            )?;
            Ok((all, sevens, later, word_matches(c, "content : zebra")?))
        })
        .await
        .unwrap();
    assert_eq!(
        counts,
        (2, 1, 2, 1),
        "tool output is not indexed; owners apart"
    );
    let found = store
        .search_messages("horse", SearchScope::Owner("telegram:7".into()), 5, 0)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    let none = store
        .search_messages("horse", SearchScope::Owner("telegram:8".into()), 5, 0)
        .await
        .unwrap();
    assert!(none.is_empty());
    // A term that happens to look like an owner's token finds nothing: it is matched in the
    // text only.
    let token = owner_token("telegram:7");
    let spoof = store
        .search_messages(&token, SearchScope::All, 5, 0)
        .await
        .unwrap();
    assert!(spoof.is_empty());
}

#[test]
fn an_owners_token_is_one_word_of_hex() {
    assert_eq!(owner_token("tg:1"), "o74673A31");
    assert_eq!(owner_token(""), "o");
}

#[tokio::test]
async fn messages_reach_the_index_in_batches_and_every_search_sees_them_at_once() {
    use crate::conversation::ChatMessage;
    use crate::store::Sessions;
    use hermes_adapter::{Platform, SessionKey};

    let store = SqliteStore::open_in_memory().unwrap();
    let key = SessionKey::direct(Platform::Telegram, "5");
    let s = store.session_active(&key).await.unwrap();
    let id = s.id;
    store
        .append_messages(id, vec![ChatMessage::user("the zebra password")])
        .await
        .unwrap();
    // The commit did no index work ...
    let indexed = store
        .call(|c| Ok(word_matches(c, "content : zebra")?))
        .await
        .unwrap();
    assert_eq!(indexed, 0);
    // ... yet a search right after finds the message.
    let found = store
        .search_messages("zebra", SearchScope::Owner(key.owner()), 5, 0)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    // A message nobody searches for is indexed by the store thread on its own.
    store
        .append_messages(id, vec![ChatMessage::user("a quiet giraffe")])
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let n = store
            .call(|c| Ok(word_matches(c, "content : giraffe")?))
            .await
            .unwrap();
        if n == 1 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never indexed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Deleting a row the indexes have not seen leaves them consistent.
    store
        .append_messages(id, vec![ChatMessage::user("an okapi, briefly")])
        .await
        .unwrap();
    let okapis = store
        .call(move |c| {
            c.execute(
                "DELETE FROM messages WHERE content = 'an okapi, briefly'",
                [],
            )?;
            index_pending(c)?;
            for table in ["messages_fts", "messages_trigram"] {
                c.execute(
                    &format!("INSERT INTO {table}({table}) VALUES ('integrity-check')"),
                    [],
                )?;
            }
            Ok(word_matches(c, "content : okapi")?)
        })
        .await
        .unwrap();
    assert_eq!(okapis, 0);
}
