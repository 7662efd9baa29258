//! `hermes gateway`: the daemon in the foreground.

use std::process::ExitCode;
use std::sync::Arc;

use hermes_adapter::Adapter;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::config::Config;
use crate::gateway::{Gateway, Reloader};
use crate::store::Store;

/// The adapters the configuration enables (and this build includes).
pub(super) fn adapters(config: &Config) -> Result<Vec<Arc<dyn Adapter>>, String> {
    #[allow(unused_mut)]
    let mut adapters: Vec<Arc<dyn Adapter>> = Vec::new();
    if config.telegram.is_active() {
        #[cfg(feature = "telegram")]
        {
            let api_url = config
                .telegram
                .api_url
                .parse()
                .map_err(|e| format!("telegram.api_url: {e}"))?;
            adapters.push(Arc::new(hermes_telegram::TelegramAdapter::new(
                hermes_telegram::TelegramSettings {
                    token: config.telegram.bot_token.expose().to_owned(),
                    api_url,
                    poll_timeout_secs: config.telegram.poll_timeout_secs,
                },
            )));
        }
        #[cfg(not(feature = "telegram"))]
        return Err(
            "TELEGRAM_BOT_TOKEN is set but this hermes was built without the `telegram` feature"
                .into(),
        );
    }
    if config.discord.is_active() {
        #[cfg(feature = "discord")]
        adapters.push(Arc::new(discord_adapter(&config.discord)?));
        #[cfg(not(feature = "discord"))]
        return Err(
            "DISCORD_BOT_TOKEN is set but this hermes was built without the `discord` feature"
                .into(),
        );
    }
    if config.slack.is_active() {
        #[cfg(feature = "slack")]
        adapters.push(Arc::new(slack_adapter(&config.slack)?));
        #[cfg(not(feature = "slack"))]
        return Err(
            "SLACK_BOT_TOKEN is set but this hermes was built without the `slack` feature".into(),
        );
    }
    if config.email.is_active() {
        #[cfg(feature = "email")]
        adapters.push(Arc::new(email_adapter(config)?));
        #[cfg(not(feature = "email"))]
        return Err(
            "EMAIL_IMAP_HOST is set but this hermes was built without the `email` feature".into(),
        );
    }
    if config.matrix.is_active() {
        #[cfg(feature = "matrix")]
        adapters.push(Arc::new(matrix_adapter(config)?));
        #[cfg(not(feature = "matrix"))]
        return Err(
            "MATRIX_HOMESERVER is set but this hermes was built without the `matrix` feature"
                .into(),
        );
    }
    Ok(adapters)
}

#[cfg(feature = "matrix")]
fn matrix_adapter(config: &Config) -> Result<hermes_matrix::MatrixAdapter, String> {
    use hermes_matrix::{Credentials, MatrixAdapter, MatrixSettings};
    let c = &config.matrix;
    let credentials = if c.password.is_empty() {
        Credentials::AccessToken(c.access_token.expose().to_owned())
    } else {
        Credentials::Password(c.password.expose().to_owned())
    };
    // Invites are accepted from the people the bot serves: the Matrix allowlist and the global
    // one's Matrix ids (`matrix:@a:b` or a bare `@a:b`).
    let allowed_inviters = if config.gateway.allow_all_users {
        vec!["*".into()]
    } else {
        let global = config.gateway.allowed_users.iter().filter_map(|e| {
            let e = e.trim();
            let e = e.strip_prefix("matrix:").unwrap_or(e);
            e.starts_with('@').then(|| e.to_owned())
        });
        c.allowed_users.iter().cloned().chain(global).collect()
    };
    Ok(MatrixAdapter::new(MatrixSettings {
        homeserver: c
            .homeserver
            .parse()
            .map_err(|e| format!("matrix.homeserver: {e}"))?,
        user_id: c.user_id.clone(),
        credentials,
        allowed_inviters,
        state_dir: config.home.join("matrix"),
        sync_timeout: std::time::Duration::from_secs(c.sync_timeout_secs),
        device_name: c.device_name.clone(),
    }))
}

#[cfg(feature = "email")]
fn email_adapter(config: &Config) -> Result<hermes_email::EmailAdapter, String> {
    use hermes_email::{EmailAdapter, EmailSettings, Rules, ServerSettings};
    let c = &config.email;
    let (imap_user, imap_pass) = c.imap_login();
    let (smtp_user, smtp_pass) = c.smtp_login();
    EmailAdapter::new(EmailSettings {
        address: c.address.to_ascii_lowercase(),
        imap: ServerSettings {
            host: c.imap_host.clone(),
            port: c.imap_port,
            security: c.imap_security.parse()?,
            user: imap_user.to_owned(),
            password: imap_pass.to_owned(),
        },
        smtp: ServerSettings {
            host: c.smtp_host.clone(),
            port: c.smtp_port,
            security: c.smtp_security.parse()?,
            user: smtp_user.to_owned(),
            password: smtp_pass.to_owned(),
        },
        rules: Rules {
            own_address: c.address.to_ascii_lowercase(),
            allowed_senders: if config.gateway.allow_all_users {
                vec!["*".into()]
            } else {
                // The global allowlist's addresses (`email:a@b` or a bare `a@b`) count too.
                let global = config.gateway.allowed_users.iter().filter_map(|e| {
                    let e = e.trim();
                    let e = e.strip_prefix("email:").unwrap_or(e);
                    e.contains('@').then(|| e.to_ascii_lowercase())
                });
                c.allowed_senders.iter().cloned().chain(global).collect()
            },
            require_auth_pass: c.require_auth_pass,
            max_attachment_bytes: c.max_attachment_mb * 1024 * 1024,
        },
        state_dir: config.home.clone(),
        force_poll: c.force_poll,
        poll_interval: std::time::Duration::from_secs(c.poll_secs),
        // Re-IDLE every minute: the supervisor expects a heartbeat well within its silence limit.
        idle_refresh: std::time::Duration::from_secs(60),
        sent_folder: (!c.sent_folder.is_empty()).then(|| c.sent_folder.clone()),
    })
}

