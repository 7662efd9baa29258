//! Typed configuration: a TOML file overlaid by environment variables, validated with errors that
//! name the file, the key and the fix.
//!
//! Where the file is: `--config PATH`, else `HERMES_CONFIG`, else `$HERMES_HOME/config.toml`
//! (`HERMES_HOME` defaults to `~/.hermes`). A missing default file is fine (everything can come
//! from the environment); a missing explicit file is an error. Every key is documented in
//! `config/hermes.example.toml`; the defaults live in the `Default` impls below and nowhere else.

mod discord;
mod email;
mod env;
mod error;
mod llm;
mod matrix;
mod secret;
mod service;
mod sessions;
mod slack;
mod toolsets;
mod transcription;
mod validate;

use std::path::{Path, PathBuf};

use std::collections::HashMap;

use hermes_adapter::{GroupSessions, Platform};
use serde::Deserialize;

use crate::policy::{Category, Decision, Level};

pub use discord::DiscordConfig;
pub use email::EmailConfig;
pub use error::ConfigError;
pub use llm::{FallbackConfig, LlmConfig, Price, ProviderKind};
pub use matrix::MatrixConfig;
pub use secret::Secret;
pub use service::{AdminConfig, RetentionConfig};
pub use sessions::{ResetMode, ResetOverride, ResetPolicy, SessionsConfig};
pub use slack::SlackConfig;
pub use toolsets::{TOOLSETS, is_builtin, tools_in};
pub use transcription::{TranscriptionConfig, TranscriptionEndpoint};

/// Everything the daemon needs to know, after the file and the environment were merged.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// State directory: database, memory and skills. Set by `HERMES_HOME`, not by the file.
    #[serde(skip)]
    pub home: PathBuf,
    /// The file this configuration was read from, if any.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    pub llm: LlmConfig,
    pub transcription: TranscriptionConfig,
    pub agent: AgentConfig,
    pub gateway: GatewayConfig,
    pub tools: ToolsConfig,
    pub policy: PolicyConfig,
    pub memory: MemoryConfig,
    pub skills: SkillsConfig,
    pub cron: CronConfig,
    pub sessions: SessionsConfig,
    pub telegram: TelegramConfig,
    pub discord: DiscordConfig,
    pub slack: SlackConfig,
    pub email: EmailConfig,
    pub matrix: MatrixConfig,
    pub admin: AdminConfig,
    pub retention: RetentionConfig,
}

/// The agent's turn loop.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per turn before the agent stops and says so.
    pub max_iterations: u32,
    /// Most recent messages of a session sent to the model.
    pub history_messages: usize,
    /// Characters of one tool result kept for the model; the rest is cut with a note.
    pub tool_output_max_chars: usize,
    /// Extra instructions appended to the built-in system prompt.
    pub system_prompt: Option<String>,
    /// IANA time zone the agent assumes for the user (`current_time` default). Unset: the
    /// system's zone.
    pub timezone: Option<String>,
    /// Tokens (prompt + completion, all model calls) one turn may spend before it stops.
    pub max_turn_tokens: u64,
    /// Wall-clock limit of one turn, in seconds.
    pub max_turn_secs: u64,
    /// While a turn runs longer than this, the user gets a short "still working" note this
    /// often (0: never).
    pub progress_notice_secs: u64,
    /// Fraction of `llm.context_window` a prompt may fill before the history is compressed.
    pub compression_threshold: f64,
    /// Messages at the start of a session kept verbatim when compressing.
    pub compression_keep_first: usize,
    /// Most recent messages kept verbatim when compressing.
    pub compression_keep_last: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_iterations: 90,
            history_messages: 200,
            tool_output_max_chars: 16_000,
            system_prompt: None,
            timezone: None,
            max_turn_tokens: 2_000_000,
            max_turn_secs: 1800,
            progress_notice_secs: 120,
            compression_threshold: 0.5,
            compression_keep_first: 3,
            compression_keep_last: 20,
        }
    }
}

/// Which tools exist and how they are confined.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Directory the file and terminal tools work in (and cannot leave). Default
    /// `$HERMES_HOME/workspace`.
    pub workspace: Option<PathBuf>,
    /// Toolsets enabled everywhere: `core`, `files`, `terminal`, `web`, `delegate`.
    pub toolsets: Vec<String>,
    /// Toolsets per platform, replacing `toolsets` there (`[tools.platforms] telegram = [...]`).
    pub platforms: HashMap<Platform, Vec<String>>,
    /// Let `web_fetch` reach loopback, private and link-local addresses (intranets).
    pub web_allow_private: bool,
    /// Default timeout of a terminal command, in seconds (the model may ask for up to 600).
    pub terminal_timeout_secs: u64,
    /// Model calls a `delegate_task` subagent may make.
    pub subagent_max_iterations: u32,
    /// Subagents running at once across the daemon.
    pub max_concurrent_subagents: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            workspace: None,
            toolsets: TOOLSETS
                .iter()
                .map(|(name, _)| (*name).to_owned())
                .collect(),
            platforms: HashMap::new(),
            web_allow_private: false,
            terminal_timeout_secs: 60,
            subagent_max_iterations: 50,
            max_concurrent_subagents: 3,
        }
    }
}

