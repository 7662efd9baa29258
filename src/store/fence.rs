//! The fence a session's writes carry: the lease and token under which the running turn was
//! started. Set by the lane around a turn (a task-local, so every history write of the turn, deep
//! in the agent, carries it without threading it through each call); a shared backend checks it
//! inside the same transaction as the write and refuses the write once the token moved on.

use super::{Result, StoreError};

/// A lease name and the token it was taken with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub lease: String,
    pub token: i64,
}

tokio::task_local! {
    static FENCE: Fence;
}

/// Run `fut` with every store write inside it fenced by `fence`.
pub async fn scope<F: Future>(fence: Fence, fut: F) -> F::Output {
    FENCE.scope(fence, fut).await
}

/// The fence of the running task, if any.
pub fn current() -> Option<Fence> {
    FENCE.try_with(Clone::clone).ok()
}

/// The error of a write refused by its fence.
pub fn refused(fence: &Fence) -> StoreError {
    StoreError::Fenced(format!(
        "lease `{}` moved on from token {}: another process took this session over",
        fence.lease, fence.token
    ))
}

/// `Ok` when `found` (the lease's token now, if the lease exists) matches `fence`.
pub fn check(fence: &Fence, found: Option<i64>) -> Result<()> {
    if found == Some(fence.token) {
        Ok(())
    } else {
        Err(refused(fence))
    }
}
