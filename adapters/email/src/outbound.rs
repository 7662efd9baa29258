//! Outbound mail: a threaded reply (`Re:`, `In-Reply-To`, `References`, a `Message-ID` derived
//! from the outbox row's idempotency key) with a text and an HTML alternative rendered from the
//! agent's markdown, sent with lettre's async SMTP transport; SMTP failures classified for the
//! outbox.
//!
//! The HTML carries no markup the model wrote itself: raw HTML in its text is shown as text and
//! images become links, so text the model was steered into writing cannot hide content, dress up
//! a link or load a tracking pixel in mail from the bot's address.

use hermes_adapter::{Outbound, SendError, SentId};
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use crate::parse::ThreadInfo;
use crate::{EmailSettings, Security};

pub type Smtp = AsyncSmtpTransport<Tokio1Executor>;

/// Build the SMTP transport from the settings (no connection is made yet).
pub fn transport(s: &EmailSettings) -> Result<Smtp, String> {
    let host = s.smtp.host.clone();
    let tls = match s.smtp.security {
        Security::Plain => Tls::None,
        Security::Tls => Tls::Wrapper(TlsParameters::new(host.clone()).map_err(|e| e.to_string())?),
        Security::StartTls => {
            Tls::Required(TlsParameters::new(host.clone()).map_err(|e| e.to_string())?)
        }
    };
    let mut b = Smtp::builder_dangerous(host)
        .port(s.smtp.port)
        .tls(tls)
        .timeout(Some(std::time::Duration::from_secs(30)));
    if !s.smtp.user.is_empty() {
        b = b.credentials(Credentials::new(
            s.smtp.user.clone(),
            s.smtp.password.clone(),
        ));
    }
    Ok(b.build())
}

/// `Re: <subject>`, not `Re: Re: …`.
pub fn reply_subject(subject: &str) -> String {
    let s = subject.trim();
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("re:") {
        s.to_owned()
    } else if s.is_empty() {
        "Re: your message".to_owned()
    } else {
        format!("Re: {s}")
    }
}

/// `subject` without an earlier `[approval CODE]` tag.
fn strip_code(subject: &str) -> String {
    match subject.find(" [approval ") {
        Some(i) => {
            let end = subject[i..].find(']').map_or(subject.len(), |j| i + j + 1);
            format!("{}{}", &subject[..i], &subject[end..])
        }
        None => subject.to_owned(),
    }
}

/// The agent's markdown as HTML: raw HTML is escaped (shown as text), images are links.
pub fn markdown_to_html(md: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TABLES);
    let parser = Parser::new_ext(md, opts).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut body = String::new();
    pulldown_cmark::html::push_html(&mut body, parser);
    format!("<!DOCTYPE html><html><body>{body}</body></html>")
}

fn bracket(id: &str) -> String {
    format!("<{}>", id.trim_matches(|c| c == '<' || c == '>'))
}

/// The `Message-ID` of `out`, on the bot's domain: derived from its idempotency key (with the
/// recipient and the mail it answers, which keep it unique after the database was reset), so
/// an outbox resend after a crash carries the same id and the recipient's client shows one mail.
/// Without a key (never from the outbox), a fresh one.
pub fn message_id(from: &str, out: &Outbound) -> String {
    use sha2::{Digest, Sha256};
    if out.idempotency_key.is_empty() {
        return new_message_id(from);
    }
    let answered = out
        .thread
        .as_ref()
        .and_then(ThreadInfo::from_thread)
        .map(|t| t.message_id)
        .unwrap_or_default();
    let mut h = Sha256::new();
    for part in [
        "hermes email Message-ID 1",
        from,
        out.chat.as_str(),
        &answered,
        &out.idempotency_key,
    ] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    let hex: String = h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let domain = from.rsplit_once('@').map(|(_, d)| d).unwrap_or("localhost");
    format!("<hermes.{hex}@{domain}>")
}

