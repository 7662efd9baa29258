//! Slack through the fake Web API, in Socket Mode (envelopes kept until acknowledged, so a
//! connection that was down gets them next time) and over the Events API (a request that fails
//! is retried, as Slack retries a failed delivery).

use std::time::{Duration, Instant};

use crate::conformance::world::{Injected, Platform, Said};
use crate::support::daemon::{Daemon, World};
use crate::support::slack::{CHANNEL, Fault, MALLORY, Mode, SlackWorld};

/// The Slack id of person `who`.
fn id(who: usize) -> String {
    format!("U{}", 1000 + who)
}

/// How long a failed Events API delivery is retried.
const RETRY_FOR: Duration = Duration::from_secs(120);

pub struct Slack<const EVENTS: bool> {
    sw: SlackWorld,
}

pub type SlackSocket = Slack<false>;
pub type SlackEvents = Slack<true>;

impl<const EVENTS: bool> Slack<EVENTS> {
    async fn deliver(&self, callback: serde_json::Value) {
        if !EVENTS {
            self.sw.slack.envelope("events_api", callback);
            return;
        }
        let client = self.sw.events();
        // Slack retries a delivery that failed (the daemon down, a 5xx) with X-Slack-Retry-Num.
        if client.try_post_json(&callback, None).await == Some(200) {
            return;
        }
        tokio::spawn(async move {
            let deadline = Instant::now() + RETRY_FOR;
            let mut attempt = 1;
            while Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(300)).await;
                if client.try_post_json(&callback, Some(attempt)).await == Some(200) {
                    return;
                }
                attempt += 1;
            }
        });
    }
}

impl<const EVENTS: bool> Platform for Slack<EVENTS> {
    const NAME: &'static str = if EVENTS {
        "slack-events"
    } else {
        "slack-socket"
    };
    // chat.postMessage has no idempotency key, but a reply that may have gone out is looked for
    // by the outbox key in its metadata before it is sent again.
    const EXACTLY_ONCE: bool = true;
    const MAX_LEN: Option<usize> = Some(4000);

    async fn new(config: &str, people: usize) -> Self {
        let mode = if EVENTS { Mode::Events } else { Mode::Socket };
        let mut sw = SlackWorld::new(config, mode).await;
        let allowed: Vec<String> = (0..people).map(id).collect();
        sw.w.set_env("SLACK_ALLOWED_USERS", &allowed.join(","));
        Slack { sw }
    }
    fn world(&self) -> &World {
        &self.sw.w
    }
    async fn start(&mut self) -> Daemon {
        self.sw.start().await
    }

    async fn dm(&self, who: usize, text: &str) {
        let (cb, _) = self.sw.slack.dm_event(&id(who), text);
        self.deliver(cb).await;
    }
    async fn stranger_dm(&self, text: &str) {
        let (cb, _) = self.sw.slack.dm_event(MALLORY, text);
        self.deliver(cb).await;
    }
    async fn group(&self, who: usize, text: &str, mention: bool) -> Injected {
        let (cb, _) = if mention {
            self.sw.slack.mention_event(CHANNEL, &id(who), text, None)
        } else {
            self.sw.slack.channel_event(CHANNEL, &id(who), text, None)
        };
        self.deliver(cb).await;
        Ok(())
    }
    async fn said(&self) -> Vec<Said> {
        self.sw
            .slack
            .posted()
            .into_iter()
            .map(|m| Said {
                place: format!("{}#{:?}", m.channel, m.thread_ts),
                text: m.text,
                identity: None,
            })
            .collect()
    }

    fn rate_limit_next_send(&self, secs: u64) -> Injected {
        self.sw
            .slack
            .fail_next("chat.postMessage", Fault::RetryAfter(secs));
        Ok(())
    }
    fn reject_format_next_send(&self) -> Injected {
        self.sw
            .slack
            .fail_next("chat.postMessage", Fault::Error("invalid_blocks".into()));
        Ok(())
    }
    fn go_silent(&self) -> Injected {
        if EVENTS {
            return Err("the Events API has no connection of its own to go deaf");
        }
        self.sw.slack.go_silent();
        Ok(())
    }
}
