//! A world whose daemon talks to Email only: its own bot, Alice and Mallory mailboxes on the
//! shared mail servers, the daemon started once its IMAP connection is up, and waits for mail.
//! People send logged in as themselves, so the SMTP front vouches for them (`dmarc=pass`), and
//! the daemon trusts that front's `Authentication-Results` (`EMAIL_AUTHSERV_IDS`).

use std::time::Duration;

use super::MailServers;
use crate::support::daemon::{Daemon, World, unique};
use crate::support::wait_for;

/// What the daemon logs each time its IMAP connection is up.
const IMAP_CONNECTED: &str = "email: IMAP connected";

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
            ("EMAIL_AUTHSERV_IDS", mail.authserv_id.clone()),
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

    /// Start the daemon and wait until its IMAP connection is up.
    pub async fn start(&mut self) -> Daemon {
        self.w.start_logging(IMAP_CONNECTED).await
    }

    /// IMAP connections the daemons of this world made so far.
    pub fn connections(&self) -> usize {
        self.w.logged(IMAP_CONNECTED)
    }

    /// Wait until the daemon logs another IMAP connection than the `before`th.
    pub async fn wait_connected(&self, before: usize, timeout: Duration) {
        self.w.wait_logged(IMAP_CONNECTED, before, timeout).await;
    }

    /// `from` (Alice, or anyone) sends `raw` to the bot, logged in as themselves.
    pub fn send_to_bot(&self, from: &str, raw: &[u8]) {
        let login = from.split('@').next().unwrap_or(from);
        self.mail.smtp_send(Some(login), from, &self.bot_addr, raw);
    }

    /// Mallory sends `raw` (whatever its `From:` says) to the bot, logged in as herself.
    pub fn send_as_mallory(&self, raw: &[u8]) {
        self.mail
            .smtp_send(Some(&self.mallory), &self.mallory_addr, &self.bot_addr, raw);
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
        let check = || {
            let m = self.mail.mails(user);
            (m.len() >= n).then_some(m)
        };
        let describe = || {
            let has = self.mail.mails(user).len();
            format!("{user} has {has} mail(s); daemon logs:\n{}", self.w.logs())
        };
        wait_for(timeout, &format!("{n} mail(s) for {user}"), check, describe).await
    }

    /// Send Alice's sentinel question and wait for its answer, then check that it is the only
    /// mail she and Mallory got and the only model call: whatever was sent before it was seen
    /// and skipped. Returns what the model was asked.
    pub async fn only_the_sentinel_is_answered(&self) -> String {
        let alice = self.alice_addr.clone();
        self.send_to_bot(
            &alice,
            &self.text_mail(&alice, "real@alice.test", "Question", "a real question", ""),
        );
        let replies = self.wait_mails(&self.alice, 1, crate::support::WAIT).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            self.mail.mails(&self.alice).len(),
            1,
            "only the real question is answered"
        );
        assert_eq!(
            super::header(&replies[0], "In-Reply-To").as_deref(),
            Some("<real@alice.test>")
        );
        assert!(
            self.mail.mails(&self.mallory).is_empty(),
            "mallory gets nothing"
        );
        let reqs = self.w.llm.requests();
        assert_eq!(reqs.len(), 1, "one model call, for the real question");
        let asked = reqs[0].last_user_text().unwrap();
        assert!(asked.contains("a real question"), "{asked}");
        asked
    }

    /// Alice asks for something that needs a confirmation (the model's next call is a terminal
    /// command); returns the request mail, its subject (with the code) and the `In-Reply-To` /
    /// `References` headers of a reply to it.
    pub async fn ask_for_a_confirmation(&self) -> (Vec<u8>, String, String) {
        let alice = self.alice_addr.clone();
        self.send_to_bot(
            &alice,
            &self.text_mail(&alice, "ap1@alice.test", "Run it", "run the thing", ""),
        );
        let request = self
            .wait_mails(&self.alice, 1, crate::support::WAIT)
            .await
            .remove(0);
        let subject = super::header(&request, "Subject").unwrap();
        assert!(subject.contains("[approval "), "{subject}");
        let req_id = super::header(&request, "Message-ID").unwrap();
        let thread = format!("In-Reply-To: {req_id}\r\nReferences: <ap1@alice.test> {req_id}\r\n");
        (request, subject, thread)
    }
}
