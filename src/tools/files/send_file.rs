//! `send_file`: a workspace file sent to the user in their chat (a report, a chart, an
//! archive), through the same durable outbox as every answer.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{blocking, human_size, io_error};
use super::{Intent, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// Sends workspace files to the person in the conversation.
pub struct SendFile {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file, relative to the workspace root, e.g. "reports/summary.pdf".
    path: String,
    /// A short text shown with the file (markdown). Optional.
    #[serde(default)]
    caption: Option<String>,
}

impl SendFile {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        SendFile {
            spec: ToolSpec {
                name: "send_file",
                description: "Send a file from the workspace to the user in this chat (pictures \
                    show as pictures, anything else as a document), with an optional short \
                    caption. Use it when the user asks for a file or when a result is better \
                    as a file (a chart, a CSV, an archive) than as text. The file is copied \
                    when you call this, so you may change or delete it afterwards. Each \
                    platform caps the size (Telegram 50 MB, Discord 10 MB, email 20 MB). \
                    Call it once per file.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(60),
                max_output_chars: 1_000,
            },
            workspaces,
        }
    }
}

#[async_trait]
impl Tool for SendFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let Some(person) = ctx.interaction.clone() else {
            return Err(ToolError::Failed(
                "nobody to send a file to here (a scheduled job or a subagent): save it in the \
                 workspace and say where it is"
                    .into(),
            ));
        };
        let ws = self.workspaces.open(ctx).await?;
        // A file on the SSH host comes here first, into a private folder of its own, under its
        // own name (the name the person sees).
        let (path, _copy) = blocking(move || {
            let path = ws.resolve(&args.path, Intent::Read)?;
            if !ws.disk().is_remote() {
                return Ok((path, None));
            }
            let name = ws.display(&path);
            let meta = ws
                .disk()
                .stat(&path)
                .map_err(|e| io_error("read", &name, &e))?;
            if !meta.is_file() {
                return Err(ToolError::Failed(format!("`{name}` is not a regular file")));
            }
            if meta.len > MAX_REMOTE_BYTES {
                return Err(ToolError::Failed(format!(
                    "`{name}` is {}, more than any platform takes",
                    human_size(meta.len)
                )));
            }
            let bytes = ws
                .disk()
                .read(&path)
                .map_err(|e| io_error("read", &name, &e))?;
            let copy = tempfile::tempdir()
                .map_err(|e| ToolError::Failed(format!("cannot copy `{name}` here: {e}")))?;
            let local = copy
                .path()
                .join(path.file_name().unwrap_or("file".as_ref()));
            std::fs::write(&local, bytes)
                .map_err(|e| ToolError::Failed(format!("cannot copy `{name}` here: {e}")))?;
            Ok((local, Some(copy)))
        })
        .await?;
        person
            .send_file(&path, args.caption.as_deref().unwrap_or(""))
            .await
            .map_err(ToolError::Failed)
    }
}

/// The largest file fetched from the SSH host to send (Telegram's 50 MB cap, with room).
const MAX_REMOTE_BYTES: u64 = 64 * 1024 * 1024;
