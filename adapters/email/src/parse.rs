//! Inbound mail: MIME parsing (mail-parser), the never-answer rules (sender authentication
//! among them, see `auth.rs`), and the message the agent gets (framed by `frame.rs`).

use hermes_adapter::{
    Attachment, AttachmentKind, Chat, ChatId, ChatKind, Message, Platform, ReplyRef, Sender,
    ThreadId, Trigger,
};
use mail_parser::{MessageParser, MimeHeaders};
use serde::{Deserialize, Serialize};

use crate::{auth, frame};

/// What the reply needs to know about the mail it answers; travels as the message's
/// [`ThreadId`] (JSON) so a reply sent after a restart still threads correctly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// `Message-ID` of the mail answered (without angle brackets).
    pub message_id: String,
    pub subject: String,
    /// The `References` chain of the mail answered, oldest first, without brackets.
    pub references: Vec<String>,
}

impl ThreadInfo {
    pub fn to_thread(&self) -> ThreadId {
        ThreadId(serde_json::to_string(self).unwrap_or_default())
    }

    pub fn from_thread(t: &ThreadId) -> Option<Self> {
        serde_json::from_str(t.as_str()).ok()
    }
}

/// Where a mail sits in the INBOX: its UID under a UIDVALIDITY. Attachments are fetched again by
/// it (a UID names one mail; a `Message-ID` search would match others that contain the id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailRef {
    pub uid_validity: u32,
    pub uid: u32,
}

impl MailRef {
    /// The id of a mail without `Message-ID`.
    pub fn fallback_id(&self) -> String {
        format!("{}.{}", self.uid_validity, self.uid)
    }

    /// The locator of attachment `index` of this mail: `uidvalidity.uid#index#message-id`.
    pub fn locator(&self, index: usize, message_id: &str) -> String {
        format!("{}#{index}#{message_id}", self.fallback_id())
    }

    /// The mail, attachment index and `Message-ID` of a [`MailRef::locator`].
    pub fn from_locator(locator: &str) -> Option<(MailRef, usize, &str)> {
        let mut parts = locator.splitn(3, '#');
        let (at, index, message_id) = (parts.next()?, parts.next()?, parts.next()?);
        let (validity, uid) = at.split_once('.')?;
        let at = MailRef {
            uid_validity: validity.parse().ok()?,
            uid: uid.parse().ok()?,
        };
        Some((at, index.parse().ok()?, message_id))
    }
}

/// Why a mail is not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    Unparseable,
    NoSender,
    /// More than one `From:` header or address: which one the server checked is unknowable.
    SeveralSenders,
    OwnAddress,
    Bounce,
    AutoSubmitted(String),
    Bulk(String),
    List,
    /// No `Authentication-Results` from a configured server (and `trust_unauthenticated` off).
    NoTrustedAuthResults,
    /// The trusted header shows no aligned DMARC or DKIM pass (`require_auth_pass`).
    NotAuthenticated(String),
    /// The trusted header shows an SPF, DKIM or DMARC failure.
    AuthFailed(String),
    NotAllowed(String),
    /// Larger than `max_mail_bytes`: not fetched.
    TooLarge {
        size: u64,
        max: u64,
    },
    /// A header longer than this many bytes: not read further.
    HeaderTooLarge(u64),
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Unparseable => write!(f, "malformed mail"),
            Skip::NoSender => write!(f, "no From address"),
            Skip::SeveralSenders => write!(f, "more than one From header or address"),
            Skip::OwnAddress => write!(f, "from the bot's own address"),
            Skip::Bounce => write!(f, "a bounce"),
            Skip::AutoSubmitted(v) => write!(f, "automatic (Auto-Submitted: {v})"),
            Skip::Bulk(v) => write!(f, "bulk (Precedence: {v})"),
            Skip::List => write!(f, "list mail"),
            Skip::NoTrustedAuthResults => write!(
                f,
                "sender not authenticated: no Authentication-Results header from a server in \
                 email.authserv_ids"
            ),
            Skip::NotAuthenticated(why) => write!(f, "sender not authenticated: {why}"),
            Skip::AuthFailed(why) => write!(f, "sender authentication failed: {why}"),
            Skip::NotAllowed(who) => write!(f, "{who} is not an allowed sender"),
            Skip::TooLarge { size, max } => write!(
                f,
                "too large ({size} bytes, above the {max} byte limit of email.max_mail_mb): not fetched"
            ),
            Skip::HeaderTooLarge(max) => write!(f, "a header longer than {max} bytes"),
        }
    }
}

