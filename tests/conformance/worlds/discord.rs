//! Discord through the fake REST API and gateway websocket.

use crate::conformance::world::{Injected, Platform, Said};
use crate::support::daemon::{Daemon, World};
use crate::support::discord::{self, FakeDiscord, Fault};

/// The Discord id of person `who`.
fn id(who: usize) -> u64 {
    300_000_000_000_000_000 + who as u64
}

pub struct Discord {
    w: World,
    dc: FakeDiscord,
}

impl Platform for Discord {
    const NAME: &'static str = "discord";
    // Every create carries a nonce from the outbox key, with enforce_nonce.
    const EXACTLY_ONCE: bool = true;
    const MAX_LEN: Option<usize> = Some(2000);

    async fn new(config: &str, people: usize) -> Self {
        let (mut w, dc) = discord::world(config).await;
        let allowed: Vec<String> = (0..people).map(|p| id(p).to_string()).collect();
        w.set_env("DISCORD_ALLOWED_USERS", &allowed.join(","));
        Discord { w, dc }
    }
    fn world(&self) -> &World {
        &self.w
    }
    async fn start(&mut self) -> Daemon {
        discord::start(&mut self.w, &self.dc).await
    }

    async fn dm(&self, who: usize, text: &str) {
        self.dc.dm(id(who), "person", text);
    }
    async fn stranger_dm(&self, text: &str) {
        self.dc.dm(discord::MALLORY, "stranger", text);
    }
    async fn group(&self, who: usize, text: &str, mention: bool) -> Injected {
        let channel = crate::support::discord::CHANNEL;
        if mention {
            self.dc.mention(channel, id(who), "person", text);
        } else {
            self.dc.guild_text(channel, id(who), "person", text);
        }
        Ok(())
    }
    async fn said(&self) -> Vec<Said> {
        self.dc
            .sent()
            .into_iter()
            .map(|m| Said {
                place: m.channel_id.to_string(),
                text: m.content,
                identity: Some(m.id.to_string()),
            })
            .collect()
    }

    fn rate_limit_next_send(&self, secs: u64) -> Injected {
        self.dc
            .fail_next("create_message", Fault::RateLimited(secs as f64));
        Ok(())
    }
    fn reject_format_next_send(&self) -> Injected {
        Err("Discord renders any markdown; it has no formatting rejection")
    }
    fn go_silent(&self) -> Injected {
        self.dc.go_silent();
        Ok(())
    }
}
