//! One turn of a lane, in three steps over one snapshot of what is in force (a reload mid-turn
//! changes the next turn, never half of this one):
//!
//! - `prepare`: the session to answer in (a reset by policy may start a fresh one);
//! - `run`: typing indicator, progress notes, the streamed preview, the prompt input, the agent;
//! - `commit`: park the messages during a provider outage, or store the answer, its replies and
//!   the inbox rows in one transaction, then start the background reviews.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hermes_adapter::{Message, SentId, SessionKey, now_millis};
use tokio_util::task::AbortOnDropHandle;

use super::chat_interaction::ChatInteraction;
use super::prompt_input::new_messages;
use super::{resets, reviews, stream_view};
use crate::agent::{Setting, TurnControl, TurnInput, TurnOutcome, TurnReport};
use crate::gateway::outbound::replies::replies;
use crate::gateway::{InForce, Shared};
use crate::llm::{ChatMessage, LlmError};
use crate::policy::Role;
use crate::store::{InboxOutcome, InboxRow, SessionRow, StoreError, TurnCommit, TurnRecord};

/// How long to wait before retrying a turn whose storage failed.
const STORE_RETRY: Duration = Duration::from_secs(2);

/// Run one turn over `rows` and commit what it produced. Returns how long to wait before
/// retrying when the messages stay queued (provider outage, storage failure).
pub(crate) async fn run_turn(
    shared: &Arc<Shared>,
    key: &SessionKey,
    outage: &Outage,
    rows: Vec<InboxRow>,
    control: TurnControl,
) -> Option<Duration> {
    let turn = match Turn::prepare(shared, key, outage, rows, control).await? {
        Ok(turn) => turn,
        Err(e) => {
            tracing::error!(error = %e, "cannot open the session; will retry");
            return Some(STORE_RETRY);
        }
    };
    let ran = turn.run().await;
    turn.commit(ran).await
}

/// A prepared turn: its messages, its session and the snapshot it runs with.
struct Turn<'a> {
    shared: &'a Arc<Shared>,
    /// The lane's session key.
    key: &'a SessionKey,
    /// The lane's view of a provider outage (outlives the turn).
    outage: &'a Outage,
    now: Arc<InForce>,
    rows: Vec<InboxRow>,
    /// The last message: where the answer goes and who asked.
    last: Message,
    session: SessionRow,
    control: TurnControl,
    started_at: i64,
}

/// What running the agent gave: its report (or the storage error that aborted it) and the
/// streamed preview message the final answer replaces.
struct Ran {
    report: Result<TurnReport, StoreError>,
    preview: Option<SentId>,
}