/// Rules for which mail is answered.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The bot's own address (lowercase).
    pub own_address: String,
    /// Addresses (`alice@example.com`) and domains (`example.com` or `@example.com`), lowercase.
    pub allowed_senders: Vec<String>,
    /// Which `Authentication-Results` to believe and what they must show.
    pub auth: auth::Policy,
    /// Attachments larger than this are refused (with a note in the prompt).
    pub max_attachment_bytes: u64,
    /// Mail larger than this is not fetched at all.
    pub max_mail_bytes: u64,
}

impl Rules {
    pub fn allows(&self, address: &str) -> bool {
        let address = address.to_ascii_lowercase();
        let domain = address.rsplit_once('@').map(|(_, d)| d).unwrap_or("");
        self.allowed_senders.iter().any(|a| {
            let a = a.trim().to_ascii_lowercase();
            a == "*"
                || a == address
                || (!a.contains('@') && a == domain)
                || a.strip_prefix('@').is_some_and(|d| d == domain)
        })
    }
}

/// What the header of a mail says, once it passed every never-answer rule: enough to answer or
/// to tell the sender something without reading the body.
#[derive(Debug, Clone)]
pub struct Screened {
    /// The sender's address (lowercase).
    pub from: String,
    pub name: Option<String>,
    /// Whether a trusted `Authentication-Results` proved the address (else it was served only
    /// because `trust_unauthenticated` or a lax `require_auth_pass` let it through).
    pub authenticated: bool,
    pub thread: ThreadInfo,
    pub in_reply_to: Option<String>,
    /// `Date:` in milliseconds, or now.
    pub sent_at: i64,
}

/// One parsed inbound mail.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub message: Message,
    /// Attachments refused by the size cap: `(name, size)`.
    pub refused: Vec<(String, u64)>,
    /// See [`Screened::authenticated`]: only authenticated senders get notes from the adapter.
    pub authenticated: bool,
}

fn strip_brackets(s: &str) -> String {
    s.trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_owned()
}

/// Apply the never-answer rules to the header of the mail `at` (`raw` may be the header alone,
/// as fetched with `BODY.PEEK[HEADER]`).
pub fn screen_header(raw: &[u8], at: MailRef, rules: &Rules) -> Result<Screened, Skip> {
    let mail = MessageParser::default()
        .parse_headers(raw)
        .ok_or(Skip::Unparseable)?;
    screen(&mail, at, rules)
}

