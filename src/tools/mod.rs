//! Tools the agent can call: the [`Tool`] trait, the [`ToolRegistry`], one file per built-in.

mod api_client;
mod clarify;
mod current_time;
mod delegate;
pub mod documents;
pub mod files;
pub mod finance;
mod interaction;
mod registry;
mod session_search;
pub mod ssh;
pub mod terminal;
mod todo;
pub mod web_fetch;
pub mod web_search;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{Platform, SessionKey};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use clarify::Clarify;
pub use current_time::CurrentTime;
pub use delegate::{DelegateArgs, DelegateTask};
pub use interaction::{ConfirmRequest, Interaction};
pub use registry::ToolRegistry;
pub use session_search::SessionSearch;
pub(crate) use session_search::render_hits;
pub use todo::Todo;

pub use crate::policy::Category;

use std::sync::Arc;

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
    /// The role of the person the turn answers (tools that change shared things check it).
    pub role: crate::policy::Role,
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
            role: crate::policy::Role::Operator,
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
