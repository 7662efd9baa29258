//! The Discord world of the end-to-end tests: the daemon running with Discord alone against
//! the fake Discord and the fake LLM, and waits that show the daemon's log when they time out.

use std::time::{Duration, Instant};

use super::fake::{FakeDiscord, SentMessage};
use crate::support::WAIT;
use crate::support::daemon::{Daemon, TOKEN, World};

/// On the Discord allowlist of every test daemon.
pub const ALICE: u64 = 111_111_111_111_111_111;
pub const BOB: u64 = 222_222_222_222_222_222;
/// Not on the allowlist.
pub const MALLORY: u64 = 666_666_666_666_666_666;

/// A world where hermes runs with Discord alone (no Telegram configured).
pub async fn world(config: &str) -> (World, FakeDiscord) {
    let mut w = World::new(config).await;
    let dc = FakeDiscord::start(TOKEN).await;
    for key in [
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_API_URL",
        "TELEGRAM_ALLOWED_USERS",
    ] {
        w.unset_env(key);
    }
    w.set_env("DISCORD_BOT_TOKEN", TOKEN);
    w.set_env("DISCORD_API_URL", &dc.api_url());
    w.set_env("DISCORD_ALLOWED_USERS", &format!("{ALICE},{BOB}"));
    (w, dc)
}

/// Start the daemon and wait until its gateway session is live.
pub async fn start(w: &mut World, dc: &FakeDiscord) -> Daemon {
    let before = dc.identifies() + dc.resumes();
    w.start_when("a Discord gateway session", || {
        dc.connected() && dc.identifies() + dc.resumes() > before
    })
    .await
}

/// Poll `check` until it gives a value; on timeout, fail with the daemon's log.
pub async fn wait_until<T>(daemon: &Daemon, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; log:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait until the bot posted `n` messages.
pub async fn wait_sent(dc: &FakeDiscord, daemon: &Daemon, n: usize) -> Vec<SentMessage> {
    wait_until(daemon, &format!("{n} message(s) from the bot"), || {
        let sent = dc.sent();
        (sent.len() >= n).then_some(sent)
    })
    .await
}

pub fn texts(sent: &[SentMessage]) -> Vec<&str> {
    sent.iter().map(|m| m.content.as_str()).collect()
}