fn screen(mail: &mail_parser::Message<'_>, at: MailRef, rules: &Rules) -> Result<Screened, Skip> {
    let froms = mail
        .headers()
        .iter()
        .filter(|h| h.name.as_str().eq_ignore_ascii_case("From"))
        .count();
    if froms > 1 || mail.from().is_some_and(|a| a.iter().count() > 1) {
        return Err(Skip::SeveralSenders);
    }
    let from = mail
        .from()
        .and_then(|a| a.first())
        .and_then(|a| a.address())
        .map(|a| a.trim().to_ascii_lowercase())
        .filter(|a| a.contains('@'))
        .ok_or(Skip::NoSender)?;
    let name = mail
        .from()
        .and_then(|a| a.first())
        .and_then(|a| a.name())
        .map(str::to_owned);
    if from == rules.own_address {
        return Err(Skip::OwnAddress);
    }
    let (local, domain) = from.rsplit_once('@').unwrap_or((&from, ""));
    if local == "mailer-daemon" || local == "postmaster" || local.starts_with("bounce") {
        return Err(Skip::Bounce);
    }
    if let Some(ct) = mail.root_part().content_type()
        && ct.ctype().eq_ignore_ascii_case("multipart")
        && ct
            .subtype()
            .is_some_and(|s| s.eq_ignore_ascii_case("report"))
    {
        return Err(Skip::Bounce);
    }
    if let Some(v) = mail.header_raw("Auto-Submitted") {
        let v = v.trim().to_ascii_lowercase();
        if !v.starts_with("no") {
            return Err(Skip::AutoSubmitted(v));
        }
    }
    if let Some(v) = mail.header_raw("Precedence") {
        let v = v.trim().to_ascii_lowercase();
        if matches!(v.as_str(), "bulk" | "list" | "junk") {
            return Err(Skip::Bulk(v));
        }
    }
    if mail.header_raw("List-Id").is_some() || mail.header_raw("List-Unsubscribe").is_some() {
        return Err(Skip::List);
    }
    let policy = &rules.auth;
    let authenticated = match auth::trusted_results(mail, &policy.authserv_ids) {
        None if policy.trust_unauthenticated => false,
        None => return Err(Skip::NoTrustedAuthResults),
        Some(ar) => match auth::verdict(&ar, domain) {
            auth::Verdict::Pass(_) => true,
            auth::Verdict::Fail(why) => return Err(Skip::AuthFailed(why)),
            auth::Verdict::Unproven(why) if policy.require_pass => {
                return Err(Skip::NotAuthenticated(why));
            }
            auth::Verdict::Unproven(_) => false,
        },
    };
    if !rules.allows(&from) {
        return Err(Skip::NotAllowed(from));
    }

    let message_id = mail
        .message_id()
        .map(strip_brackets)
        .unwrap_or_else(|| at.fallback_id());
    let subject = mail.subject().unwrap_or("").trim().to_owned();
    let mut references: Vec<String> = match mail.references().as_text_list() {
        Some(list) => list.iter().map(|s| strip_brackets(s)).collect(),
        None => mail
            .references()
            .as_text()
            .map(|s| s.split_whitespace().map(strip_brackets).collect())
            .unwrap_or_default(),
    };
    let in_reply_to = mail
        .in_reply_to()
        .as_text_list()
        .and_then(|l| l.first().map(|s| strip_brackets(s)))
        .or_else(|| mail.in_reply_to().as_text().map(strip_brackets));
    if let Some(irt) = &in_reply_to
        && !references.contains(irt)
    {
        references.push(irt.clone());
    }
    let sent_at = mail
        .date()
        .map(|d| d.to_timestamp() * 1000)
        .unwrap_or_else(hermes_adapter::now_millis);
    Ok(Screened {
        from,
        name,
        authenticated,
        thread: ThreadInfo {
            message_id,
            subject,
            references,
        },
        in_reply_to,
        sent_at,
    })
}

/// Parse `raw` (the whole RFC 5322 message of the mail `at`) and decide whether it is answered.
pub fn parse(raw: &[u8], at: MailRef, rules: &Rules) -> Result<Parsed, Skip> {
    let mail = MessageParser::default()
        .parse(raw)
        .ok_or(Skip::Unparseable)?;
    let screened = screen(&mail, at, rules)?;

    // text/plain preferred; mail-parser converts an HTML-only body to text.
    let body = mail
        .body_text(0)
        .map(|c| c.into_owned())
        .unwrap_or_default();
    let body = trim_quoted(&body);

    let message_id = &screened.thread.message_id;
    let mut attachments = Vec::new();
    let mut refused: Vec<(String, u64)> = Vec::new();
    for (i, part) in mail.attachments().enumerate() {
        let size = part.len() as u64;
        let aname = part
            .attachment_name()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("attachment-{}", i + 1));
        if size > rules.max_attachment_bytes {
            refused.push((aname, size));
            continue;
        }
        let mime = part
            .content_type()
            .map(|ct| format!("{}/{}", ct.ctype(), ct.subtype().unwrap_or("octet-stream")));
        let kind = match mime.as_deref().map(|m| m.split('/').next().unwrap_or("")) {
            Some("image") => AttachmentKind::Image,
            Some("audio") => AttachmentKind::Audio,
            Some("video") => AttachmentKind::Video,
            _ => AttachmentKind::Document,
        };
        attachments.push(Attachment {
            kind,
            mime,
            name: Some(aname),
            size: Some(size),
            locator: at.locator(i, message_id),
        });
    }

    // An answer to a confirmation request counts only with the request's code, which only the
    // request mail carried (`[approval CODE]` in its subject). A bare "yes" without it is an
    // ordinary mail and approves nothing.
    let code = approval_code(&screened.thread.subject);
    let answer = approval_word(&body).filter(|_| body.split_whitespace().count() <= 8);
    if let (Some(code), Some(word)) = (code, answer) {
        let mut message = build(screened.clone(), word.to_owned(), Vec::new());
        message.trigger = Trigger::Button {
            data: format!("ap:{code}:{}", if word == "yes" { "o" } else { "d" }),
        };
        return Ok(Parsed {
            message,
            refused,
            authenticated: screened.authenticated,
        });
    }

    let text = frame::frame(
        &screened.from,
        &screened.thread.subject,
        &body,
        &refused,
        rules.max_attachment_bytes,
    );
    let authenticated = screened.authenticated;
    Ok(Parsed {
        message: build(screened, text, attachments),
        refused,
        authenticated,
    })
}

