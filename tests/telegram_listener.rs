//! The Telegram listener under supervision, in process: a 409 Conflict (another poller on the
//! same token) backs off instead of storming, and the listener recovers.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use hermes::agent::Agent;
use hermes::config::{Config, Secret};
use hermes::gateway::{Gateway, ListenerState, SupervisorPolicy};
use hermes::llm::OpenAiProvider;
use hermes::store::Store;
use hermes_adapter::Platform;
use hermes_telegram::{TelegramAdapter, TelegramSettings};
use support::WAIT;
use support::daemon::{ALICE, TOKEN};
use support::llm::FakeLlm;
use support::telegram::{FakeTelegram, Fault};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_backs_off_then_the_listener_recovers() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let tg = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let mut config = Config::default();
    config.llm.base_url = llm.base_url();
    config.llm.api_key = Secret::new("sk-test");
    config.telegram.allowed_users = vec![ALICE.to_string()];
    let home = tempfile::tempdir().unwrap();
    config.home = home.path().to_owned();
    let store = Store::open_in_memory().unwrap();
    let agent = Agent::new(
        &config,
        Arc::new(
            OpenAiProvider::new(&hermes::llm::ProviderSettings::from_config(&config.llm)).unwrap(),
        ),
        store.clone(),
    )
    .unwrap();
    let adapter = Arc::new(TelegramAdapter::new(TelegramSettings {
        token: TOKEN.into(),
        api_url: tg.api_url().parse().unwrap(),
        poll_timeout_secs: 1,
        webhook: None,
    }));
    let backoff = Duration::from_millis(1500);
    let gateway = Gateway::new(config, store, agent, vec![adapter]).with_supervisor_policy(
        SupervisorPolicy {
            conflict_backoff: backoff,
            ..SupervisorPolicy::default()
        },
    );
    let health = gateway.health();
    tg.fail_next("getUpdates", Fault::Conflict);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(gateway.run(shutdown.clone()));

    let polls = tg.wait_calls("getupdates", 2, WAIT).await;
    assert_eq!(polls[0].status, 409);
    let waited = polls[1].at.duration_since(polls[0].at);
    assert!(
        waited >= backoff,
        "polled again after {waited:?}, before the conflict backoff"
    );
    let (listener, h) = health.snapshot().remove(0);
    assert_eq!(listener.platform, Platform::Telegram);
    assert!(h.restarts >= 1);
    assert!(h.last_error.unwrap_or_default().contains("conflict"));

    tg.private_text(ALICE, "Alice", "still there?");
    let sent = tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: still there?");
    assert_eq!(health.snapshot()[0].1.state, ListenerState::Up);
    shutdown.cancel();
    running.await.unwrap();
}
