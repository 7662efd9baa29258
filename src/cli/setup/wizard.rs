//! The interactive wizard: platforms, their credentials (hidden, verified, asked again when
//! refused), who may talk to the bot, the model provider and model, then the files and the
//! offer to install the service.

use std::time::Duration;

use hermes_adapter::Platform;

use super::files::{self, Targets};
use super::plan::{Creds, Llm, PLATFORMS, Plan, built_in};
use super::prompts::Ui;
use super::telegram_sender::Updates;
use super::verify::{self, Verified};
use super::{Failure, next_steps};
use crate::config::{ProviderKind, Secret};

/// How long the wizard waits for the message that names the Telegram account.
const SENDER_WAIT: Duration = Duration::from_secs(120);

pub(super) async fn run(plan: &mut Plan, targets: &Targets) -> Result<(), Failure> {
    let ui = Ui::new().map_err(Failure::usage)?;
    ui.say("hermes setup: connect hermes to your chats and a model.");
    ui.say(&format!(
        "Settings go to {}, secrets to {} (both readable by you only).",
        targets.config.display(),
        targets.env.display()
    ));
    let existing = targets.existing();
    if !existing.is_empty() {
        let names: Vec<String> = existing.iter().map(|p| p.display().to_string()).collect();
        ui.say(&format!("Already there: {}.", names.join(", ")));
        let update = ui.confirm(
            "Update them? The keys setup asks about are replaced, everything else is kept, and a copy of each file is saved beside it",
            false,
        )?;
        if !update {
            ui.say("Nothing was changed.");
            return Ok(());
        }
    }
    let chosen = ask_platforms(&ui)?;
    for platform in chosen {
        ask_platform(&ui, plan, platform).await?;
        ask_allowlist(&ui, plan, platform).await?;
    }
    ask_llm(&ui, plan).await?;
    ui.say("");
    ui.say("Writing:");
    for s in plan.settings() {
        ui.say(&format!("  [{}] {} = {}", s.section, s.key, s.value));
    }
    for (name, _) in plan.env_vars().0 {
        ui.say(&format!("  {name}=*** (in {})", targets.env.display()));
    }
    let written = files::write(targets, plan).map_err(Failure::failed)?;
    for b in &written.backups {
        ui.say(&format!("The previous file is kept as {}.", b.display()));
    }
    ui.say(&format!(
        "✓ Wrote {} and {} (mode 0600).",
        targets.config.display(),
        targets.env.display()
    ));
    offer_service(&ui, targets)?;
    Ok(())
}

impl From<String> for Failure {
    /// A cancelled prompt.
    fn from(message: String) -> Failure {
        Failure::failed(message)
    }
}

fn ask_platforms(ui: &Ui) -> Result<Vec<Platform>, Failure> {
    let items: Vec<String> = PLATFORMS
        .iter()
        .map(|p| {
            if built_in(*p) {
                p.title().to_owned()
            } else {
                format!("{} (not in this build)", p.title())
            }
        })
        .collect();
    let checked: Vec<bool> = PLATFORMS.iter().map(|p| *p == Platform::Telegram).collect();
    loop {
        let picked = ui.multi_select(
            "Where should hermes answer? (space toggles, enter accepts)",
            &items,
            &checked,
        )?;
        if !picked.is_empty() {
            return Ok(picked.into_iter().map(|i| PLATFORMS[i]).collect());
        }
        ui.say("Pick at least one platform (space toggles it).");
    }
}

/// Ask `platform`'s credentials until they are accepted (or cannot be checked in this build).
async fn ask_platform(ui: &Ui, plan: &mut Plan, platform: Platform) -> Result<(), Failure> {
    let title = platform.title();
    loop {
        let creds = ask_creds(ui, plan, platform)?;
        plan.set_creds(creds);
        ui.say(&format!("Checking with {title}…"));
        match verify::platform(plan, platform).await {
            Verified::Ok(about) => {
                ui.say(&format!("✓ {title}: {about}"));
                return Ok(());
            }
            Verified::NotBuiltIn(why) => {
                ui.say(&format!("! {title}: {why}"));
                return Ok(());
            }
            Verified::Failed(why) => {
                ui.say(&format!("✗ {title} did not accept it: {why}"));
                ui.say("Try again (Ctrl-C stops setup; nothing is written until the end).");
            }
        }
    }
}