/// A new `Message-ID` on the bot's domain.
fn new_message_id(from: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let domain = from.rsplit_once('@').map(|(_, d)| d).unwrap_or("localhost");
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "<hermes.{t:x}.{}.{}@{domain}>",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Largest file attached to a reply: 20 MB grows to about 27 MB in base64, under the 25-35 MB
/// most providers accept.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// Compose the reply `out` as an RFC 5322 message; `file` is the content of `out.file`.
pub fn compose(
    s: &EmailSettings,
    out: &Outbound,
    file: Option<Vec<u8>>,
) -> Result<(lettre::Message, String), SendError> {
    let from: Mailbox = s
        .address
        .parse()
        .map_err(|e| SendError::Permanent(format!("bad own address: {e}")))?;
    let to: Mailbox = out
        .chat
        .as_str()
        .parse()
        .map_err(|e| SendError::NotFound(format!("bad recipient address: {e}")))?;
    let thread = out.thread.as_ref().and_then(ThreadInfo::from_thread);
    let id = message_id(&s.address, out);
    let mut b = lettre::Message::builder()
        .from(from)
        .to(to)
        .message_id(Some(id.clone()))
        .header(AutoSubmittedReply);
    // A confirmation request: its subject carries the short code a reply answers.
    let code: Option<String> = out.idempotency_key.strip_prefix("ap:").map(|k| {
        k.chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect()
    });
    let tag = |subject: String| match &code {
        Some(c) if !c.is_empty() => format!("{subject} [approval {c}]"),
        _ => subject,
    };
    let mut text = out.text.clone();
    if let Some(c) = &code {
        text.push_str(&format!(
            "\n\nReply to this mail with \"yes\" to allow or \"no\" to deny, keeping the subject: \
             its code (approval {c}) is what makes the answer count."
        ));
    }
    match &thread {
        Some(t) => {
            b = b.subject(tag(reply_subject(&strip_code(&t.subject))));
            if !t.message_id.is_empty() {
                b = b.in_reply_to(bracket(&t.message_id));
                let mut refs: Vec<String> = t.references.iter().map(|r| bracket(r)).collect();
                refs.push(bracket(&t.message_id));
                refs.dedup();
                b = b.references(refs.join(" "));
            }
        }
        None => b = b.subject(tag("Message from your hermes agent".to_owned())),
    }
    let html = markdown_to_html(&text);
    let body = MultiPart::alternative()
        .singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_PLAIN)
                .body(text),
        )
        .singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_HTML)
                .body(html),
        );
    let body = match (&out.file, file) {
        (Some(f), Some(bytes)) => {
            let kind = ContentType::parse(&f.mime)
                .or_else(|_| ContentType::parse("application/octet-stream"))
                .map_err(|e| SendError::Permanent(format!("compose: {e}")))?;
            MultiPart::mixed()
                .multipart(body)
                .singlepart(Attachment::new(f.name.clone()).body(bytes, kind))
        }
        _ => body,
    };
    let msg = b
        .multipart(body)
        .map_err(|e| SendError::Permanent(format!("compose: {e}")))?;
    Ok((msg, id))
}

/// Send `out`; returns the new `Message-ID` and the formatted message (for a Sent copy).
pub async fn send(
    smtp: &Smtp,
    s: &EmailSettings,
    out: &Outbound,
) -> Result<(SentId, Vec<u8>), SendError> {
    let file = match &out.file {
        Some(f) => Some(tokio::fs::read(&f.path).await.map_err(|e| {
            SendError::Permanent(format!("the file `{}` to send is gone: {e}", f.name))
        })?),
        None => None,
    };
    let (msg, id) = compose(s, out, file)?;
    let raw = msg.formatted();
    smtp.send(msg).await.map_err(classify)?;
    Ok((
        SentId(id.trim_matches(|c| c == '<' || c == '>').to_owned()),
        raw,
    ))
}

/// SMTP 4xx and connection failures are worth retrying; 5xx are not.
pub fn classify(e: lettre::transport::smtp::Error) -> SendError {
    if e.is_permanent() {
        let code = e.status().map(|c| c.to_string()).unwrap_or_default();
        if code.starts_with("55") {
            SendError::NotFound(e.to_string())
        } else {
            SendError::Permanent(e.to_string())
        }
    } else {
        SendError::Transient(e.to_string())
    }
}

/// `Auto-Submitted: auto-replied` on every mail the bot sends, so other robots do not answer
/// it (RFC 3834).
#[derive(Clone)]
struct AutoSubmittedReply;

