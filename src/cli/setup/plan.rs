//! What `hermes setup` will write: the answers (credentials per platform, allowlists, the
//! model), the candidate configuration they make (what verification talks to), and from them
//! the keys for `config.toml` and the secrets for `hermes.env`.

use std::collections::BTreeMap;

use hermes_adapter::Platform;

use crate::config::{
    Config, DiscordConfig, PlatformSection, ProviderKind, Secret, SlackConfig, TelegramConfig,
};

/// The credentials of one platform, as asked or given.
#[derive(Clone)]
pub(super) enum Creds {
    Telegram {
        token: Secret,
    },
    Discord {
        token: Secret,
    },
    /// Socket Mode: a bot token and an app-level token.
    Slack {
        bot_token: Secret,
        app_token: Secret,
    },
    Email {
        address: String,
        password: Secret,
        imap_host: String,
        smtp_host: String,
        authserv_ids: Vec<String>,
    },
    Matrix {
        homeserver: String,
        user_id: String,
        password: Secret,
    },
}

impl Creds {
    pub(super) fn platform(&self) -> Platform {
        match self {
            Creds::Telegram { .. } => Platform::Telegram,
            Creds::Discord { .. } => Platform::Discord,
            Creds::Slack { .. } => Platform::Slack,
            Creds::Email { .. } => Platform::Email,
            Creds::Matrix { .. } => Platform::Matrix,
        }
    }

    fn secrets(&self) -> Vec<&Secret> {
        match self {
            Creds::Telegram { token } | Creds::Discord { token } => vec![token],
            Creds::Slack {
                bot_token,
                app_token,
            } => vec![bot_token, app_token],
            Creds::Email { password, .. } | Creds::Matrix { password, .. } => vec![password],
        }
    }
}

/// The platforms the wizard offers, in the order it lists them.
pub(super) const PLATFORMS: [Platform; 5] = [
    Platform::Telegram,
    Platform::Discord,
    Platform::Slack,
    Platform::Email,
    Platform::Matrix,
];

/// Whether this binary was built with `platform`'s adapter.
pub(super) fn built_in(platform: Platform) -> bool {
    let built = [
        (Platform::Telegram, cfg!(feature = "telegram")),
        (Platform::Discord, cfg!(feature = "discord")),
        (Platform::Slack, cfg!(feature = "slack")),
        (Platform::Email, cfg!(feature = "email")),
        (Platform::Matrix, cfg!(feature = "matrix")),
    ];
    built.iter().any(|(p, on)| *p == platform && *on)
}

/// The model provider, verified by listing its models.
#[derive(Clone)]
pub(super) struct Llm {
    pub kind: ProviderKind,
    pub base_url: String,
    pub api_key: Secret,
    pub model: String,
}

/// One `[section] key = value` of `config.toml`.
pub(super) use crate::cli::import::mapping::{Setting, TomlValue as Value};

/// Everything answered so far.
pub(super) struct Plan {
    /// The configuration as loaded (file and environment) with the answers applied: what
    /// verification uses, so it talks to the same servers the daemon will.
    pub config: Config,
    creds: Vec<Creds>,
    allowed: BTreeMap<&'static str, Vec<String>>,
    allow_all: bool,
    pairing: bool,
    llm: Option<Llm>,
}

impl Plan {
    pub(super) fn new(config: Config) -> Plan {
        Plan {
            config,
            creds: Vec::new(),
            allowed: BTreeMap::new(),
            allow_all: false,
            pairing: false,
            llm: None,
        }
    }

    /// The platforms set up so far.
    pub(super) fn platforms(&self) -> Vec<Platform> {
        self.creds.iter().map(Creds::platform).collect()
    }

    /// Take `creds` (replacing earlier ones of the same platform) into the candidate.
    pub(super) fn set_creds(&mut self, creds: Creds) {
        let c = &mut self.config;
        match &creds {
            Creds::Telegram { token } => {
                c.telegram.enabled = true;
                c.telegram.bot_token = token.clone();
            }
            Creds::Discord { token } => {
                c.discord.enabled = true;
                c.discord.bot_token = token.clone();
            }
            Creds::Slack {
                bot_token,
                app_token,
            } => {
                c.slack.enabled = true;
                c.slack.bot_token = bot_token.clone();
                c.slack.app_token = app_token.clone();
            }
            Creds::Email {
                address,
                password,
                imap_host,
                smtp_host,
                authserv_ids,
            } => {
                c.email.enabled = true;
                c.email.address = address.clone();
                c.email.password = password.clone();
                c.email.imap_host = imap_host.clone();
                c.email.smtp_host = smtp_host.clone();
                c.email.authserv_ids = authserv_ids.clone();
            }
            Creds::Matrix {
                homeserver,
                user_id,
                password,
            } => {
                c.matrix.enabled = true;
                c.matrix.homeserver = homeserver.clone();
                c.matrix.user_id = user_id.clone();
                c.matrix.password = password.clone();
            }
        }
        for secret in creds.secrets() {
            crate::logging::register_secret(secret.expose());
        }
        self.creds.retain(|c| c.platform() != creds.platform());
        self.creds.push(creds);
    }

