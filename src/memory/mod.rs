//! Long-term memory in plain files people can read and edit: per owner (a person, or a shared
//! chat) a `MEMORY.md` with the agent's own notes and a `USER.md` with what it knows about the
//! user, each capped in size. The `memory` tool edits them; a snapshot is frozen into the system
//! prompt when a session starts, so the prompt prefix stays stable for the whole session.
//!
//! Layout: `$HERMES_HOME/memory/<owner>/MEMORY.md`, the owner percent-encoded
//! (`telegram%3A8123456`). Entries are separated by a line holding only `§`.

mod store;
mod tool;

pub use store::{Kind, MemoryFiles, MemoryLimits};
pub use tool::MemoryTool;
