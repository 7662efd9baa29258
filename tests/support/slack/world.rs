//! A daemon with Slack alone (no Telegram token), in Socket Mode or Events API mode, against
//! the fake Slack and the fake LLM.

use std::time::Duration;

use super::{ALICE, APP_TOKEN, BOB, BOT_TOKEN, EventsClient, FakeSlack, SIGNING_SECRET};
use crate::support::daemon::{Daemon, World};
use crate::support::http::free_port;

/// How the daemon receives Slack events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Socket,
    Events,
}

/// A world whose daemon talks to Slack only.
pub struct SlackWorld {
    pub w: World,
    pub slack: FakeSlack,
    pub mode: Mode,
    /// Where the daemon's Events API listener is (Events mode).
    pub listen: String,
}

impl SlackWorld {
    pub async fn new(config: &str, mode: Mode) -> SlackWorld {
        let mut w = World::new(config).await;
        let slack = FakeSlack::start().await;
        let listen = format!("127.0.0.1:{}", free_port());
        w.unset_env("TELEGRAM_BOT_TOKEN");
        w.set_env("SLACK_BOT_TOKEN", BOT_TOKEN);
        w.set_env("SLACK_API_URL", &slack.api_url());
        w.set_env("SLACK_ALLOWED_USERS", &format!("{ALICE},{BOB}"));
        match mode {
            Mode::Socket => w.set_env("SLACK_APP_TOKEN", APP_TOKEN),
            Mode::Events => {
                w.set_env("SLACK_SIGNING_SECRET", SIGNING_SECRET);
                w.set_env("SLACK_EVENTS_LISTEN", &listen);
            }
        }
        SlackWorld {
            w,
            slack,
            mode,
            listen,
        }
    }

    /// Start the daemon and wait until it is connected: a Socket Mode connection beyond those
    /// already made, or the Events API listener accepting connections.
    pub async fn start(&mut self) -> Daemon {
        let before = self.slack.connections();
        let slack = self.slack.clone();
        let listen = self.listen.clone();
        match self.mode {
            Mode::Socket => {
                self.w
                    .start_when("a Socket Mode connection", move || {
                        slack.connections() > before
                    })
                    .await
            }
            Mode::Events => {
                self.w
                    .start_when("the Events API listener", move || {
                        std::net::TcpStream::connect_timeout(
                            &listen.parse().expect("listen address"),
                            Duration::from_millis(50),
                        )
                        .is_ok()
                    })
                    .await
            }
        }
    }

    pub fn events(&self) -> EventsClient {
        EventsClient::new(&self.listen)
    }
}
