//! `hermes import hermes-agent [DIR]`: bring a hermes-agent user over — platform tokens and
//! allowlists, the model, skills, memory and conversation history — into this home.
//!
//! Everything is planned first (read-only), printed, then written unless `--dry-run`. Each part
//! adds only what is missing, so the import can be run again: keys and variables the user
//! already set are kept, skills already present are left alone, memory entries are added once,
//! and each conversation is remembered by its hermes-agent session id (see
//! [`crate::store::IMPORTED_SCOPE`]) and never stored twice. Secrets go to `hermes.env` (read by
//! the systemd unit; `set -a; . hermes.env` for a shell), the rest to `config.toml`, both 0600.

mod history;
pub(super) mod mapping;
mod memory;
mod skills;
mod source;
pub(super) mod write;

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::Subcommand;

use super::{Outcome, emit};
use crate::config::{Config, EnvSource, ProcessEnv, StoreBackend};
use crate::memory::{Kind, MemoryFiles};
use crate::skills::SkillSources;
use crate::store::IMPORTED_SCOPE;
use skills::SkillPlan;
use source::AgentHome;
use write::Outcome as Written;

#[derive(Debug, Subcommand)]
pub enum ImportAction {
    /// From NousResearch's hermes-agent: its .env and config.yaml (tokens, allowlists, model),
    /// skills, MEMORY.md / USER.md and the conversations in its state.db. Run again at any
    /// time: what is already here is kept and nothing is imported twice.
    HermesAgent {
        /// hermes-agent's home (default: ~/.hermes, unless that is hermes' own home).
        dir: Option<PathBuf>,
        /// Print what would be imported; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Run `hermes import`.
pub(super) async fn import(config: Config, action: ImportAction) -> Outcome {
    let ImportAction::HermesAgent { dir, dry_run } = action;
    let user_home = PathBuf::from(ProcessEnv.var("HOME").unwrap_or_else(|| ".".into()));
    let agent = AgentHome::locate(dir, &config.home, &user_home)?;
    let mut out = Report::new(dry_run);
    out.line(&format!(
        "Importing hermes-agent's home {} into {}{}",
        agent.dir.display(),
        config.home.display(),
        if dry_run {
            " (dry run: nothing is written)"
        } else {
            ""
        }
    ));
    let mapped = mapping::map(&agent.settings()?);
    let people = settings(&config, &mapped, &mut out)?;
    import_skills(&config, &agent, &mut out).await?;
    let local_user = ProcessEnv.var("USER").unwrap_or_else(|| "local".into());
    let history = if agent.state_db().is_file() {
        history::read(&agent.state_db(), &local_user)?
    } else {
        history::History::default()
    };
    let mut owners: BTreeSet<String> = people.into_iter().collect();
    owners.extend(
        history
            .sessions
            .iter()
            .filter(|s| !s.key.is_shared())
            .map(|s| s.key.owner()),
    );
    owners.insert(format!("cli:{local_user}"));
    import_memory(&config, &agent, &owners, &mut out)?;
    conversations(&config, history, &mut out).await?;
    if !mapped.left_out.is_empty() {
        out.section("Not carried over");
        for item in &mapped.left_out {
            out.line(&format!("  - {item}"));
        }
    }
    emit(&out.text)
}

/// The printed report.
struct Report {
    text: String,
    dry_run: bool,
}

impl Report {
    fn new(dry_run: bool) -> Self {
        Report {
            text: String::new(),
            dry_run,
        }
    }

    fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
    }

    fn section(&mut self, s: &str) {
        self.line(&format!("\n{s}:"));
    }

    /// "added" or, in a dry run, "to add".
    fn verb(&self, done: &str, planned: &str) -> String {
        if self.dry_run { planned } else { done }.to_owned()
    }
}

fn outcome_text(o: &Written, out: &Report) -> String {
    match o {
        Written::Added => out.verb("added", "to add"),
        Written::Same => "already set".into(),
        Written::Kept => "kept yours (set differently here)".into(),
    }
}

/// Tokens into `hermes.env`, the rest into `config.toml`; returns the people the allowlists
/// name (memory owners).
fn settings(
    config: &Config,
    mapped: &mapping::Mapped,
    out: &mut Report,
) -> Result<Vec<String>, String> {
    let toml_path = config
        .source
        .clone()
        .unwrap_or_else(|| config.home.join("config.toml"));
    let read = |p: &PathBuf| match std::fs::read_to_string(p) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("cannot read {}: {e}", p.display())),
    };
    out.section(&format!("Settings → {}", toml_path.display()));
    let (new_toml, outcomes) = write::merge_toml(&read(&toml_path)?, &mapped.settings)
        .map_err(|e| format!("{} {e}", toml_path.display()))?;
    for (s, o) in mapped.settings.iter().zip(&outcomes) {
        let shown = if o == &Written::Added {
            format!(" = {}", s.value)
        } else {
            String::new()
        };
        out.line(&format!(
            "  [{}] {}{shown}: {}",
            s.section,
            s.key,
            outcome_text(o, out)
        ));
    }
    let env_path = config.home.join("hermes.env");
    out.section(&format!("Secrets → {} (mode 0600)", env_path.display()));
    let (new_env, outcomes) = write::merge_env(&read(&env_path)?, &mapped.secrets);
    for ((name, _), o) in mapped.secrets.iter().zip(&outcomes) {
        out.line(&format!("  {name}: {}", outcome_text(o, out)));
    }
    if mapped.secrets.is_empty() && mapped.settings.is_empty() {
        out.line("  (no settings found)");
    }
    if !out.dry_run {
        let io = |p: &PathBuf, e: std::io::Error| format!("cannot write {}: {e}", p.display());
        if let Some(text) = new_toml {
            write::write_private(&toml_path, &text).map_err(|e| io(&toml_path, e))?;
        }
        if let Some(text) = new_env {
            write::write_private(&env_path, &text).map_err(|e| io(&env_path, e))?;
            out.line(
                "  (the systemd unit reads this file; in a shell: `set -a; . hermes.env; set +a`)",
            );
        }
        if let Err(e) = Config::load(Some(&toml_path), &ProcessEnv) {
            out.line(&format!(
                "  warning: the configuration does not load now: {e}"
            ));
        }
    }
    Ok(mapped.people.clone())
}

