//! The daemon on the PostgreSQL store, through the real binary and a real PostgreSQL
//! (`.ci/postgres`): messages are stored and answered, the conversation continues across a
//! restart, and a PostgreSQL configuration without its URL is refused by name.

#![cfg(feature = "postgres")]

mod support;

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
    daemon.kill();
    assert!(
        !w.home.path().join("hermes.db").exists(),
        "nothing went to SQLite"
    );
    let db = support::postgres::connect(&url).await;
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
    let req = w.llm.requests().pop().unwrap();
    let history: Vec<String> = req.messages().iter().map(|m| m.to_string()).collect();
    assert!(
        history.iter().any(|m| m.contains("my locker code is 4711")),
        "the first exchange is in the history read from PostgreSQL: {history:?}"
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
