//! A session lane's task: take the session's queued messages in order, run one agent turn at a
//! time, and commit each turn's answer, replies and inbox rows together.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hermes_adapter::{Message, SessionKey, now_millis};
use tracing::Instrument;

use super::Shared;
use super::delivery::{self, replies, user_content};
use super::interaction::ChatInteraction;
use super::resets;
use super::reviews;
use super::session_pool::Lane;
use super::stream_view;
use crate::agent::{
    Interaction, NewMessage, Setting, TurnControl, TurnInput, TurnOutcome, TurnReport,
};
use crate::config::BusyMode;
use crate::llm::{ChatMessage, LlmError};
use crate::store::{InboxOutcome, InboxRow, SessionRow, StoreError, TurnCommit, TurnRecord};

/// Messages answered together in one turn at most (interrupt mode); the rest wait their turn.
const MAX_BATCH: usize = 20;

/// The lane's loop. Ends when the session has been idle long enough or the gateway drains.
pub(crate) async fn run(shared: Arc<Shared>, lane: Arc<Lane>) {
    let idle = Duration::from_secs_f64(
        shared
            .config()
            .gateway
            .session_idle_minutes
            .clamp(0.001, 1e6)
            * 60.0,
    );
    loop {
        if shared.draining.is_cancelled() {
            return;
        }
        lane.pending.store(false, Ordering::SeqCst);
        let has_work = match shared.store.inbox_queued_for(&lane.key, 1).await {
            Ok(rows) => !rows.is_empty(),
            Err(e) => {
                tracing::error!(session = %lane.key, error = %e, "cannot read the inbox; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        if !has_work {
            tokio::select! {
                _ = lane.wake.notified() => continue,
                _ = shared.draining.cancelled() => return,
                _ = tokio::time::sleep(idle) => {
                    if shared.pool.retire(&lane) {
                        tracing::debug!(session = %lane.key, "idle session lane retired");
                        return;
                    }
                    continue;
                }
            }
        }
        let permit = tokio::select! {
            biased;
            _ = shared.draining.cancelled() => return,
            p = shared.pool.turns.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        if shared.draining.is_cancelled() {
            return;
        }
        let limit = match shared.config().gateway.busy_mode {
            BusyMode::Queue => 1,
            BusyMode::Interrupt => MAX_BATCH,
        };
        let (rows, control) = {
            let mut state = lane.state.lock().await;
            let rows = match shared.store.inbox_queued_for(&lane.key, limit).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!(session = %lane.key, error = %e, "cannot read the inbox");
                    continue;
                }
            };
            let control = TurnControl {
                interrupt: tokio_util::sync::CancellationToken::new(),
                stop: shared.hard_stop.child_token(),
            };
            state.max_included = rows.last().map_or(0, |r| r.id);
            state.control = Some(control.clone());
            (rows, control)
        };
        let mut retry_in = None;
        if let Some(last) = rows.last().map(|r| r.id) {
            let span = tracing::info_span!("turn", session = %lane.key, inbox = last);
            retry_in = run_turn(&shared, &lane, rows, control)
                .instrument(span)
                .await;
        }
        lane.state.lock().await.control = None;
        drop(permit);
        if let Some(wait) = retry_in {
            // The provider is down: wait (without holding a turn slot), then try again.
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shared.draining.cancelled() => return,
            }
        }
    }
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

/// Park the turn's messages during a provider outage, telling the user once. `None` when the
/// outage has lasted longer than the patience allows (the failure is then reported).
async fn park(
    shared: &Arc<Shared>,
    lane: &Lane,
    last: &Message,
    err: &LlmError,
) -> Option<Duration> {
    let outage = &lane.outage;
    let n = outage.failures.fetch_add(1, Ordering::SeqCst) + 1;
    if n == 1 {
        outage.since.store(now_millis(), Ordering::SeqCst);
    }
    let patience = shared.config().gateway.outage_patience_minutes as i64 * 60_000;
    if now_millis() - outage.since.load(Ordering::SeqCst) >= patience {
        return None;
    }
    if !outage.noticed.swap(true, Ordering::SeqCst) {
        let note = "⏳ The model provider is not answering right now. Your message is saved; I'll answer as soon as it is back.";
        let rows = replies(
            shared,
            last,
            note,
            &format!(
                "outage:{}:{}",
                lane.key,
                outage.since.load(Ordering::SeqCst)
            ),
        );
        if let Err(e) = shared.store.outbox_enqueue(rows).await {
            tracing::error!(error = %e, "cannot queue the outage notice");
        }
        shared.outbox_signal.notify_one();
    }
    let wait = outage_backoff(n);
    tracing::warn!(error = %err, failures = n, retry_in = ?wait, "model provider unavailable; the messages stay queued and are retried");
    Some(wait)
}

/// Run one turn over `rows` and commit what it produced. Returns how long to wait before
/// retrying when the provider is down and the messages stay queued.
async fn run_turn(
    shared: &Arc<Shared>,
    lane: &Lane,
    rows: Vec<InboxRow>,
    control: TurnControl,
) -> Option<Duration> {
    let last = rows.last().map(|r| r.message.clone())?;
    let session = match open_session(shared, &lane.key, &last).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot open the session; will retry");
            return Some(Duration::from_secs(2));
        }
    };
    let started_at = now_millis();
    let typing = start_typing(shared, &last);
    let person = Arc::new(ChatInteraction {
        shared: shared.clone(),
        to: last.clone(),
        key: lane.key.clone(),
        control: control.clone(),
        turn: rows.last().map_or(0, |r| r.id),
        files_sent: Default::default(),
    });
    let progress = start_progress_notes(shared, person.clone());
    let view = shared
        .adapter(last.platform)
        .filter(|a| shared.config().llm.streaming && a.capabilities().edit)
        .map(|a| stream_view::start(a, &last));
    let (deltas, view) = match view {
        Some((sink, task)) => (Some(sink), Some(task)),
        None => (None, None),
    };
    let input = TurnInput {
        session: &session,
        setting: Setting {
            platform: last.platform,
            chat: last.chat.kind,
        },
        new_messages: new_messages(shared, &rows).await,
        control: control.clone(),
        requester: Some(last.sender.id.clone()),
        interaction: Some(person),
        deltas,
        chat: Some(crate::tools::ChatRef {
            platform: last.platform,
            chat: last.chat.id.clone(),
            thread: last.thread.clone(),
            user: Some(last.sender.id.clone()),
        }),
        late_notice: lane.outage.noticed.clone(),
    };
    let result = shared.agent().run_turn(input).await;
    for task in [typing, progress].into_iter().flatten() {
        task.abort();
    }
    // The sink went with the turn, so the view ends: its last preview gets the final answer.
    let preview = match view {
        Some(task) => task.await.ok().flatten(),
        None => None,
    };
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "turn aborted by a storage error; the messages stay queued");
            return Some(Duration::from_secs(2));
        }
    };
    if let TurnOutcome::Failed(err) = &report.outcome
        && transient(err)
        && !control.interrupt.is_cancelled()
        && let Some(wait) = park(shared, lane, &last, err).await
    {
        return Some(wait);
    }
    if !matches!(report.outcome, TurnOutcome::Cancelled) {
        // The provider answered (or failed for good): the next delay is news again.
        lane.outage.failures.store(0, Ordering::SeqCst);
        lane.outage.noticed.store(false, Ordering::SeqCst);
    }
    crate::metrics::metrics().record_turn(
        turn_label(&report.outcome),
        (now_millis() - started_at).max(0) as f64 / 1000.0,
    );
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let reply_key = format!("turn:{}", ids.last().copied().unwrap_or_default());
    let TurnReport {
        outcome,
        usage,
        iterations,
        tool_rounds,
        tools_called,
    } = report;
    let answered = matches!(
        outcome,
        TurnOutcome::Answered(_) | TurnOutcome::BudgetExhausted(_)
    );
    let record = |outcome| TurnRecord {
        started_at,
        iterations,
        usage,
        model: session
            .model
            .clone()
            .unwrap_or_else(|| shared.agent().model().to_owned()),
        outcome,
    };
    let commit = match outcome {
        TurnOutcome::Answered(text) | TurnOutcome::BudgetExhausted(text) => {
            tracing::info!(
                iterations,
                prompt_tokens = usage.prompt_tokens,
                completion_tokens = usage.completion_tokens,
                "turn answered"
            );
            TurnCommit {
                session_id: session.id,
                replies: replies(shared, &last, &text, &reply_key),
                messages: vec![ChatMessage::assistant(text)],
                inbox_ids: ids,
                record: record(InboxOutcome::Replied),
            }
        }
        TurnOutcome::Failed(err) => {
            tracing::warn!(error = %err, "turn failed");
            TurnCommit {
                session_id: session.id,
                replies: replies(shared, &last, &failure_notice(&err), &reply_key),
                messages: vec![],
                inbox_ids: ids,
                record: record(InboxOutcome::Failed),
            }
        }
        TurnOutcome::Cancelled if shared.hard_stop.is_cancelled() => {
            tracing::info!("turn cancelled by shutdown; its messages resume at the next start");
            return None;
        }
        TurnOutcome::Cancelled => {
            let outcome = if control.stop.is_cancelled() {
                InboxOutcome::Stopped
            } else {
                InboxOutcome::Interrupted
            };
            tracing::info!(outcome = outcome.as_str(), "turn cancelled");
            TurnCommit {
                session_id: session.id,
                replies: vec![],
                messages: vec![],
                inbox_ids: ids,
                record: record(outcome),
            }
        }
    };
    let mut commit = commit;
    if let (Some(preview), Some((_, first))) = (preview, commit.replies.first_mut()) {
        first.edit_of = Some(preview.0);
    }
    let has_replies = !commit.replies.is_empty();
    let first_reply = commit
        .replies
        .first()
        .map(|(_, out)| out.idempotency_key.clone());
    if let Err(e) = shared.store.commit_turn(commit).await {
        tracing::error!(error = %e, "cannot store the turn's result; the messages stay queued");
        return Some(Duration::from_secs(2));
    }
    if has_replies {
        shared.outbox_signal.notify_one();
    }
    if answered {
        reviews::after_turn(shared, &session, tool_rounds, &tools_called, first_reply).await;
    }
    None
}