fn ask_creds(ui: &Ui, plan: &Plan, platform: Platform) -> Result<Creds, Failure> {
    let c = &plan.config;
    let keep = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Ok(match platform {
        Platform::Telegram => Creds::Telegram {
            token: ui.secret("Telegram bot token from @BotFather (hidden)", false)?,
        },
        Platform::Discord => Creds::Discord {
            token: ui.secret(
                "Discord bot token (developer portal > Bot > Token; hidden)",
                false,
            )?,
        },
        Platform::Slack => {
            ui.say("Slack in Socket Mode (no public URL needed); the README's Slack section lists the scopes.");
            Creds::Slack {
                bot_token: ui.secret("Slack bot token, xoxb-… (hidden)", false)?,
                app_token: ui.secret(
                    "Slack app-level token, xapp-…, scope connections:write (hidden)",
                    false,
                )?,
            }
        }
        Platform::Email => {
            let address = ui.input(
                "The bot's email address",
                keep(&c.email.address).as_deref(),
                false,
            )?;
            let domain = address
                .rsplit_once('@')
                .map(|(_, d)| d.to_owned())
                .unwrap_or_default();
            let password = ui.secret("Its mailbox password (hidden)", false)?;
            let imap = keep(&c.email.imap_host).unwrap_or(format!("imap.{domain}"));
            let smtp = keep(&c.email.smtp_host).unwrap_or(format!("smtp.{domain}"));
            let imap_host = ui.input("IMAP server (IMAPS, port 993)", Some(&imap), false)?;
            let smtp_host = ui.input("SMTP server (SMTPS, port 465)", Some(&smtp), false)?;
            ui.say("Mail is answered only when your receiving server vouches for the sender: the first word of the topmost Authentication-Results header of a mail in that mailbox (README, Email).");
            let id = ui.input(
                "Its authserv-id (empty: decide later; no mail is served until then)",
                Some(""),
                true,
            )?;
            Creds::Email {
                address,
                password,
                imap_host,
                smtp_host,
                authserv_ids: super::plan::split_list(&id),
            }
        }
        Platform::Matrix => Creds::Matrix {
            homeserver: ui.input(
                "Homeserver URL (https://matrix.example.org)",
                keep(&c.matrix.homeserver).as_deref(),
                false,
            )?,
            user_id: ui.input(
                "The bot's user id (@hermes:example.org)",
                keep(&c.matrix.user_id).as_deref(),
                false,
            )?,
            password: ui.secret("Its password (hidden)", false)?,
        },
        other => return Err(Failure::usage(format!("{other} is not set up here"))),
    })
}

async fn ask_allowlist(ui: &Ui, plan: &mut Plan, platform: Platform) -> Result<(), Failure> {
    let title = platform.title();
    let mut items = Vec::new();
    if platform == Platform::Telegram {
        items.push("The account that writes to the bot now (send it any message)".to_owned());
    }
    let ids = if platform == Platform::Email {
        "Type the addresses (or whole domains) to answer"
    } else {
        "Type the user ids"
    };
    items.push(ids.to_owned());
    items.push(
        "Nobody yet: strangers get a pairing code you approve (`hermes pairing approve`)".into(),
    );
    items.push("Everyone who writes, on every platform (a public bot)".into());
    let offset = usize::from(platform != Platform::Telegram);
    loop {
        let choice = ui.select(&format!("Who may talk to hermes on {title}?"), &items, 0)? + offset;
        let done = match choice {
            0 => telegram_sender(ui, plan).await?,
            1 => {
                let hint = match platform {
                    Platform::Telegram => "numeric, ask @userinfobot",
                    Platform::Discord => "Developer Mode > Copy User ID",
                    Platform::Slack => "U…, from the profile's ⋮ > Copy member ID",
                    Platform::Email => "ann@example.com or example.com",
                    _ => "@ann:example.org",
                };
                let typed = ui.input(&format!("{title}: comma-separated ({hint})"), None, false)?;
                match plan.set_allowed(platform, super::plan::split_list(&typed)) {
                    Ok(()) => true,
                    Err(e) => {
                        ui.say(&format!("✗ {e}"));
                        false
                    }
                }
            }
            2 => {
                plan.set_pairing();
                true
            }
            _ => {
                plan.set_allow_all();
                true
            }
        };
        if done {
            return Ok(());
        }
    }
}

/// Offer the sender of the next private message to the bot; false when there was none or it
/// was declined.
async fn telegram_sender(ui: &Ui, plan: &mut Plan) -> Result<bool, Failure> {
    let token: Secret = plan.config.telegram.bot_token.clone();
    let updates = Updates::new(&plan.config.telegram.api_url, &token).map_err(Failure::failed)?;
    let mark = match updates.newest_id().await {
        Ok(id) => id,
        Err(e) => {
            ui.say(&format!("✗ {e}"));
            return Ok(false);
        }
    };
    ui.say(&format!(
        "Send any message to your bot now, from the account that should use it (waiting up to {} minutes)…",
        SENDER_WAIT.as_secs() / 60
    ));
    match updates.wait_for_sender(mark, SENDER_WAIT).await {
        Ok(Some(sender)) => {
            if ui.confirm(&format!("Allow {sender}?"), true)? {
                plan.set_allowed(Platform::Telegram, vec![sender.id.to_string()])
                    .map_err(Failure::failed)?;
                ui.say("That message stays queued: hermes answers it when it starts.");
                Ok(true)
            } else {
                Ok(false)
            }
        }
        Ok(None) => {
            ui.say("No message arrived.");
            Ok(false)
        }
        Err(e) => {
            ui.say(&format!("✗ {e}"));
            Ok(false)
        }
    }
}

