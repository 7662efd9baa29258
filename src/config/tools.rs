//! `[tools]`: the workspace the tools are confined to, the toolsets enabled everywhere and per
//! platform, and the tools' limits. The toolset table names which built-in tools each toolset
//! enables; the agent's toolbox registers exactly these tools (a test there says so).

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;

use hermes_adapter::Platform;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Which tools exist and how they are confined.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Directory the file and terminal tools work in (and cannot leave). Default
    /// `$HERMES_HOME/workspace`.
    pub workspace: Option<PathBuf>,
    /// Toolsets enabled everywhere: `core`, `files`, `terminal`, `web`, `delegate`, `finance`,
    /// `notes`…
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
    /// Where the terminal's commands run (`[tools.sandbox]`).
    pub sandbox: super::SandboxConfig,
    /// The search API behind `web_search` (`[tools.web_search]`).
    pub web_search: super::WebSearchConfig,
    /// The market data API behind the finance tools (`[tools.finance]`).
    pub finance: super::FinanceConfig,
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
            sandbox: super::SandboxConfig::default(),
            web_search: super::WebSearchConfig::default(),
            finance: super::FinanceConfig::default(),
        }
    }
}

/// Named groups of tools that configuration enables per platform.
pub const TOOLSETS: &[(&str, &[&str])] = &[
    ("core", &["current_time", "todo", "clarify"]),
    ("memory", &["memory", "session_search"]),
    ("skills", &["skills_list", "skill_view", "skill_manage"]),
    (
        "files",
        &[
            "read_file",
            "read_document",
            "write_file",
            "patch_file",
            "search_files",
            "list_dir",
            "send_file",
        ],
    ),
    ("terminal", &["terminal"]),
    ("web", &["web_fetch", "web_search"]),
    ("delegate", &["delegate_task"]),
    ("cron", &["cronjob"]),
    ("finance", FINANCE_TOOLS),
    ("notes", &["notes_search"]),
];

/// The tools that need `[tools.finance]`.
const FINANCE_TOOLS: &[&str] = &["market_quote", "market_news", "company_profile"];

/// Whether `name` is a built-in tool.
pub fn is_builtin(name: &str) -> bool {
    TOOLSETS.iter().any(|(_, tools)| tools.contains(&name))
}

/// The tool names enabled by `toolsets`.
pub fn tools_in(toolsets: &[String]) -> Vec<&'static str> {
    TOOLSETS
        .iter()
        .filter(|(name, _)| toolsets.iter().any(|s| s == name))
        .flat_map(|(_, tools)| tools.iter().copied())
        .collect()
}

impl ToolsConfig {
    /// Whether the built-in tool `name` has what it needs to run: `web_search` a search
    /// provider, the market tools a market data provider. An enabled tool without it is not
    /// offered to the model.
    pub fn is_configured(&self, name: &str) -> bool {
        match name {
            "web_search" => self.web_search.provider.is_some(),
            _ if FINANCE_TOOLS.contains(&name) => self.finance.provider.is_some(),
            _ => true,
        }
    }

    /// Known toolsets everywhere and per platform.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        let known = |set: &String| TOOLSETS.iter().any(|(name, _)| name == set);
        let sets = self
            .toolsets
            .iter()
            .map(|s| ("tools.toolsets".to_owned(), s));
        let per_platform = self.platforms.iter().flat_map(|(p, sets)| {
            sets.iter()
                .map(move |s| (format!("tools.platforms.{p}"), s))
        });
        if let Some((key, set)) = sets.chain(per_platform).find(|(_, s)| !known(s)) {
            let names: Vec<&str> = TOOLSETS.iter().map(|(n, _)| *n).collect();
            return bad(
                &key,
                format!("unknown toolset `{set}` (known: {})", names.join(", ")),
            );
        }
        if self.max_concurrent_subagents == 0 {
            return bad(
                "tools.max_concurrent_subagents",
                "must be at least 1".into(),
            );
        }
        self.web_search.validate(file)?;
        self.finance.validate(file)?;
        self.sandbox.validate(file)
    }
}