impl<'a> Turn<'a> {
    /// Take the snapshot and open the session. `None` when there is nothing to answer.
    async fn prepare(
        shared: &'a Arc<Shared>,
        key: &'a SessionKey,
        outage: &'a Outage,
        rows: Vec<InboxRow>,
        control: TurnControl,
    ) -> Option<Result<Turn<'a>, StoreError>> {
        let last = rows.last().map(|r| r.message.clone())?;
        let now = shared.in_force();
        let session = match open_session(shared, &now, key, &last).await {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(Turn {
            shared,
            key,
            outage,
            now,
            rows,
            last,
            session,
            control,
            started_at: now_millis(),
        }))
    }

    /// The role of the person the turn answers, by the allowlists in force.
    fn role(&self) -> Role {
        self.now
            .authz
            .role(self.last.platform, &self.last.sender.id)
            .unwrap_or(Role::User)
    }

    /// The last inbox row of the turn: its replies and files are keyed by it.
    fn turn_id(&self) -> i64 {
        self.rows.last().map_or(0, |r| r.id)
    }

    /// Run the agent with everything around it: typing, progress notes, the streamed view.
    async fn run(&self) -> Ran {
        let (shared, last) = (self.shared, &self.last);
        let typing = start_typing(shared, last);
        let person = Arc::new(ChatInteraction {
            shared: shared.clone(),
            config: self.now.config.clone(),
            to: last.clone(),
            key: self.key.clone(),
            control: self.control.clone(),
            turn: self.turn_id(),
            files_sent: Default::default(),
        });
        let progress = start_progress_notes(self.now.config.agent.progress_notice_secs, &person);
        let view = shared
            .adapter(last.platform)
            .filter(|a| {
                let caps = a.capabilities();
                caps.edit && (self.now.config.llm.streaming || caps.free_edits)
            })
            .map(|a| stream_view::start(a, last));
        let (deltas, view) = match view {
            Some((sink, task)) => (Some(sink), Some(task)),
            None => (None, None),
        };
        let input = TurnInput {
            session: &self.session,
            setting: Setting {
                platform: last.platform,
                chat: last.chat.kind,
            },
            new_messages: new_messages(shared, &self.now, &self.rows).await,
            control: self.control.clone(),
            requester: Some(last.sender.id.clone()),
            role: self.role(),
            interaction: Some(person),
            deltas,
            chat: Some(crate::tools::ChatRef {
                platform: last.platform,
                chat: last.chat.id.clone(),
                thread: last.thread.clone(),
                user: Some(last.sender.id.clone()),
            }),
            late_notice: self.outage.noticed.clone(),
            plan: super::prompt_input::is_plan(last),
        };
        fail::fail_point!("lane-turn");
        let report = self.now.agent.run_turn(input).await;
        drop((typing, progress));
        // The sink went with the turn, so the view ends: its last preview gets the final answer.
        let preview = match view {
            Some(task) => task.await.ok().flatten(),
            None => None,
        };
        Ran { report, preview }
    }

    /// Park the messages or store the turn's result. Returns the wait before a retry when the
    /// messages stay queued.
    async fn commit(self, ran: Ran) -> Option<Duration> {
        let report = match ran.report {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "turn aborted by a storage error; the messages stay queued");
                return Some(STORE_RETRY);
            }
        };
        if let TurnOutcome::Failed(err) = &report.outcome
            && transient(err)
            && !self.control.interrupt.is_cancelled()
            && let Some(wait) = self.park(err).await
        {
            return Some(wait);
        }
        let outage = self.outage;
        if !matches!(report.outcome, TurnOutcome::Cancelled) {
            // The provider answered (or failed for good): the next delay is news again.
            outage.failures.store(0, Ordering::SeqCst);
            outage.noticed.store(false, Ordering::SeqCst);
        }
        crate::metrics::metrics().record_turn(
            turn_label(&report.outcome),
            (now_millis() - self.started_at).max(0) as f64 / 1000.0,
        );
        let TurnReport {
            outcome,
            usage,
            iterations,
            tool_rounds,
            tools_called,
            model,
        } = report;
        let answered = matches!(
            outcome,
            TurnOutcome::Answered(_) | TurnOutcome::BudgetExhausted(_)
        );
        let record = TurnRecord {
            started_at: self.started_at,
            iterations,
            usage,
            // A turn cut short before its loop (plan mode's empty start) names no model.
            model: Some(model)
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| self.now.agent.model().to_owned()),
            outcome: InboxOutcome::Replied,
        };
        let mut commit = self.commit_of(outcome, record)?;
        if let (Some(preview), Some((_, first))) = (ran.preview, commit.replies.first_mut()) {
            first.edit_of = Some(preview.0);
        }
        let has_replies = !commit.replies.is_empty();
        let first_reply = commit
            .replies
            .first()
            .map(|(_, out)| out.idempotency_key.clone());
        if let Err(e) = self.shared.store.commit_turn(commit).await {
            tracing::error!(error = %e, "cannot store the turn's result; the messages stay queued");
            return Some(STORE_RETRY);
        }
        if has_replies {
            self.shared.outbox_signal.notify_one();
        }
        if answered {
            let finished = reviews::Finished {
                session: &self.session,
                tool_rounds,
                tools_called: &tools_called,
                first_reply,
                role: self.role(),
            };
            reviews::after_turn(self.shared, &self.now.agent, finished).await;
        }
        None
    }

    /// What the outcome writes: the answer (or a failure notice) and its replies, and the inbox
    /// rows done. `None` when shutdown cancelled the turn (its messages resume at the next
    /// start).
    fn commit_of(&self, outcome: TurnOutcome, mut record: TurnRecord) -> Option<TurnCommit> {
        let reply_key = format!("{}:{}", hermes_adapter::keys::TURN, self.turn_id());
        let (replies, messages) = match outcome {
            TurnOutcome::Answered(text) | TurnOutcome::BudgetExhausted(text) => {
                tracing::info!(
                    iterations = record.iterations,
                    prompt_tokens = record.usage.prompt_tokens,
                    completion_tokens = record.usage.completion_tokens,
                    "turn answered"
                );
                let mut rows = replies(self.shared, &self.last, &text, &reply_key);
                if let Some((_, last)) = rows.last_mut() {
                    last.usage = Some(hermes_adapter::TokenUsage {
                        prompt_tokens: record.usage.prompt_tokens,
                        completion_tokens: record.usage.completion_tokens,
                    });
                }
                (rows, vec![ChatMessage::assistant(text)])
            }
            TurnOutcome::Failed(err) => {
                tracing::warn!(error = %err, "turn failed");
                record.outcome = InboxOutcome::Failed;
                let notice = failure_notice(&err);
                (
                    replies(self.shared, &self.last, &notice, &reply_key),
                    vec![],
                )
            }
            TurnOutcome::Cancelled if self.shared.hard_stop.is_cancelled() => {
                tracing::info!("turn cancelled by shutdown; its messages resume at the next start");
                return None;
            }
            TurnOutcome::Cancelled => {
                record.outcome = if self.control.stop.is_cancelled() {
                    InboxOutcome::Stopped
                } else {
                    InboxOutcome::Interrupted
                };
                tracing::info!(outcome = record.outcome.as_str(), "turn cancelled");
                (vec![], vec![])
            }
        };
        Some(TurnCommit {
            session_id: self.session.id,
            replies,
            messages,
            inbox_ids: self.rows.iter().map(|r| r.id).collect(),
            record,
        })
    }

    /// Park the turn's messages during a provider outage, telling the user once. `None` when
    /// the outage has lasted longer than the patience allows (the failure is then reported).
    async fn park(&self, err: &LlmError) -> Option<Duration> {
        let outage = self.outage;
        let n = outage.failures.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            outage.since.store(now_millis(), Ordering::SeqCst);
        }
        let patience = self.now.config.gateway.outage_patience_minutes as i64 * 60_000;
        if now_millis() - outage.since.load(Ordering::SeqCst) >= patience {
            return None;
        }
        if !outage.noticed.swap(true, Ordering::SeqCst) {
            let note = "⏳ The model provider is not answering right now. Your message is saved; I'll answer as soon as it is back.";
            let since = outage.since.load(Ordering::SeqCst);
            let key = format!("outage:{}:{since}", self.key);
            let rows = replies(self.shared, &self.last, note, &key);
            if let Err(e) = self.shared.store.outbox_enqueue(rows).await {
                tracing::error!(error = %e, "cannot queue the outage notice");
            }
            self.shared.outbox_signal.notify_one();
        }
        let wait = outage_backoff(n);
        tracing::warn!(error = %err, failures = n, retry_in = ?wait, "model provider unavailable; the messages stay queued and are retried");
        Some(wait)
    }
}

