//! One request the fake LLM received, and what tests read from it: messages, system prompt,
//! tool definitions and results, images; plus the tiny PNG tests send to vision models.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

/// An 8-byte PNG signature and four bytes: the image tests send; the fake does not decode it.
pub const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4];
/// What a vision model receives of [`PNG`] (OpenAI shape).
pub const PNG_DATA_URL: &str = "data:image/png;base64,iVBORw0KGgoBAgME";

/// One request as received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub path: String,
    /// Lower-cased header names.
    pub headers: BTreeMap<String, String>,
    /// The parsed JSON body (`Value::String` with the raw text if it was not JSON).
    pub body: Value,
    pub at: Instant,
}

/// Text of a `content` that is a string or an array of text parts/blocks.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let texts = parts.iter().filter(|p| p["type"] == "text");
            texts
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => String::new(),
    }
}

impl RecordedRequest {
    pub fn is_anthropic(&self) -> bool {
        self.path.ends_with("/messages")
    }
    pub fn is_stream(&self) -> bool {
        self.body["stream"] == true
    }
    pub fn model(&self) -> Option<&str> {
        self.body["model"].as_str()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
    /// The content parts (text, images) of the last user message.
    pub fn last_user_parts(&self) -> Vec<Value> {
        let user = self
            .messages()
            .into_iter()
            .rfind(|m| m["role"] == "user")
            .expect("a user message");
        user["content"].as_array().expect("content parts").clone()
    }
    /// The text of every user message, oldest first (`""` for one without plain text).
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
    /// The URL of the image part of the last user message (a `data:` URL), if it has one.
    pub fn image_url(&self) -> Option<String> {
        let parts = self.last_user_parts();
        let image = parts.iter().find(|p| p["type"] == "image_url")?;
        image["image_url"]["url"].as_str().map(str::to_owned)
    }
    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
    pub fn tools(&self) -> Vec<Value> {
        self.body["tools"].as_array().cloned().unwrap_or_default()
    }
    /// Tool names from OpenAI (`function.name`) or Anthropic (`name`) tool definitions.
    pub fn tool_names(&self) -> Vec<String> {
        let name = |t: &Value| {
            t["function"]["name"]
                .as_str()
                .or(t["name"].as_str())
                .map(str::to_string)
        };
        self.tools().iter().filter_map(name).collect()
    }
    /// Text of the last user message that has text (tool-result-only messages are skipped).
    /// The user texts of the turn this request answers: those after the last assistant message.
    pub fn turn_texts(&self) -> Vec<String> {
        let msgs = self.messages();
        let start = msgs
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .map_or(0, |i| i + 1);
        msgs[start..]
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| content_text(&m["content"]))
            .collect()
    }

    pub fn last_user_text(&self) -> Option<String> {
        let msgs = self.messages();
        let users = msgs.iter().rev().filter(|m| m["role"] == "user");
        users
            .map(|m| content_text(&m["content"]))
            .find(|t| !t.is_empty())
    }
    /// The system prompt: Anthropic `system` or OpenAI `system`/`developer` messages.
    pub fn system_text(&self) -> Option<String> {
        if !self.body["system"].is_null() {
            return Some(content_text(&self.body["system"]));
        }
        let msgs = self.messages();
        let sys = msgs
            .iter()
            .filter(|m| m["role"] == "system" || m["role"] == "developer");
        let text: Vec<String> = sys.map(|m| content_text(&m["content"])).collect();
        (!text.is_empty()).then(|| text.join("\n"))
    }
    /// `(tool call id, result text)` for every tool result sent back to the model.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for m in self.messages() {
            if m["role"] == "tool" {
                let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
                out.push((id, content_text(&m["content"])));
            }
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_result" {
                    let id = b["tool_use_id"].as_str().unwrap_or("").to_string();
                    out.push((id, content_text(&b["content"])));
                }
            }
        }
        out
    }
    /// The text of every tool result sent back to the model, in order.
    pub fn tool_result_texts(&self) -> Vec<String> {
        self.tool_results().into_iter().map(|(_, t)| t).collect()
    }
}

/// A request of the background review (memory or skills) that runs after a turn.
pub fn reviewing(req: &RecordedRequest) -> bool {
    req.system_text()
        .is_some_and(|s| s.starts_with("You review a conversation"))
}
