//! History search and the operator's view of sessions: find earlier conversations by what was
//! said in them, with the messages around each match, and read on from there; list, show and
//! export sessions.
//!
//! Only the user-visible conversation (`user` and `assistant` messages) is searched, newest
//! first. Privacy: a [`SearchScope::Owner`] search only ever reads sessions whose `owner` equals
//! it (see `SessionKey::owner`); a backend applies the filter in every query, never afterwards.

use async_trait::async_trait;
use hermes_adapter::{ChatId, Platform, SessionKey};

use super::Result;
use super::sessions::{SessionRow, StoredMessage};
use crate::conversation::Role;

/// Matches kept per session in a search's result; more would crowd out other sessions.
pub const HITS_PER_SESSION: usize = 3;

/// Whose history a search may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchScope {
    /// Only sessions whose owner is this (`SessionKey::owner()` of the caller): a user never
    /// sees another user's or another chat's history.
    Owner(String),
    /// Every session: the operator at the command line.
    All,
}

/// A user-visible message found by a search or read on from one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundMessage {
    pub id: i64,
    pub role: Role,
    pub content: String,
    pub created_at: i64,
    /// This message matched the query (the others are context).
    pub hit: bool,
}

/// One session's matches: runs of consecutive messages around them, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHits {
    pub session: SessionRow,
    /// Each excerpt is a run of consecutive visible messages holding one or more hits and up to
    /// `context` messages either side; overlapping or touching windows are merged.
    pub excerpts: Vec<Vec<FoundMessage>>,
}

/// A session as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: i64,
    pub key: SessionKey,
    pub created_at: i64,
    pub updated_at: i64,
    /// When `/new` or a reset policy ended it; `None` while it is the key's active session.
    pub ended_at: Option<i64>,
    /// Every stored message, tool calls and results included.
    pub messages: u64,
    /// The chat it is held in, from the newest message it received; `None` before the first.
    pub chat: Option<ChatId>,
}

/// The search role: `session_search` (scoped to its owner) and `hermes sessions` (all).
#[async_trait]
pub trait Search: Send + Sync {
    /// Sessions in `scope` where `query` was said, newest sessions first, at most
    /// `limit_sessions`, each with up to a few matches and `context` messages before and after
    /// each. Any text is a valid query (see `query.rs`); all terms must match, and if no message
    /// has them all, any term may. An empty result is not an error.
    async fn search_messages(
        &self,
        query: &str,
        scope: SearchScope,
        limit_sessions: usize,
        context: usize,
    ) -> Result<Vec<SessionHits>>;

    /// Up to `limit` user-visible messages of a session after message `after_message_id`, oldest
    /// first.
    async fn messages_after(
        &self,
        session_id: i64,
        after_message_id: i64,
        limit: usize,
    ) -> Result<Vec<FoundMessage>>;

    /// The session of message `message_id`, if the message exists and is in `scope`. A message
    /// out of scope looks exactly like one that does not exist.
    async fn session_of_message(
        &self,
        message_id: i64,
        scope: SearchScope,
    ) -> Result<Option<SessionRow>>;

    /// Up to `limit` sessions, most recently active first, skipping the first `offset`.
    async fn sessions_list(&self, limit: usize, offset: usize) -> Result<Vec<SessionSummary>>;

    /// One session's summary, `None` if there is no session `id`.
    async fn session_summary(&self, id: i64) -> Result<Option<SessionSummary>>;

    /// Every message of session `id` in order, tool calls and results included; `None` if there
    /// is no such session.
    async fn session_messages(&self, id: i64) -> Result<Option<Vec<StoredMessage>>>;

    /// Whether any session is held in `chat` of `platform` (someone allowed wrote there).
    async fn chat_has_session(&self, platform: Platform, chat: &ChatId) -> Result<bool>;
}

/// The context windows of one session's `hits` (sorted), overlapping or touching ones merged.
/// `around[i]` holds, for `hits[i]`, the visible messages at or before it (up to `context + 2`,
/// oldest first: the one before the window tells whether it touches the previous window) and
/// the `context` after it. Backend-neutral: each backend reads `around` its own way.
pub(crate) fn merge_windows(
    hits: &[i64],
    around: Vec<(Vec<FoundMessage>, Vec<FoundMessage>)>,
    context: usize,
) -> Vec<Vec<FoundMessage>> {
    use std::collections::BTreeMap;
    let mut windows: Vec<BTreeMap<i64, FoundMessage>> = Vec::new();
    for (mut earlier, later) in around {
        let before = (earlier.len() == context + 2).then(|| earlier.remove(0).id);
        let messages: BTreeMap<i64, FoundMessage> = earlier
            .into_iter()
            .chain(later)
            .map(|m| (m.id, m))
            .collect();
        match windows.last_mut() {
            Some(last) if before.is_none_or(|b| last.keys().next_back() >= Some(&b)) => {
                last.extend(messages);
            }
            _ => windows.push(messages),
        }
    }
    windows
        .into_iter()
        .map(|w| {
            w.into_values()
                .map(|mut m| {
                    m.hit = hits.binary_search(&m.id).is_ok();
                    m
                })
                .collect()
        })
        .collect()
}
