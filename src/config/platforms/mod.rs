//! One place per platform: each platform's section of the configuration (`[telegram]`,
//! `[discord]`, …) owns its defaults, its environment overlay, its validation, its secrets, its
//! allowlist and the construction of its adapter, behind [`PlatformSection`].
//!
//! The rest of the daemon loops over [`Config::platforms`](super::Config::platforms): the
//! authorizer, the secrets list, `hermes doctor` and `config check`, reload and the adapters the
//! gateway starts. Adding a platform is its adapter crate, its file here, and one line in the
//! list in `config/mod.rs`.

mod api;
mod discord;
mod email;
mod matrix;
mod slack;
mod telegram;

use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};

use super::{Config, ConfigError, EnvSource};

pub use api::{ApiConfig, ApiKeyConfig};
pub use discord::DiscordConfig;
pub use email::EmailConfig;
pub use matrix::MatrixConfig;
pub use slack::SlackConfig;
pub use telegram::{TelegramConfig, TelegramMode};

/// What every platform's configuration section answers.
pub trait PlatformSection: Send + Sync {
    fn platform(&self) -> Platform;

    /// Whether the platform runs: enabled and its credentials set.
    fn is_active(&self) -> bool;

    /// The environment variables that turn it on, for "nothing is configured" messages.
    fn how_to_enable(&self) -> &'static str;

    /// The people allowed on this platform (the core applies this list), normalised as the
    /// platform compares ids.
    fn allowed_users(&self) -> Vec<String>;

    /// The operators named in this section (served too), normalised like the allowlist.
    fn operators(&self) -> Vec<String>;

    /// Whether an allowlist entry may name a whole domain (`example.com` or `@example.com`).
    fn allowlist_names_domains(&self) -> bool {
        false
    }

    /// Every credential in the section (to keep them out of logs and tools' reach).
    fn secrets(&self) -> Vec<&str>;

    /// Apply the platform's environment variables over the file's values.
    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError>;

    /// Semantic checks, with errors that name the key (`file` is where the section came from).
    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError>;

    /// One line for `hermes config check`: "on, …" or "off (set …)".
    fn summary(&self) -> String;

    /// Whether going from `old` to `new` changes what the adapter is built from, so a reload
    /// must restart it (`self` is `old`'s section). Allowlists the core applies do not count.
    fn adapter_changed(&self, old: &Config, new: &Config) -> bool;

    /// The running adapter this section describes (call only when [`is_active`](Self::is_active)).
    /// Fails with the key at fault, or when this build leaves the platform out.
    fn build(&self, config: &Config) -> Result<Arc<dyn Adapter>, String>;
}

/// Whether two sections differ once `core_only` cleared what the core applies itself.
pub(super) fn differ<S: Clone + PartialEq>(old: &S, new: &S, core_only: fn(&mut S)) -> bool {
    let (mut a, mut b) = (old.clone(), new.clone());
    core_only(&mut a);
    core_only(&mut b);
    a != b
}

/// The error of a build that leaves a configured platform out.
#[allow(dead_code)]
pub(super) fn left_out(feature: &str, set: &str) -> String {
    format!("{set} is set but this hermes was built without the `{feature}` feature")
}
