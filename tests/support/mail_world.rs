//! A daemon with Email alone, against the real Dovecot (IMAP + LMTP) and the SMTP front that
//! `.ci/mail-servers` starts on 127.0.0.1, plus a tiny SMTP client and a Maildir reader.
//!
//! Each world gets its own bot and correspondent mailboxes (Dovecot accepts any user name with
//! the password `secret`), so tests run in parallel without seeing each other's mail.
//!
//! Locally: `.ci/mail-servers` (as root; installs Dovecot and aiosmtpd on first use), then
//! `cargo nextest run --test email_conversation --test email_delivery`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::daemon::{Daemon, World};

/// Where `.ci/mail-servers` writes its settings.
pub const ENV_FILE: &str = "/tmp/hermes-mail/env";

/// The running mail servers.
#[derive(Debug, Clone)]
pub struct MailServers {
    pub imap_port: u16,
    pub smtp_port: u16,
    pub data: PathBuf,
}

impl MailServers {
    /// Read the servers' settings; panics with instructions when they are not running.
    pub fn get() -> MailServers {
        let path = std::env::var("EMAIL_TEST_ENV").unwrap_or_else(|_| ENV_FILE.to_owned());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "mail servers not running ({path}: {e}): start them with `.ci/mail-servers` (needs root; .ci/run does it)"
            )
        });
        let vars: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        let s = MailServers {
            imap_port: vars["EMAIL_TEST_IMAP_PORT"].parse().expect("imap port"),
            smtp_port: vars["EMAIL_TEST_SMTP_PORT"].parse().expect("smtp port"),
            data: PathBuf::from(vars["EMAIL_TEST_DATA"]),
        };
        assert!(
            TcpStream::connect(("127.0.0.1", s.imap_port)).is_ok()
                && TcpStream::connect(("127.0.0.1", s.smtp_port)).is_ok(),
            "mail servers are not answering on 127.0.0.1:{} / {}: run `.ci/mail-servers`",
            s.imap_port,
            s.smtp_port
        );
        s
    }

    /// The `new` directory of a user's Maildir INBOX.
    pub fn maildir_new(&self, user: &str) -> PathBuf {
        self.data
            .join("mail")
            .join(user)
            .join("Maildir")
            .join("new")
    }

    /// Every mail delivered to `user`'s INBOX, oldest first.
    pub fn mails(&self, user: &str) -> Vec<Vec<u8>> {
        let mut files: Vec<_> = ["new", "cur"]
            .iter()
            .flat_map(|d| {
                std::fs::read_dir(self.data.join("mail").join(user).join("Maildir").join(d))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
            })
            .collect();
        // Maildir names start `<seconds>.M<microseconds>P<pid>`: delivery order.
        files.sort_by_key(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let mut parts = name.split('.');
            let secs = parts
                .next()
                .and_then(|t| t.parse::<u64>().ok())
                .unwrap_or(0);
            let micros = parts
                .next()
                .and_then(|m| m.strip_prefix('M'))
                .map(|m| {
                    m.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                })
                .and_then(|m| m.parse::<u64>().ok())
                .unwrap_or(0);
            (secs, micros)
        });
        files
            .into_iter()
            .filter_map(|p| std::fs::read(p).ok())
            .collect()
    }

    /// Send `raw` from `from` to `to` through the SMTP front; returns once it is delivered.
    pub fn smtp_send(&self, from: &str, to: &str, raw: &[u8]) {
        let stream = TcpStream::connect(("127.0.0.1", self.smtp_port)).expect("smtp connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut w = stream.try_clone().expect("clone");
        let mut r = BufReader::new(stream);
        let mut expect = |code: &str| {
            loop {
                let mut line = String::new();
                r.read_line(&mut line).expect("smtp read");
                assert!(
                    line.starts_with(code),
                    "SMTP: expected {code}, got {line:?}"
                );
                if line.as_bytes().get(3) != Some(&b'-') {
                    break;
                }
            }
        };
        expect("220");
        w.write_all(b"EHLO test\r\n").unwrap();
        expect("250");
        w.write_all(format!("MAIL FROM:<{from}>\r\n").as_bytes())
            .unwrap();
        expect("250");
        w.write_all(format!("RCPT TO:<{to}>\r\n").as_bytes())
            .unwrap();
        expect("250");
        w.write_all(b"DATA\r\n").unwrap();
        expect("354");
        let mut body = Vec::with_capacity(raw.len() + 16);
        for line in raw.split_inclusive(|b| *b == b'\n') {
            if line.first() == Some(&b'.') {
                body.push(b'.');
            }
            body.extend_from_slice(line);
        }
        if !body.ends_with(b"\r\n") {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b".\r\n");
        w.write_all(&body).unwrap();
        expect("250");
        w.write_all(b"QUIT\r\n").unwrap();
    }
}

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

/// A header of a raw mail (first occurrence, unfolded).
pub fn header(raw: &[u8], name: &str) -> Option<String> {
    // Dovecot stores Maildir files with bare LF line ends.
    let text = String::from_utf8_lossy(raw).replace("\r\n", "\n");
    let head = text.split("\n\n").next().unwrap_or("");
    let unfolded = head.replace("\n ", " ").replace("\n\t", " ");
    unfolded.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

/// The decoded text/plain body of a raw mail.
pub fn body_text(raw: &[u8]) -> String {
    mail_parser::MessageParser::default()
        .parse(raw)
        .and_then(|m| m.body_text(0).map(|t| t.into_owned()))
        .unwrap_or_default()
}
