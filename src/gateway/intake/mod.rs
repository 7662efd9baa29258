//! Intake, the first stage: an adapter's message is stored in the inbox before the adapter may
//! acknowledge it (`sink`), then the router takes new rows in order and decides once, for every
//! platform, what each one is: ignored (`authz`: not allowed; not addressed; another bot), a
//! stranger offered a pairing code (`pairing`), a chat command answered without the model
//! (`commands`, `profile_command`), an answer to a waiting confirmation, or a message queued in
//! its session's lane.

pub(crate) mod authz;
pub(crate) mod commands;
pub mod pairing;
pub(crate) mod profile_command;
pub(crate) mod router;
pub(crate) mod sink;
pub(crate) mod stop;