/// Long-term memory files.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Characters MEMORY.md (the agent's notes) may hold.
    pub memory_chars: usize,
    /// Characters USER.md (about the user) may hold.
    pub user_chars: usize,
    /// Tool rounds without a `memory` call after which a background review looks for facts
    /// worth remembering (0: never).
    pub review_interval: u32,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            memory_chars: 2200,
            user_chars: 1375,
            review_interval: 10,
        }
    }
}

/// The scheduler.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CronConfig {
    /// Run scheduled jobs (the gateway only; `hermes cron` works either way).
    pub enabled: bool,
    /// A run missed while the daemon was down is still made at the next start if it was due at
    /// most this long ago; older ones are skipped and recorded.
    pub missed_grace_secs: u64,
    /// Schedule of the built-in skill-curation job (e.g. "0 3 * * 0"); unset: no such job.
    pub skill_curation: Option<String>,
}

impl Default for CronConfig {
    fn default() -> Self {
        CronConfig {
            enabled: true,
            missed_grace_secs: 3600,
            skill_curation: None,
        }
    }
}

/// Skills: procedural memory the agent reads and writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Tool rounds without a `skill_manage` call after which a background review decides whether
    /// the work is worth a skill (0: never).
    pub review_interval: u32,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            review_interval: 10,
        }
    }
}

/// Who may do what without asking.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Default permission level: `safe`, `auto` or `full-access`.
    pub level: Level,
    /// Level per platform (`[policy.platforms] telegram = "safe"`).
    pub platforms: HashMap<Platform, Level>,
    /// Cell overrides (`[policy.matrix.auto] system = "deny"`).
    pub matrix: HashMap<Level, HashMap<Category, Decision>>,
    /// Per-tool overrides at every level (`[policy.tools] terminal = "deny"`).
    pub tools: HashMap<String, Decision>,
    /// Seconds a confirmation waits for the user; no answer is a denial.
    pub approval_timeout_secs: u64,
    /// Seconds `clarify` waits for the user's answer.
    pub clarify_timeout_secs: u64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            level: Level::Auto,
            platforms: HashMap::new(),
            matrix: HashMap::new(),
            tools: HashMap::new(),
            approval_timeout_secs: 30,
            clarify_timeout_secs: 300,
        }
    }
}

/// What happens to a message that arrives while its session is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BusyMode {
    /// Stop the running turn at the next safe point and answer everything received so far in
    /// one new turn.
    #[default]
    Interrupt,
    /// Answer each message in order, one turn each.
    Queue,
}

/// The daemon: who is served, how sessions and delivery behave.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Users allowed on every platform: `platform:id` or a bare id. Env: `HERMES_ALLOWED_USERS`
    /// (comma-separated).
    pub allowed_users: Vec<String>,
    /// Serve everyone who can reach the bot. Env: `HERMES_ALLOW_ALL_USERS=true`.
    pub allow_all_users: bool,
    pub busy_mode: BusyMode,
    pub group_sessions: GroupSessions,
    /// Agent turns running at once across all sessions.
    pub max_concurrent_turns: usize,
    /// An idle session's lane is dropped from memory after this long (its history stays stored).
    /// Fractions are allowed (`0.5` = 30 s).
    pub session_idle_minutes: f64,
    /// On SIGTERM/SIGINT, how long running turns may take to finish before the daemon exits
    /// (unfinished work is resumed on the next start).
    pub shutdown_grace_secs: u64,
    /// Attempts to send one outbound message before it is marked failed.
    pub send_max_attempts: u32,
    /// While the model provider is down (unavailable, rate limiting, timing out), messages wait
    /// and are retried; after this many minutes of failures the user is told it failed.
    pub outage_patience_minutes: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            allowed_users: Vec::new(),
            allow_all_users: false,
            busy_mode: BusyMode::default(),
            group_sessions: GroupSessions::default(),
            max_concurrent_turns: 8,
            session_idle_minutes: 60.0,
            shutdown_grace_secs: 20,
            send_max_attempts: 8,
            outage_patience_minutes: 60,
        }
    }
}

/// The Telegram adapter.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// Off switch; Telegram runs when this is true and a token is set.
    pub enabled: bool,
    /// Token from @BotFather. Env: `TELEGRAM_BOT_TOKEN`.
    pub bot_token: Secret,
    /// Telegram user ids allowed to talk to the bot. Env: `TELEGRAM_ALLOWED_USERS`.
    pub allowed_users: Vec<String>,
    /// Bot API server (a local Bot API server or a proxy). Env: `TELEGRAM_API_URL`.
    pub api_url: String,
    /// Long-poll timeout of getUpdates.
    pub poll_timeout_secs: u32,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        TelegramConfig {
            enabled: true,
            bot_token: Secret::default(),
            allowed_users: Vec::new(),
            api_url: "https://api.telegram.org".into(),
            poll_timeout_secs: 30,
        }
    }
}

