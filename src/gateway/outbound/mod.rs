//! Outbound, the last stage: an answer becomes outbox rows that fit the platform (`replies`,
//! `chunk`; files staged by `outgoing`), and the pump sends due rows through the adapters with
//! retries, marking each sent or failed (`pump`). Nothing here reaches back into the flow.

pub mod chunk;
pub(crate) mod outgoing;
pub(crate) mod pump;
pub(crate) mod replies;
