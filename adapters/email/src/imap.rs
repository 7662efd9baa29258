//! Inbound over IMAP: connect (plain, TLS or STARTTLS), select INBOX, hand every new mail to the
//! inbox *before* flagging it `\Seen`, then wait with IDLE (or poll when the server has no IDLE).
//!
//! Progress (UIDVALIDITY and the last UID handled) is kept in a small state file next to the
//! database, written after each mail was stored; a mail delivered but not yet recorded when the
//! daemon died is fetched again and recognised by the inbox as a duplicate (its key is the
//! `Message-ID`), so nothing is lost or answered twice. On the first start on a mailbox only mail
//! arriving from then on is answered (not a backlog of old unread mail); after a UIDVALIDITY
//! change the unseen mail is rescanned (the inbox recognises what it already has).
//!
//! Each new mail's size and header are read first (`RFC822.SIZE BODY.PEEK[HEADER]`) and the
//! never-answer rules, sender authentication among them, decided on the header alone; the whole
//! mail is fetched only for an allowed, authenticated sender and only when it is within
//! `max_mail_bytes`. Attachments are fetched again later by the mail's UID.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_imap::extensions::idle::IdleResponse;
use futures_util::TryStreamExt;
use hermes_adapter::{AdapterError, Delivery, InboundSink, Outbound};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::notes;
use crate::parse::{self, MailRef, Skip};
use crate::{EmailSettings, Security};

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Debug> Io for T {}

pub type Session = async_imap::Session<Box<dyn Io>>;

/// What the adapter remembers across restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub uid_validity: u32,
    pub last_uid: u32,
}

impl State {
    pub fn load(path: &Path) -> Option<State> {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(self)?)?;
        std::fs::rename(tmp, path)
    }
}

fn transient(e: impl std::fmt::Display) -> AdapterError {
    AdapterError::Transient(e.to_string())
}