impl TelegramConfig {
    pub fn is_active(&self) -> bool {
        self.enabled && !self.bot_token.is_empty()
    }
}

impl Config {
    /// Every secret in the configuration (to keep them out of logs).
    pub fn secrets(&self) -> Vec<&str> {
        let mut all = vec![
            self.llm.api_key.expose(),
            self.transcription.api_key.expose(),
            self.telegram.bot_token.expose(),
            self.discord.bot_token.expose(),
            self.slack.bot_token.expose(),
            self.slack.app_token.expose(),
            self.slack.signing_secret.expose(),
            self.email.password.expose(),
            self.email.imap_password.expose(),
            self.email.smtp_password.expose(),
            self.matrix.password.expose(),
            self.matrix.access_token.expose(),
        ];
        all.extend(self.llm.fallback.iter().map(|f| f.api_key.expose()));
        all
    }

    /// A digest of the settings `platform`'s adapter was built from (not the allowlists, which
    /// the core applies): a reload restarts the adapter when it changes.
    pub fn platform_fingerprint(&self, platform: Platform) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match platform {
            Platform::Telegram => {
                let t = &self.telegram;
                (
                    t.enabled,
                    t.bot_token.expose(),
                    &t.api_url,
                    t.poll_timeout_secs,
                )
                    .hash(&mut h);
            }
            Platform::Discord => self.discord.hash_settings(&mut h),
            Platform::Email => self.email.hash_settings(&mut h),
            Platform::Matrix => self.matrix.hash_settings(&mut h),
            Platform::Slack => {
                let s = &self.slack;
                (s.enabled, s.bot_token.expose(), s.app_token.expose()).hash(&mut h);
                (s.signing_secret.expose(), &s.events_listen, &s.api_url).hash(&mut h);
                (&s.allowed_channels, &s.allowed_teams, s.reply_in_thread).hash(&mut h);
                s.socket_idle_secs.hash(&mut h);
            }
            _ => {}
        }
        h.finish()
    }
}

/// Where configuration is looked up: the process environment in production, a map in tests.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

impl<const N: usize> EnvSource for [(&str, &str); N] {
    fn var(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

/// `HERMES_HOME`, or `~/.hermes`.
pub fn home_dir(env: &dyn EnvSource) -> PathBuf {
    if let Some(home) = env.var("HERMES_HOME") {
        return PathBuf::from(home);
    }
    let user_home = env.var("HOME").unwrap_or_else(|| ".".into());
    Path::new(&user_home).join(".hermes")
}

impl Config {
    /// Read the file (explicit path, `HERMES_CONFIG`, or the default), overlay the environment,
    /// and validate.
    pub fn load(explicit: Option<&Path>, env: &dyn EnvSource) -> Result<Config, ConfigError> {
        let home = home_dir(env);
        let (path, required) = match explicit
            .map(Path::to_path_buf)
            .or_else(|| env.var("HERMES_CONFIG").map(PathBuf::from))
        {
            Some(p) => (p, true),
            None => (home.join("config.toml"), false),
        };
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut c = Config::parse(&text, &path)?;
                c.source = Some(path.clone());
                c
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Config::default(),
            Err(e) => return Err(ConfigError::unreadable(&path, &e)),
        };
        config.home = home;
        env::overlay(&mut config, env)?;
        config.validate()?;
        Ok(config)
    }

    /// Parse TOML text; errors name the key path and the line.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let de = toml::de::Deserializer::parse(text)
            .map_err(|e| ConfigError::toml(path, text, "", &e))?;
        let mut config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            ConfigError::toml(path, text, &key, e.inner())
        })?;
        config.llm.base_url_explicit = text_sets_base_url(text);
        Ok(config)
    }

    /// Path of the SQLite database.
    pub fn database_path(&self) -> PathBuf {
        self.home.join("hermes.db")
    }

    /// The directory file and terminal tools are confined to.
    pub fn workspace(&self) -> PathBuf {
        self.tools
            .workspace
            .clone()
            .unwrap_or_else(|| self.home.join("workspace"))
    }

    /// Toolsets enabled on `platform`.
    pub fn toolsets(&self, platform: Platform) -> &[String] {
        self.tools
            .platforms
            .get(&platform)
            .unwrap_or(&self.tools.toolsets)
    }

    /// The permission level new sessions on `platform` start with.
    pub fn level(&self, platform: Platform) -> Level {
        self.policy
            .platforms
            .get(&platform)
            .copied()
            .unwrap_or(self.policy.level)
    }
}

/// Whether the file sets `llm.base_url` (so a keyless local provider counts as configured).
fn text_sets_base_url(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get("llm")?.get("base_url").cloned())
        .is_some()
}

#[cfg(test)]
mod tests;
