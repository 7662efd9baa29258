//! Email adapter for hermes: IMAP in (async-imap, IDLE with a polling fallback), SMTP out
//! (lettre's async tokio transport), MIME parsed with mail-parser.
//!
//! **Receiving.** `run` logs in, selects INBOX and hands each new mail to
//! [`InboundSink::deliver`]; only after the inbox stored it (or knew it) is the mail flagged
//! `\Seen` and its UID recorded (see `imap.rs`). The connection then waits with IDLE, so a new
//! mail is seen within moments; servers without IDLE are polled. A lost connection ends `run`
//! with a transient error and the supervisor reconnects with backoff.
//!
//! **Senders are authenticated** by the receiving server, not by what the mail says: only the
//! topmost `Authentication-Results` header written by a configured server (`authserv_ids`) is
//! read, and it must show an aligned DMARC or DKIM pass for the `From:` domain (see `auth.rs`).
//! Mail without such a header is not served unless `trust_unauthenticated` is set.
//!
//! **Never answered** (forgeries, mail loops, backscatter): unauthenticated senders (above), the
//! bot's own address, `MAILER-DAEMON` and other bounces, `Auto-Submitted` other than `no`,
//! `Precedence: bulk|list|junk`, list mail (`List-Id`), senders not on `allowed_senders`
//! (addresses or whole domains), and mail above `max_mail_bytes` (not even fetched). This is
//! decided on the header before the body is fetched; such mail is flagged `\Seen` without
//! reaching the inbox, so no model call is made, and the reason is logged.
//!
//! **Approvals by mail** need the request's code: a confirmation request's subject carries
//! `[approval CODE]` (the wait's 64 random bits), and only a reply with that code and a `yes`
//! or `no` answers it. A bare "yes" is an ordinary mail.
//!
//! **Threads and sessions.** The chat is the sender's address (session `email:<address>`); the
//! subject and `Message-ID`/`References` of the mail travel in the message's thread id, so the
//! reply (`Re:`, `In-Reply-To`, `References`, a `Message-ID` derived from the outbox key, so a
//! resend carries the same one) threads even when it is sent after a restart. The subject and
//! body reach the prompt inside a frame labelled untrusted that they cannot close (`frame.rs`);
//! replies render the agent's markdown to HTML with raw HTML shown as text.
//!
//! **Pointing it elsewhere.** Host, port and security (`tls`, `starttls`, `plain`) of both
//! servers are settings; tests run against Dovecot and a local SMTP front on 127.0.0.1 in plain
//! mode.

pub mod auth;
mod frame;
mod imap;
mod notes;
mod outbound;
pub mod parse;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Attachment, Capabilities, InboundSink, LengthUnit, Outbound, Platform,
    SendError, SentId,
};
use tokio_util::sync::CancellationToken;

pub use auth::Policy;
pub use outbound::{markdown_to_html, reply_subject};
pub use parse::{Rules, Skip, ThreadInfo};

/// How a connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (IMAPS 993, SMTPS 465).
    Tls,
    /// Plain connection upgraded with STARTTLS (IMAP 143, submission 587).
    StartTls,
    /// No encryption: loopback tests only.
    Plain,
}

impl std::str::FromStr for Security {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tls" | "ssl" | "imaps" | "smtps" => Ok(Security::Tls),
            "starttls" => Ok(Security::StartTls),
            "plain" | "none" => Ok(Security::Plain),
            other => Err(format!(
                "unknown security `{other}` (tls, starttls or plain)"
            )),
        }
    }
}

/// One server's address and login.
#[derive(Clone)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for ServerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

