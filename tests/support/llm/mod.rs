//! The fake LLM provider: the server handle and scripted replies tests drive (`fake`), the
//! requests it records and what tests read from them (`request`), and the OpenAI and Anthropic
//! wire formats it answers in (`wire`).

mod fake;
mod request;
mod wire;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use fake::{FakeLlm, Gate, Reply, Transcription};
#[allow(unused_imports)]
pub use request::{PNG, PNG_DATA_URL, RecordedRequest, reviewing};