fn tls_connector() -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("default TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

async fn wrap_tls(tcp: TcpStream, host: &str) -> Result<Box<dyn Io>, AdapterError> {
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(transient)?;
    let tls = tls_connector()
        .connect(name, tcp)
        .await
        .map_err(transient)?;
    Ok(Box::new(tls))
}

/// Connect and log in.
pub async fn connect(s: &EmailSettings) -> Result<Session, AdapterError> {
    let c = &s.imap;
    let tcp = tokio::time::timeout(
        Duration::from_secs(20),
        TcpStream::connect((c.host.as_str(), c.port)),
    )
    .await
    .map_err(|_| transient("IMAP connect timed out"))?
    .map_err(|e| transient(format!("IMAP connect {}:{}: {e}", c.host, c.port)))?;
    let stream: Box<dyn Io> = match c.security {
        Security::Tls => wrap_tls(tcp, &c.host).await?,
        Security::Plain => Box::new(tcp),
        Security::StartTls => {
            let mut client = async_imap::Client::new(tcp);
            client.read_response().await.map_err(transient)?;
            client
                .run_command_and_check_ok("STARTTLS", None)
                .await
                .map_err(transient)?;
            wrap_tls(client.into_inner(), &c.host).await?
        }
    };
    let mut client = async_imap::Client::new(stream);
    if c.security != Security::StartTls {
        client
            .read_response()
            .await
            .map_err(transient)?
            .ok_or_else(|| transient("IMAP server closed before its greeting"))?;
    }
    client
        .login(&c.user, &c.password)
        .await
        .map_err(|(e, _)| match e {
            async_imap::error::Error::No(m) | async_imap::error::Error::Bad(m) => {
                AdapterError::Unauthorized(format!("IMAP login refused: {m}"))
            }
            e => transient(e),
        })
}

/// Receive until `shutdown`; returns `Err` on a lost connection (the caller reconnects).
pub async fn listen(
    s: &EmailSettings,
    sink: &dyn InboundSink,
    shutdown: &CancellationToken,
    send_note: &(dyn Fn(Outbound) + Send + Sync),
) -> Result<(), AdapterError> {
    let mut session = connect(s).await?;
    let caps = session.capabilities().await.map_err(transient)?;
    let can_idle = caps.has_str("IDLE") && !s.force_poll;
    let mailbox = session.select("INBOX").await.map_err(transient)?;
    let validity = mailbox.uid_validity.unwrap_or(0);
    let state_path = s.state_dir.join("email-imap-state.json");
    let mut state = match State::load(&state_path) {
        Some(st) if st.uid_validity == validity => st,
        Some(st) => {
            tracing::warn!(
                old = st.uid_validity,
                new = validity,
                "IMAP UIDVALIDITY changed: rescanning unseen mail"
            );
            State {
                uid_validity: validity,
                last_uid: 0,
            }
        }
        // First start on this mailbox: only mail arriving from now on is answered, not a
        // backlog of old unread mail.
        None => {
            let st = State {
                uid_validity: validity,
                last_uid: mailbox.uid_next.unwrap_or(1).saturating_sub(1),
            };
            if let Err(e) = st.save(&state_path) {
                tracing::warn!("email: cannot save IMAP progress: {e}");
            }
            st
        }
    };
    tracing::info!(
        idle = can_idle,
        uid_validity = validity,
        last_uid = state.last_uid,
        "email: IMAP connected"
    );
    loop {
        sink.heartbeat();
        process_new(&mut session, s, sink, &mut state, &state_path, send_note).await?;
        // New mail announced while we were fetching: look again before waiting.
        let mut news = false;
        while let Ok(r) = session.unsolicited_responses.try_recv() {
            news |= is_news(&r);
        }
        if news {
            continue;
        }
        if can_idle {
            // Untagged EXISTS that arrive while IDLE starts go to the unsolicited channel, not
            // to `wait`: look there first, or a mail delivered in that instant waits for the
            // next refresh.
            let unsolicited = session.unsolicited_responses.clone();
            let mut idle = session.idle();
            idle.init().await.map_err(transient)?;
            let mut news = false;
            while let Ok(r) = unsolicited.try_recv() {
                news |= is_news(&r);
            }
            if news {
                session = idle.done().await.map_err(transient)?;
                continue;
            }
            let (wait, stop) = idle.wait_with_timeout(s.idle_refresh);
            let r = tokio::select! {
                r = wait => Some(r),
                _ = shutdown.cancelled() => None,
            };
            drop(stop);
            match r {
                None => {
                    if let Ok(mut sess) = idle.done().await {
                        sess.logout().await.ok();
                    }
                    return Ok(());
                }
                Some(Err(e)) => return Err(transient(e)),
                Some(Ok(
                    IdleResponse::NewData(_)
                    | IdleResponse::Timeout
                    | IdleResponse::ManualInterrupt,
                )) => {}
            }
            session = idle.done().await.map_err(transient)?;
        } else {
            tokio::select! {
                _ = tokio::time::sleep(s.poll_interval) => {}
                _ = shutdown.cancelled() => {
                    session.logout().await.ok();
                    return Ok(());
                }
            }
            session.noop().await.map_err(transient)?;
        }
    }
}

/// Whether an unsolicited response announces new mail.
fn is_news(r: &async_imap::types::UnsolicitedResponse) -> bool {
    matches!(
        r,
        async_imap::types::UnsolicitedResponse::Exists(_)
            | async_imap::types::UnsolicitedResponse::Recent(_)
    )
}

/// The longest header read to screen a mail; a mail with a longer one is not read at all.
const MAX_HEADER_BYTES: usize = 256 * 1024;

/// Fetch `query` for the one mail `uid` (`None`: it vanished meanwhile).
async fn fetch_one(
    session: &mut Session,
    uid: u32,
    query: &str,
) -> Result<Option<async_imap::types::Fetch>, AdapterError> {
    let fetched: Vec<_> = session
        .uid_fetch(uid.to_string(), query)
        .await
        .map_err(transient)?
        .try_collect()
        .await
        .map_err(transient)?;
    Ok(fetched.into_iter().find(|f| f.uid == Some(uid)))
}

/// Screen, fetch, store, flag and record every mail not handled yet. A mail's header (and
/// size) is read first, and its body only when the header passed every rule (sender
/// authenticated and allowed) and the mail is within `max_mail_bytes`. A note for the sender
/// goes out after the mail was recorded, so a mail read again after a crash gets none.
async fn process_new(
    session: &mut Session,
    s: &EmailSettings,
    sink: &dyn InboundSink,
    state: &mut State,
    state_path: &Path,
    send_note: &(dyn Fn(Outbound) + Send + Sync),
) -> Result<(), AdapterError> {
    let query = if state.last_uid == 0 {
        "UNSEEN".to_owned()
    } else {
        format!("UID {}:*", state.last_uid + 1)
    };
    let mut uids: Vec<u32> = session
        .uid_search(&query)
        .await
        .map_err(transient)?
        .into_iter()
        .filter(|u| *u > state.last_uid)
        .collect();
    uids.sort_unstable();
    let head_query = format!("(UID RFC822.SIZE BODY.PEEK[HEADER]<0.{MAX_HEADER_BYTES}>)");
    for uid in uids {
        let at = MailRef {
            uid_validity: state.uid_validity,
            uid,
        };
        let Some(head) = fetch_one(session, uid, &head_query).await? else {
            tracing::warn!(uid, "email: mail vanished before it was fetched");
            continue;
        };
        let size = u64::from(head.size.unwrap_or(0));
        let header = head.header().unwrap_or_default();
        let max = s.rules.max_mail_bytes;
        let mut note = None;
        let screened = if header.len() >= MAX_HEADER_BYTES {
            Err(Skip::HeaderTooLarge(MAX_HEADER_BYTES as u64))
        } else {
            parse::screen_header(header, at, &s.rules)
        };
        match screened {
            Err(why) => skipped(uid, &why),
            Ok(screened) if size > max => {
                skipped(uid, &Skip::TooLarge { size, max });
                if screened.authenticated {
                    note = Some(notes::too_large(&screened, size, max));
                }
            }
            Ok(_) => {
                let whole = fetch_one(session, uid, "(UID BODY.PEEK[])").await?;
                let Some(raw) = whole.as_ref().and_then(|f| f.body()) else {
                    tracing::warn!(uid, "email: mail vanished before it was fetched");
                    continue;
                };
                match parse::parse(raw, at, &s.rules) {
                    Ok(parsed) => {
                        let refused = parsed
                            .authenticated
                            .then(|| {
                                notes::refused_attachments(&parsed, s.rules.max_attachment_bytes)
                            })
                            .flatten();
                        let d = sink
                            .deliver(parsed.message)
                            .await
                            .map_err(|e| transient(format!("inbox: {e}")))?;
                        if d == Delivery::Duplicate {
                            tracing::debug!(uid, "email: already in the inbox");
                        } else {
                            tracing::debug!(uid, "email: mail handed to the inbox");
                            note = refused;
                        }
                    }
                    Err(why) => skipped(uid, &why),
                }
            }
        }
        session
            .uid_store(uid.to_string(), "+FLAGS.SILENT (\\Seen)")
            .await
            .map_err(transient)?
            .try_collect::<Vec<_>>()
            .await
            .map_err(transient)?;
        state.last_uid = uid;
        if let Err(e) = state.save(state_path) {
            tracing::warn!("email: cannot save IMAP progress: {e}");
        }
        if let Some(note) = note {
            send_note(note);
        }
    }
    Ok(())
}

/// Log why a mail is not answered (no model call is made for it).
fn skipped(uid: u32, why: &Skip) {
    match why {
        Skip::Unparseable => tracing::warn!(uid, "email: malformed mail skipped"),
        why => tracing::info!(uid, reason = %why, "email: not answered"),
    }
}

/// Append a copy of a sent mail to the Sent folder (best effort).
pub async fn save_sent(s: &EmailSettings, folder: &str, raw: &[u8]) -> Result<(), AdapterError> {
    let mut session = connect(s).await?;
    let r = session.append(folder, Some("(\\Seen)"), None, raw).await;
    session.logout().await.ok();
    r.map_err(transient)
}

/// The bytes of an attachment, by the locator `parse` wrote: the mail's UID (under its
/// UIDVALIDITY), the attachment's index, and the mail's `Message-ID` as a check.
pub async fn fetch_attachment(
    s: &EmailSettings,
    locator: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, hermes_adapter::SendError> {
    use hermes_adapter::SendError;
    use mail_parser::MessageParser;
    let (at, index, message_id) = MailRef::from_locator(locator)
        .ok_or_else(|| SendError::NotFound(format!("bad attachment locator {locator}")))?;
    let mut session = connect(s)
        .await
        .map_err(|e| SendError::Transient(e.to_string()))?;
    let t = |e: async_imap::error::Error| SendError::Transient(e.to_string());
    let mailbox = session.examine("INBOX").await.map_err(t)?;
    if mailbox.uid_validity != Some(at.uid_validity) {
        session.logout().await.ok();
        return Err(SendError::NotFound(format!(
            "mail {message_id} is gone (the INBOX's UIDVALIDITY changed)"
        )));
    }
    let fetched = fetch_one(&mut session, at.uid, "(UID RFC822.SIZE BODY.PEEK[])").await;
    session.logout().await.ok();
    let fetched = fetched.map_err(|e| SendError::Transient(e.to_string()))?;
    let f = fetched.ok_or_else(|| SendError::NotFound(format!("mail {message_id} is gone")))?;
    if u64::from(f.size.unwrap_or(0)) > s.rules.max_mail_bytes {
        return Err(SendError::TooLong);
    }
    let raw = f
        .body()
        .ok_or_else(|| SendError::NotFound(format!("mail {message_id} has no body")))?;
    let mail = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| SendError::NotFound("unparseable mail".into()))?;
    let id = mail
        .message_id()
        .map(|m| m.trim_matches(|c| c == '<' || c == '>').to_owned())
        .unwrap_or_else(|| at.fallback_id());
    if id != message_id {
        return Err(SendError::NotFound(format!(
            "mail {message_id} is gone (another mail has its UID)"
        )));
    }
    let part = mail
        .attachments()
        .nth(index)
        .ok_or_else(|| SendError::NotFound(format!("no attachment {index} in {message_id}")))?;
    if part.len() as u64 > max_bytes {
        return Err(SendError::TooLong);
    }
    Ok(part.contents().to_vec())
}
