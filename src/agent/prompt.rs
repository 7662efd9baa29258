//! Prompt assembly: the stable system prompt of a session and a history the model will accept.
//!
//! The system prompt depends only on configuration and the session's platform and chat kind, so
//! it is byte-identical across the turns of a session and provider prompt caching works.
//! Anything that changes per turn belongs in the user message, not here.

use std::collections::HashSet;

use hermes_adapter::{ChatKind, Platform};

use crate::llm::{ChatMessage, Role};

/// Where the conversation happens, for the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub platform: Platform,
    pub chat: ChatKind,
}

/// The system prompt for a session.
pub fn system_prompt(setting: Setting, extra: Option<&str>) -> String {
    system_prompt_with(setting, extra, &[], None)
}

/// The system prompt with the session's enabled tools in mind and its frozen memory snapshot.
pub fn system_prompt_with(
    setting: Setting,
    extra: Option<&str>,
    tools: &[&str],
    memory: Option<&str>,
) -> String {
    let mut p = String::from(
        "You are Hermes, a capable personal AI assistant. People talk with you through messaging \
         apps, so write like a thoughtful person in a chat: lead with the answer, keep it short \
         unless depth is asked for, and use Markdown sparingly (bold, short lists, fenced code \
         blocks); it is converted for the platform.\n\n\
         You have tools. Use them whenever they give a better answer than guessing, and never \
         invent a tool's result. You have no clock: use `current_time` for anything that depends \
         on the date or time. If a tool fails, read the error, fix the call if you can, otherwise \
         tell the user plainly what did not work.\n",
    );
    if setting.platform == Platform::Cron {
        p.push_str(
            "\nThis is a scheduled job: nobody is reading along, nobody can answer questions or \
             approve actions. Do the work, then answer with what should be delivered. If there is \
             nothing worth sending, answer exactly [SILENT].\n",
        );
    }
    match (setting.platform, setting.chat) {
        (Platform::Cron, _) => {}
        (Platform::Cli, _) => {
            p.push_str("\nThis conversation is in a terminal on the user's own machine.\n")
        }
        (platform, ChatKind::Direct) => {
            p.push_str(&format!(
                "\nThis is a private chat on {}.\n",
                Platform::title(platform)
            ));
        }
        (platform, _) => p.push_str(&format!(
            "\nThis is a group chat on {}. Each user message starts with the sender's name. \
             Answer the person who addressed you; others in the chat can read your reply.\n",
            Platform::title(platform)
        )),
    }
    if tools.contains(&"memory") {
        p.push_str(
            "\nYou remember across conversations: save durable facts about the user and useful \
             notes with the `memory` tool (they appear below from the next conversation on)",
        );
        if tools.contains(&"session_search") {
            p.push_str(", and find what was said in earlier conversations with `session_search`");
        }
        p.push_str(".\n");
    }
    if tools.contains(&"delegate_task") {
        p.push_str(
            "Hand self-contained research or multi-step subtasks to `delegate_task` to keep this \
             conversation focused.\n",
        );
    }
    if let Some(extra) = extra.map(str::trim).filter(|e| !e.is_empty()) {
        p.push('\n');
        p.push_str(extra);
        p.push('\n');
    }
    if let Some(memory) = memory.map(str::trim).filter(|m| !m.is_empty()) {
        p.push('\n');
        p.push_str(memory);
        p.push('\n');
    }
    p
}

/// Make stored history acceptable to providers: start at a user message, give every tool call
/// a result (a call whose result was lost to a crash or a stop gets an explanatory one), and drop
/// results whose call is gone.
pub fn repair_history(history: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let start = history
        .iter()
        .position(|m| m.role == Role::User)
        .unwrap_or(history.len());
    let mut out: Vec<ChatMessage> = Vec::with_capacity(history.len() - start);
    let mut open: Vec<crate::llm::ToolCall> = Vec::new();
    let mut known: HashSet<String> = HashSet::new();

    let close_open = |out: &mut Vec<ChatMessage>, open: &mut Vec<crate::llm::ToolCall>| {
        for call in open.drain(..) {
            out.push(ChatMessage::tool_result(
                &call,
                "error: this call did not finish (the turn was stopped or the daemon restarted)",
            ));
        }
    };

    for m in history.into_iter().skip(start) {
        match m.role {
            Role::Tool => {
                let Some(id) = m.tool_call_id.clone() else {
                    continue;
                };
                if !known.contains(&id) {
                    continue;
                }
                open.retain(|c| c.id != id);
                out.push(m);
            }
            _ => {
                close_open(&mut out, &mut open);
                if m.role == Role::Assistant {
                    for c in &m.tool_calls {
                        known.insert(c.id.clone());
                        open.push(c.clone());
                    }
                }
                out.push(m);
            }
        }
    }
    close_open(&mut out, &mut open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }
    }

    fn asking(ids: &[&str]) -> ChatMessage {
        let mut m = ChatMessage::assistant("");
        m.tool_calls = ids.iter().map(|i| call(i)).collect();
        m
    }

    #[test]
    fn system_prompt_is_stable_and_names_the_setting() {
        let s = Setting {
            platform: Platform::Telegram,
            chat: ChatKind::Group,
        };
        assert_eq!(
            system_prompt(s, Some("Be brief.")),
            system_prompt(s, Some("Be brief."))
        );
        assert!(system_prompt(s, None).contains("group chat on Telegram"));
        assert!(system_prompt(s, Some("Be brief.")).ends_with("Be brief.\n"));
    }

    #[test]
    fn history_is_repaired() {
        let h = vec![
            ChatMessage::tool_result(&call("old"), "orphan"),
            ChatMessage::assistant("cut-off head"),
            ChatMessage::user("q1"),
            asking(&["a", "b"]),
            ChatMessage::tool_result(&call("a"), "ra"),
            // b's result was lost to a crash
            ChatMessage::user("q2"),
            asking(&["c"]),
            ChatMessage::tool_result(&call("zzz"), "result of an unknown call"),
        ];
        let fixed = repair_history(h);
        let shape: Vec<String> = fixed
            .iter()
            .map(|m| match m.role {
                Role::Tool => format!("tool:{}", m.tool_call_id.as_deref().unwrap()),
                r => format!("{}:{}", r.as_str(), m.content),
            })
            .collect();
        assert_eq!(
            shape,
            [
                "user:q1",
                "assistant:",
                "tool:a",
                "tool:b",
                "user:q2",
                "assistant:",
                "tool:c"
            ]
        );
        assert!(fixed[3].content.contains("did not finish"));
    }
}
