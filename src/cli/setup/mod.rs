//! `hermes setup`: the first-run wizard. It asks which platforms to answer on, takes each
//! token in hidden input and checks it on the spot against the platform (the adapters' own
//! probes, at the configured API URLs), sets who may talk to the bot (for Telegram: the
//! account that writes to it now), picks the model provider and model from the models the key
//! can use, and writes `config.toml` and the secrets in `hermes.env` (mode 0600, an existing
//! file updated only when confirmed or with `--force`, a copy kept). Last it offers
//! `hermes gateway install --user`. `--non-interactive` takes every answer from flags for
//! scripts, verified the same way.
//!
//! Layout: `wizard` (the questions), `script` (the flags), `plan` (the answers and what they
//! write), `verify` (the checks), `telegram_sender` (the one-update read), `files` (writing),
//! `prompts` (the terminal).

mod files;
mod plan;
mod prompts;
mod script;
mod telegram_sender;
mod verify;
mod wizard;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config::{EnvSource, ProcessEnv};
use files::Targets;
use plan::Plan;

/// `hermes setup` flags. Without `--non-interactive` only `--force` counts (the wizard asks
/// the rest).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SetupArgs {
    /// Ask nothing: take the answers from the flags below, verify them, write, and exit
    /// non-zero with the reason when something is refused.
    #[arg(long)]
    pub non_interactive: bool,
    /// Update an existing config.toml / hermes.env without asking (a copy of each is kept).
    #[arg(long)]
    pub force: bool,
    /// Telegram bot token (from @BotFather).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "TELEGRAM_BOT_TOKEN",
        hide_env_values = true
    )]
    pub telegram_token: Option<String>,
    /// Discord bot token.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "DISCORD_BOT_TOKEN",
        hide_env_values = true
    )]
    pub discord_token: Option<String>,
    /// Slack bot token (xoxb-…); Slack is set up in Socket Mode, with --slack-app-token.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "SLACK_BOT_TOKEN",
        hide_env_values = true
    )]
    pub slack_bot_token: Option<String>,
    /// Slack app-level token (xapp-…, scope connections:write).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "SLACK_APP_TOKEN",
        hide_env_values = true
    )]
    pub slack_app_token: Option<String>,
    /// The bot's mailbox address.
    #[arg(long, value_name = "ADDRESS")]
    pub email_address: Option<String>,
    /// The mailbox password.
    #[arg(
        long,
        value_name = "PASSWORD",
        env = "EMAIL_PASSWORD",
        hide_env_values = true
    )]
    pub email_password: Option<String>,
    /// IMAP server (IMAPS, port 993; default imap.<the address's domain>).
    #[arg(long, value_name = "HOST")]
    pub email_imap_host: Option<String>,
    /// SMTP server (SMTPS, port 465; default smtp.<the address's domain>).
    #[arg(long, value_name = "HOST")]
    pub email_smtp_host: Option<String>,
    /// The authserv-id of your receiving server's Authentication-Results (repeatable).
    #[arg(long, value_name = "ID")]
    pub email_authserv_id: Vec<String>,
    /// Matrix homeserver URL.
    #[arg(long, value_name = "URL")]
    pub matrix_homeserver: Option<String>,
    /// The bot's Matrix user id (@hermes:example.org).
    #[arg(long, value_name = "USER")]
    pub matrix_user_id: Option<String>,
    /// The bot's Matrix password.
    #[arg(
        long,
        value_name = "PASSWORD",
        env = "MATRIX_PASSWORD",
        hide_env_values = true
    )]
    pub matrix_password: Option<String>,
    /// Who may talk to the bot: `telegram:123`, `discord:…`, `slack:U…`,
    /// `email:ann@example.com`, `matrix:@ann:example.org`, or a bare id when one platform is
    /// set up. Repeat it or separate with commas.
    #[arg(long, value_name = "PLATFORM:ID")]
    pub allow: Vec<String>,
    /// Serve everyone who writes to the bot (a public bot).
    #[arg(long)]
    pub allow_all: bool,
    /// Strangers get a pairing code to approve with `hermes pairing approve`.
    #[arg(long)]
    pub pairing: bool,
    /// `openai` (any OpenAI-compatible API) or `anthropic` (default: as configured now).
    #[arg(long, value_name = "KIND")]
    pub provider: Option<String>,
    /// The provider's base URL up to /v1 (default: as configured now, or the provider's own).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The provider's API key (default: OPENAI_API_KEY, or ANTHROPIC_API_KEY for anthropic).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// The model, one of those the provider lists for the key.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
}

/// Why setup stopped, and the exit code: 2 for a usage error (a missing flag, a file that
/// would be replaced), 1 for an answer that was refused or a file that could not be written.
#[derive(Debug)]
struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    fn usage(message: String) -> Failure {
        Failure { message, code: 2 }
    }
    fn failed(message: String) -> Failure {
        Failure { message, code: 1 }
    }
}

/// Run `hermes setup`.
pub(super) async fn setup(explicit: Option<&Path>, args: SetupArgs) -> ExitCode {
    // A file named with --config that does not exist yet is the one to create.
    let load_from = explicit.filter(|p| p.exists());
    let config = match super::load_config(load_from) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "hermes setup: the configuration does not load: {e}\nFix or move it, then run setup again."
            );
            return ExitCode::from(2);
        }
    };
    let targets = Targets::of(&config, explicit);
    let mut plan = Plan::new(config);
    let result = if args.non_interactive {
        script::run(&mut plan, &args, &targets).await
    } else {
        wizard::run(&mut plan, &targets).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("hermes setup: {}", plan.scrub(&f.message));
            ExitCode::from(f.code)
        }
    }
}

/// How the daemon is best started with what was written.
enum NextStep {
    /// The user service reads exactly these files (`~/.hermes`).
    UserService,
    /// Something else: what to do.
    Manual(String),
}

fn next_steps(targets: &Targets) -> NextStep {
    let user_home = ProcessEnv.var("HOME").map(PathBuf::from);
    let standard = user_home.is_some_and(|h| h.join(".hermes") == targets.home)
        && targets.config == targets.home.join("config.toml");
    if standard {
        NextStep::UserService
    } else {
        NextStep::Manual(format!(
            "As a service: the user unit reads ~/.hermes, the system unit /etc/hermes (copy both files there: `sudo install -m 600 {} {} /etc/hermes/`, then `sudo hermes gateway install`).",
            targets.config.display(),
            targets.env.display()
        ))
    }
}

/// The command that starts the daemon in this shell with the files written.
fn start_hint(targets: &Targets) -> String {
    let config = if targets.config == targets.home.join("config.toml") {
        String::new()
    } else {
        format!(" --config {}", targets.config.display())
    };
    let home = match ProcessEnv.var("HERMES_HOME") {
        Some(h) => format!("HERMES_HOME={h} "),
        None => String::new(),
    };
    // hermes reads its home's hermes.env itself; one written elsewhere must be sourced.
    if targets.env == targets.home.join("hermes.env") {
        format!("Start it in this terminal: {home}hermes{config} gateway")
    } else {
        format!(
            "Start it in this terminal: set -a; . {}; set +a; {home}hermes{config} gateway",
            targets.env.display()
        )
    }
}