async fn import_skills(config: &Config, agent: &AgentHome, out: &mut Report) -> Outcome {
    let ours = SkillSources::for_home(&config.home);
    out.section(&format!("Skills → {}", ours.user_dir().display()));
    let (root, sources) = (agent.skills(), ours.clone());
    let plans = tokio::task::spawn_blocking(move || skills::plan(&root, &sources))
        .await
        .map_err(|e| e.to_string())?;
    if plans.is_empty() {
        out.line("  (no skills found)");
    }
    for plan in plans {
        match plan {
            SkillPlan::Copy { name, from } => {
                if !out.dry_run {
                    skills::copy(&from, &ours).await?;
                }
                out.line(&format!("  {name}: {}", out.verb("copied", "to copy")));
            }
            SkillPlan::Present { name } => out.line(&format!("  {name}: already here")),
            SkillPlan::Bundled { name } => out.line(&format!(
                "  {name}: left out (hermes bundles a skill of that name)"
            )),
            SkillPlan::Invalid { from, problems } => {
                out.line(&format!("  {}: left out, invalid here:", from.display()));
                for p in problems {
                    out.line(&format!("    {p}"));
                }
            }
        }
    }
    Ok(())
}

fn import_memory(
    config: &Config,
    agent: &AgentHome,
    owners: &BTreeSet<String>,
    out: &mut Report,
) -> Outcome {
    let files = MemoryFiles::from_config(config);
    out.section(&format!(
        "Memory → {}",
        config.home.join("memory").display()
    ));
    let io = |e: std::io::Error| format!("memory: {e}");
    let kinds = [Kind::Memory, Kind::User];
    let entries: Vec<Vec<String>> = kinds
        .iter()
        .map(|k| memory::read_entries(&agent.memory_file(k.file_name())))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    if entries.iter().all(Vec::is_empty) {
        out.line("  (no memory found)");
        return Ok(());
    }
    for owner in owners {
        let mut counts = Vec::new();
        for (kind, entries) in kinds.iter().zip(&entries) {
            let n = if out.dry_run {
                memory::missing(&files, owner, *kind, entries)
            } else {
                memory::merge(&files, owner, *kind, entries)
            }
            .map_err(io)?;
            counts.push(format!("{n} of {} {}", entries.len(), kind.file_name()));
        }
        let verb = out.verb("added", "to add");
        out.line(&format!("  {owner}: {verb} {}", counts.join(", ")));
    }
    Ok(())
}

async fn conversations(config: &Config, history: history::History, out: &mut Report) -> Outcome {
    out.section("Conversations → the store (found by session_search)");
    let skipped = history.skipped.len();
    // A dry run never creates the database: with none yet, nothing was imported before.
    let exists = config.store.backend != StoreBackend::Sqlite || config.database_path().exists();
    let store = if out.dry_run && !exists {
        None
    } else {
        Some(super::open_store(config).await.map_err(|e| e.to_string())?)
    };
    let (mut new, mut messages, mut before) = (0, 0, 0);
    for session in history.sessions {
        let count = session.messages.len();
        let stored = match &store {
            None => true,
            Some(store) if out.dry_run => store
                .setting(IMPORTED_SCOPE, &session.origin)
                .await
                .map_err(|e| e.to_string())?
                .is_none(),
            Some(store) => store
                .import_session(session)
                .await
                .map_err(|e| e.to_string())?
                .is_some(),
        };
        if stored {
            new += 1;
            messages += count;
        } else {
            before += 1;
        }
    }
    let verb = out.verb("imported", "to import");
    out.line(&format!(
        "  {new} conversation(s) {verb} ({messages} messages)"
    ));
    if before > 0 {
        out.line(&format!("  {before} imported before (left as they are)"));
    }
    if skipped > 0 {
        out.line(&format!(
            "  {skipped} left out (cron runs, subagents, platforms hermes does not serve)"
        ));
    }
    if history.empty > 0 {
        out.line(&format!("  {} without messages, left out", history.empty));
    }
    Ok(())
}
