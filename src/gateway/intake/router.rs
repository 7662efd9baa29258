//! The router: takes newly stored inbox rows in order and decides, once for every platform, what
//! happens to each: ignored (sender not allowed, not addressed to the bot, another bot), answered
//! as a chat command, or queued in its session's lane.

use std::collections::VecDeque;
use std::sync::Arc;

use hermes_adapter::{ChatKind, Message, Platform, SessionKey, Trigger};

use super::{commands, pairing};
use crate::gateway::lanes::shares::Pace;
use crate::gateway::outbound::replies::replies;
use crate::gateway::{Reply, Shared};
use crate::policy::{Answer, Role};
use crate::store::{InboxOutcome, InboxRow, session_lease};

const BATCH: usize = 100;
const SHARED_BATCH: usize = 8;

/// Route rows until intake stops. At start, lanes with queued rows from before a restart are
/// woken and rows still `new` are routed.
pub(crate) async fn run(shared: Arc<Shared>) {
    match shared.store.inbox_queued_sessions().await {
        Ok(keys) => {
            if !keys.is_empty() {
                tracing::info!(
                    sessions = keys.len(),
                    "resuming queued messages from before the restart"
                );
            }
            for key in keys {
                shared.pool.notify(&shared, &key, 0, None).await;
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot read queued messages"),
    }
    let mut last = 0i64;
    // Rows read and not yet routed, in order: a row whose fate the store did not take (it is
    // failing, or restarting) is routed again after a pause, before anything behind it. On a
    // shared store the row stays claimed by this process meanwhile, so no other routes it.
    let mut unrouted: VecDeque<InboxRow> = VecDeque::new();
    loop {
        while let Some(row) = unrouted.pop_front() {
            if route(&shared, &row).await {
                continue;
            }
            tracing::warn!(
                inbox = row.id,
                "a message could not be routed; trying again"
            );
            unrouted.push_front(row);
            tokio::select! {
                _ = tokio::time::sleep(RETRY) => {}
                _ = shared.intake.cancelled() => return,
            }
        }
        // Register interest before reading, so a row stored during the read still wakes us.
        let signal = shared.inbox_signal.notified();
        // On a shared store the routers of all processes claim rows: small batches spread them.
        let batch = if shared.cluster.shared {
            SHARED_BATCH
        } else {
            BATCH
        };
        match shared
            .store
            .inbox_new(&shared.cluster.me.id, last, batch)
            .await
        {
            Ok(rows) if !rows.is_empty() => {
                last = rows.last().map_or(last, |r| r.id);
                unrouted.extend(rows);
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot read the inbox; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        }
        tokio::select! {
            _ = signal => {}
            _ = shared.intake.cancelled() => return,
        }
    }
}

/// The pause before the store is asked again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Decide `row`'s fate and record it; `false` when the store did not take it (the row is
/// routed again). A command whose answer could not be stored may run twice.
async fn route(shared: &Arc<Shared>, row: &InboxRow) -> bool {
    let msg = &row.message;
    let ignore = |outcome: InboxOutcome| async move {
        match shared.store.inbox_ignore(row.id, outcome).await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot update the inbox");
                false
            }
        }
    };
    let role = match shared.authz().role(msg.platform, &msg.sender.id) {
        Some(role) => role,
        None => match stranger(shared, row).await {
            Ok(role) => role,
            Err(recorded) => return recorded,
        },
    };
    if msg.sender.is_bot {
        return ignore(InboxOutcome::NotAddressed).await;
    }
    let key = SessionKey::for_message(msg, shared.config().gateway.group_sessions);
    // On a shared store a session's messages are routed where its turn runs, so that an answer
    // to a waiting confirmation or question, a /stop or an interruption reaches that turn.
    if let Some(stored) = hand_over(shared, row, &key).await {
        return stored;
    }
    // Answers to a waiting confirmation or question go to the waiting turn, not to the lane.
    if let Some(answered) = answer_waiting(shared, msg, &key) {
        tracing::info!(session = %key, "{answered}");
        return match shared
            .store
            .inbox_finish(vec![row.id], InboxOutcome::Command)
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot update the inbox");
                false
            }
        };
    }
    if !msg.trigger.addressed() {
        tracing::debug!(platform = %msg.platform, chat = %msg.chat.id, "ignoring a message not addressed to the bot");
        return ignore(InboxOutcome::NotAddressed).await;
    }
    if let Some((name, arg)) = msg.command()
        && let Some(reply) = commands::handle(shared, msg, &key, role, &name, arg).await
    {
        let reply_key = format!("{}:{}", hermes_adapter::keys::COMMAND, row.id);
        return answer_at_once(shared, row, &reply, &reply_key, InboxOutcome::Command).await;
    }
    if let Some(note) = crate::gateway::lanes::documents::refusal(&shared.config().documents, msg) {
        tracing::info!(session = %key, "a message of only oversized files refused without a turn");
        let reply_key = format!("refused:{}", row.id);
        return answer_at_once(shared, row, &note, &reply_key, InboxOutcome::Refused).await;
    }
    if let Err(e) = shared.store.inbox_queue(row.id, &key).await {
        tracing::error!(error = %e, "cannot queue a message");
        return false;
    }
    // Over their rate a person's messages still queue, but no longer interrupt the running
    // turn (each interruption is another paid model call); they are told once a minute.
    let person = (msg.platform, msg.sender.id.clone());
    let pace = shared.shares.pace(&person, std::time::Instant::now());
    if pace == (Pace::Over { first: true }) {
        let note = "🐢 You're writing faster than I can answer. Everything you send is kept and answered in order; I just won't restart my answer for each new message.";
        let rows = replies(shared, msg, note, &format!("slow:{}", row.id));
        match shared.store.outbox_enqueue(rows).await {
            Ok(()) => shared.outbox_signal.notify_one(),
            Err(e) => tracing::error!(error = %e, "cannot queue the slow-down note"),
        }
    }
    let interrupt = pace == Pace::Normal;
    shared
        .pool
        .notify(shared, &key, row.id, Some((&msg.sender.id, interrupt)))
        .await;
    true
}