/// The session to answer in: the active one, or a fresh one when the reset policy says the old
/// one has ended (the user is told in one line).
async fn open_session(
    shared: &Arc<Shared>,
    key: &SessionKey,
    msg: &Message,
) -> Result<SessionRow, StoreError> {
    let session = shared.store.session_active(key).await?;
    let policy = shared.config().sessions.policy(key.platform, msg.chat.kind);
    let Some(reason) = resets::due(&policy, &session, now_millis(), &shared.agent().timezone)
    else {
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

/// The turn's user messages: the text the model sees, and (for vision models) the images.
async fn new_messages(shared: &Shared, rows: &[InboxRow]) -> Vec<NewMessage> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut text = match super::skills_chat::explicit(shared, &row.message).await {
            Some(directive) => {
                let mut with_skill = row.message.clone();
                with_skill.text = directive;
                user_content(&with_skill)
            }
            None => user_content(&row.message),
        };
        let mut images = Vec::new();
        let transcriber = shared.agent().transcriber.clone();
        if let Some(t) = &transcriber {
            for (attachment, result) in delivery::transcripts(shared, t, &row.message).await {
                let name = attachment.name.as_deref().unwrap_or("voice message");
                match result {
                    Ok(said) if said.is_empty() => {
                        text.push_str(&format!("\n[\"{name}\": no speech recognised]"))
                    }
                    Ok(said) => text.push_str(&format!("\n[\"{name}\", transcribed: {said}]")),
                    Err(e) => {
                        text.push_str(&format!("\n[\"{name}\" could not be transcribed: {e}]"))
                    }
                }
            }
        }
        let unopened = row
            .message
            .attachments
            .iter()
            .any(|a| !(transcriber.is_some() && delivery::is_audio(a)));
        if unopened && !shared.config().llm.vision {
            text.push_str("\n[You cannot open attachments here; say so if the user needs you to.]");
        }
        if shared.config().llm.vision {
            for (attachment, result) in delivery::images(shared, &row.message).await {
                match result {
                    Ok(image) => images.push(image),
                    Err(e) => text.push_str(&format!(
                        "\n[the image \"{}\" could not be loaded: {e}]",
                        attachment.name.as_deref().unwrap_or("photo")
                    )),
                }
            }
        }
        out.push(NewMessage {
            inbox_id: Some(row.id),
            text,
            images,
        });
    }
    out
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

/// While a turn runs long, tell the user now and then that it is still working.
fn start_progress_notes(
    shared: &Shared,
    person: Arc<ChatInteraction>,
) -> Option<tokio::task::JoinHandle<()>> {
    let every = shared.config().agent.progress_notice_secs;
    if every == 0 {
        return None;
    }
    Some(tokio::spawn(async move {
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
    }))
}

/// Keep a "typing…" indicator up while the turn runs (platform indicators expire after ~5 s).
fn start_typing(shared: &Arc<Shared>, msg: &Message) -> Option<tokio::task::JoinHandle<()>> {
    let adapter = shared.adapter(msg.platform)?;
    if !adapter.capabilities().typing {
        return None;
    }
    let (chat, thread) = (msg.chat.id.clone(), msg.thread.clone());
    Some(tokio::spawn(async move {
        loop {
            if let Err(e) = adapter.typing(&chat, thread.as_ref()).await {
                tracing::debug!(error = %e, "typing indicator failed");
            }
            tokio::time::sleep(Duration::from_secs(4)).await;
        }
    }))
}
