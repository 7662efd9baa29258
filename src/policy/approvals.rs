//! Waiting for a person: pending confirmations (and questions) bound to one session, one
//! requester and one exact call, answered by a button or a reply, or by nobody (timeout).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hermes_adapter::{SessionKey, UserId};
use tokio::sync::oneshot;

/// How the user answered a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this one call.
    Once,
    /// Run it, and calls of this tool for the rest of the session.
    Session,
    /// Run it, and calls of this tool from now on.
    Always,
    Deny,
}

impl Answer {
    /// The one-letter code used in button data.
    pub fn code(self) -> char {
        match self {
            Answer::Once => 'o',
            Answer::Session => 's',
            Answer::Always => 'a',
            Answer::Deny => 'd',
        }
    }

    pub fn from_code(c: &str) -> Option<Answer> {
        Some(match c {
            "o" => Answer::Once,
            "s" => Answer::Session,
            "a" => Answer::Always,
            "d" => Answer::Deny,
            _ => return None,
        })
    }

    /// A plain reply typed while a confirmation is pending: `yes`, `no`, `/approve [session|always]`,
    /// `/deny`. Anything else is not an answer.
    pub fn from_reply(text: &str) -> Option<Answer> {
        let t = text.trim().trim_end_matches(['.', '!']).to_lowercase();
        Some(match t.as_str() {
            "yes" | "y" | "ok" | "okay" | "allow" | "approve" | "/approve" | "/yes" => Answer::Once,
            "/approve session" | "allow for this session" => Answer::Session,
            "/approve always" | "always" => Answer::Always,
            "no" | "n" | "deny" | "/deny" | "/no" | "stop" => Answer::Deny,
            _ => return None,
        })
    }

    pub fn allows(self) -> bool {
        self != Answer::Deny
    }
}

/// A pending wait, as shown to others (`/status`, logs).
#[derive(Debug, Clone)]
pub struct Pending {
    pub id: String,
    pub session: SessionKey,
    pub requester: UserId,
    /// What is waiting: the tool name, or "question".
    pub subject: String,
    /// What was asked, as the person was shown it (the exact call).
    pub detail: String,
    /// When it was opened (milliseconds since the epoch).
    pub opened_at: i64,
}

/// The outcome of resolving a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub id: String,
    pub subject: String,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No such wait (answered already, timed out, or from before a restart).
    Unknown,
    /// Someone other than the requester answered.
    NotYours,
}

struct Entry<T> {
    pending: Pending,
    reply: oneshot::Sender<T>,
}

/// Pending waits of one kind (`ApprovalBook` for confirmations, a `Book<String>` for
/// questions).
pub struct Book<T> {
    entries: Mutex<Vec<Entry<T>>>,
}

/// Pending confirmations.
pub type ApprovalBook = Book<Answer>;

impl<T> Default for Book<T> {
    fn default() -> Self {
        Book {
            entries: Mutex::new(Vec::new()),
        }
    }
}

