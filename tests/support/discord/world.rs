//! The Discord world of the end-to-end tests: the daemon running with Discord alone against
//! the fake Discord and the fake LLM, and waits that show the daemon's log when they time out.

use super::fake::{FakeDiscord, SentMessage};
use crate::support::daemon::{Daemon, TOKEN, World};
use crate::support::{WAIT, wait_for};

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
pub async fn wait_until<T>(daemon: &Daemon, what: &str, check: impl FnMut() -> Option<T>) -> T {
    wait_for(WAIT, what, check, || format!("log:\n{}", daemon.log())).await
}

/// Wait until the bot posted `n` messages.
pub async fn wait_sent(dc: &FakeDiscord, daemon: &Daemon, n: usize) -> Vec<SentMessage> {
    let check = || {
        let sent = dc.sent();
        (sent.len() >= n).then_some(sent)
    };
    let describe = || {
        let sent = dc.sent();
        format!("sent so far: {:?}\nlog:\n{}", texts(&sent), daemon.log())
    };
    let what = format!("{n} message(s) from the bot");
    wait_for(WAIT, &what, check, describe).await
}

/// Wait until the bot's message `id` was edited to show `text` (a streamed answer in full).
pub async fn wait_shown(dc: &FakeDiscord, daemon: &Daemon, id: u64, text: &str) {
    wait_until(daemon, "the full answer in the preview", || {
        dc.edits()
            .iter()
            .rev()
            .find(|e| e.id == id)
            .is_some_and(|e| e.content == text)
            .then_some(())
    })
    .await;
}

pub fn texts(sent: &[SentMessage]) -> Vec<&str> {
    sent.iter().map(|m| m.content.as_str()).collect()
}
