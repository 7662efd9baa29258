//! The adapters as running tasks: each listener supervised, restarted with backoff when it
//! fails or falls silent (`supervisor`), and its health recorded for status and readiness
//! (`health`).

pub(crate) mod health;
mod receive_lease;
pub(crate) mod supervisor;
