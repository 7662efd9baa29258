//! Starting background reviews (skills, memory) after a turn, once its answer has reached the
//! chat; at most a few run at once, and nothing they do is shown to the user.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::agent::{Agent, ReviewKind};
use crate::gateway::Shared;
use crate::policy::Role;
use crate::store::SessionRow;

/// Reviews running at once across the daemon.
pub(crate) const MAX_REVIEWS: usize = 2;

/// What finished turn the reviews look at.
pub(crate) struct Finished<'a> {
    pub session: &'a SessionRow,
    pub tool_rounds: u32,
    pub tools_called: &'a [String],
    /// The idempotency key of the answer's first reply (reviews start once it was sent).
    pub first_reply: Option<String>,
    /// Whose turn it was: skills are shared by everyone, so only an operator's work may become
    /// one (a user's transcript, with whatever a web page or a mail put into it, must not write
    /// every user's prompt); memory is the person's own.
    pub role: Role,
}

/// Count the turn's tool work and start the reviews that are due.
pub(crate) async fn after_turn(shared: &Arc<Shared>, agent: &Arc<Agent>, turn: Finished<'_>) {
    let Finished {
        session,
        tool_rounds,
        tools_called,
        first_reply,
        role,
    } = turn;
    let due = match agent.reviews_due(session, tool_rounds, tools_called).await {
        Ok(due) => due
            .into_iter()
            .filter(|k| role.is_operator() || *k != ReviewKind::Skills)
            .collect::<Vec<_>>(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot count tool rounds for reviews");
            return;
        }
    };
    for kind in due {
        let (shared, agent) = (shared.clone(), agent.clone());
        let (session, reply) = (session.clone(), first_reply.clone());
        tokio::spawn(async move {
            // After the user has the answer: the review must never delay or precede it.
            if let Some(key) = reply {
                wait_sent(&shared, &key).await;
            }
            let Ok(_permit) = shared.reviews.acquire().await else {
                return;
            };
            match agent.review(&session, kind, role).await {
                Ok((answer, usage)) => tracing::info!(
                    session = %session.key,
                    review = kind.as_str(),
                    tokens = usage.prompt_tokens + usage.completion_tokens,
                    answer = %answer.chars().take(200).collect::<String>(),
                    "background review finished"
                ),
                Err(e) => {
                    tracing::warn!(session = %session.key, review = kind.as_str(), error = %e, "background review failed")
                }
            }
        });
    }
}

/// Wait (bounded) until the reply with this idempotency key was sent.
async fn wait_sent(shared: &Shared, key: &str) {
    for _ in 0..600 {
        if matches!(shared.store.outbox_sent_id(key).await, Ok(Some(_))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The semaphore bounding concurrent reviews.
pub(crate) fn limit() -> Semaphore {
    Semaphore::new(MAX_REVIEWS)
}