/// Everything the adapter needs.
#[derive(Debug, Clone)]
pub struct EmailSettings {
    /// The bot's address (`From:` of replies).
    pub address: String,
    pub imap: ServerSettings,
    pub smtp: ServerSettings,
    pub rules: Rules,
    /// Where the IMAP progress file lives (the hermes home).
    pub state_dir: PathBuf,
    /// Poll instead of IDLE even when the server supports IDLE.
    pub force_poll: bool,
    /// Polling interval without IDLE.
    pub poll_interval: Duration,
    /// Re-issue IDLE after this long (servers drop IDLE after ~30 min).
    pub idle_refresh: Duration,
    /// Folder for a copy of each sent reply; `None`: no copy.
    pub sent_folder: Option<String>,
}

/// Longest reply handed to the adapter, in characters.
pub const MAX_MESSAGE_LEN: usize = 50_000;

/// The Email adapter.
pub struct EmailAdapter {
    settings: Arc<EmailSettings>,
    smtp: outbound::Smtp,
    /// The sender rule was logged (once, at the first start).
    told_rule: AtomicBool,
}

impl EmailAdapter {
    pub fn new(settings: EmailSettings) -> Result<Self, String> {
        let smtp = outbound::transport(&settings)?;
        Ok(EmailAdapter {
            settings: Arc::new(settings),
            smtp,
            told_rule: AtomicBool::new(false),
        })
    }

    /// Send one of the adapter's own notes (see `notes.rs`) in the background.
    fn send_note(&self, out: Outbound) {
        let smtp = self.smtp.clone();
        let settings = self.settings.clone();
        tokio::spawn(async move {
            if let Err(e) = outbound::send(&smtp, &settings, &out).await {
                tracing::warn!("email: could not send a note to the sender: {e}");
            }
        });
    }

    /// Say once which sender rule is in force; loudly when it lets no mail in.
    fn tell_rule(&self) {
        if self.told_rule.swap(true, Ordering::Relaxed) {
            return;
        }
        let policy = &self.settings.rules.auth;
        let rule = policy.describe();
        if policy.authserv_ids.is_empty() && !policy.trust_unauthenticated {
            tracing::warn!("email: {rule}");
        } else {
            tracing::info!("email: {rule}");
        }
    }
}

#[async_trait]
impl Adapter for EmailAdapter {
    fn platform(&self) -> Platform {
        Platform::Email
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_message_len: MAX_MESSAGE_LEN,
            length_unit: LengthUnit::Chars,
            edit: false,
            typing: false,
            buttons: false,
            threads: true,
            attachments: true,
            free_edits: false,
        }
    }

    async fn run(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        self.tell_rule();
        let send_note = |out: Outbound| self.send_note(out);
        imap::listen(&self.settings, sink.as_ref(), &shutdown, &send_note).await
    }

    async fn send(&self, out: &Outbound) -> Result<SentId, SendError> {
        let (id, raw) = outbound::send(&self.smtp, &self.settings, out).await?;
        if let Some(folder) = &self.settings.sent_folder
            && let Err(e) = imap::save_sent(&self.settings, folder, &raw).await
        {
            tracing::warn!("email: reply sent but not copied to {folder}: {e}");
        }
        Ok(id)
    }

    fn max_upload_bytes(&self) -> u64 {
        outbound::MAX_ATTACHMENT_BYTES
    }

    async fn fetch_attachment(
        &self,
        attachment: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, SendError> {
        if attachment.size.is_some_and(|s| s > max_bytes) {
            return Err(SendError::TooLong);
        }
        imap::fetch_attachment(&self.settings, &attachment.locator, max_bytes).await
    }

    async fn probe(&self) -> Result<String, AdapterError> {
        let mut session = imap::connect(&self.settings).await?;
        session.logout().await.ok();
        self.smtp
            .test_connection()
            .await
            .map_err(|e| AdapterError::Transient(format!("SMTP: {e}")))?;
        Ok(format!(
            "{} (IMAP {}:{}, SMTP {}:{})",
            self.settings.address,
            self.settings.imap.host,
            self.settings.imap.port,
            self.settings.smtp.host,
            self.settings.smtp.port
        ))
    }
}
