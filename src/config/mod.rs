//! Typed configuration: a TOML file overlaid by environment variables, validated with errors that
//! name the file, the key and the fix.
//!
//! Where the file is: `--config PATH`, else `HERMES_CONFIG`, else `$HERMES_HOME/config.toml`
//! (`HERMES_HOME` defaults to `~/.hermes`). A missing default file is fine (everything can come
//! from the environment); a missing explicit file is an error. Every key is documented in
//! `config/hermes.example.toml`; the defaults live in the `Default` impls below and nowhere else.

mod env;
mod error;
mod secret;

use std::path::{Path, PathBuf};

use std::collections::HashMap;

use hermes_adapter::{GroupSessions, Platform};
use serde::Deserialize;

use crate::policy::{Decision, Level};
use crate::tools::Category;

pub use error::ConfigError;
pub use secret::Secret;

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
    pub agent: AgentConfig,
    pub gateway: GatewayConfig,
    pub tools: ToolsConfig,
    pub policy: PolicyConfig,
    pub memory: MemoryConfig,
    pub sessions: SessionsConfig,
    pub telegram: TelegramConfig,
}

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, …).
    #[default]
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

impl ProviderKind {
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        }
    }
}

/// Another provider tried when the main one keeps failing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackConfig {
    #[serde(default)]
    pub provider: ProviderKind,
    /// Default: the provider kind's public endpoint.
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Secret,
    /// Environment variable holding the key (instead of `api_key` in the file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    pub model: String,
}

/// Prices of a model in US dollars per million tokens, for `/usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// The language model provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// `openai` (any OpenAI-compatible API) or `anthropic`.
    pub provider: ProviderKind,
    /// Base URL of the API, up to and including `/v1`. Env: `OPENAI_BASE_URL`.
    pub base_url: String,
    /// API key. Env: `OPENAI_API_KEY` (`ANTHROPIC_API_KEY` for anthropic).
    pub api_key: Secret,
    /// Model name. Env: `HERMES_MODEL`.
    pub model: String,
    /// Whole-request timeout.
    pub request_timeout_secs: u64,
    /// Retries after a 429, 5xx or network failure, honouring `Retry-After`.
    pub max_retries: u32,
    /// LLM requests in flight at once across all sessions.
    pub max_concurrent_requests: usize,
    /// Upper bound on tokens the model may write in one response (unset: provider default;
    /// Anthropic requires one and gets 8192).
    pub max_output_tokens: Option<u32>,
    /// Model that writes summaries when a long conversation is compressed (default: `model`).
    pub auxiliary_model: Option<String>,
    /// The model's context window in tokens; history is compressed at half of it.
    pub context_window: u64,
    /// Stream answers into the chat as they are written (one message, edited ~once a second).
    pub streaming: bool,
    /// The model accepts images: photos users send are passed to it.
    pub vision: bool,
    /// Other models `/model` may switch a session to (same provider).
    pub models: Vec<String>,
    /// Providers tried in order when the main one keeps failing.
    pub fallback: Vec<FallbackConfig>,
    /// Prices per model for `/usage` (`[llm.prices."gpt-4o-mini"] input = 0.15 output = 0.6`).
    pub prices: HashMap<String, Price>,
    #[serde(skip)]
    pub(crate) base_url_explicit: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            provider: ProviderKind::Openai,
            base_url: ProviderKind::Openai.default_base_url().into(),
            api_key: Secret::default(),
            model: "gpt-4o-mini".into(),
            request_timeout_secs: 120,
            max_retries: 3,
            max_concurrent_requests: 8,
            max_output_tokens: None,
            auxiliary_model: None,
            context_window: 128_000,
            streaming: false,
            vision: false,
            models: Vec::new(),
            fallback: Vec::new(),
            prices: HashMap::new(),
            base_url_explicit: false,
        }
    }
}

impl LlmConfig {
    /// A provider is configured when there is a key, or a base URL was set explicitly (local
    /// servers such as Ollama or llama.cpp need no key).
    pub fn is_configured(&self) -> bool {
        !self.api_key.is_empty() || self.base_url_explicit
    }