/// A provider outage as one lane sees it.
#[derive(Default)]
pub(crate) struct Outage {
    /// Consecutive turns that failed for a transient provider reason.
    pub failures: std::sync::atomic::AtomicU32,
    /// When the first of them failed (ms since the epoch).
    pub since: std::sync::atomic::AtomicI64,
    /// The user was told the answer will be late.
    pub noticed: Arc<AtomicBool>,
}

/// Whether a provider failure is worth waiting out (the messages stay queued).
fn transient(err: &LlmError) -> bool {
    matches!(
        err,
        LlmError::RateLimited { .. } | LlmError::Unavailable(_) | LlmError::Timeout
    )
}

/// Wait before retrying after the `n`th failed turn of an outage: 5 s, 10 s, 20 s … 60 s.
fn outage_backoff(n: u32) -> Duration {
    Duration::from_secs((5u64 << n.saturating_sub(1).min(4)).min(60))
}

/// The session to answer in: the active one, or a fresh one when the reset policy says the old
/// one has ended (the user is told in one line).
async fn open_session(
    shared: &Arc<Shared>,
    now: &InForce,
    key: &SessionKey,
    msg: &Message,
) -> Result<SessionRow, StoreError> {
    let session = shared.store.session_active(key).await?;
    let policy = now.config.sessions.policy(key.platform, msg.chat.kind);
    let Some(reason) = resets::due(&policy, &session, now_millis(), &now.agent.timezone) else {
        return Ok(session);
    };
    if shared.store.session_stats(session.id).await?.messages == 0 {
        return Ok(session);
    }
    tracing::info!(session = %key, %reason, "session reset by policy");
    let fresh = shared.store.session_reset(key, &reason).await?;
    let note = format!(
        "↻ New conversation ({reason}); I no longer see the earlier messages. /help lists what I can do."
    );
    let rows = replies(shared, msg, &note, &format!("reset:{}", fresh.id));
    shared.store.outbox_enqueue(rows).await?;
    shared.outbox_signal.notify_one();
    Ok(fresh)
}

