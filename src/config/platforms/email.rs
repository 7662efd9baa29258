//! `[email]`: the bot's mailbox (IMAP in, SMTP out), who may write to it, and the adapter built
//! from them.

use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};
use serde::{Deserialize, Serialize};

use super::PlatformSection;
use crate::config::env::{boolean, list};
use crate::config::{Config, ConfigError, EnvSource, Secret};

/// The Email adapter. It runs when enabled with an address, a password and both servers' hosts.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmailConfig {
    /// Off switch.
    pub enabled: bool,
    /// The bot's address. Env: `EMAIL_ADDRESS`.
    pub address: String,
    /// Password for both servers unless they have their own. Env: `EMAIL_PASSWORD`.
    pub password: Secret,
    /// Env: `EMAIL_IMAP_HOST`, `EMAIL_IMAP_PORT`, `EMAIL_IMAP_SECURITY`, `EMAIL_IMAP_USER`,
    /// `EMAIL_IMAP_PASSWORD`.
    pub imap_host: String,
    pub imap_port: u16,
    /// `tls`, `starttls` or `plain` (loopback tests only).
    pub imap_security: String,
    /// Login name; empty: the address.
    pub imap_user: String,
    pub imap_password: Secret,
    /// Env: `EMAIL_SMTP_HOST`, `EMAIL_SMTP_PORT`, `EMAIL_SMTP_SECURITY`, `EMAIL_SMTP_USER`,
    /// `EMAIL_SMTP_PASSWORD`.
    pub smtp_host: String,
    pub smtp_port: u16,
    pub smtp_security: String,
    /// Login name; empty: the address (with an empty password too: no SMTP auth).
    pub smtp_user: String,
    pub smtp_password: Secret,
    /// Addresses, or whole domains (`example.com` / `@example.com`), that may write to the bot.
    /// Env: `EMAIL_ALLOWED_SENDERS` (comma-separated).
    pub allowed_senders: Vec<String>,
    /// Addresses of the operators (served too; see `[access]`). Env: `EMAIL_OPERATORS`.
    pub operators: Vec<String>,
    /// The authserv-id(s) your receiving server writes first in its `Authentication-Results`
    /// header (`mx.example.com`; an entry also covers its subdomains). Only the topmost such
    /// header is read; any other is ignored, since senders can write them. Empty: no sender is
    /// authenticated. Env: `EMAIL_AUTHSERV_IDS` (comma-separated).
    pub authserv_ids: Vec<String>,
    /// Serve only senders that header shows an aligned `dmarc=pass` (or a `dkim=pass` whose
    /// `header.d` aligns with the From domain) for. `false`: refuse only explicit SPF/DKIM/DMARC
    /// failures.
    pub require_auth_pass: bool,
    /// Serve mail that carries no header from `authserv_ids` at all, as unauthenticated: anyone
    /// can then write as an allowed sender. Env: `EMAIL_TRUST_UNAUTHENTICATED`.
    pub trust_unauthenticated: bool,
    /// Attachments above this size are refused and the sender is told.
    pub max_attachment_mb: u64,
    /// Mail above this size is not fetched or read; an authenticated, allowed sender is told.
    /// Env: `EMAIL_MAX_MAIL_MB`.
    pub max_mail_mb: u64,
    /// Poll every `poll_secs` instead of waiting with IDLE (servers without IDLE are polled anyway).
    pub force_poll: bool,
    pub poll_secs: u64,
    /// How often the IMAP IDLE is ended and begun again (the server's answer proves the
    /// connection alive; a server that stops answering is noticed within this plus
    /// `gateway.listener_silence_secs`). RFC 2177 asks for less than 29 minutes.
    pub idle_refresh_secs: u64,
    /// Save a copy of each reply to this folder; empty: no copy. Env: `EMAIL_SENT_FOLDER`.
    pub sent_folder: String,
}

