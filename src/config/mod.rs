//! Typed configuration: a TOML file overlaid by environment variables, validated with errors that
//! name the file, the key and the fix.
//!
//! Where the file is: `--config PATH`, else `HERMES_CONFIG`, else `$HERMES_HOME/config.toml`
//! (`HERMES_HOME` defaults to `~/.hermes`). A missing default file is fine (everything can come
//! from the environment); a missing explicit file is an error. Every key is documented in
//! `config/hermes.example.toml`; the defaults live in the `Default` impls of the section files and nowhere else.

mod access;
mod agent;
mod cron;
mod documents;
mod env;
mod env_file;
mod error;
mod gateway;
mod llm;
mod mcp;
mod mcp_serve;
mod memory;
mod platforms;
mod policy;
mod profiles;
mod sandbox;
mod secret;
mod service;
mod sessions;
mod tool_apis;
mod tools;
mod transcription;
mod validate;
pub use env_file::quote as quote_env_value;
pub use validate::host_and_port;

use std::path::{Path, PathBuf};

use hermes_adapter::Platform;
use serde::{Deserialize, Serialize};

use crate::policy::Level;

pub use access::AccessConfig;
pub use agent::AgentConfig;
pub use cron::CronConfig;
pub use documents::DocumentsConfig;
pub use error::ConfigError;
pub use gateway::{BusyMode, GatewayConfig};
pub use llm::{FallbackConfig, LlmConfig, Price, ProviderKind};
pub use mcp::{McpConfig, McpServerConfig, valid_server_name};
pub use mcp_serve::McpServeConfig;
pub use memory::{MemoryConfig, SkillsConfig};
pub use platforms::{
    ApiConfig, ApiKeyConfig, DiscordConfig, EmailConfig, MatrixConfig, PlatformSection,
    SlackConfig, TelegramConfig, TelegramMode,
};
pub use policy::PolicyConfig;
pub use profiles::{AgentMode, Profile, Profiles};
pub use sandbox::{DockerConfig, SandboxBackend, SandboxConfig, SshConfig};
pub use secret::{Secret, names_a_credential};
pub use service::{
    AdminConfig, LeasesConfig, RetentionConfig, StoreBackend, StoreConfig, Synchronous,
};
pub use sessions::{ResetMode, ResetOverride, ResetPolicy, SessionsConfig};
pub use tool_apis::{
    FinanceConfig, FinanceProvider, MAX_SEARCH_RESULTS, WebSearchConfig, WebSearchProvider,
};
pub use tools::{TOOLSETS, ToolsConfig, is_builtin, tools_in};
pub use transcription::{TranscriptionConfig, TranscriptionEndpoint};

/// Everything the daemon needs to know, after the file and the environment were merged.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
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
    pub documents: DocumentsConfig,
    pub agent: AgentConfig,
    pub profiles: Profiles,
    pub gateway: GatewayConfig,
    pub access: AccessConfig,
    pub tools: ToolsConfig,
    pub policy: PolicyConfig,
    pub memory: MemoryConfig,
    pub skills: SkillsConfig,
    pub cron: CronConfig,
    pub mcp: McpConfig,
    pub sessions: SessionsConfig,
    pub telegram: TelegramConfig,
    pub discord: DiscordConfig,
    pub slack: SlackConfig,
    pub email: EmailConfig,
    pub matrix: MatrixConfig,
    pub api: ApiConfig,
    pub admin: AdminConfig,
    pub store: StoreConfig,
    pub leases: LeasesConfig,
    pub retention: RetentionConfig,
}

impl Config {
    /// Every platform's section, in one list: the only place outside a platform's own files
    /// that names it (with its field above).
    pub fn platforms(&self) -> [&dyn PlatformSection; 6] {
        [
            &self.telegram,
            &self.discord,
            &self.slack,
            &self.email,
            &self.matrix,
            &self.api,
        ]
    }

    /// The same list, to change (the environment overlay).
    fn platforms_mut(&mut self) -> [&mut dyn PlatformSection; 6] {
        [
            &mut self.telegram,
            &mut self.discord,
            &mut self.slack,
            &mut self.email,
            &mut self.matrix,
            &mut self.api,
        ]
    }

    /// The section of `platform`, if it is a chat platform.
    pub fn platform(&self, platform: Platform) -> Option<&dyn PlatformSection> {
        self.platforms()
            .into_iter()
            .find(|p| p.platform() == platform)
    }

    /// Every secret in the configuration (to keep them out of logs).
    pub fn secrets(&self) -> Vec<&str> {
        let mut all = vec![
            self.llm.api_key.expose(),
            self.transcription.api_key.expose(),
            self.admin.token.expose(),
            self.tools.web_search.api_key.expose(),
            self.tools.finance.api_key.expose(),
            self.store.url.expose(),
            url_password(self.store.url.expose()),
        ];
        all.extend(self.llm.fallback.iter().map(|f| f.api_key.expose()));
        for p in self.platforms() {
            all.extend(p.secrets());
        }
        all.extend(self.mcp.secrets());
        all
    }
}

/// The password of a `scheme://user:password@host/…` URL, or "".
fn url_password(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("://") else {
        return "";
    };
    let userinfo = rest.split(['/', '?']).next().unwrap_or("");
    match userinfo.rsplit_once('@') {
        Some((user, _)) => user.split_once(':').map_or("", |(_, pw)| pw),
        None => "",
    }
}

/// Where configuration is looked up: the process environment in production, a map in tests.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment as it was at start: captured once (see [`capture_environment`]),
/// because the daemon then wipes the credentials out of its live environment block, where its
/// children could read them in `/proc/<pid>/environ`. A running process's environment never
/// changes from outside, so the capture is what the live one would say. Variables the process
/// was not given come from `$HERMES_HOME/hermes.env` when it has them (`env_file`).
pub struct ProcessEnv;

static STARTING_ENV: std::sync::OnceLock<std::collections::HashMap<String, String>> =
    std::sync::OnceLock::new();

/// Capture the process environment (once; later calls keep the first capture).
pub fn capture_environment() {
    STARTING_ENV.get_or_init(|| {
        let mut env: std::collections::HashMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let home = home_dir(&env);
        env_file::fill(&mut env, env_file::read(&home));
        env
    });
}

impl EnvSource for std::collections::HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }
}

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        capture_environment();
        STARTING_ENV
            .get()
            .and_then(|env| env.get(name))
            .filter(|v| !v.trim().is_empty())
            .cloned()
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
        config.read_profile_prompts()?;
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