#[cfg(feature = "discord")]
fn discord_adapter(
    c: &crate::config::DiscordConfig,
) -> Result<hermes_discord::DiscordAdapter, String> {
    use crate::config::DiscordConfig;
    let api_url = c
        .api_url
        .parse()
        .map_err(|e| format!("discord.api_url: {e}"))?;
    Ok(hermes_discord::DiscordAdapter::new(
        hermes_discord::DiscordSettings {
            token: c.bot_token.expose().to_owned(),
            api_url,
            gateway_url: c
                .gateway_url
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| format!("discord.gateway_url: {e}"))?,
            allowed_guilds: DiscordConfig::ids(&c.allowed_guilds),
            allowed_roles: DiscordConfig::ids(&c.allowed_roles),
            free_response_channels: DiscordConfig::ids(&c.free_response_channels),
            require_mention: c.require_mention,
            auto_thread: c.auto_thread,
            message_content: c.message_content,
        },
    ))
}

#[cfg(feature = "slack")]
fn slack_adapter(c: &crate::config::SlackConfig) -> Result<hermes_slack::SlackAdapter, String> {
    use hermes_slack::{SlackAdapter, SlackMode, SlackSettings};
    let mode = if !c.app_token.is_empty() {
        SlackMode::Socket {
            app_token: c.app_token.expose().to_owned(),
        }
    } else {
        SlackMode::Events {
            signing_secret: c.signing_secret.expose().to_owned(),
            listen: c
                .events_listen
                .parse()
                .map_err(|e| format!("slack.events_listen: {e}"))?,
        }
    };
    SlackAdapter::new(SlackSettings {
        bot_token: c.bot_token.expose().to_owned(),
        mode,
        api_url: c.api_url.clone(),
        allowed_channels: c.allowed_channels.clone(),
        allowed_teams: c.allowed_teams.clone(),
        reply_in_thread: c.reply_in_thread,
        socket_idle: std::time::Duration::from_secs(c.socket_idle_secs),
    })
}

pub(super) async fn gateway(config: Config, path: Option<std::path::PathBuf>) -> ExitCode {
    let provider = match super::provider(&config) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let adapters = match adapters(&config) {
        Ok(a) if a.is_empty() => {
            eprintln!(
                "hermes: no messaging platform configured: set TELEGRAM_BOT_TOKEN (from @BotFather), DISCORD_BOT_TOKEN (from the Discord developer portal) SLACK_BOT_TOKEN (with SLACK_APP_TOKEN or SLACK_SIGNING_SECRET), EMAIL_ADDRESS with EMAIL_IMAP_HOST and EMAIL_SMTP_HOST, or MATRIX_HOMESERVER with MATRIX_USER_ID and MATRIX_PASSWORD, or the [telegram] / [discord] / [slack] / [email] / [matrix] section of the config file"
            );
            return ExitCode::from(2);
        }
        Ok(a) => a,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::from(2);
        }
    };
    let store = match Store::open(&config.database_path()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(home = %config.home.display(), model = %config.llm.model, provider = %provider.describe(), "starting hermes gateway {}", env!("CARGO_PKG_VERSION"));
    let agent = match Agent::new(&config, provider, store.clone()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (reload_tx, reload_rx) = tokio::sync::mpsc::channel(1);
    let reloader = Reloader {
        load: Box::new(move || {
            super::load_config(path.as_deref()).map_err(|e| format!("configuration error: {e}"))
        }),
        adapters: Box::new(self::adapters),
        agent: {
            let store = store.clone();
            Box::new(move |config, cron| {
                let provider = super::build_provider(config).map_err(|(message, _)| message)?;
                Agent::with_cron(config, provider, store.clone(), cron)
                    .map_err(|e| format!("cannot build the agent: {e}"))
            })
        },
        signal: reload_rx,
    };
    let gateway = Gateway::new(config, store, agent, adapters).with_reloader(reloader);
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    tokio::spawn(watch_reload(reload_tx));
    gateway.run(shutdown).await;
    ExitCode::SUCCESS
}

/// Each SIGHUP asks for a configuration reload (several quick ones coalesce).
async fn watch_reload(reload: tokio::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot install the SIGHUP handler; reloads are unavailable");
        return;
    };
    while hup.recv().await.is_some() {
        tracing::info!("SIGHUP received");
        let _ = reload.try_send(());
    }
}

/// First SIGINT/SIGTERM: graceful shutdown. A second one: exit at once (work is stored and
/// resumes at the next start).
async fn watch_signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
    shutdown.cancel();
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::warn!("second signal: exiting now; unfinished work resumes at the next start");
    std::process::exit(130);
}
