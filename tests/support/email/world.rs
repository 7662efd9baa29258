//! A world whose daemon talks to Email only: its own bot, Alice and Mallory mailboxes on the
//! shared mail servers, the daemon started once its IMAP connection is up, and waits for mail.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::MailServers;
use crate::support::daemon::{Daemon, World};

/// A world whose daemon talks to Email only.
pub struct MailWorld {
    pub w: World,
    pub mail: MailServers,
    /// The bot's user name and address.
    pub bot: String,
    pub bot_addr: String,
    /// An allowed correspondent.
    pub alice: String,
    pub alice_addr: String,
    /// Not on the allowlist.
    pub mallory: String,
    pub mallory_addr: String,
}

fn unique(tag: &str) -> String {
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

impl MailWorld {
    pub async fn new(config: &str) -> MailWorld {
        let mail = MailServers::get();
        let mut w = World::new(config).await;
        let bot = unique("bot");
        let alice = unique("alice");
        let mallory = unique("mallory");
        let (bot_addr, alice_addr, mallory_addr) = (
            format!("{bot}@localhost"),
            format!("{alice}@localhost"),
            format!("{mallory}@localhost"),
        );
        w.unset_env("TELEGRAM_BOT_TOKEN");
        for (k, v) in [
            ("EMAIL_ADDRESS", bot_addr.clone()),
            ("EMAIL_PASSWORD", "secret".into()),
            ("EMAIL_IMAP_HOST", "127.0.0.1".into()),
            ("EMAIL_IMAP_PORT", mail.imap_port.to_string()),
            ("EMAIL_IMAP_SECURITY", "plain".into()),
            ("EMAIL_IMAP_USER", bot.clone()),
            ("EMAIL_SMTP_HOST", "127.0.0.1".into()),
            ("EMAIL_SMTP_PORT", mail.smtp_port.to_string()),
            ("EMAIL_SMTP_SECURITY", "plain".into()),
            ("EMAIL_SMTP_USER", String::new()),
            ("EMAIL_ALLOWED_SENDERS", alice_addr.clone()),
        ] {
            w.set_env(k, &v);
        }
        MailWorld {
            w,
            mail,
            bot,
            bot_addr,
            alice,
            alice_addr,
            mallory,
            mallory_addr,
        }
    }

    fn connected_count(&self) -> usize {
        count_in_logs(&self.w.home.path().to_path_buf(), "email: IMAP connected")
    }

    /// Start the daemon and wait until its IMAP connection is up.
    pub async fn start(&mut self) -> Daemon {
        let before = self.connected_count();
        let home = self.w.home.path().to_path_buf();
        self.w
            .start_when("an IMAP connection", move || {
                count_in_logs(&home, "email: IMAP connected") > before
            })
            .await
    }

    /// Wait until the daemon logs another IMAP connection than the `before`th.
    pub async fn wait_connected(&self, before: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.connected_count() <= before {
            assert!(Instant::now() < deadline, "no new IMAP connection");
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

    pub fn connections(&self) -> usize {
        self.connected_count()
    }

    /// Alice (or anyone) sends `raw` to the bot.
    pub fn send_to_bot(&self, from: &str, raw: &[u8]) {
        self.mail.smtp_send(from, &self.bot_addr, raw);
    }

    /// A simple text mail from `from` to the bot.
    pub fn text_mail(
        &self,
        from: &str,
        msg_id: &str,
        subject: &str,
        body: &str,
        extra: &str,
    ) -> Vec<u8> {
        format!(
            "From: Sender <{from}>\r\nTo: <{}>\r\nSubject: {subject}\r\nMessage-ID: <{msg_id}>\r\nDate: Sun, 29 Nov 2026 18:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n{extra}\r\n{body}\r\n",
            self.bot_addr
        )
        .into_bytes()
    }

    /// Wait until `user` has at least `n` mails; returns them.
    pub async fn wait_mails(&self, user: &str, n: usize, timeout: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        loop {
            let m = self.mail.mails(user);
            if m.len() >= n {
                return m;
            }
            assert!(
                Instant::now() < deadline,
                "{user} has {} mail(s), expected {n}; daemon logs:\n{}",
                m.len(),
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn count_in_logs(home: &PathBuf, needle: &str) -> usize {
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
