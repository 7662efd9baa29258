//! hermes: a self-improving AI agent on the messaging platforms people already use.
//!
//! One long-running process receives messages from every platform adapter, stores them in the
//! inbox, runs one agent turn per message in a per-session lane, and answers through the outbox.
//! See `ARCHITECTURE.md` in the repository for the data flow and its invariants.

pub mod agent;
pub mod cli;
pub mod config;
pub mod conversation;
pub mod cron;
pub mod gateway;
pub mod llm;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod policy;
pub mod skills;
pub mod store;
pub mod tools;