    /// Connection settings of the main provider.
    pub fn settings(&self) -> crate::llm::ProviderSettings {
        crate::llm::ProviderSettings {
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            timeout: std::time::Duration::from_secs(self.request_timeout_secs),
            max_concurrent_requests: self.max_concurrent_requests,
        }
    }
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
            toolsets: crate::tools::TOOLSETS
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

/// When a conversation starts over by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResetMode {
    /// Never (default): only `/new` starts over.
    #[default]
    None,
    /// Every day at `daily_at_hour`.
    Daily,
    /// After `idle_minutes` without a message.
    Idle,
    /// Whichever comes first.
    Both,
}

/// A reset policy, complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetPolicy {
    pub mode: ResetMode,
    pub daily_at_hour: u8,
    pub idle_minutes: u64,
}

/// Overrides of the reset policy for a platform and/or chat kind.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetOverride {
    pub reset: Option<ResetMode>,
    pub daily_at_hour: Option<u8>,
    pub idle_minutes: Option<u64>,
}

/// Session lifetime.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// `none`, `daily`, `idle` or `both`.
    pub reset: ResetMode,
    /// Local hour (agent.timezone) of the daily reset.
    pub daily_at_hour: u8,
    /// Minutes without a message before an idle reset.
    pub idle_minutes: u64,
    /// Overrides by `direct` / `group`, by platform (`telegram`), or both (`telegram.group`);
    /// the most specific wins.
    pub by: HashMap<String, ResetOverride>,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            reset: ResetMode::None,
            daily_at_hour: 4,
            idle_minutes: 1440,
            by: HashMap::new(),
        }
    }
}

