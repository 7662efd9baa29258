//! Email against the real Dovecot (IMAP, through a proxy that can make the daemon's connection
//! deaf) and the SMTP front; every mail a person sends starts a thread of its own.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::conformance::world::{Injected, Platform, Said};
use crate::support::daemon::{Daemon, World, unique};
use crate::support::email::{MailWorld, body_text, header};
use crate::support::llm::Reply;
use crate::support::proxy::SilentProxy;

/// The body of a mail as the agent reads it: between the frame's header and its end.
fn unframe(text: &str) -> String {
    let Some(open) = text.find("<untrusted-email-") else {
        return text.to_owned();
    };
    let inside = &text[open..];
    let body = inside.split_once("\n\n").map_or(inside, |(_, b)| b);
    let body = body.split("</untrusted-email-").next().unwrap_or(body);
    body.trim().to_owned()
}

pub struct Email {
    mw: MailWorld,
    /// Mailbox names of the people.
    people: Vec<String>,
    proxy: SilentProxy,
    sent: AtomicU64,
    /// The first mail of each person: later ones reply in its thread (one conversation per
    /// person, as a chat is).
    threads: Mutex<HashMap<String, String>>,
    /// One sending queue per sender, so a person's mails go in order while different people
    /// send at once (an SMTP delivery takes tens of milliseconds).
    queues: Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<Vec<u8>>>>,
}

impl Email {
    async fn send(&self, login: String, from: String, text: &str) {
        let n = self.sent.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}-{n}@conformance.test", unique("m"));
        let first = {
            let mut threads = self.threads.lock().unwrap();
            threads
                .entry(from.clone())
                .or_insert_with(|| id.clone())
                .clone()
        };
        let (subject, extra) = if first == id {
            ("Hello".to_owned(), String::new())
        } else {
            (
                "Re: Hello".to_owned(),
                format!("In-Reply-To: <{first}>\r\nReferences: <{first}>\r\n"),
            )
        };
        let raw = self.mw.text_mail(&from, &id, &subject, text, &extra);
        let mut queues = self.queues.lock().unwrap();
        let queue = queues.entry(from.clone()).or_insert_with(|| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
            let (mail, bot) = (self.mw.mail.clone(), self.mw.bot_addr.clone());
            tokio::spawn(async move {
                while let Some(raw) = rx.recv().await {
                    let (mail, bot, login, from) =
                        (mail.clone(), bot.clone(), login.clone(), from.clone());
                    tokio::task::spawn_blocking(move || {
                        mail.smtp_send(Some(&login), &from, &bot, &raw)
                    })
                    .await
                    .expect("smtp send");
                }
            });
            tx
        });
        queue.send(raw).expect("the sending queue");
    }
}

impl Platform for Email {
    const NAME: &'static str = "email";
    // One Message-ID per reply, derived from its outbox key and reused on a resend.
    const EXACTLY_ONCE: bool = true;
    const MAX_LEN: Option<usize> = Some(hermes_email::MAX_MESSAGE_LEN);

    async fn new(config: &str, people: usize) -> Self {
        // Far longer than any case: every answer within it proves IDLE, not polling.
        let config = if config.contains("[email]\n") {
            config.replace("[email]\n", "[email]\npoll_secs = 600\n")
        } else {
            format!("[email]\npoll_secs = 600\n{config}")
        };
        let mut mw = MailWorld::new(&config).await;
        let base = unique("p");
        let names: Vec<String> = (0..people).map(|i| format!("{base}x{i}")).collect();
        let allowed: Vec<String> = names.iter().map(|n| format!("{n}@localhost")).collect();
        mw.w.set_env("EMAIL_ALLOWED_SENDERS", &allowed.join(","));
        // The agent reads a mail inside a frame marking it untrusted; the echo answers with
        // what the person wrote, as on the other platforms.
        mw.w.llm.set_default(|r| {
            Reply::text(format!(
                "echo: {}",
                unframe(&r.last_user_text().unwrap_or_default())
            ))
        });
        let proxy = SilentProxy::start(mw.mail.imap_port).await;
        mw.w.set_env("EMAIL_IMAP_PORT", &proxy.port.to_string());
        Email {
            mw,
            people: names,
            proxy,
            sent: AtomicU64::new(0),
            threads: Mutex::default(),
            queues: Mutex::default(),
        }
    }
    fn world(&self) -> &World {
        &self.mw.w
    }
    async fn start(&mut self) -> Daemon {
        self.mw.start().await
    }

    async fn dm(&self, who: usize, text: &str) {
        let login = self.people[who].clone();
        self.send(login.clone(), format!("{login}@localhost"), text)
            .await;
    }
    async fn stranger_dm(&self, text: &str) {
        self.send(self.mw.mallory.clone(), self.mw.mallory_addr.clone(), text)
            .await;
    }
    async fn group(&self, _who: usize, _text: &str, _mention: bool) -> Injected {
        Err("email has no group chat to mention the bot in")
    }
    async fn said(&self) -> Vec<Said> {
        let mut all = Vec::new();
        for person in self.people.iter().chain([&self.mw.mallory]) {
            for (at, raw) in self.mw.mail.mails_in_order(person) {
                all.push((
                    at,
                    Said {
                        place: person.clone(),
                        text: body_text(&raw).trim().to_owned(),
                        identity: header(&raw, "Message-ID"),
                    },
                ));
            }
        }
        all.sort_by_key(|(at, _)| *at);
        all.into_iter().map(|(_, s)| s).collect()
    }

    fn rate_limit_next_send(&self, _secs: u64) -> Injected {
        Err("a real SMTP server cannot be told to refuse the next mail")
    }
    fn reject_format_next_send(&self) -> Injected {
        Err("mail carries text and HTML parts; nothing rejects its formatting")
    }
    fn go_silent(&self) -> Injected {
        self.proxy.go_silent();
        Ok(())
    }
    // IDLE is begun again every 3 s, so 8 s without an answer is deafness.
    const DEAF_CONFIG: &'static str =
        "[gateway]\nlistener_silence_secs = 8\n[email]\nidle_refresh_secs = 3\n";
}