/// A wait's id: 64 random bits in hex. Unguessable, so an answer by mail (which carries the id)
/// cannot be forged, and a button from before a restart never matches a new wait.
fn new_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness (never seen on Linux): fall back to the clock's nanoseconds and
        // a per-process counter, unique though guessable.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bytes = (nanos ^ NEXT.fetch_add(1, Ordering::Relaxed).rotate_left(40)).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl<T> Book<T> {
    /// Register a wait. The id is unique across restarts, so a button from before a restart
    /// cannot answer a new wait.
    pub fn open(
        &self,
        session: SessionKey,
        requester: UserId,
        subject: &str,
        detail: &str,
    ) -> (Pending, oneshot::Receiver<T>) {
        let id = new_id();
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            id,
            session,
            requester,
            subject: subject.to_owned(),
            detail: detail.to_owned(),
            opened_at: hermes_adapter::now_millis(),
        };
        if let Ok(mut entries) = self.entries.lock() {
            entries.push(Entry {
                pending: pending.clone(),
                reply: tx,
            });
        }
        (pending, rx)
    }

    /// Answer wait `id` as user `by`.
    pub fn resolve(&self, id: &str, by: &UserId, answer: T) -> Result<Resolved, Rejection> {
        self.take(|p| p.id == id, by, answer)
    }

    /// Answer the oldest wait of `session` as user `by`.
    pub fn resolve_oldest(
        &self,
        session: &SessionKey,
        by: &UserId,
        answer: T,
    ) -> Result<Resolved, Rejection> {
        self.take(|p| &p.session == session, by, answer)
    }

    /// Answer wait `id` as the operator, who may answer anyone's (the MCP service's
    /// `approval_answer`, behind its token). `allowed` sees the wait first and may refuse it
    /// (one out of the token's reach looks unknown).
    pub fn resolve_as_operator(
        &self,
        id: &str,
        allowed: impl Fn(&Pending) -> bool,
        answer: T,
    ) -> Result<Resolved, Rejection> {
        self.take_if(|p| p.id == id && allowed(p), None, answer)
    }

    fn take(
        &self,
        matches: impl Fn(&Pending) -> bool,
        by: &UserId,
        answer: T,
    ) -> Result<Resolved, Rejection> {
        self.take_if(matches, Some(by), answer)
    }

    /// Resolve the first wait `matches` accepts; `by`, when given, must be its requester.
    fn take_if(
        &self,
        matches: impl Fn(&Pending) -> bool,
        by: Option<&UserId>,
        answer: T,
    ) -> Result<Resolved, Rejection> {
        let mut entries = self.entries.lock().map_err(|_| Rejection::Unknown)?;
        let at = entries
            .iter()
            .position(|e| matches(&e.pending))
            .ok_or(Rejection::Unknown)?;
        if by.is_some_and(|by| &entries[at].pending.requester != by) {
            return Err(Rejection::NotYours);
        }
        let entry = entries.remove(at);
        let resolved = Resolved {
            id: entry.pending.id.clone(),
            subject: entry.pending.subject.clone(),
        };
        // The waiter may have given up a moment ago; then the answer simply has no effect.
        let _ = entry.reply.send(answer);
        Ok(resolved)
    }

    /// Forget wait `id` (it timed out or its turn ended).
    pub fn close(&self, id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|e| e.pending.id != id);
        }
    }

    /// Every pending wait, oldest first.
    pub fn all(&self) -> Vec<Pending> {
        self.entries
            .lock()
            .map(|e| e.iter().map(|e| e.pending.clone()).collect())
            .unwrap_or_default()
    }

    pub fn pending_for(&self, session: &SessionKey) -> Vec<Pending> {
        self.entries
            .lock()
            .map(|e| {
                e.iter()
                    .filter(|e| &e.pending.session == session)
                    .map(|e| e.pending.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use hermes_adapter::Platform;

    use super::*;

    fn key() -> SessionKey {
        SessionKey::direct(Platform::Telegram, "1")
    }

    #[tokio::test]
    async fn only_the_requester_answers_and_only_once() {
        let book = ApprovalBook::default();
        let (p, rx) = book.open(key(), "1".into(), "terminal", "");
        assert_eq!(
            book.resolve(&p.id, &"2".into(), Answer::Once),
            Err(Rejection::NotYours)
        );
        assert_eq!(
            book.resolve("nope", &"1".into(), Answer::Once),
            Err(Rejection::Unknown)
        );
        assert!(book.resolve(&p.id, &"1".into(), Answer::Deny).is_ok());
        assert_eq!(rx.await.unwrap(), Answer::Deny);
        assert_eq!(
            book.resolve(&p.id, &"1".into(), Answer::Once),
            Err(Rejection::Unknown)
        );
    }

    #[tokio::test]
    async fn replies_answer_the_oldest_wait_of_the_session() {
        let book = ApprovalBook::default();
        let (first, rx1) = book.open(key(), "1".into(), "a", "");
        let (_second, rx2) = book.open(key(), "1".into(), "b", "");
        assert_eq!(
            book.resolve_oldest(&key(), &"1".into(), Answer::Once)
                .unwrap()
                .id,
            first.id
        );
        assert_eq!(rx1.await.unwrap(), Answer::Once);
        book.close(&_second.id);
        assert!(rx2.await.is_err(), "closed waits get no answer");
        assert!(book.pending_for(&key()).is_empty());
    }

    #[test]
    fn replies_and_codes_parse() {
        assert_eq!(Answer::from_reply("Yes!"), Some(Answer::Once));
        assert_eq!(Answer::from_reply("/approve always"), Some(Answer::Always));
        assert_eq!(Answer::from_reply("no"), Some(Answer::Deny));
        assert_eq!(Answer::from_reply("yes, but first tell me why"), None);
        for a in [Answer::Once, Answer::Session, Answer::Always, Answer::Deny] {
            assert_eq!(Answer::from_code(&a.code().to_string()), Some(a));
        }
    }
}
