//! A world whose daemon talks to Matrix only: fresh bot, Alice, Bob and Mallory accounts on a
//! Synapse, the daemon started once its first sync is through, and waits for its reconnects.

use std::time::{Duration, Instant};

use matrix_sdk::ruma::{OwnedUserId, UserId};

use super::{PASSWORD, Person, Synapse};
use crate::support::daemon::{Daemon, World};

/// A world whose daemon talks to Matrix only.
pub struct MatrixWorld {
    pub w: World,
    pub synapse: Synapse,
    pub bot: OwnedUserId,
    pub alice: OwnedUserId,
    pub bob: OwnedUserId,
    /// Not on the allowlist.
    pub mallory: OwnedUserId,
}

pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000_000;
    format!(
        "{tag}{}x{t}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl MatrixWorld {
    pub async fn new(config: &str) -> MatrixWorld {
        Self::on(Synapse::get(), config).await
    }

    /// A world on a given Synapse (a private one, for tests that restart it).
    pub async fn on(synapse: Synapse, config: &str) -> MatrixWorld {
        let mut w = World::new(config).await;
        let bot = synapse.register(&unique("bot")).await;
        let alice = synapse.register(&unique("alice")).await;
        let bob = synapse.register(&unique("bob")).await;
        let mallory = synapse.register(&unique("mallory")).await;
        w.unset_env("TELEGRAM_BOT_TOKEN");
        for (k, v) in [
            ("MATRIX_HOMESERVER", synapse.url.clone()),
            ("MATRIX_USER_ID", bot.to_string()),
            ("MATRIX_PASSWORD", PASSWORD.to_owned()),
            ("MATRIX_ALLOWED_USERS", format!("{alice},{bob}")),
        ] {
            w.set_env(k, &v);
        }
        MatrixWorld {
            w,
            synapse,
            bot,
            alice,
            bob,
            mallory,
        }
    }

    pub fn connected_count(&self) -> usize {
        count_in_logs(self.w.home.path(), "matrix: sync connected")
    }

    /// Start the daemon and wait until its first sync is through.
    pub async fn start(&mut self) -> Daemon {
        let before = self.connected_count();
        let home = self.w.home.path().to_path_buf();
        self.w
            .start_when("a Matrix sync", move || {
                count_in_logs(&home, "matrix: sync connected") > before
            })
            .await
    }

    /// Wait until the daemon logs another successful sync after an outage.
    pub async fn wait_connected(&self, before: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.connected_count() <= before {
            assert!(
                Instant::now() < deadline,
                "no new Matrix sync; logs:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every daemon log of this world, concatenated.
    pub fn logs(&self) -> String {
        let mut names: Vec<_> = std::fs::read_dir(self.w.home.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("daemon-"))
            })
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n---- restart ----\n")
    }

    pub async fn person(&self, id: &UserId) -> Person {
        Person::login(&self.synapse, id).await
    }
}

pub fn count_in_logs(home: &std::path::Path, needle: &str) -> usize {
    std::fs::read_dir(home)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("daemon-"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .matches(needle)
                .count()
        })
        .sum()
}
