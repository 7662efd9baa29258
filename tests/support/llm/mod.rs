//! The fake LLM provider: the server handle, scripted replies and recorded requests tests drive
//! (`fake`), and the OpenAI and Anthropic wire formats it answers in (`wire`).

mod fake;
mod wire;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use fake::{FakeLlm, Gate, RecordedRequest, Reply, Transcription};
