//! Logging in once and staying the same device: the saved session is restored, or a new login
//! (password or access token) is made and saved; plus the raw calls `hermes doctor` uses.

use std::time::Duration;

use hermes_adapter::AdapterError;
use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::config::RequestConfig;
use matrix_sdk::{Client, SessionMeta, SessionTokens};

use crate::state::SavedSession;
use crate::{Credentials, MatrixAdapter};

impl MatrixAdapter {
    /// The logged-in client: the saved session restored, or a new login saved.
    pub(crate) async fn client(&self) -> Result<&Client, AdapterError> {
        self.client.get_or_try_init(|| self.connect()).await
    }

    async fn connect(&self) -> Result<Client, AdapterError> {
        let io = |e: std::io::Error| {
            AdapterError::Fatal(format!(
                "matrix state directory {}: {e}",
                self.settings.state_dir.display()
            ))
        };
        self.state.create().map_err(io)?;
        let hs = self.homeserver();
        let saved = self
            .state
            .session()
            .filter(|s| s.homeserver == hs && s.user_id == self.settings.user_id);
        if saved.is_none() {
            // A new login is a new device: the old device's store must not be reused.
            self.state.reset().map_err(io)?;
        }
        let client = self.build_client().await?;
        let session = match saved {
            Some(s) => {
                tracing::info!(user = %s.user_id, device = %s.device_id, "matrix: session restored");
                s
            }
            None => {
                let s = self.login(&client).await?;
                tracing::info!(user = %s.user_id, device = %s.device_id, "matrix: new login, new device");
                s
            }
        };
        // A token from a login is a secret the configuration never held: scrub it everywhere.
        hermes_adapter::register_secret(&session.access_token);
        let restore = MatrixSession {
            meta: SessionMeta {
                user_id: session.user_id.as_str().try_into().map_err(|e| {
                    AdapterError::Fatal(format!("matrix user id `{}`: {e}", session.user_id))
                })?,
                device_id: session.device_id.as_str().into(),
            },
            tokens: SessionTokens {
                access_token: session.access_token.clone(),
                refresh_token: None,
            },
        };
        if client.session_meta().is_none() {
            client.restore_session(restore).await.map_err(|e| {
                AdapterError::Transient(format!("matrix: restoring the session: {e}"))
            })?;
        }
        Ok(client)
    }

    async fn build_client(&self) -> Result<Client, AdapterError> {
        Client::builder()
            .homeserver_url(self.homeserver())
            // The configured URL wins over the one the login answer names (a proxy, a tunnel,
            // an internal address would otherwise be left for the public one).
            .respect_login_well_known(false)
            .sqlite_store(self.state.store(), None)
            .request_config(
                RequestConfig::new()
                    .timeout(Duration::from_secs(30))
                    .retry_limit(2),
            )
            .build()
            .await
            .map_err(|e| AdapterError::Transient(format!("matrix client: {e}")))
    }

    /// Log in with the configured credentials and save the session.
    async fn login(&self, client: &Client) -> Result<SavedSession, AdapterError> {
        let session = match &self.settings.credentials {
            Credentials::Password(password) => {
                let r = client
                    .matrix_auth()
                    .login_username(&self.settings.user_id, password)
                    .initial_device_display_name(&self.settings.device_name)
                    .send()
                    .await
                    .map_err(|e| login_error("login", &e))?;
                SavedSession {
                    homeserver: self.homeserver(),
                    user_id: self.settings.user_id.clone(),
                    device_id: r.device_id.to_string(),
                    access_token: r.access_token,
                }
            }
            Credentials::AccessToken(token) => {
                let (user, device) = whoami(&self.homeserver(), token).await?;
                let device = device.ok_or_else(|| {
                    AdapterError::Unauthorized(
                        "this access token has no device; use MATRIX_PASSWORD, or a token from a login".into(),
                    )
                })?;
                if user != self.settings.user_id {
                    return Err(AdapterError::Unauthorized(format!(
                        "the access token belongs to {user}, not MATRIX_USER_ID {}",
                        self.settings.user_id
                    )));
                }
                SavedSession {
                    homeserver: self.homeserver(),
                    user_id: user,
                    device_id: device,
                    access_token: token.clone(),
                }
            }
        };
        self.state
            .save_session(&session)
            .map_err(|e| AdapterError::Fatal(format!("matrix: saving the session: {e}")))?;
        Ok(session)
    }
}

/// `GET /account/whoami` with `token`: the user id and device id it belongs to.
pub(crate) async fn whoami(
    homeserver: &str,
    token: &str,
) -> Result<(String, Option<String>), AdapterError> {
    let r = http()?
        .get(format!("{homeserver}/_matrix/client/v3/account/whoami"))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| AdapterError::Transient(format!("matrix whoami: {}", e.without_url())))?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    if status.as_u16() == 401 || status.as_u16() == 403 {
        return Err(AdapterError::Unauthorized(format!(
            "matrix access token rejected: {}",
            body["errcode"].as_str().unwrap_or("")
        )));
    }
    if !status.is_success() {
        return Err(AdapterError::Transient(format!(
            "matrix whoami: HTTP {status}"
        )));
    }
    let user = body["user_id"].as_str().unwrap_or_default().to_owned();
    Ok((user, body["device_id"].as_str().map(str::to_owned)))
}

/// `POST /login` with a password; returns the access token.
pub(crate) async fn password_login(
    homeserver: &str,
    user: &str,
    password: &str,
) -> Result<String, AdapterError> {
    let body = serde_json::json!({
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": user},
        "password": password,
        "initial_device_display_name": "hermes doctor",
    });
    let r = http()?
        .post(format!("{homeserver}/_matrix/client/v3/login"))
        .json(&body)
        .send()
        .await
        .map_err(|e| AdapterError::Transient(format!("matrix login: {}", e.without_url())))?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    match body["access_token"].as_str() {
        Some(t) if status.is_success() => Ok(t.to_owned()),
        _ if matches!(status.as_u16(), 401 | 403) => Err(AdapterError::Unauthorized(format!(
            "matrix login as {user} refused: {}",
            body["errcode"].as_str().unwrap_or("")
        ))),
        _ => Err(AdapterError::Transient(format!(
            "matrix login: HTTP {status}"
        ))),
    }
}

/// `POST /logout`: ends the session and deletes its device.
pub(crate) async fn logout(homeserver: &str, token: &str) {
    if let Ok(http) = http() {
        let _ = http
            .post(format!("{homeserver}/_matrix/client/v3/logout"))
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .send()
            .await;
    }
}

fn http() -> Result<reqwest::Client, AdapterError> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .map_err(|e| AdapterError::Fatal(format!("http client: {e}")))
}

fn login_error(what: &str, e: &matrix_sdk::Error) -> AdapterError {
    match e.as_client_api_error().map(|a| a.status_code.as_u16()) {
        Some(401 | 403) => AdapterError::Unauthorized(format!("matrix {what}: {e}")),
        _ => AdapterError::Transient(format!("matrix {what}: {e}")),
    }
}