impl Default for EmailConfig {
    fn default() -> Self {
        EmailConfig {
            enabled: true,
            address: String::new(),
            password: Secret::default(),
            imap_host: String::new(),
            imap_port: 993,
            imap_security: "tls".into(),
            imap_user: String::new(),
            imap_password: Secret::default(),
            smtp_host: String::new(),
            smtp_port: 465,
            smtp_security: "tls".into(),
            smtp_user: String::new(),
            smtp_password: Secret::default(),
            allowed_senders: Vec::new(),
            operators: Vec::new(),
            authserv_ids: Vec::new(),
            require_auth_pass: true,
            trust_unauthenticated: false,
            max_attachment_mb: 10,
            max_mail_mb: 25,
            force_poll: false,
            poll_secs: 60,
            idle_refresh_secs: 60,
            sent_folder: String::new(),
        }
    }
}

impl EmailConfig {
    /// The IMAP login and password.
    pub fn imap_login(&self) -> (&str, &str) {
        (
            if self.imap_user.is_empty() {
                &self.address
            } else {
                &self.imap_user
            },
            if self.imap_password.is_empty() {
                self.password.expose()
            } else {
                self.imap_password.expose()
            },
        )
    }

    /// The SMTP login and password (empty login: no authentication).
    pub fn smtp_login(&self) -> (&str, &str) {
        let pass = if self.smtp_password.is_empty() {
            self.password.expose()
        } else {
            self.smtp_password.expose()
        };
        let user = if !self.smtp_user.is_empty() {
            self.smtp_user.as_str()
        } else if pass.is_empty() {
            ""
        } else {
            self.address.as_str()
        };
        (user, pass)
    }
}

impl EmailConfig {
    /// The sender rule in force, in one line; with no authserv-id and no
    /// `trust_unauthenticated` a warning that no mail is served and what to set.
    pub fn sender_rule(&self) -> String {
        let ids = self.authserv_ids.join(", ");
        let checked = if self.require_auth_pass {
            "aligned DMARC/DKIM pass"
        } else {
            "no SPF/DKIM/DMARC failure"
        };
        match (self.authserv_ids.is_empty(), self.trust_unauthenticated) {
            (true, false) => "WARNING: no mail is served: no authserv-id is configured, so no \
                 sender can be authenticated. Set email.authserv_ids (EMAIL_AUTHSERV_IDS) to the \
                 id your server writes first in its Authentication-Results header, or \
                 email.trust_unauthenticated = true (EMAIL_TRUST_UNAUTHENTICATED) to serve \
                 forgeable From: addresses"
                .to_owned(),
            (true, true) => "senders: NOT authenticated (trust_unauthenticated = true): anyone \
                 can write as an allowed sender"
                .to_owned(),
            (false, false) => format!("senders: {checked} from {ids}"),
            (false, true) => format!(
                "senders: {checked} from {ids}; mail without that header is served NOT \
                 authenticated (trust_unauthenticated = true)"
            ),
        }
    }
}

impl PlatformSection for EmailConfig {
    fn platform(&self) -> Platform {
        Platform::Email
    }

    fn is_active(&self) -> bool {
        self.enabled && !self.address.is_empty() && !self.imap_host.is_empty()
    }

