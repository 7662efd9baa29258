//! The `hermes` command line: `setup`, `gateway`, `chat`, `config check`, `doctor`, `sessions`,
//! `skills`, `backup`, `restore`, `import`, `completions`, `man`.

mod backup;
mod chat;
mod cron;
mod docs;
mod doctor;
mod gateway;
mod guard;
mod home_lock;
mod import;
mod mcp;
mod mcp_serve;
mod pairing;
mod service;
mod sessions;
mod setup;
mod skills;
mod status;
mod store;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::config::{Config, ProcessEnv};
use crate::llm::Provider;
pub use cron::CronAction;
pub use docs::Shell;
pub use guard::guard_process;
pub use import::ImportAction;
pub use pairing::PairingAction;
pub use service::ServiceAction;
pub use sessions::SessionsAction;
pub use setup::SetupArgs;
pub use skills::SkillsAction;
pub use store::StoreAction;

/// hermes: your AI agent on the messaging platforms you already use.
#[derive(Debug, Parser)]
#[command(name = "hermes", version, about)]
pub struct Cli {
    /// Configuration file (default: $HERMES_CONFIG, else $HERMES_HOME/config.toml).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Log line format on stderr: `text`, or `json` (one object per line).
    #[arg(
        long,
        global = true,
        value_name = "FORMAT",
        env = "HERMES_LOG_FORMAT",
        default_value = "text"
    )]
    pub log_format: crate::logging::LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// First run: pick platforms, paste their tokens (hidden, checked on the spot), choose who
    /// may talk to the bot and the model, and write config.toml and hermes.env (mode 0600).
    /// `--non-interactive` takes the answers from flags, for scripts.
    Setup(Box<SetupArgs>),
    /// Run the daemon in the foreground: receive messages on every configured platform and
    /// answer them. Stops gracefully on SIGINT/SIGTERM; SIGHUP reloads the configuration.
    /// `install` / `uninstall` set it up as a systemd service.
    Gateway {
        #[command(subcommand)]
        action: Option<ServiceAction>,
    },
    /// Show the running daemon's health: adapters, queues, sessions, memory (from its admin
    /// endpoint).
    Status {
        /// Print the raw JSON report.
        #[arg(long)]
        json: bool,
    },
    /// Talk to the agent in this terminal (same agent, tools and store; session `cli:<user>`).
    Chat,
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Check that everything hermes needs works: configuration, state directory, database,
    /// model provider, platform credentials.
    Doctor,
    /// List, show, search and export stored conversations (every user's: this is the
    /// operator's view).
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// Scheduled jobs: list, add, remove, pause, resume, run now.
    Cron {
        #[command(subcommand)]
        action: CronAction,
    },
    /// MCP servers: list them (with the running daemon's view), or test one now.
    Mcp {
        #[command(subcommand)]
        action: mcp::McpAction,
    },
    /// DM pairing: list waiting codes and approved people, approve a code, revoke a person.
    Pairing {
        #[command(subcommand)]
        action: PairingAction,
    },
    /// The database: copy the SQLite store into PostgreSQL (`migrate --to postgres`).
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// List, show, validate, install and remove skills (bundled and in $HERMES_HOME/skills).
    Skills {
        #[command(subcommand)]
        action: SkillsAction,
    },
    /// Write one archive of this home while the daemon runs: a consistent snapshot of the
    /// SQLite store, the memory files, the skills and the configuration (without its secrets
    /// unless --with-secrets), with a manifest of checksums and row counts. With PostgreSQL,
    /// says how to pg_dump the database and archives the rest.
    Backup {
        /// The archive to write (mode 0600); gzip'd when the name ends in `.gz` or `.tgz`.
        file: PathBuf,
        /// Keep the configuration's secrets (tokens, API keys, passwords) in the archive.
        #[arg(long)]
        with_secrets: bool,
    },
    /// Bring a user of another agent over: settings, skills, memory and conversations
    /// (`hermes import hermes-agent [DIR] [--dry-run]`).
    Import {
        #[command(subcommand)]
        action: ImportAction,
    },
    /// Restore an archive of `hermes backup` into a home, once every checksum and row count is
    /// verified. Refuses while a daemon runs on that home, and (without --force) to replace a
    /// store holding conversations or files that differ.
    Restore {
        /// The archive written by `hermes backup`.
        file: PathBuf,
        /// The home to restore into (default: $HERMES_HOME, else ~/.hermes).
        #[arg(long, value_name = "DIR")]
        home: Option<PathBuf>,
        /// Replace an existing store with conversations, and files that differ.
        #[arg(long)]
        force: bool,
    },
    /// Print the shell completion script for SHELL, e.g.
    /// `hermes completions bash > /etc/bash_completion.d/hermes`.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page hermes(1) in roff (`hermes man | man -l -`).
    Man,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Load and validate the configuration; print a summary (secrets hidden).
    Check,
}

