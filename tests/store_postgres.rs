//! The daemon on the PostgreSQL store, through the real binary and a real PostgreSQL
//! (`.ci/postgres`): messages are stored and answered, the conversation continues across a
//! restart, and a PostgreSQL configuration without its URL is refused by name.

#![cfg(feature = "postgres")]

use crate::support;

use support::WAIT;
use support::daemon::{ALICE, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_answers_from_postgres_and_remembers_across_a_restart() {
    let mut w = World::new("").await;
    let url = support::postgres::fresh_database().await;
    w.set_env("HERMES_DATABASE_URL", &url);
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "my locker code is 4711");
    w.tg.wait_sent(1, WAIT).await;
    let db = support::postgres::connect(&url).await;
    // The reply reaches Telegram just before the daemon records it as sent: wait for that, or
    // the restarted daemon would rightly send it again.
    let deadline = std::time::Instant::now() + WAIT;
    while db
        .query_one("SELECT COUNT(*) FROM outbox WHERE status = 'sent'", &[])
        .await
        .unwrap()
        .get::<_, i64>(0)
        == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the reply was never recorded as sent"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    daemon.kill();
    assert!(
        !w.home.path().join("hermes.db").exists(),
        "nothing went to SQLite"
    );
    let count = |sql: &'static str| {
        let db = &db;
        async move { db.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert_eq!(
        count("SELECT COUNT(*) FROM inbox WHERE status = 'done'").await,
        1
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM outbox WHERE status = 'sent'").await,
        1
    );
    assert_eq!(count("SELECT COUNT(*) FROM messages").await, 2);

    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what is my locker code?");
    w.tg.wait_sent(2, WAIT).await;
    assert_eq!(w.llm.requests().len(), 2);
    let req = w.llm.requests().pop().unwrap();
    let history: Vec<String> = req.messages().iter().map(|m| m.to_string()).collect();
    assert!(
        history.iter().any(|m| m.contains("my locker code is 4711")),
        "the first exchange is in the history read from PostgreSQL: {history:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_store_is_copied_verified_and_continued_on_postgres() {
    let mut w = World::new("").await;
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "remember the blue door");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "/permissions safe");
    w.tg.wait_sent(2, WAIT).await;
    // Stopped as an operator would before migrating: what is in flight is finished first.
    assert!(daemon.terminate(WAIT).success());

    let url = support::postgres::fresh_database().await;
    let migrate = |url: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
            .args(["store", "migrate", "--to", "postgres", "--url", url])
            .env("HERMES_HOME", w.home.path())
            .env_remove("HERMES_DATABASE_URL")
            .output()
            .unwrap()
    };
    let out = migrate(&url);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("verified:"), "{said}");
    assert!(said.contains("messages: 2 rows, sha256 "), "{said}");
    assert!(said.contains("inbox: 2 rows"), "{said}");
    // A second copy into the same database is refused: nothing is doubled.
    let again = migrate(&url);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));

    let db = support::postgres::connect(&url).await;
    let sent: i64 = db
        .query_one("SELECT COUNT(*) FROM outbox WHERE status = 'sent'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        sent, 2,
        "both replies were recorded as sent before the copy"
    );
    // The daemon on PostgreSQL goes on with the same conversation, level and ids.
    w.set_env("HERMES_DATABASE_URL", &url);
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "which door?");
    w.tg.wait_sent(3, WAIT).await;
    assert_eq!(w.llm.requests().len(), 2);
    let req = w.llm.requests().pop().unwrap();
    assert!(req.last_user_text().unwrap().contains("which door?"));
    let history: Vec<String> = req.messages().iter().map(|m| m.to_string()).collect();
    assert!(
        history.iter().any(|m| m.contains("remember the blue door")),
        "{history:?}"
    );
    w.tg.private_text(ALICE, "Alice", "/permissions");
    let sent = w.tg.wait_sent(4, WAIT).await;
    assert!(
        sent[3].visible_text.contains("Level: safe"),
        "{}",
        sent[3].visible_text
    );
    let db = support::postgres::connect(&url).await;
    let ids: Vec<i64> = db
        .query("SELECT id FROM inbox ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids.len(), 4);
    assert!(
        ids.windows(2).all(|p| p[1] > p[0]),
        "new rows continue after the copied ids: {ids:?}"
    );
}

#[tokio::test]
async fn a_postgres_backend_without_a_url_is_a_config_error() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("config.toml");
    std::fs::write(&path, "[store]\nbackend = \"postgres\"\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
        .args(["config", "check", "--config"])
        .arg(&path)
        .env("HERMES_HOME", home.path())
        .env_remove("HERMES_DATABASE_URL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("store.url"), "{err}");
}