impl lettre::message::header::Header for AutoSubmittedReply {
    fn name() -> lettre::message::header::HeaderName {
        lettre::message::header::HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(AutoSubmittedReply)
    }

    fn display(&self) -> lettre::message::header::HeaderValue {
        lettre::message::header::HeaderValue::new(Self::name(), "auto-replied".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_get_one_re() {
        assert_eq!(reply_subject("Hello"), "Re: Hello");
        assert_eq!(reply_subject("RE: Hello"), "RE: Hello");
        assert_eq!(strip_code("Re: Hello [approval 5fa3]"), "Re: Hello");
    }

    #[test]
    fn markdown_becomes_html() {
        assert!(markdown_to_html("**hi**").contains("<strong>hi</strong>"));
    }

    #[test]
    fn raw_html_from_the_model_is_shown_as_text() {
        let html = markdown_to_html(
            "Hi <span style=\"display:none\">secret</span> <a href=\"https://evil.test\">bank</a>\n\n<div>block</div>\n\n![](https://track.test/p.gif)",
        );
        for live in ["<span", "<a href=\"https://evil", "<div>", "<img"] {
            assert!(!html.contains(live), "{live} in {html}");
        }
        assert!(html.contains("&lt;span style="), "{html}");
        assert!(html.contains("&lt;div&gt;block&lt;/div&gt;"), "{html}");
        assert!(
            html.contains("<a href=\"https://track.test/p.gif\">"),
            "an image is a link: {html}"
        );
    }

    fn settings() -> EmailSettings {
        let server = crate::ServerSettings {
            host: "127.0.0.1".into(),
            port: 25,
            security: Security::Plain,
            user: String::new(),
            password: String::new(),
        };
        EmailSettings {
            address: "bot@example.com".into(),
            imap: server.clone(),
            smtp: server,
            rules: crate::Rules {
                own_address: "bot@example.com".into(),
                allowed_senders: Vec::new(),
                auth: crate::auth::Policy {
                    authserv_ids: Vec::new(),
                    require_pass: true,
                    trust_unauthenticated: false,
                    rule: String::new(),
                },
                max_attachment_bytes: 1,
                max_mail_bytes: 1,
            },
            state_dir: std::env::temp_dir(),
            force_poll: false,
            poll_interval: std::time::Duration::from_secs(1),
            idle_refresh: std::time::Duration::from_secs(1),
            sent_folder: None,
        }
    }

    #[test]
    fn a_resend_carries_the_same_message_id() {
        let s = settings();
        let mut out = Outbound::text("alice@example.com".into(), "hello", "turn:42:1/1");
        out.thread = Some(
            ThreadInfo {
                message_id: "q1@alice.test".into(),
                subject: "Plans".into(),
                references: Vec::new(),
            }
            .to_thread(),
        );
        let (first, id1) = compose(&s, &out, None).unwrap();
        let (again, id2) = compose(&s, &out, None).unwrap();
        assert_eq!(id1, id2);
        assert!(
            id1.starts_with("<hermes.") && id1.ends_with("@example.com>"),
            "{id1}"
        );
        let header = |m: &lettre::Message| {
            String::from_utf8_lossy(&m.formatted())
                .lines()
                .find(|l| l.to_ascii_lowercase().starts_with("message-id:"))
                .map(str::to_owned)
        };
        assert_eq!(header(&first), header(&again));
        assert_eq!(header(&first), Some(format!("Message-ID: {id1}")));
        // Another row, another recipient or another mail answered: another id.
        let mut other = out.clone();
        other.idempotency_key = "turn:43:1/1".into();
        assert_ne!(compose(&s, &other, None).unwrap().1, id1);
        let mut other = out.clone();
        other.chat = "bob@example.com".into();
        assert_ne!(compose(&s, &other, None).unwrap().1, id1);
        let mut other = out.clone();
        other.thread = None;
        assert_ne!(compose(&s, &other, None).unwrap().1, id1);
        // No key (never from the outbox): a fresh id each time.
        let mut keyless = out.clone();
        keyless.idempotency_key.clear();
        assert_ne!(
            compose(&s, &keyless, None).unwrap().1,
            compose(&s, &keyless, None).unwrap().1
        );
    }
}
