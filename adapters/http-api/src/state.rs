//! What every handler of the API shares: the settings, the waiting requests, the inbox, the
//! kept responses and the per-key count; the caller's key; ids; the model check.

use std::sync::Arc;

use axum::http::StatusCode;
use hermes_adapter::{InboundSink, now_millis};

use crate::ApiSettings;
use crate::kept::Kept;
use crate::waiting::Waiting;
use crate::wire::ApiError;

#[derive(Clone)]
pub(crate) struct Api {
    pub settings: Arc<ApiSettings>,
    pub waiting: Arc<Waiting>,
    pub sink: Arc<dyn InboundSink>,
    pub responses: Arc<Kept>,
    /// Requests waiting, per key (the fair share at the door).
    pub in_flight: Arc<dashmap::DashMap<String, usize>>,
}

/// The key a request was made with (its name: the person).
#[derive(Clone)]
pub(crate) struct Caller(pub String);

/// The configured models and `hermes` (the default).
pub(crate) fn model_names(settings: &ApiSettings) -> Vec<String> {
    let mut names = vec!["hermes".to_owned()];
    for m in &settings.models {
        if !names.contains(m) {
            names.push(m.clone());
        }
    }
    names
}

/// A random id (hex), for messages and completions.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        bytes[..8].copy_from_slice(&now_millis().to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuse a model that is neither `hermes` nor a configured one, as OpenAI does.
pub(crate) fn check_model(settings: &ApiSettings, model: &str) -> Result<(), ApiError> {
    if model_names(settings).iter().any(|m| m == model) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!("The model `{model}` does not exist here; GET /v1/models lists them (`hermes` is the default)"),
    )
    .code("model_not_found"))
}