/// A provider the wizard offers.
struct Preset {
    label: String,
    kind: ProviderKind,
    /// `None`: ask for the URL.
    url: Option<String>,
}

fn presets(plan: &Plan) -> Vec<Preset> {
    let llm = &plan.config.llm;
    let mut out = Vec::new();
    if llm.base_url != llm.provider.default_base_url() {
        out.push(Preset {
            label: format!(
                "The one configured now: {} at {}",
                provider_name(llm.provider),
                llm.base_url
            ),
            kind: llm.provider,
            url: Some(llm.base_url.clone()),
        });
    }
    let mut add = |label: &str, kind, url: Option<&str>| {
        out.push(Preset {
            label: label.to_owned(),
            kind,
            url: url.map(str::to_owned),
        })
    };
    add(
        "OpenAI",
        ProviderKind::Openai,
        Some(ProviderKind::Openai.default_base_url()),
    );
    add(
        "Anthropic",
        ProviderKind::Anthropic,
        Some(ProviderKind::Anthropic.default_base_url()),
    );
    add(
        "OpenRouter",
        ProviderKind::Openai,
        Some("https://openrouter.ai/api/v1"),
    );
    add(
        "Ollama on this machine",
        ProviderKind::Openai,
        Some("http://127.0.0.1:11434/v1"),
    );
    add(
        "Another OpenAI-compatible server (type its URL)",
        ProviderKind::Openai,
        None,
    );
    out
}

pub(super) fn provider_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "OpenAI-compatible",
        ProviderKind::Anthropic => "Anthropic",
    }
}

async fn ask_llm(ui: &Ui, plan: &mut Plan) -> Result<(), Failure> {
    let presets = presets(plan);
    let labels: Vec<String> = presets.iter().map(|p| p.label.clone()).collect();
    let mut choice = 0;
    let mut url = plan.config.llm.base_url.clone();
    let (llm, models) = loop {
        choice = ui.select("Which model provider?", &labels, choice)?;
        let preset = &presets[choice];
        url = match &preset.url {
            Some(u) => u.clone(),
            None => ui.input("Its base URL, up to /v1", Some(&url), false)?,
        };
        let may_be_empty = verify::key_may_be_empty(&url);
        let prompt = if may_be_empty {
            "API key (hidden; empty if the server needs none)"
        } else {
            "API key (hidden)"
        };
        let api_key = ui.secret(prompt, may_be_empty)?;
        let llm = Llm {
            kind: preset.kind,
            base_url: url.trim_end_matches('/').to_owned(),
            api_key,
            model: String::new(),
        };
        ui.say(&format!("Listing the models at {}…", llm.base_url));
        match verify::models(&plan.config, &llm).await {
            Ok(models) => break (llm, models),
            Err(e) => {
                ui.say(&format!("✗ The provider did not accept it: {e}"));
                ui.say("Try again.");
            }
        }
    };
    let model = if models.is_empty() {
        ui.say("The server lists no models.");
        ui.input("Model name", Some(&plan.config.llm.model), false)?
    } else {
        ui.say(&format!("✓ {} models offered.", models.len()));
        let mut items = models.clone();
        items.push("Another model (type its name)".into());
        let current = models.iter().position(|m| *m == plan.config.llm.model);
        let picked = ui.select("Which model?", &items, current.unwrap_or(0))?;
        match models.get(picked) {
            Some(m) => m.clone(),
            None => ui.input("Model name", None, false)?,
        }
    };
    plan.set_llm(Llm { model, ..llm });
    Ok(())
}

fn offer_service(ui: &Ui, targets: &Targets) -> Result<(), Failure> {
    match next_steps(targets) {
        super::NextStep::UserService => {
            let install = ui.confirm(
                "Install and start hermes as a systemd user service now (`hermes gateway install --user`)?",
                false,
            )?;
            if install {
                let action = crate::cli::ServiceAction::Install {
                    user: true,
                    dry_run: false,
                    no_start: false,
                };
                tokio::task::block_in_place(|| crate::cli::service::service(action))
                    .map_err(Failure::failed)?;
                ui.say("✓ Installed. `hermes status` shows how it is doing.");
                return Ok(());
            }
            ui.say(&super::start_hint(targets));
        }
        super::NextStep::Manual(text) => {
            ui.say(&super::start_hint(targets));
            ui.say(&text);
        }
    }
    Ok(())
}
