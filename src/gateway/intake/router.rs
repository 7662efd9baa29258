//! The router: takes newly stored inbox rows in order and decides, once for every platform, what
//! happens to each: ignored (sender not allowed, not addressed to the bot, another bot), answered
//! as a chat command, or queued in its session's lane.

use std::sync::Arc;

use hermes_adapter::{ChatKind, Message, Platform, SessionKey, Trigger};

use super::{commands, pairing};
use crate::gateway::lanes::shares::Pace;
use crate::gateway::outbound::replies::replies;
use crate::gateway::{Reply, Shared};
use crate::policy::{Answer, Role};
use crate::store::{InboxOutcome, InboxRow};

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
    loop {
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
                for row in rows {
                    last = row.id;
                    route(&shared, row).await;
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot read the inbox; retrying");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                continue;
            }
        }
        tokio::select! {
            _ = signal => {}
            _ = shared.intake.cancelled() => return,
        }
    }
}

async fn route(shared: &Arc<Shared>, row: InboxRow) {
    let msg = &row.message;
    let ignore = |outcome: InboxOutcome| async move {
        if let Err(e) = shared.store.inbox_ignore(row.id, outcome).await {
            tracing::error!(error = %e, "cannot update the inbox");
        }
    };
    let role = match shared.authz().role(msg.platform, &msg.sender.id) {
        Some(role) => role,
        None => match stranger(shared, &row).await {
            Some(role) => role,
            None => return,
        },
    };
    if msg.sender.is_bot {
        return ignore(InboxOutcome::NotAddressed).await;
    }
    let key = SessionKey::for_message(msg, shared.config().gateway.group_sessions);
    // Answers to a waiting confirmation or question go to the waiting turn, not to the lane.
    if let Some(answered) = answer_waiting(shared, msg, &key) {
        tracing::info!(session = %key, "{answered}");
        if let Err(e) = shared
            .store
            .inbox_finish(vec![row.id], InboxOutcome::Command)
            .await
        {
            tracing::error!(error = %e, "cannot update the inbox");
        }
        return;
    }
    if !msg.trigger.addressed() {
        tracing::debug!(platform = %msg.platform, chat = %msg.chat.id, "ignoring a message not addressed to the bot");
        return ignore(InboxOutcome::NotAddressed).await;
    }
    if let Some((name, arg)) = msg.command()
        && let Some(reply) = commands::handle(shared, msg, &key, role, &name, arg).await
    {
        let reply_key = format!("{}:{}", hermes_adapter::keys::COMMAND, row.id);
        return answer_at_once(shared, &row, &reply, &reply_key, InboxOutcome::Command).await;
    }
    if let Some(note) = crate::gateway::lanes::documents::refusal(&shared.config().documents, msg) {
        tracing::info!(session = %key, "a message of only oversized files refused without a turn");
        let reply_key = format!("refused:{}", row.id);
        return answer_at_once(shared, &row, &note, &reply_key, InboxOutcome::Refused).await;
    }
    if let Err(e) = shared.store.inbox_queue(row.id, &key).await {
        tracing::error!(error = %e, "cannot queue a message; it is retried at the next start");
        return;
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
}

/// A message from someone no list allows: served as a user if they were paired, offered a
/// pairing code if pairing is on and they wrote in a direct chat, ignored otherwise (`None`:
/// the row is finished here).
async fn stranger(shared: &Arc<Shared>, row: &InboxRow) -> Option<Role> {
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
            Ok(true) => return Some(Role::User),
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
            answer_at_once(shared, row, &text, &key, InboxOutcome::Unauthorized).await;
        }
        None => {
            if let Err(e) = shared
                .store
                .inbox_ignore(row.id, InboxOutcome::Unauthorized)
                .await
            {
                tracing::error!(error = %e, "cannot update the inbox");
            }
        }
    }
    None
}

/// Answer `row` without a turn (a command, a refusal) and finish it as `outcome`.
async fn answer_at_once(
    shared: &Arc<Shared>,
    row: &InboxRow,
    text: &str,
    reply_key: &str,
    outcome: InboxOutcome,
) {
    let rows = replies(shared, &row.message, text, reply_key);
    match shared
        .store
        .reply_and_finish(vec![row.id], outcome, rows)
        .await
    {
        Ok(()) => shared.outbox_signal.notify_one(),
        Err(e) => tracing::error!(error = %e, outcome = outcome.as_str(), "cannot store a reply"),
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
