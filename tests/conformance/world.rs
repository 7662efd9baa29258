//! What every platform's world offers the cases: people who write to the bot (directly, in a
//! group with or without a mention), what the bot said and where, the faults its fake (or the
//! proxy in front of its real server) can inject, and the daemon to start, kill and restart.
//!
//! A platform that has no such thing (email has no group mention, a real server cannot be told
//! to answer 429) says so by returning `Err(reason)`; the case then prints the reason and checks
//! nothing else, and the closing note's table marks it "n/a".

use std::time::Duration;

use crate::support::daemon::{Daemon, World};
use crate::support::llm::FakeLlm;

/// One message the bot sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// Where: a chat (and thread), in the platform's own terms; equal for one conversation.
    pub place: String,
    /// The text as a person sees it.
    pub text: String,
    /// The platform's identity of the message (a resend with the same identity is one message
    /// to its reader: email's `Message-ID`); `None` where every send is a new message.
    pub identity: Option<String>,
}

/// A fault injected into the platform, or why it cannot be.
pub type Injected = Result<(), &'static str>;

/// The world of one platform: its fake (or real server), the fake model, and the daemon's home.
pub trait Platform: Sized {
    /// The platform's name in test names and the results table.
    const NAME: &'static str;
    /// Whether the platform lets a resend be recognised (Discord nonce, Matrix transaction id,
    /// email Message-ID): the storm then allows no doubles at all.
    const EXACTLY_ONCE: bool;
    /// Longest message the platform takes, in its own unit; `None`: no limit worth splitting at.
    const MAX_LEN: Option<usize>;

    /// A world whose daemon serves `people` people (`0..people`) on this platform alone, with
    /// `config` as its configuration file.
    async fn new(config: &str, people: usize) -> Self;
    fn world(&self) -> &World;
    fn llm(&self) -> &FakeLlm {
        &self.world().llm
    }
    /// Start the daemon and wait until it is connected to the platform.
    async fn start(&mut self) -> Daemon;

    /// Person `who` writes `text` to the bot directly.
    async fn dm(&self, who: usize, text: &str);
    /// Someone not allowed writes to the bot directly.
    async fn stranger_dm(&self, text: &str);
    /// Person `who` writes `text` in a group the bot is in, addressing it when `mention`.
    async fn group(&self, who: usize, text: &str, mention: bool) -> Injected;
    /// Everything the bot sent so far, in order.
    async fn said(&self) -> Vec<Said>;

    /// The platform's next send is refused with a rate limit of `secs` seconds.
    fn rate_limit_next_send(&self, secs: u64) -> Injected;
    /// The platform's next send is refused for its formatting.
    fn reject_format_next_send(&self) -> Injected;
    /// The daemon's connection stays open but the platform stops delivering and answering on
    /// it (a "healthy but deaf" listener); new connections work.
    fn go_silent(&self) -> Injected;
    /// The configuration of the never-deaf case: a short silence limit, above the platform's
    /// own rhythm of signs of life.
    const DEAF_CONFIG: &'static str = "[gateway]\nlistener_silence_secs = 8\n";
    /// How long the daemon may take to notice a silent connection with [`Self::DEAF_CONFIG`].
    fn silence_noticed_within(&self) -> Duration {
        Duration::from_secs(30)
    }
}

/// The texts the bot said, in order.
pub fn texts(said: &[Said]) -> Vec<String> {
    said.iter().map(|s| s.text.clone()).collect()
}