/// The outcome's name in metrics.
fn turn_label(outcome: &TurnOutcome) -> &'static str {
    match outcome {
        TurnOutcome::Answered(_) => "answered",
        TurnOutcome::BudgetExhausted(_) => "budget_exhausted",
        TurnOutcome::Failed(_) => "failed",
        TurnOutcome::Cancelled => "cancelled",
    }
}

/// What the user is told when the model provider fails: what happened and what to do, never a
/// raw error dump.
fn failure_notice(err: &LlmError) -> String {
    let what = match err {
        LlmError::RateLimited { .. } => "the model provider is rate limiting me right now",
        LlmError::Unavailable(_) => "the model provider is unavailable right now",
        LlmError::Timeout => "the model provider did not answer in time",
        LlmError::Unauthorized(_) => {
            "the model provider rejected my credentials (the operator should check the API key)"
        }
        LlmError::Rejected(_) => {
            "the model provider rejected the request (the operator can find details in the log)"
        }
        LlmError::Malformed(_) => "the model provider sent an answer I could not read",
    };
    format!(
        "⚠️ Sorry, I could not answer: {what}. Your message is saved; send \"try again\" in a moment."
    )
}

/// While a turn runs long, tell the user every `every` seconds that it is still working.
fn start_progress_notes(
    every: u64,
    person: &Arc<ChatInteraction>,
) -> Option<AbortOnDropHandle<()>> {
    if every == 0 {
        return None;
    }
    let person = person.clone();
    Some(AbortOnDropHandle::new(tokio::spawn(async move {
        use crate::tools::Interaction;
        let started = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(Duration::from_secs(every)).await;
            let minutes = started.elapsed().as_secs() / 60;
            let text = match minutes {
                0 => "⏳ Still working on it…".to_owned(),
                1 => "⏳ Still working on it (1 minute so far)…".to_owned(),
                m => format!("⏳ Still working on it ({m} minutes so far)…"),
            };
            person.notify(&text).await;
        }
    })))
}

/// Keep a "typing…" indicator up while the turn runs (platform indicators expire after ~5 s).
/// Both background tasks end when their handle is dropped, even when a turn panics.
fn start_typing(shared: &Arc<Shared>, msg: &Message) -> Option<AbortOnDropHandle<()>> {
    let adapter = shared.adapter(msg.platform)?;
    if !adapter.capabilities().typing {
        return None;
    }
    let (chat, thread) = (msg.chat.id.clone(), msg.thread.clone());
    Some(AbortOnDropHandle::new(tokio::spawn(async move {
        loop {
            if let Err(e) = adapter.typing(&chat, thread.as_ref()).await {
                tracing::debug!(error = %e, "typing indicator failed");
            }
            tokio::time::sleep(Duration::from_secs(4)).await;
        }
    })))
}