    /// The people served on `platform`, checked by the platform's own rules (numeric Telegram
    /// ids, full Matrix ids, …); the error names what is wrong.
    pub(super) fn set_allowed(
        &mut self,
        platform: Platform,
        ids: Vec<String>,
    ) -> Result<(), String> {
        let c = &mut self.config;
        let section: &dyn PlatformSection = match platform {
            Platform::Telegram => {
                c.telegram.allowed_users = ids.clone();
                &c.telegram
            }
            Platform::Discord => {
                c.discord.allowed_users = ids.clone();
                &c.discord
            }
            Platform::Slack => {
                c.slack.allowed_users = ids.clone();
                &c.slack
            }
            Platform::Email => {
                c.email.allowed_senders = ids.clone();
                &c.email
            }
            Platform::Matrix => {
                c.matrix.allowed_users = ids.clone();
                &c.matrix
            }
            other => return Err(format!("{other} is not set up by hermes setup")),
        };
        section.validate(None).map_err(|e| e.to_string())?;
        self.allowed.insert(platform.as_str(), ids);
        Ok(())
    }

    /// Serve everyone who writes (a public bot).
    pub(super) fn set_allow_all(&mut self) {
        self.allow_all = true;
        self.config.gateway.allow_all_users = true;
    }

    /// Strangers get a pairing code the operator approves (`hermes pairing approve`).
    pub(super) fn set_pairing(&mut self) {
        self.pairing = true;
        self.config.access.pairing = true;
    }

    pub(super) fn set_llm(&mut self, llm: Llm) {
        crate::logging::register_secret(llm.api_key.expose());
        self.llm = Some(llm);
    }

    /// Every secret answered, to keep them out of what is printed.
    pub(super) fn secrets(&self) -> Vec<&Secret> {
        let mut all: Vec<&Secret> = self.creds.iter().flat_map(Creds::secrets).collect();
        all.extend(self.llm.as_ref().map(|l| &l.api_key));
        all
    }

    /// `text` with every secret answered replaced by `***`.
    pub(super) fn scrub(&self, text: &str) -> String {
        scrub(&self.secrets(), text)
    }