    fn how_to_enable(&self) -> &'static str {
        "EMAIL_ADDRESS with EMAIL_IMAP_HOST and EMAIL_SMTP_HOST"
    }

    fn allowed_users(&self) -> Vec<String> {
        self.allowed_senders
            .iter()
            .map(|a| a.to_ascii_lowercase())
            .collect()
    }

    fn operators(&self) -> Vec<String> {
        self.operators
            .iter()
            .map(|a| a.to_ascii_lowercase())
            .collect()
    }

    fn allowlist_names_domains(&self) -> bool {
        true
    }

    fn secrets(&self) -> Vec<&str> {
        vec![
            self.password.expose(),
            self.imap_password.expose(),
            self.smtp_password.expose(),
        ]
    }

    /// `EMAIL_*` variables over the file's values.
    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        let text = |name: &str| env.var(name).map(|v| v.trim().to_owned());
        let port = |name: &str| -> Result<Option<u16>, ConfigError> {
            match env.var(name) {
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| ConfigError::env(name, format!("`{v}` is not a port number"))),
                None => Ok(None),
            }
        };
        if let Some(v) = text("EMAIL_ADDRESS") {
            self.address = v;
        }
        if let Some(v) = text("EMAIL_PASSWORD") {
            self.password = Secret::new(v);
        }
        if let Some(v) = text("EMAIL_IMAP_HOST") {
            self.imap_host = v;
        }
        if let Some(v) = port("EMAIL_IMAP_PORT")? {
            self.imap_port = v;
        }
        if let Some(v) = text("EMAIL_IMAP_SECURITY") {
            self.imap_security = v;
        }
        if let Some(v) = text("EMAIL_IMAP_USER") {
            self.imap_user = v;
        }
        if let Some(v) = text("EMAIL_IMAP_PASSWORD") {
            self.imap_password = Secret::new(v);
        }
        if let Some(v) = text("EMAIL_SMTP_HOST") {
            self.smtp_host = v;
        }
        if let Some(v) = port("EMAIL_SMTP_PORT")? {
            self.smtp_port = v;
        }
        if let Some(v) = text("EMAIL_SMTP_SECURITY") {
            self.smtp_security = v;
        }
        if let Some(v) = text("EMAIL_SMTP_USER") {
            self.smtp_user = v;
        }
        if let Some(v) = text("EMAIL_SMTP_PASSWORD") {
            self.smtp_password = Secret::new(v);
        }
        if let Some(v) = text("EMAIL_ALLOWED_SENDERS") {
            self.allowed_senders = v
                .split([',', ' ', '\n'])
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect();
        }
        if let Some(v) = text("EMAIL_OPERATORS") {
            self.operators = v
                .split([',', ' ', '\n'])
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect();
        }
        if let Some(v) = text("EMAIL_AUTHSERV_IDS") {
            self.authserv_ids = list(&v.to_ascii_lowercase());
        }
        if let Some(v) = text("EMAIL_TRUST_UNAUTHENTICATED") {
            self.trust_unauthenticated = boolean("EMAIL_TRUST_UNAUTHENTICATED", &v)?;
        }
        if let Some(v) = text("EMAIL_MAX_MAIL_MB") {
            self.max_mail_mb = v.parse().map_err(|_| {
                ConfigError::env("EMAIL_MAX_MAIL_MB", format!("`{v}` is not a number of MB"))
            })?;
        }
        if let Some(v) = text("EMAIL_SENT_FOLDER") {
            self.sent_folder = v;
        }
        Ok(())
    }

    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        for (key, value) in [
            ("email.imap_security", &self.imap_security),
            ("email.smtp_security", &self.smtp_security),
        ] {
            if !matches!(
                value.to_ascii_lowercase().as_str(),
                "tls" | "ssl" | "starttls" | "plain" | "none"
            ) {
                return Err(ConfigError::invalid(
                    file,
                    key,
                    format!("`{value}` is not tls, starttls or plain"),
                ));
            }
        }
        if self.is_active() {
            if !self.address.contains('@') {
                return Err(ConfigError::invalid(
                    file,
                    "email.address",
                    format!("`{}` is not an email address", self.address),
                ));
            }
            if self.smtp_host.is_empty() {
                return Err(ConfigError::invalid(
                    file,
                    "email.smtp_host",
                    "an IMAP host is set but no SMTP host to send replies (EMAIL_SMTP_HOST)".into(),
                ));
            }
        }
        if !(1..=1740).contains(&self.idle_refresh_secs) {
            return Err(ConfigError::invalid(
                file,
                "email.idle_refresh_secs",
                "must be between 1 and 1740 (29 minutes)".into(),
            ));
        }
        if self.poll_secs == 0 {
            return Err(ConfigError::invalid(
                file,
                "email.poll_secs",
                "must be at least 1".into(),
            ));
        }
        if self.max_mail_mb == 0 {
            return Err(ConfigError::invalid(
                file,
                "email.max_mail_mb",
                "must be at least 1".into(),
            ));
        }
        if let Some(bad) = self
            .authserv_ids
            .iter()
            .find(|id| id.is_empty() || id.contains([' ', ';', '(', ')', '"', '@']))
        {
            return Err(ConfigError::invalid(
                file,
                "email.authserv_ids",
                format!(
                    "`{bad}` is not an authserv-id: use the first word of your server's \
                     Authentication-Results header, e.g. `mx.example.com`"
                ),
            ));
        }
        Ok(())
    }

    fn summary(&self) -> String {
        if self.is_active() {
            format!(
                "on, {} via IMAP {}:{}, {} allowed sender(s); {}",
                self.address,
                self.imap_host,
                self.imap_port,
                self.allowed_senders.len(),
                self.sender_rule()
            )
        } else {
            "off (set EMAIL_ADDRESS and EMAIL_IMAP_HOST)".to_owned()
        }
    }

    /// The adapter filters senders itself (before a mail is stored), so its allowlist and the
    /// global one's addresses count.
    fn adapter_changed(&self, old: &Config, new: &Config) -> bool {
        old.email != new.email || senders(old) != senders(new)
    }

    fn build(&self, config: &Config) -> Result<Arc<dyn Adapter>, String> {
        #[cfg(feature = "email")]
        {
            use hermes_email::{EmailAdapter, EmailSettings, Policy, Rules, ServerSettings};
            let (imap_user, imap_pass) = self.imap_login();
            let (smtp_user, smtp_pass) = self.smtp_login();
            let adapter = EmailAdapter::new(EmailSettings {
                address: self.address.to_ascii_lowercase(),
                imap: ServerSettings {
                    host: self.imap_host.clone(),
                    port: self.imap_port,
                    security: self.imap_security.parse()?,
                    user: imap_user.to_owned(),
                    password: imap_pass.to_owned(),
                },
                smtp: ServerSettings {
                    host: self.smtp_host.clone(),
                    port: self.smtp_port,
                    security: self.smtp_security.parse()?,
                    user: smtp_user.to_owned(),
                    password: smtp_pass.to_owned(),
                },
                rules: Rules {
                    own_address: self.address.to_ascii_lowercase(),
                    allowed_senders: senders(config),
                    auth: Policy {
                        authserv_ids: self
                            .authserv_ids
                            .iter()
                            .map(|id| id.trim().to_ascii_lowercase())
                            .collect(),
                        require_pass: self.require_auth_pass,
                        trust_unauthenticated: self.trust_unauthenticated,
                        rule: self.sender_rule(),
                    },
                    max_attachment_bytes: self.max_attachment_mb * 1024 * 1024,
                    max_mail_bytes: self.max_mail_mb * 1024 * 1024,
                },
                state_dir: config.home.clone(),
                force_poll: self.force_poll,
                poll_interval: std::time::Duration::from_secs(self.poll_secs),
                // Re-IDLE every minute: the supervisor expects a heartbeat well within its
                // silence limit.
                idle_refresh: std::time::Duration::from_secs(self.idle_refresh_secs),
                sent_folder: (!self.sent_folder.is_empty()).then(|| self.sent_folder.clone()),
            })?;
            Ok(Arc::new(adapter))
        }
        #[cfg(not(feature = "email"))]
        {
            let _ = config;
            Err(super::left_out("email", "EMAIL_IMAP_HOST"))
        }
    }
}

/// Whom the adapter reads mail from: `*` for everyone, else the section's allowlist and
/// operators, the global allowlist's addresses (`email:a@b` or a bare `a@b`) and operators.
fn senders(config: &Config) -> Vec<String> {
    if config.gateway.allow_all_users {
        return vec!["*".into()];
    }
    let global = config
        .gateway
        .allowed_on(Platform::Email, |e| e.contains('@'))
        .into_iter()
        .map(|e| e.to_ascii_lowercase());
    let operators = config.access.operators_on(Platform::Email).into_iter();
    config
        .email
        .allowed_senders
        .iter()
        .chain(&config.email.operators)
        .cloned()
        .chain(global)
        .chain(operators.map(|e| e.to_ascii_lowercase()))
        .collect()
}
