//! Telegram through the fake Bot API (long polling).

use crate::conformance::world::{Injected, Platform, Said};
use crate::support::daemon::{Daemon, GROUP, World};
use crate::support::telegram::Fault;

/// The Telegram id of person `who`.
fn id(who: usize) -> i64 {
    1000 + who as i64
}

pub struct Telegram {
    w: World,
}

impl Platform for Telegram {
    const NAME: &'static str = "telegram";
    // No idempotency key on sendMessage: a send in flight at a crash can go twice.
    const EXACTLY_ONCE: bool = false;
    const MAX_LEN: Option<usize> = Some(4096);

    async fn new(config: &str, people: usize) -> Self {
        let mut w = World::new(config).await;
        let allowed: Vec<String> = (0..people).map(|p| id(p).to_string()).collect();
        w.set_env("TELEGRAM_ALLOWED_USERS", &allowed.join(","));
        Telegram { w }
    }
    fn world(&self) -> &World {
        &self.w
    }
    async fn start(&mut self) -> Daemon {
        self.w.start().await
    }

    async fn dm(&self, who: usize, text: &str) {
        self.w.tg.private_text(id(who), "Person", text);
    }
    async fn stranger_dm(&self, text: &str) {
        self.w.tg.private_text(666, "Stranger", text);
    }
    async fn group(&self, who: usize, text: &str, mention: bool) -> Injected {
        if mention {
            self.w.tg.group_mention(GROUP, id(who), "Person", text);
        } else {
            self.w.tg.group_text(GROUP, id(who), "Person", text);
        }
        Ok(())
    }
    async fn said(&self) -> Vec<Said> {
        self.w
            .tg
            .sent()
            .into_iter()
            .map(|m| Said {
                place: format!("{}#{:?}", m.chat_id, m.thread_id),
                text: m.visible_text,
                identity: None,
            })
            .collect()
    }

    fn rate_limit_next_send(&self, secs: u64) -> Injected {
        self.w.tg.fail_next("sendMessage", Fault::RetryAfter(secs));
        Ok(())
    }
    fn reject_format_next_send(&self) -> Injected {
        self.w.tg.fail_next("sendMessage", Fault::CantParseEntities);
        Ok(())
    }
    fn go_silent(&self) -> Injected {
        self.w.tg.go_silent();
        Ok(())
    }
}
