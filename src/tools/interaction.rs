//! [`Interaction`]: the person a turn can talk to while it runs — to confirm a tool call, to
//! answer a question, or to hear that the work goes on. The gateway implements it on the chat;
//! `hermes chat` on the terminal; turns without a human (subagents, cron) have none, so their
//! confirmations are denials.

use async_trait::async_trait;

use crate::policy::{Answer, Category, Level};

/// A tool call waiting for the user's confirmation.
#[derive(Debug, Clone)]
pub struct ConfirmRequest {
    pub tool: String,
    pub category: Category,
    /// The call's arguments, pretty-printed, shown in full.
    pub arguments: String,
    pub level: Level,
    /// Why it needs confirmation (the danger, or the policy cell).
    pub reason: String,
}

/// Someone who can answer.
#[async_trait]
pub trait Interaction: Send + Sync {
    /// Ask the user to confirm one call. `None` when nobody answers in time or the turn is
    /// cancelled meanwhile (both are denials).
    async fn confirm(&self, request: &ConfirmRequest) -> Option<Answer>;

    /// Ask a question (with optional choices); `None` when nobody answers in time.
    async fn ask(&self, question: &str, choices: &[String]) -> Option<String>;

    /// A short progress note.
    async fn notify(&self, text: &str);

    /// Send a file (an absolute path the caller has checked) with a caption; `Ok` says how it
    /// went out, `Err` why it cannot (the model reads both).
    async fn send_file(&self, _path: &std::path::Path, _caption: &str) -> Result<String, String> {
        Err("there is no chat to send files to in this conversation".into())
    }
}

impl ConfirmRequest {
    /// The request as chat text: what, why, and the full arguments (in a code block, never
    /// silently truncated).
    pub fn describe(&self, timeout_secs: u64, buttons: bool) -> String {
        let how = if buttons {
            "Choose below, or reply yes / no."
        } else {
            "Reply yes or no (or /approve, /approve session, /approve always, /deny)."
        };
        format!(
            "🔐 Permission needed: `{}` ({} tool; {})\n```json\n{}\n```\n{how} No answer within {timeout_secs} s means no.",
            self.tool,
            self.category.as_str(),
            self.reason,
            self.arguments.replace("```", "`\u{200b}``"),
        )
    }
}