impl SessionsConfig {
    /// The policy for sessions on `platform` in chats of `kind`.
    pub fn policy(&self, platform: Platform, kind: hermes_adapter::ChatKind) -> ResetPolicy {
        let kind = match kind {
            hermes_adapter::ChatKind::Direct => "direct",
            _ => "group",
        };
        let mut p = ResetPolicy {
            mode: self.reset,
            daily_at_hour: self.daily_at_hour,
            idle_minutes: self.idle_minutes,
        };
        for key in [
            kind.to_owned(),
            platform.to_string(),
            format!("{platform}.{kind}"),
        ] {
            if let Some(o) = self.by.get(&key) {
                p.mode = o.reset.unwrap_or(p.mode);
                p.daily_at_hour = o.daily_at_hour.unwrap_or(p.daily_at_hour);
                p.idle_minutes = o.idle_minutes.unwrap_or(p.idle_minutes);
            }
        }
        p
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
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            memory_chars: 2200,
            user_chars: 1375,
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
    pub session_idle_minutes: u64,
    /// On SIGTERM/SIGINT, how long running turns may take to finish before the daemon exits
    /// (unfinished work is resumed on the next start).
    pub shutdown_grace_secs: u64,
    /// Attempts to send one outbound message before it is marked failed.
    pub send_max_attempts: u32,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            allowed_users: Vec::new(),
            allow_all_users: false,
            busy_mode: BusyMode::default(),
            group_sessions: GroupSessions::default(),
            max_concurrent_turns: 8,
            session_idle_minutes: 60,
            shutdown_grace_secs: 20,
            send_max_attempts: 8,
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

    /// Semantic checks the types cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let file = self.source.as_deref();
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        check_http_url(&self.llm.base_url).or_else(|p| bad("llm.base_url", p))?;
        for (i, f) in self.llm.fallback.iter().enumerate() {
            if let Some(url) = &f.base_url {
                check_http_url(url).or_else(|p| bad(&format!("llm.fallback[{i}].base_url"), p))?;
            }
            if f.model.trim().is_empty() {
                return bad(
                    &format!("llm.fallback[{i}].model"),
                    "must not be empty".into(),
                );
            }
        }
        if self.llm.model.trim().is_empty() {
            return bad(
                "llm.model",
                "must not be empty (for example \"gpt-4o-mini\")".into(),
            );
        }
        if self.llm.max_concurrent_requests == 0 {
            return bad("llm.max_concurrent_requests", "must be at least 1".into());
        }
        if self.agent.max_iterations == 0 {
            return bad("agent.max_iterations", "must be at least 1".into());
        }
        if !(0.1..=0.95).contains(&self.agent.compression_threshold) {
            return bad(
                "agent.compression_threshold",
                "must be between 0.1 and 0.95".into(),
            );
        }
        if self.agent.history_messages < 2 {
            return bad("agent.history_messages", "must be at least 2".into());
        }
        if let Some(tz) = &self.agent.timezone
            && jiff::tz::TimeZone::get(tz).is_err()
        {
            return bad(
                "agent.timezone",
                format!("unknown time zone `{tz}` (use an IANA name such as \"Europe/Berlin\")"),
            );
        }
        if self.gateway.max_concurrent_turns == 0 {
            return bad("gateway.max_concurrent_turns", "must be at least 1".into());
        }
        if self.gateway.send_max_attempts == 0 {
            return bad("gateway.send_max_attempts", "must be at least 1".into());
        }
        for entry in &self.gateway.allowed_users {
            if let Some((platform, id)) = entry.split_once(':')
                && (platform.parse::<hermes_adapter::Platform>().is_err() || id.is_empty())
            {
                return bad(
                    "gateway.allowed_users",
                    format!("`{entry}` is not `platform:id` or a bare user id"),
                );
            }
        }
        let known = |set: &String| crate::tools::TOOLSETS.iter().any(|(name, _)| name == set);
        let sets = self
            .tools
            .toolsets
            .iter()
            .map(|s| ("tools.toolsets".to_owned(), s));
        let per_platform = self.tools.platforms.iter().flat_map(|(p, sets)| {
            sets.iter()
                .map(move |s| (format!("tools.platforms.{p}"), s))
        });
        if let Some((key, set)) = sets.chain(per_platform).find(|(_, s)| !known(s)) {
            let names: Vec<&str> = crate::tools::TOOLSETS.iter().map(|(n, _)| *n).collect();
            return bad(
                &key,
                format!("unknown toolset `{set}` (known: {})", names.join(", ")),
            );
        }
        if let Some(tool) = self
            .policy
            .tools
            .keys()
            .find(|t| !crate::tools::is_builtin(t))
        {
            return bad("policy.tools", format!("unknown tool `{tool}`"));
        }
        if self.policy.approval_timeout_secs == 0 {
            return bad("policy.approval_timeout_secs", "must be at least 1".into());
        }
        let hours = std::iter::once(self.sessions.daily_at_hour)
            .chain(self.sessions.by.values().filter_map(|o| o.daily_at_hour));
        if hours.into_iter().any(|h| h > 23) {
            return bad(
                "sessions.daily_at_hour",
                "must be an hour from 0 to 23".into(),
            );
        }
        if let Some(key) = self.sessions.by.keys().find(|k| {
            let mut parts = k.split('.');
            let first = parts.next().unwrap_or_default();
            let second = parts.next();
            let kind_ok = |s: &str| matches!(s, "direct" | "group");
            let known = match second {
                None => kind_ok(first) || first.parse::<Platform>().is_ok(),
                Some(kind) => first.parse::<Platform>().is_ok() && kind_ok(kind),
            };
            !known || parts.next().is_some()
        }) {
            return bad(
                "sessions.by",
                format!("`{key}` is not `direct`, `group`, a platform, or `platform.direct|group`"),
            );
        }
        if self.tools.max_concurrent_subagents == 0 {
            return bad(
                "tools.max_concurrent_subagents",
                "must be at least 1".into(),
            );
        }
        check_http_url(&self.telegram.api_url).or_else(|p| bad("telegram.api_url", p))?;
        if self.telegram.poll_timeout_secs > 50 {
            return bad(
                "telegram.poll_timeout_secs",
                "must be at most 50 (Telegram caps long polls)".into(),
            );
        }
        if let Some(id) = self
            .telegram
            .allowed_users
            .iter()
            .find(|id| id.parse::<i64>().is_err())
        {
            return bad(
                "telegram.allowed_users",
                format!(
                    "`{id}` is not a numeric Telegram user id (usernames can change hands; ask @userinfobot for your id)"
                ),
            );
        }
        Ok(())
    }

    /// Path of the SQLite database.
    pub fn database_path(&self) -> PathBuf {
        self.home.join("hermes.db")
    }

    /// The memory files, under `$HERMES_HOME/memory`.
    pub fn memory_files(&self) -> crate::memory::MemoryFiles {
        crate::memory::MemoryFiles::new(
            self.home.join("memory"),
            crate::memory::MemoryLimits {
                memory_chars: self.memory.memory_chars,
                user_chars: self.memory.user_chars,
            },
        )
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

fn check_http_url(value: &str) -> Result<(), String> {
    match reqwest::Url::parse(value) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(_) => Err(format!("`{value}` must be an http:// or https:// URL")),
        Err(e) => Err(format!("`{value}` is not a URL: {e}")),
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