/// On a shared store, hand an addressed `row` to the live process running `key`'s turn when
/// that is another one: `Some(stored)` when handed (`false`: the store did not take it),
/// `None` to route it here.
async fn hand_over(shared: &Arc<Shared>, row: &InboxRow, key: &SessionKey) -> Option<bool> {
    if !shared.cluster.shared || !row.message.trigger.addressed() {
        return None;
    }
    let holder = match shared.store.lease_holder(&session_lease(key)).await {
        Ok(Some(holder)) if holder != shared.cluster.me.id => holder,
        Ok(_) => return None,
        Err(e) => {
            tracing::error!(error = %e, "cannot tell which process runs the session");
            return Some(false);
        }
    };
    match shared.store.inbox_hand(row.id, &holder).await {
        Ok(()) => {
            tracing::debug!(session = %key, process = %holder, "handed to the process running the session");
            Some(true)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot hand a message to the process running its session");
            Some(false)
        }
    }
}

/// A message from someone no list allows: served as a user if they were paired, offered a
/// pairing code if pairing is on and they wrote in a direct chat, ignored otherwise (`Err`:
/// the row is finished here; `Err(false)` when the store did not take that).
async fn stranger(shared: &Arc<Shared>, row: &InboxRow) -> Result<Role, bool> {
    let msg = &row.message;
    let pairs = shared.config().access.pairing
        && msg.chat.kind == ChatKind::Direct
        && !msg.sender.is_bot
        && matches!(
            msg.platform,
            Platform::Telegram | Platform::Discord | Platform::Slack | Platform::Matrix
        );
    let settings = shared.store.settings();
    if pairs {
        match pairing::is_approved(&*settings, msg.platform, &msg.sender.id).await {
            Ok(true) => return Ok(Role::User),
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, "cannot read the pairings"),
        }
    }
    tracing::debug!(platform = %msg.platform, user = %msg.sender.id, chat = %msg.chat.id, "a message from a user who is not allowed");
    let offer = if pairs {
        pairing::request(
            &*settings,
            msg.platform,
            &msg.sender.id,
            &msg.sender.display_name,
        )
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot store a pairing request");
            None
        })
    } else {
        None
    };
    match offer {
        Some(text) => {
            tracing::info!(platform = %msg.platform, user = %msg.sender.id, "pairing code offered");
            let key = format!("pairing:{}", row.id);
            Err(answer_at_once(shared, row, &text, &key, InboxOutcome::Unauthorized).await)
        }
        None => match shared
            .store
            .inbox_ignore(row.id, InboxOutcome::Unauthorized)
            .await
        {
            Ok(()) => Err(true),
            Err(e) => {
                tracing::error!(error = %e, "cannot update the inbox");
                Err(false)
            }
        },
    }
}

/// Answer `row` without a turn (a command, a refusal) and finish it as `outcome`; `false` when
/// the store did not take it.
async fn answer_at_once(
    shared: &Arc<Shared>,
    row: &InboxRow,
    text: &str,
    reply_key: &str,
    outcome: InboxOutcome,
) -> bool {
    let rows = replies(shared, &row.message, text, reply_key);
    match shared
        .store
        .reply_and_finish(vec![row.id], outcome, rows)
        .await
    {
        Ok(()) => {
            shared.outbox_signal.notify_one();
            true
        }
        Err(e) => {
            tracing::error!(error = %e, outcome = outcome.as_str(), "cannot store a reply");
            false
        }
    }
}

/// If `msg` answers a waiting confirmation or question, hand the answer over and say what
/// happened (for the log). Button presses carry the wait's id; typed answers go to the oldest
/// wait of the session. Answers by anyone but the requester are refused.
fn answer_waiting(shared: &Shared, msg: &Message, key: &SessionKey) -> Option<String> {
    let by = &msg.sender.id;
    if let Trigger::Button { data } = &msg.trigger {
        let mut parts = data.splitn(3, ':');
        let (kind, id, value) = (parts.next()?, parts.next()?, parts.next()?);
        let result = match kind {
            "ap" => shared.approvals.resolve(id, by, Answer::from_code(value)?),
            "cl" => shared
                .questions
                .resolve(id, by, Reply::Choice(value.parse().ok()?)),
            _ => return None,
        };
        return Some(match result {
            Ok(r) => format!("{} answered by button", r.subject),
            Err(why) => format!("button press ignored: {why:?}"),
        });
    }
    // A typed "yes" counts only when said to the bot: "ok" to someone else in a group must
    // not approve a command.
    if msg.trigger.addressed()
        && let Some(answer) = Answer::from_reply(&msg.text)
        && let Ok(r) = shared.approvals.resolve_oldest(key, by, answer)
    {
        return Some(format!("{} answered by reply", r.subject));
    }
    if msg.trigger.addressed()
        && msg.command().is_none()
        && let Ok(r) = shared
            .questions
            .resolve_oldest(key, by, Reply::Text(msg.text.clone()))
    {
        return Some(format!("{} answered", r.subject));
    }
    None
}
