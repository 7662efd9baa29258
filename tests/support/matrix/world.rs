//! A world whose daemon talks to Matrix only: fresh bot, Alice, Bob and Mallory accounts on a
//! Synapse, the daemon started once its first sync is through, and waits for its reconnects.

use std::time::Duration;

use matrix_sdk::ruma::{OwnedUserId, UserId};

use super::{PASSWORD, Person, Synapse};
use crate::support::daemon::{Daemon, World, unique};

/// What the daemon logs each time a sync goes through after a start or an outage.
const SYNC_CONNECTED: &str = "matrix: sync connected";

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

    /// Successful syncs the daemons of this world logged so far.
    pub fn connected_count(&self) -> usize {
        self.w.logged(SYNC_CONNECTED)
    }

    /// Start the daemon and wait until its first sync is through.
    pub async fn start(&mut self) -> Daemon {
        self.w.start_logging(SYNC_CONNECTED).await
    }

    /// Wait until the daemon logs another successful sync after an outage.
    pub async fn wait_connected(&self, before: usize, timeout: Duration) {
        self.w.wait_logged(SYNC_CONNECTED, before, timeout).await;
    }

    pub async fn person(&self, id: &UserId) -> Person {
        Person::login(&self.synapse, id).await
    }
}
