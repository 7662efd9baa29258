//! Language model providers behind one trait.

mod types;

pub use types::{
    ChatMessage, ChatRequest, ChatResponse, FinishReason, Role, ToolCall, ToolSchema, Usage,
};