/// The inbound [`Message`] for a screened mail.
fn build(s: Screened, text: String, attachments: Vec<Attachment>) -> Message {
    // A mail thread is a conversation of its own, named by its first mail: the oldest of the
    // references (the answered mail is the last), or this mail when it starts a thread.
    let topic = s
        .thread
        .references
        .first()
        .cloned()
        .unwrap_or_else(|| s.thread.message_id.clone());
    Message {
        platform: Platform::Email,
        id: s.thread.message_id.clone().into(),
        chat: Chat {
            id: ChatId(s.from.clone()),
            kind: ChatKind::Direct,
            title: None,
        },
        thread: Some(s.thread.to_thread()),
        sender: Sender {
            id: s.from.clone().into(),
            display_name: s.name.unwrap_or_else(|| s.from.clone()),
            handle: None,
            is_bot: false,
        },
        text,
        attachments,
        reply_to: s.in_reply_to.map(|id| ReplyRef {
            id: id.into(),
            to_bot: true,
            text: None,
        }),
        sent_at: s.sent_at,
        subject: Some(s.thread.subject),
        topic: Some(topic.into()),
        trigger: Trigger::Direct,
    }
}

/// The code of a confirmation request in a subject: `… [approval 5f3a1]`.
pub fn approval_code(subject: &str) -> Option<String> {
    let rest = &subject[subject.find("[approval ")? + "[approval ".len()..];
    let code: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!code.is_empty() && rest[code.len()..].starts_with(']')).then_some(code)
}

