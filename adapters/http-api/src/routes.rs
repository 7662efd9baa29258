//! The HTTP side: API keys (one person each), CORS, `GET /v1/models`, and the routes of
//! `completions.rs` and `responses.rs`; errors in OpenAI's shape.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hermes_adapter::InboundSink;

use crate::state::{Api, Caller, model_names};
use crate::waiting::Waiting;
use crate::wire::{self, ApiError};
use crate::{ApiSettings, approvals, completions, responses};

pub(crate) fn router(
    settings: Arc<ApiSettings>,
    waiting: Arc<Waiting>,
    sink: Arc<dyn InboundSink>,
) -> Router {
    let api = Api {
        settings,
        waiting,
        sink,
        responses: Arc::default(),
        in_flight: Arc::default(),
    };
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(completions::chat_completions))
        .route("/v1/responses", post(responses::create))
        .route("/v1/responses/{id}", get(responses::fetch))
        .route("/v1/hermes/approvals", get(approvals::list))
        .route("/v1/hermes/approvals/{id}", post(approvals::answer))
        .route_layer(axum::middleware::from_fn_with_state(
            api.clone(),
            authorized,
        ))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "no such endpoint",
            )
            .code("unknown_url")
        })
        .layer(axum::middleware::from_fn_with_state(api.clone(), cors))
        .with_state(api)
}

/// The key's name, if the request carries one of the configured keys.
async fn authorized(State(api): State<Api>, mut request: Request, next: Next) -> Response {
    let name = api
        .settings
        .keys
        .iter()
        .find(|(_, token)| hermes_listener::bearer::carries(request.headers(), token))
        .map(|(name, _)| name.clone());
    match name {
        Some(name) => {
            request.extensions_mut().insert(Caller(name));
            next.run(request).await
        }
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Incorrect API key provided: send one of this hermes' [api.keys] as Authorization: Bearer <key>",
        )
        .code("invalid_api_key")
        .into_response(),
    }
}

/// CORS for the configured origins only; a preflight is answered here.
async fn cors(State(api): State<Api>, request: Request, next: Next) -> Response {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| api.settings.cors_origins.iter().any(|a| a == o))
        .map(str::to_owned);
    let preflight = request.method() == Method::OPTIONS;
    let mut response = if preflight && origin.is_some() {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    if let Some(origin) = origin.and_then(|o| HeaderValue::from_str(&o).ok()) {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type, x-hermes-session"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
    }
    response
}

async fn models(State(api): State<Api>) -> Response {
    axum::Json(wire::models(&model_names(&api.settings))).into_response()
}
