//! The Web API through slack-morphism's client: a connector that accepts `http://` bases as well
//! as `https://` (the SDK's default connector is https-only), a timeout on every call (the SDK has
//! none), errors classified for the outbox and the supervisor, and file downloads with a size cap.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::{AdapterError, SendError};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

/// Who the bot is, learned from `auth.test`.
#[derive(Debug, Clone)]
pub struct BotIdentity {
    pub user_id: String,
    pub bot_id: Option<String>,
    pub team_id: String,
    pub name: String,
}

/// Longest a single Web API call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a file download may take.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

type Connector = SlackClientHyperConnector<HttpsConnector<HttpConnector>>;

/// A Web API client with the bot token.
#[derive(Clone)]
pub(crate) struct Web {
    client: Arc<SlackClient<Connector>>,
    token: SlackApiToken,
    /// Host of the API base: file URLs on it (or on Slack's own hosts) get the bot token.
    api_host: Option<String>,
    http: reqwest::Client,
}

impl Web {
    pub fn new(api_url: &str, bot_token: &str) -> Result<Self, String> {
        let base = url::Url::parse(api_url).map_err(|e| format!("slack.api_url: {e}"))?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| format!("TLS setup: {e}"))?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let connector = SlackClientHyperConnector::from(https)
            .with_slack_api_url(api_url.trim_end_matches('/'));
        let http = reqwest::Client::builder()
            .timeout(DOWNLOAD_TIMEOUT)
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Web {
            client: Arc::new(SlackClient::new(connector)),
            token: SlackApiToken::new(bot_token.into()),
            api_host: base.host_str().map(str::to_owned),
            http,
        })
    }

    /// `auth.test`: who the bot is.
    pub async fn auth_test(&self) -> Result<BotIdentity, AdapterError> {
        let session = self.client.open_session(&self.token);
        let me = timed(session.auth_test())
            .await
            .map_err(listener_error)?
            .map_err(listener_error)?;
        Ok(BotIdentity {
            user_id: me.user_id.0,
            bot_id: me.bot_id.map(|b| b.0),
            team_id: me.team_id.0,
            name: me.user.unwrap_or_else(|| "hermes".into()),
        })
    }

    /// `apps.connections.open` with the app-level token: the Socket Mode URL to connect to.
    pub async fn connections_open(&self, app_token: &str) -> Result<String, AdapterError> {
        let token = SlackApiToken::new(app_token.into());
        let session = self.client.open_session(&token);
        let opened =
            timed(session.apps_connections_open(&SlackApiAppsConnectionOpenRequest::new()))
                .await
                .map_err(listener_error)?
                .map_err(listener_error)?;
        Ok(opened.url.0.to_string())
    }

    /// `chat.postMessage`; returns the message's `ts`.
    pub async fn post(&self, req: &SlackApiChatPostMessageRequest) -> Result<String, Failure> {
        let session = self.client.open_session(&self.token);
        Ok(timed(session.chat_post_message(req)).await??.ts.0)
    }

    /// Share a file in a channel (and thread): `files.getUploadURLExternal`, the upload, then
    /// `files.completeUploadExternal` with the caption; returns the file's id.
    pub async fn upload(
        &self,
        channel: &str,
        thread: Option<&str>,
        name: &str,
        mime: &str,
        bytes: Vec<u8>,
        caption: Option<String>,
    ) -> Result<String, Failure> {
        let session = self.client.open_session(&self.token);
        let ticket = timed(session.get_upload_url_external(
            &SlackApiFilesGetUploadUrlExternalRequest::new(name.to_owned(), bytes.len()),
        ))
        .await??;
        let upload = SlackApiFilesUploadViaUrlRequest::new(ticket.upload_url, bytes, mime.into());
        tokio::time::timeout(DOWNLOAD_TIMEOUT, session.files_upload_via_url(&upload)).await??;
        let file = SlackApiFilesComplete::new(ticket.file_id.clone()).with_title(name.to_owned());
        let mut done = SlackApiFilesCompleteUploadExternalRequest::new(vec![file])
            .with_channel_id(SlackChannelId(channel.to_owned()));
        if let Some(t) = thread {
            done = done.with_thread_ts(SlackTs(t.to_owned()));
        }
        if let Some(c) = caption {
            done = done.with_initial_comment(c);
        }
        timed(session.files_complete_upload_external(&done)).await??;
        Ok(ticket.file_id.0)
    }

    /// The messages of a channel (`conversations.history`) or of one thread
    /// (`conversations.replies`) posted after `oldest`, oldest first, with their metadata. At most
    /// `limit`: the most recent ones when more were posted.
    pub async fn history(
        &self,
        channel: &str,
        thread: Option<&str>,
        oldest: &str,
        limit: u16,
    ) -> Result<Vec<SlackHistoryMessage>, Failure> {
        let session = self.client.open_session(&self.token);
        let limit = limit.to_string();
        let mut params = vec![
            ("channel", Some(channel)),
            ("oldest", Some(oldest)),
            ("limit", Some(limit.as_str())),
            // Without it Slack leaves out the metadata hermes puts on its own posts.
            ("include_all_metadata", Some("true")),
        ];
        let mut messages = match thread {
            Some(ts) => {
                params.push(("ts", Some(ts)));
                let api = &session.http_session_api;
                let r: SlackApiConversationsRepliesResponse =
                    timed(api.http_get("conversations.replies", &params, None)).await??;
                r.messages
            }
            None => {
                let api = &session.http_session_api;
                let r: SlackApiConversationsHistoryResponse =
                    timed(api.http_get("conversations.history", &params, None)).await??;
                // Newest first from Slack.
                let mut m = r.messages;
                m.reverse();
                m
            }
        };
        // `conversations.replies` always starts with the thread's root.
        messages.retain(|m| ts_after(&m.origin.ts.0, oldest));
        Ok(messages)
    }

    /// `chat.update`.
    pub async fn update(&self, req: &SlackApiChatUpdateRequest) -> Result<(), Failure> {
        let session = self.client.open_session(&self.token);
        timed(session.chat_update(req)).await??;
        Ok(())
    }

    /// `users.info`: a display name (best effort, short timeout: it runs before an event is
    /// acknowledged).
    pub async fn user_name(&self, user: &str) -> Option<String> {
        let session = self.client.open_session(&self.token);
        let req = SlackApiUsersInfoRequest::new(SlackUserId(user.to_owned()));
        let info = tokio::time::timeout(Duration::from_millis(1500), session.users_info(&req))
            .await
            .ok()?
            .ok()?;
        let u = info.user;
        let profile = u.profile.as_ref();
        [
            profile.and_then(|p| p.display_name.clone()),
            profile.and_then(|p| p.real_name.clone()),
            u.real_name.clone(),
            u.name.clone(),
        ]
        .into_iter()
        .flatten()
        .find(|n| !n.trim().is_empty())
    }

    /// Download a file Slack hosts, refusing more than `max_bytes`. The bot token goes only to
    /// the API host and Slack's own hosts, never to a URL elsewhere.
    pub async fn download(&self, url: &str, max_bytes: u64) -> Result<Vec<u8>, SendError> {
        let parsed =
            url::Url::parse(url).map_err(|_| SendError::Permanent("not a file URL".into()))?;
        let host = parsed.host_str().unwrap_or_default();
        let trusted = Some(host) == self.api_host.as_deref()
            || host == "slack.com"
            || host.ends_with(".slack.com");
        let mut req = self.http.get(parsed.clone());
        if trusted {
            req = req.bearer_auth(self.token.token_value.0.as_str());
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| SendError::Transient(format!("download: {}", e.without_url())))?;
        let status = resp.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(SendError::RetryAfter(Duration::from_secs(5)));
        }
        if !status.is_success() {
            return Err(match status.as_u16() {
                404 => SendError::NotFound("file".into()),
                401 | 403 => SendError::Forbidden(format!("file download answered {status}")),
                s if s >= 500 => SendError::Transient(format!("file download answered {status}")),
                _ => SendError::Permanent(format!("file download answered {status}")),
            });
        }
        if resp.content_length().is_some_and(|n| n > max_bytes) {
            return Err(SendError::TooLong);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| SendError::Transient(format!("download: {}", e.without_url())))?
        {
            if (bytes.len() + chunk.len()) as u64 > max_bytes {
                return Err(SendError::TooLong);
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

/// A failed Web API call: the SDK's error, or our timeout.
#[derive(Debug)]
pub(crate) enum Failure {
    Slack(SlackClientError),
    Timeout,
}

impl From<SlackClientError> for Failure {
    fn from(e: SlackClientError) -> Self {
        Failure::Slack(e)
    }
}

impl From<tokio::time::error::Elapsed> for Failure {
    fn from(_: tokio::time::error::Elapsed) -> Self {
        Failure::Timeout
    }
}

impl Failure {
    /// Slack's `error` code, for API errors.
    pub fn code(&self) -> Option<&str> {
        match self {
            Failure::Slack(SlackClientError::ApiError(e)) => Some(e.code.as_str()),
            _ => None,
        }
    }
}

/// Whether Slack timestamp `a` (`seconds.micros`) is later than `b`.
pub(crate) fn ts_after(a: &str, b: &str) -> bool {
    fn parts(ts: &str) -> (u64, u64) {
        let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
        (
            s.parse().unwrap_or(0),
            format!("{f:0<6}").parse().unwrap_or(0),
        )
    }
    parts(a) > parts(b)
}

async fn timed<T>(f: impl Future<Output = T>) -> Result<T, tokio::time::error::Elapsed> {
    tokio::time::timeout(CALL_TIMEOUT, f).await
}

/// Errors that mean the token itself is bad.
fn is_auth_code(code: &str) -> bool {
    matches!(
        code,
        "invalid_auth"
            | "not_authed"
            | "account_inactive"
            | "token_revoked"
            | "token_expired"
            | "not_allowed_token_type"
    )
}

fn listener_error(e: impl Into<Failure>) -> AdapterError {
    let e = e.into();
    match &e {
        Failure::Slack(SlackClientError::ApiError(api)) if is_auth_code(&api.code) => {
            AdapterError::Unauthorized(api.code.clone())
        }
        _ => AdapterError::Transient(classify(e).to_string()),
    }
}

/// Map a failed call to the outbox's classes.
pub(crate) fn classify(e: Failure) -> SendError {
    let e = match e {
        Failure::Timeout => return SendError::Transient("Slack did not answer in time".into()),
        Failure::Slack(e) => e,
    };
    match e {
        SlackClientError::RateLimitError(r) => {
            SendError::RetryAfter(r.retry_after.unwrap_or(Duration::from_secs(5)))
        }
        SlackClientError::ApiError(api) => classify_code(&api.code),
        SlackClientError::HttpError(h) if h.status_code.is_server_error() => {
            SendError::Transient(format!("Slack answered HTTP {}", h.status_code))
        }
        SlackClientError::HttpError(h) => {
            SendError::Permanent(format!("Slack answered HTTP {}", h.status_code))
        }
        SlackClientError::ProtocolError(_) => {
            SendError::Transient("unreadable answer from the Slack API".into())
        }
        other => SendError::Transient(format!("network: {other}")),
    }
}

fn classify_code(code: &str) -> SendError {
    let c = code.to_owned();
    match code {
        "ratelimited" | "rate_limited" => SendError::RetryAfter(Duration::from_secs(5)),
        "msg_too_long" | "msg_blocks_too_long" => SendError::TooLong,
        "invalid_blocks" | "invalid_blocks_format" | "invalid_attachments" => {
            SendError::BadFormat(c)
        }
        "channel_not_found" | "message_not_found" | "thread_not_found" | "user_not_found"
        | "file_not_found" => SendError::NotFound(c),
        "not_in_channel"
        | "is_archived"
        | "restricted_action"
        | "cant_update_message"
        | "edit_window_closed"
        | "missing_scope"
        | "ekm_access_denied"
        | "restricted_action_read_only_channel"
        | "team_access_not_granted" => SendError::Forbidden(c),
        "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
            SendError::Transient(c)
        }
        c if is_auth_code(c) => SendError::Permanent(format!("the bot token was rejected ({c})")),
        _ => SendError::Permanent(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_compare_as_times() {
        assert!(ts_after("1700000200.000010", "1700000200.000009"));
        assert!(ts_after("1700000201.000001", "1700000200.999999"));
        assert!(!ts_after("1700000200.000009", "1700000200.000009"));
        assert!(ts_after("1700000200.5", "1700000200.000009"));
    }

    #[test]
    fn api_error_codes_are_classified() {
        assert_eq!(classify_code("msg_too_long"), SendError::TooLong);
        assert!(matches!(
            classify_code("channel_not_found"),
            SendError::NotFound(_)
        ));
        assert!(matches!(
            classify_code("not_in_channel"),
            SendError::Forbidden(_)
        ));
        assert!(matches!(
            classify_code("internal_error"),
            SendError::Transient(_)
        ));
        assert!(matches!(
            classify_code("invalid_blocks"),
            SendError::BadFormat(_)
        ));
        assert!(matches!(
            classify_code("something_new"),
            SendError::Permanent(_)
        ));
    }
}