    /// The keys for `config.toml`.
    pub(super) fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        let mut set = |section, key, value| {
            out.push(Setting {
                section,
                key,
                value,
            })
        };
        let text = |s: &str| Value::Text(s.to_owned());
        for creds in &self.creds {
            let name = creds.platform().as_str();
            match creds {
                Creds::Telegram { .. } => {
                    let url = &self.config.telegram.api_url;
                    if *url != TelegramConfig::default().api_url {
                        set("telegram", "api_url", text(url));
                    }
                }
                Creds::Discord { .. } => {
                    let url = &self.config.discord.api_url;
                    if *url != DiscordConfig::default().api_url {
                        set("discord", "api_url", text(url));
                    }
                }
                Creds::Slack { .. } => {
                    let url = &self.config.slack.api_url;
                    if *url != SlackConfig::default().api_url {
                        set("slack", "api_url", text(url));
                    }
                }
                Creds::Email {
                    address,
                    imap_host,
                    smtp_host,
                    authserv_ids,
                    ..
                } => {
                    set("email", "address", text(address));
                    set("email", "imap_host", text(imap_host));
                    set("email", "smtp_host", text(smtp_host));
                    if !authserv_ids.is_empty() {
                        set("email", "authserv_ids", Value::List(authserv_ids.clone()));
                    }
                }
                Creds::Matrix {
                    homeserver,
                    user_id,
                    ..
                } => {
                    set("matrix", "homeserver", text(homeserver));
                    set("matrix", "user_id", text(user_id));
                }
            }
            set(name_static(name), "enabled", Value::Bool(true));
            if let Some(ids) = self.allowed.get(name) {
                let key = if creds.platform() == Platform::Email {
                    "allowed_senders"
                } else {
                    "allowed_users"
                };
                set(name_static(name), key, Value::List(ids.clone()));
            }
        }
        if self.allow_all {
            set("gateway", "allow_all_users", Value::Bool(true));
        }
        if self.pairing {
            set("access", "pairing", Value::Bool(true));
        }
        if let Some(llm) = &self.llm {
            let provider = match llm.kind {
                ProviderKind::Openai => "openai",
                ProviderKind::Anthropic => "anthropic",
            };
            set("llm", "provider", text(provider));
            set("llm", "base_url", text(&llm.base_url));
            set("llm", "model", text(&llm.model));
        }
        out
    }

    /// The variables for `hermes.env` (name, value), and those to remove because they would
    /// shadow the ones written (an OpenAI key shadows an Anthropic one).
    pub(super) fn env_vars(&self) -> (Vec<(&'static str, String)>, Vec<&'static str>) {
        let mut vars = Vec::new();
        let mut remove = Vec::new();
        let mut put = |name, secret: &Secret| {
            if !secret.is_empty() {
                vars.push((name, secret.expose().to_owned()));
            }
        };
        for creds in &self.creds {
            match creds {
                Creds::Telegram { token } => put("TELEGRAM_BOT_TOKEN", token),
                Creds::Discord { token } => put("DISCORD_BOT_TOKEN", token),
                Creds::Slack {
                    bot_token,
                    app_token,
                } => {
                    put("SLACK_BOT_TOKEN", bot_token);
                    put("SLACK_APP_TOKEN", app_token);
                }
                Creds::Email { password, .. } => put("EMAIL_PASSWORD", password),
                Creds::Matrix { password, .. } => put("MATRIX_PASSWORD", password),
            }
        }
        if let Some(llm) = &self.llm {
            match llm.kind {
                ProviderKind::Openai => put("OPENAI_API_KEY", &llm.api_key),
                ProviderKind::Anthropic => {
                    put("ANTHROPIC_API_KEY", &llm.api_key);
                    remove.push("OPENAI_API_KEY");
                }
            }
            if llm.api_key.is_empty() && llm.kind == ProviderKind::Openai {
                // A keyless local server: an old key would be sent to it.
                remove.push("OPENAI_API_KEY");
            }
        }
        (vars, remove)
    }
}

/// The section name as the `'static` string a [`Setting`] holds.
fn name_static(name: &str) -> &'static str {
    PLATFORMS
        .iter()
        .map(|p| p.as_str())
        .find(|n| *n == name)
        .unwrap_or("gateway")
}

/// A comma-, space- or line-separated list, as the environment variables take them.
pub(super) fn split_list(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `text` with each of `secrets` replaced by `***`.
pub(super) fn scrub(secrets: &[&Secret], text: &str) -> String {
    secrets
        .iter()
        .fold(text.to_owned(), |text, secret| secret.scrub(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_telegram_plan_writes_its_keys_and_keeps_the_token_for_the_env_file() {
        let mut config = Config::default();
        config.telegram.api_url = "http://127.0.0.1:9/".trim_end_matches('/').into();
        let mut plan = Plan::new(config);
        plan.set_creds(Creds::Telegram {
            token: Secret::new("123:secret-token"),
        });
        plan.set_allowed(Platform::Telegram, vec!["111".into()])
            .unwrap();
        plan.set_llm(Llm {
            kind: ProviderKind::Openai,
            base_url: "http://127.0.0.1:8/v1".into(),
            api_key: Secret::new("sk-key-1234"),
            model: "m".into(),
        });
        let settings = plan.settings();
        let find = |s: &str, k: &str| {
            settings
                .iter()
                .find(|x| x.section == s && x.key == k)
                .map(|x| x.value.clone())
        };
        assert_eq!(
            find("telegram", "api_url"),
            Some(Value::Text("http://127.0.0.1:9".into()))
        );
        assert_eq!(
            find("telegram", "allowed_users"),
            Some(Value::List(vec!["111".into()]))
        );
        assert_eq!(find("llm", "model"), Some(Value::Text("m".into())));
        assert!(
            settings
                .iter()
                .all(|s| !s.value.to_string().contains("secret-token"))
        );
        let (vars, remove) = plan.env_vars();
        assert_eq!(
            vars,
            [
                ("TELEGRAM_BOT_TOKEN", "123:secret-token".to_owned()),
                ("OPENAI_API_KEY", "sk-key-1234".to_owned())
            ]
        );
        assert!(remove.is_empty());
        assert_eq!(plan.scrub("bad token 123:secret-token"), "bad token ***");
    }

    #[test]
    fn an_allowlist_the_platform_refuses_is_an_error_naming_the_key() {
        let mut plan = Plan::new(Config::default());
        let err = plan
            .set_allowed(Platform::Telegram, vec!["@ann".into()])
            .unwrap_err();
        assert!(err.contains("telegram.allowed_users"), "{err}");
    }
}