/// The new part of a reply: drops quoted lines (`>`), everything after an
/// "On … wrote:" attribution or an "-----Original Message-----" line, and the signature
/// after `-- `.
pub fn trim_quoted(body: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in body.lines() {
        let t = line.trim_end();
        if t == "--" || t == "-- " || line == "-- " {
            break;
        }
        let tl = t.trim_start();
        if tl.starts_with("-----Original Message-----")
            || tl.starts_with("________________________________")
            || (tl.starts_with("On ") && tl.ends_with("wrote:"))
        {
            break;
        }
        if tl.starts_with('>') {
            continue;
        }
        out.push(t);
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    let s = out.join("\n");
    if s.trim().is_empty() {
        body.trim().to_owned()
    } else {
        s
    }
}

/// A bare `yes`/`approve` or `no`/`deny` at the start of the new text of a reply, normalised
/// to the word the core's approval flow understands.
pub fn approval_word(body: &str) -> Option<&'static str> {
    let first = body
        .split_whitespace()
        .next()?
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase();
    match first.as_str() {
        "yes" | "approve" | "approved" | "ok" => Some("yes"),
        "no" | "deny" | "denied" => Some("no"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: MailRef = MailRef {
        uid_validity: 7,
        uid: 3,
    };

    fn rules() -> Rules {
        Rules {
            own_address: "bot@localhost".into(),
            allowed_senders: vec!["alice@localhost".into(), "@example.org".into()],
            auth: auth::Policy {
                authserv_ids: vec!["mx.test".into()],
                require_pass: true,
                trust_unauthenticated: false,
                rule: String::new(),
            },
            max_attachment_bytes: 1000,
            max_mail_bytes: 100_000,
        }
    }

    /// A mail as the receiving server `mx.test` hands it over: its verdict on top.
    fn mail(extra: &str, from: &str) -> Vec<u8> {
        let domain = from.rsplit('@').next().unwrap();
        format!("Authentication-Results: mx.test; dmarc=pass header.from={domain}\r\nFrom: Alice <{from}>\r\nTo: bot@localhost\r\nSubject: Hi\r\nMessage-ID: <m1@x>\r\n{extra}\r\nHello bot\r\n\r\nOn Mon, Bob wrote:\r\n> old\r\n").into_bytes()
    }

    fn with(raw: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8(raw)
            .unwrap()
            .replace(from, to)
            .into_bytes()
    }

    #[test]
    fn plain_mail_is_parsed_and_trimmed() {
        let p = parse(&mail("", "alice@localhost"), AT, &rules()).unwrap();
        assert_eq!(p.message.chat.id.as_str(), "alice@localhost");
        assert_eq!(p.message.id.as_str(), "m1@x");
        assert!(p.message.text.contains("Hello bot"));
        assert!(!p.message.text.contains("old"));
        assert!(p.message.text.contains("untrusted"));
        assert!(p.authenticated);
    }

    #[test]
    fn loops_and_lists_are_skipped() {
        let r = rules();
        assert_eq!(
            parse(
                &mail("Auto-Submitted: auto-replied\r\n", "alice@localhost"),
                AT,
                &r
            )
            .unwrap_err(),
            Skip::AutoSubmitted("auto-replied".into())
        );
        assert!(parse(&mail("Auto-Submitted: no\r\n", "alice@localhost"), AT, &r).is_ok());
        assert!(matches!(
            parse(&mail("Precedence: bulk\r\n", "alice@localhost"), AT, &r),
            Err(Skip::Bulk(_))
        ));
        assert_eq!(
            parse(&mail("List-Id: <l.x>\r\n", "alice@localhost"), AT, &r).unwrap_err(),
            Skip::List
        );
        assert_eq!(
            parse(&mail("", "MAILER-DAEMON@localhost"), AT, &r).unwrap_err(),
            Skip::Bounce
        );
        assert_eq!(
            parse(&mail("", "bot@localhost"), AT, &r).unwrap_err(),
            Skip::OwnAddress
        );
        assert!(matches!(
            parse(&mail("", "mallory@localhost"), AT, &r),
            Err(Skip::NotAllowed(_))
        ));
        assert!(parse(&mail("", "carol@example.org"), AT, &r).is_ok());
        assert_eq!(
            parse(b"\x00\x01garbage", AT, &r).unwrap_err(),
            Skip::NoSender
        );
    }

    #[test]
    fn only_the_trusted_servers_aligned_pass_lets_a_sender_in() {
        let r = rules();
        let failed = with(
            mail("", "alice@localhost"),
            "dmarc=pass",
            "spf=fail smtp.mailfrom=x; dmarc=fail",
        );
        assert!(matches!(parse(&failed, AT, &r), Err(Skip::AuthFailed(_))));
        let none = with(mail("", "alice@localhost"), "dmarc=pass", "dmarc=none");
        assert!(matches!(
            parse(&none, AT, &r),
            Err(Skip::NotAuthenticated(_))
        ));
        // Another server's header, however good, is not read.
        let other = with(mail("", "alice@localhost"), "mx.test;", "elsewhere.test;");
        assert_eq!(
            parse(&other, AT, &r).unwrap_err(),
            Skip::NoTrustedAuthResults
        );
        // A pass for another domain than From's.
        let other_domain = with(
            mail("", "alice@localhost"),
            "header.from=localhost",
            "header.from=mallory.test",
        );
        assert!(matches!(
            parse(&other_domain, AT, &r),
            Err(Skip::NotAuthenticated(_))
        ));
        // Two From headers: which one the server checked is unknowable.
        let two = mail("From: <mallory@localhost>\r\n", "alice@localhost");
        assert_eq!(parse(&two, AT, &r).unwrap_err(), Skip::SeveralSenders);
    }

    #[test]
    fn a_forged_from_with_a_handwritten_pass_lower_down_is_refused() {
        // Mallory wrote a pass below the server's own verdict on her forged From: alice.
        let raw = b"Authentication-Results: mx.test; dmarc=fail header.from=localhost\r\n\
            From: <alice@localhost>\r\n\
            Authentication-Results: mx.test; dkim=pass header.d=localhost; dmarc=pass header.from=localhost\r\n\
            Subject: yes\r\nMessage-ID: <f@x>\r\n\r\nrun this\r\n";
        assert!(matches!(parse(raw, AT, &rules()), Err(Skip::AuthFailed(_))));
        // Without any header of the server's own, the forged one is the topmost: the rule
        // relies on the server writing its verdict on every mail (as receiving servers do).
        let no_verdict = &raw[raw.iter().position(|b| *b == b'F').unwrap()..];
        assert!(parse(no_verdict, AT, &rules()).is_ok());
    }

    #[test]
    fn trust_unauthenticated_serves_mail_without_a_trusted_header_but_not_failures() {
        let mut r = rules();
        r.auth.trust_unauthenticated = true;
        let plain = b"From: <alice@localhost>\r\nSubject: s\r\nMessage-ID: <u@x>\r\n\r\nhi\r\n";
        let p = parse(plain, AT, &r).unwrap();
        assert!(!p.authenticated);
        let failed = with(mail("", "alice@localhost"), "dmarc=pass", "dmarc=fail");
        assert!(matches!(parse(&failed, AT, &r), Err(Skip::AuthFailed(_))));
        // And with no authserv-id at all nothing is trusted, so nothing is served without it.
        r.auth.authserv_ids.clear();
        r.auth.trust_unauthenticated = false;
        assert_eq!(
            parse(&mail("", "alice@localhost"), AT, &r).unwrap_err(),
            Skip::NoTrustedAuthResults
        );
    }

    #[test]
    fn the_header_alone_is_screened_like_the_whole_mail() {
        let head = |raw: &[u8]| {
            let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            raw[..end].to_vec()
        };
        let s = screen_header(&head(&mail("", "alice@localhost")), AT, &rules()).unwrap();
        assert_eq!(s.from, "alice@localhost");
        assert_eq!(s.thread.message_id, "m1@x");
        assert!(s.authenticated);
        let stranger = head(&mail("", "mallory@localhost"));
        assert!(matches!(
            screen_header(&stranger, AT, &rules()),
            Err(Skip::NotAllowed(_))
        ));
    }

    #[test]
    fn attachments_are_located_by_uid() {
        let raw = "Authentication-Results: mx.test; dmarc=pass header.from=localhost\r\nFrom: <alice@localhost>\r\nSubject: f\r\nMessage-ID: <a#b@x>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\nsee\r\n--XX\r\nContent-Type: text/plain; name=a.txt\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nfile\r\n--XX--\r\n";
        let p = parse(raw.as_bytes(), AT, &rules()).unwrap();
        let locator = &p.message.attachments[0].locator;
        assert_eq!(locator, "7.3#0#a#b@x");
        assert_eq!(MailRef::from_locator(locator), Some((AT, 0, "a#b@x")));
        assert_eq!(MailRef::from_locator("a#b@x#0"), None);
    }

    #[test]
    fn approval_replies_with_the_code_become_answers() {
        let raw = with(
            mail("", "alice@localhost"),
            "Subject: Hi",
            "Subject: Re: Hi [approval 5fa3]",
        );
        let raw = with(raw, "Hello bot", "Yes please");
        let p = parse(&raw, AT, &rules()).unwrap();
        assert_eq!(p.message.text, "yes");
        assert_eq!(
            p.message.trigger,
            Trigger::Button {
                data: "ap:5fa3:o".into()
            }
        );
        assert_eq!(approval_code("Re: x [approval 12ab]"), Some("12ab".into()));
        assert_eq!(approval_code("Re: x [approval ]"), None);
    }

    #[test]
    fn a_bare_yes_without_the_code_is_an_ordinary_mail() {
        let raw = with(mail("", "alice@localhost"), "Hello bot", "yes");
        let p = parse(&raw, AT, &rules()).unwrap();
        assert_eq!(p.message.trigger, Trigger::Direct);
        assert_ne!(p.message.text.trim(), "yes");
        assert!(p.message.text.contains("untrusted"), "{}", p.message.text);
    }

    #[test]
    fn approval_words() {
        assert_eq!(approval_word("Yes, go ahead"), Some("yes"));
        assert_eq!(approval_word("deny."), Some("no"));
        assert_eq!(approval_word("maybe"), None);
    }

    #[test]
    fn a_mail_thread_is_named_by_its_first_mail() {
        let new = parse(&mail("", "alice@localhost"), AT, &rules()).unwrap();
        assert_eq!(
            new.message.topic,
            Some("m1@x".into()),
            "a new thread: itself"
        );
        let reply = mail(
            "In-Reply-To: <bot2@localhost>\r\nReferences: <root@x> <bot2@localhost>\r\n",
            "alice@localhost",
        );
        let reply = parse(&reply, AT, &rules()).unwrap();
        assert_eq!(reply.message.topic, Some("root@x".into()));
        let no_references = mail("In-Reply-To: <bot2@localhost>\r\n", "alice@localhost");
        let p = parse(&no_references, AT, &rules()).unwrap();
        assert_eq!(p.message.topic, Some("bot2@localhost".into()));
    }
}
