//! `read_document`: the text of a PDF, Word, PowerPoint, spreadsheet, CSV, JSON, HTML or text
//! file in the workspace, a range of pages (slides, sheets) at a time.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_documents::{Format, Wanted};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::config::DocumentsConfig;
use crate::tools::files::disk::blocking;
use crate::tools::files::{Intent, Workspaces, human_size};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// Reads documents inside the workspace.
pub struct ReadDocument {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
    config: DocumentsConfig,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file, relative to the workspace root, e.g. "reports/q3.pdf".
    path: String,
    /// First page (slide, sheet) to read, counting from 1. Default 1.
    #[serde(default)]
    from: Option<usize>,
    /// Last page (slide, sheet) to read. Default: as many as the limit allows.
    #[serde(default)]
    to: Option<usize>,
}

impl ReadDocument {
    pub fn new(workspaces: Arc<Workspaces>, config: DocumentsConfig) -> Self {
        ReadDocument {
            spec: ToolSpec {
                name: "read_document",
                description: "Read the text of a document in the workspace: PDF, Word (.docx), \
                    PowerPoint (.pptx), spreadsheets (.xlsx, .xls, .ods), CSV/TSV, JSON, Markdown, \
                    HTML or any text file. Pages (slides, sheets) come under `--- page N ---` \
                    lines; `from`/`to` pick a range when a long document was cut. Scanned PDFs \
                    without a text layer cannot be read. For plain text files with line numbers, \
                    read_file is better.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(config.timeout_secs.max(1) + 15),
                max_output_chars: config.max_chars_per_file + 2_000,
            },
            workspaces,
            config,
        }
    }
}

#[async_trait]
impl Tool for ReadDocument {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.from == Some(0) || args.to == Some(0) {
            return Err(ToolError::InvalidArguments(
                "pages count from 1 (the first page)".into(),
            ));
        }
        let ws = self.workspaces.open(ctx).await?;
        let max = self.config.max_bytes();
        let (name, bytes) = blocking(move || {
            let path = ws.resolve(&args.path, Intent::Read)?;
            let name = ws.display(&path);
            let fail = |e: std::io::Error| ToolError::Failed(format!("cannot read `{name}`: {e}"));
            let meta = ws.disk().stat(&path).map_err(fail)?;
            if !meta.is_file() {
                return Err(ToolError::Failed(format!("`{name}` is not a file")));
            }
            if meta.len > max {
                return Err(ToolError::Failed(format!(
                    "`{name}` is {}, more than the {} documents may have",
                    human_size(meta.len),
                    human_size(max)
                )));
            }
            let bytes = ws.disk().read(&path).map_err(fail)?;
            Ok((name, bytes))
        })
        .await?;
        let Some(format) = Format::detect(Some(&name), None, &bytes) else {
            return Err(ToolError::Failed(format!(
                "`{name}` is not a document this tool reads (an image, an archive or a binary)"
            )));
        };
        let wanted = Wanted {
            from: args.from,
            to: args.to,
        };
        let timeout = Duration::from_secs(self.config.timeout_secs.max(1));
        match super::read(bytes, format, self.config.limits(), wanted, timeout).await {
            Ok(doc) => Ok(super::render(&name, &doc)),
            Err(why) => Err(ToolError::Failed(format!(
                "`{name}` could not be read: {why}"
            ))),
        }
    }
}