/// Run the parsed command.
pub async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Setup(args) => setup::setup(cli.config.as_deref(), *args).await,
        Command::Config {
            action: ConfigAction::Check,
        } => doctor::config_check(cli.config.as_deref()),
        Command::Doctor => doctor::doctor(cli.config.as_deref()).await,
        Command::Gateway { action: None } => match load(cli.config.as_deref()) {
            Ok(config) => gateway::gateway(config, cli.config.clone()).await,
            Err(code) => code,
        },
        Command::Gateway {
            action: Some(action),
        } => exit_code(service::service(action)),
        Command::Status { json } => match load(cli.config.as_deref()) {
            Ok(config) => status::status(&config, json).await,
            Err(code) => code,
        },
        Command::Chat => match load(cli.config.as_deref()) {
            Ok(config) => chat::chat(config).await,
            Err(code) => code,
        },
        Command::Pairing { action } => match load(cli.config.as_deref()) {
            Ok(config) => pairing::pairing(config, action).await,
            Err(code) => code,
        },
        Command::Store { action } => match load(cli.config.as_deref()) {
            Ok(config) => store::store(config, action).await,
            Err(code) => code,
        },
        Command::Sessions { action } => match load(cli.config.as_deref()) {
            Ok(config) => sessions::sessions(config, action).await,
            Err(code) => code,
        },
        Command::Cron { action } => match load(cli.config.as_deref()) {
            Ok(config) => cron::cron(config, action).await,
            Err(code) => code,
        },
        Command::Mcp { action } => match load(cli.config.as_deref()) {
            Ok(config) => exit_code(mcp::mcp(config, action).await),
            Err(code) => code,
        },
        Command::Skills { action } => match load(cli.config.as_deref()) {
            Ok(config) => skills::skills(config, action).await,
            Err(code) => code,
        },
        Command::Backup { file, with_secrets } => match load(cli.config.as_deref()) {
            Ok(config) => exit_code(backup::backup(config, file, with_secrets).await),
            Err(code) => code,
        },
        Command::Import { action } => match load(cli.config.as_deref()) {
            Ok(config) => exit_code(import::import(config, action).await),
            Err(code) => code,
        },
        Command::Completions { shell } => exit_code(docs::print_completions(shell)),
        Command::Man => exit_code(docs::print_man_page()),
        Command::Restore { file, home, force } => {
            let home = home.unwrap_or_else(|| crate::config::home_dir(&ProcessEnv));
            exit_code(backup::restore(home, file, force).await)
        }
    }
}

/// What an operator subcommand (`sessions`, `skills`) ends with: done, or one line saying why
/// not.
type Outcome = Result<(), String>;

/// The exit code of `result`, printing its error.
fn exit_code(result: Outcome) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hermes: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Print to standard output; a closed pipe (`| head`) ends the output quietly.
fn emit(text: &str) -> Outcome {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("cannot write: {e}")),
        _ => Ok(()),
    }
}

/// The configured database: SQLite with the configured durability, or PostgreSQL.
pub(crate) async fn open_store(
    config: &Config,
) -> Result<crate::store::Store, crate::store::StoreError> {
    #[cfg(feature = "postgres")]
    if config.store.backend == crate::config::StoreBackend::Postgres {
        let store =
            crate::store::PgStore::connect(config.store.url.expose(), config.store.pool_size)
                .await?;
        return Ok(crate::store::Store::new(store));
    }
    let durability = match config.store.synchronous {
        crate::config::Synchronous::Normal => crate::store::Durability::Normal,
        crate::config::Synchronous::Full => crate::store::Durability::Full,
    };
    crate::store::Store::open_with(&config.database_path(), durability)
}

/// Load the configuration, printing one clear error.
fn load(path: Option<&std::path::Path>) -> Result<Config, ExitCode> {
    load_config(path).map_err(|e| {
        eprintln!("hermes: configuration error: {e}");
        ExitCode::from(2)
    })
}

/// Load and validate the configuration; its secrets are never logged from now on.
fn load_config(path: Option<&std::path::Path>) -> Result<Config, crate::config::ConfigError> {
    let config = Config::load(path, &ProcessEnv)?;
    for secret in config.secrets() {
        crate::logging::register_secret(secret);
    }
    Ok(config)
}

/// The provider, or one line telling the user how to configure one.
fn provider(config: &Config) -> Result<Arc<dyn Provider>, ExitCode> {
    build_provider(config).map_err(|(message, code)| {
        eprintln!("hermes: {message}");
        code
    })
}

/// The configured model provider, or what is wrong and the exit code it deserves.
pub(crate) fn build_provider(config: &Config) -> Result<Arc<dyn Provider>, (String, ExitCode)> {
    if !config.llm.is_configured() {
        return Err((
            format!(
                "no model provider configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another \
                 OpenAI-compatible service), or OPENAI_BASE_URL alone for a local server such as Ollama, \
                 or [llm] in {}",
                config
                    .source
                    .clone()
                    .unwrap_or_else(|| config.home.join("config.toml"))
                    .display()
            ),
            ExitCode::from(2),
        ));
    }
    crate::llm::build(
        config.llm.provider,
        &crate::llm::ProviderSettings::from_config(&config.llm),
    )
    .map_err(|e| (e.to_string(), ExitCode::FAILURE))
}
