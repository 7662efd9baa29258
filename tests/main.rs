//! The integration tests of the hermes crate, as one test binary: each file of this directory is
//! a module (`cargo nextest run -E 'test(/^cron::/)'` runs one), switched on by the features it
//! needs; `support` (the fakes, the real servers' handles, the daemon runner) is shared by all.
//! One binary instead of one per file: the support code is compiled and the binary linked once.

// matrix-sdk's futures are deep: proving a spawned sync loop `Send` needs more than 128 levels.
#![recursion_limit = "256"]

mod support;
// Matrix people and worlds (matrix-sdk clients), only where the Matrix adapter is built.
#[cfg(feature = "matrix")]
#[path = "support/matrix/mod.rs"]
mod matrix_support;

#[cfg(feature = "telegram")]
mod anthropic;
#[cfg(feature = "telegram")]
mod approvals;
#[cfg(feature = "telegram")]
mod backup;
#[cfg(feature = "telegram")]
mod bad_input;
#[cfg(feature = "telegram")]
mod cli;
#[cfg(feature = "telegram")]
mod compression;
#[cfg(all(
    feature = "telegram",
    feature = "discord",
    feature = "slack",
    feature = "email",
    feature = "matrix"
))]
mod conformance;
#[cfg(feature = "telegram")]
mod cron;
#[cfg(feature = "telegram")]
mod dashboard;
#[cfg(feature = "telegram")]
mod dashboard_browser;
#[cfg(feature = "discord")]
mod discord_conversation;
#[cfg(feature = "discord")]
mod discord_delivery;
mod documents;
#[cfg(feature = "telegram")]
mod durability;
#[cfg(feature = "email")]
mod email_conversation;
#[cfg(feature = "email")]
mod email_delivery;
#[cfg(feature = "email")]
mod email_senders;
#[cfg(feature = "telegram")]
mod failover;
#[cfg(feature = "telegram")]
mod footprint;
#[cfg(all(feature = "telegram", feature = "http-api"))]
mod http_api;
mod import_hermes_agent;
mod layers;
#[cfg(feature = "matrix")]
mod matrix_conversation;
#[cfg(feature = "matrix")]
mod matrix_delivery;
#[cfg(feature = "telegram")]
mod mcp_client;
#[cfg(feature = "telegram")]
mod mcp_serve;
#[cfg(feature = "telegram")]
mod memory;
#[cfg(feature = "telegram")]
mod package;
mod pairing;
mod plan_mode;
mod profiles;
mod providers;
#[cfg(feature = "telegram")]
mod reliability;
#[cfg(feature = "telegram")]
mod resets;
#[cfg(feature = "telegram")]
mod sandbox;
#[cfg(all(feature = "telegram", feature = "docker"))]
mod sandbox_docker;
#[cfg(feature = "telegram")]
mod sandbox_ssh;
mod scale_out;
#[cfg(all(
    feature = "telegram",
    feature = "discord",
    feature = "slack",
    feature = "email"
))]
mod send_file;
#[cfg(feature = "telegram")]
mod service;
#[cfg(feature = "telegram")]
mod setup;
#[cfg(feature = "telegram")]
mod skills;
#[cfg(feature = "slack")]
mod slack_conversation;
#[cfg(feature = "slack")]
mod slack_delivery;
mod store_postgres;
#[cfg(feature = "telegram")]
mod streaming;
#[cfg(feature = "telegram")]
mod telegram_conversation;
#[cfg(feature = "telegram")]
mod telegram_delivery;
#[cfg(feature = "telegram")]
mod telegram_listener;
#[cfg(feature = "telegram")]
mod telegram_webhook;
#[cfg(feature = "telegram")]
mod tools;
mod trust;
#[cfg(feature = "telegram")]
mod vision;
#[cfg(feature = "telegram")]
mod voice;
mod web_and_finance;
