//! Tools the agent can call: the [`Tool`] trait, the [`ToolRegistry`], one file per built-in.

mod clarify;
mod current_time;
mod delegate;
pub mod files;
mod registry;
mod session_search;
pub mod terminal;
mod todo;
pub mod web_fetch;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{Platform, SessionKey};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use clarify::Clarify;
pub use current_time::CurrentTime;
pub use delegate::DelegateTask;
pub use registry::ToolRegistry;
pub use session_search::SessionSearch;
pub(crate) use session_search::render_hits;
pub use todo::Todo;

use std::sync::Arc;

use crate::agent::Interaction;
use crate::config::Config;
use crate::store::Store;

/// The built-in tools, configured. Which of them a turn may call is decided per platform by the
/// configured toolsets. Fails when the workspace directory cannot be created.
pub fn builtin(
    config: &Config,
    store: &Store,
    cron: &crate::cron::CronControl,
) -> std::io::Result<ToolRegistry> {
    let workspace_dir = config.workspace();
    let workspace = files::Workspace::new(&workspace_dir).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot use the tools workspace {}: {e}",
                workspace_dir.display()
            ),
        )
    })?;
    let mut r = ToolRegistry::new();
    r.register(Arc::new(CurrentTime::default()));
    r.register(Arc::new(Todo::new(store.clone())));
    r.register(Arc::new(Clarify::new(Duration::from_secs(
        config.policy.clarify_timeout_secs,
    ))));
    r.register(Arc::new(crate::memory::MemoryTool::new(
        config.memory_files(),
    )));
    r.register(Arc::new(SessionSearch::new(store.clone())));
    let skills = crate::skills::SkillSources::for_home(&config.home);
    let sets = config.clone();
    r.register(Arc::new(
        crate::skills::SkillsList::new(skills.clone(), store.clone()).with_availability(Arc::new(
            move |ctx: &ToolContext| {
                let platform = ctx.session.platform;
                let toolsets = sets.toolsets(platform);
                crate::skills::Availability::new(platform, tools_in(toolsets), toolsets.iter())
            },
        )),
    ));
    r.register(Arc::new(crate::skills::SkillView::new(
        skills.clone(),
        store.clone(),
    )));
    r.register(Arc::new(crate::skills::SkillManage::new(
        skills,
        store.clone(),
    )));
    for tool in files::file_tools(Arc::new(workspace)) {
        r.register(tool);
    }
    let mut terminal = terminal::TerminalSettings::new(&workspace_dir);
    terminal.default_timeout = Duration::from_secs(config.tools.terminal_timeout_secs.max(1));
    // The terminal keeps the head and the tail of long output; stay within the agent's cap so
    // nothing cuts it again.
    terminal.max_output_bytes = config.agent.tool_output_max_chars.max(1024);
    terminal.hermes_home = Some(config.home.clone());
    r.register(Arc::new(terminal::TerminalTool::new(terminal)));
    r.register(Arc::new(web_fetch::WebFetch::new(
        web_fetch::WebFetchSettings {
            allow_private: config.tools.web_allow_private,
            ..web_fetch::WebFetchSettings::default()
        },
    )));
    r.register(Arc::new(DelegateTask::default()));
    let default_tz = config
        .agent
        .timezone
        .clone()
        .or_else(|| jiff::tz::TimeZone::system().iana_name().map(str::to_owned))
        .unwrap_or_else(|| "UTC".to_owned());
    r.register(Arc::new(crate::cron::CronTool::new(
        store.clone(),
        cron.clone(),
        default_tz,
    )));
    Ok(r)
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
            "write_file",
            "patch_file",
            "search_files",
            "list_dir",
            "send_file",
        ],
    ),
    ("terminal", &["terminal"]),
    ("web", &["web_fetch"]),
    ("delegate", &["delegate_task"]),
    ("cron", &["cronjob"]),
];

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

/// What a tool touches; with the session's permission level it decides whether a call runs at
/// once, needs confirmation, or is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Read,
    Write,
    System,
    Finance,
}

/// A tool's static description.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Unique name the model calls it by (`snake_case`).
    pub name: &'static str,
    /// Written for the model: what it does, when to use it, its limits.
    pub description: &'static str,
    pub category: Category,
    /// Safe to run concurrently with other calls of the same response.
    pub parallel_safe: bool,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Longest a call may run before it is abandoned.
    pub timeout: Duration,
    /// Characters of output kept for the model (the agent's own cap applies too).
    pub max_output_chars: usize,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Read => "read",
            Category::Write => "write",
            Category::System => "system",
            Category::Finance => "finance",
        }
    }
}

/// The JSON Schema of a tool's argument type, in the shape model providers accept (an object
/// schema without `$schema` and `title`).
pub fn schema_of<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema
}

/// What a tool knows about the turn calling it.
#[derive(Clone)]
pub struct ToolContext {
    pub session: SessionKey,
    /// The user's time zone, from configuration.
    pub timezone: jiff::tz::TimeZone,
    /// Cancelled when the turn is stopped; long tools should watch it.
    pub cancel: CancellationToken,
    /// The person behind the turn, if one can be asked (not in subagents or cron).
    pub interaction: Option<Arc<dyn Interaction>>,
    /// The chat the turn answers in, if any (where a job created now delivers by default).
    pub chat: Option<ChatRef>,
}

/// A place in a chat platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRef {
    pub platform: Platform,
    pub chat: hermes_adapter::ChatId,
    pub thread: Option<hermes_adapter::ThreadId>,
    pub user: Option<hermes_adapter::UserId>,
}

impl ToolContext {
    /// A context for unit tests: a terminal session, UTC, not cancelled.
    pub fn for_tests() -> Self {
        ToolContext {
            session: SessionKey::direct(Platform::Cli, "test"),
            timezone: jiff::tz::TimeZone::UTC,
            cancel: CancellationToken::new(),
            interaction: None,
            chat: None,
        }
    }
}

/// Why a call failed; shown to the model as the tool's result so it can correct itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("{0}")]
    Failed(String),
    #[error("no tool named `{0}` exists")]
    Unknown(String),
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
    #[error("cancelled")]
    Cancelled,
}

/// A capability the agent can use.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;

    /// Files this call would change, so that calls writing the same file run one after another
    /// even when the tool is parallel-safe. Only called with arguments that are a JSON object.
    fn writes(&self, _args: &Value) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Why this particular call is dangerous (a recursive delete, `curl | sh`…): such calls need
    /// the user's confirmation below `full-access` whatever the tool's category.
    fn danger(&self, _args: &Value) -> Option<String> {
        None
    }

    /// Run with validated-as-JSON arguments; return text for the model.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError>;
}

/// Decode arguments into a tool's typed struct, with an error the model can act on.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}
