//! `hermes skills`: the operator's view of skills: list them, show one, validate them, install
//! them from a folder or a git repository, remove one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use super::{Outcome, emit, exit_code};
use crate::config::Config;
use crate::skills::{
    self, InstallError, Skill, SkillLibrary, SkillProblem, SkillSource, SkillSources, check_folder,
    skill_folders,
};
use crate::store::Store;
use crate::tools::files::disk::plural;

#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// List every skill, bundled and yours, with its version and uses; skills that could not be
    /// loaded are listed last with their problems.
    List,
    /// Show one skill: what it needs, its instructions and its files.
    Show {
        /// The skill's name, as `hermes skills list` shows it.
        name: String,
    },
    /// Check skills and report every problem by file and line; exits non-zero on any.
    Validate {
        /// A skill folder, a SKILL.md, or a folder of skill folders. Default: every skill.
        path: Option<PathBuf>,
    },
    /// Install skills from a folder holding SKILL.md (or skill folders), from a local git
    /// repository (its committed files) or from a git URL.
    Install {
        /// A folder, a local git repository, or a git URL (https://…, git@…).
        source: String,
        /// Replace your skills of the same names (bundled skills are never replaced).
        #[arg(long)]
        force: bool,
    },
    /// Remove one of your skills (bundled skills cannot be removed).
    Remove {
        /// The skill's name.
        name: String,
    },
    /// Turn a skill off: the agent no longer sees it (from the next conversation on); it stays
    /// on disk and `enable` brings it back.
    Disable {
        /// The skill's name.
        name: String,
    },
    /// Turn a skill that was turned off on again.
    Enable {
        /// The skill's name.
        name: String,
    },
}

pub(super) async fn skills(config: Config, action: SkillsAction) -> ExitCode {
    let sources = SkillSources::for_home(&config.home);
    let result = match action {
        SkillsAction::List => list(&config, &sources).await,
        SkillsAction::Show { name } => show(&config, &sources, &name).await,
        SkillsAction::Validate { path } => validate(&sources, path).await,
        SkillsAction::Install { source, force } => install(&sources, &source, force).await,
        SkillsAction::Remove { name } => remove(&config, &sources, &name).await,
        SkillsAction::Disable { name } => switch(&sources, &name, false).await,
        SkillsAction::Enable { name } => switch(&sources, &name, true).await,
    };
    exit_code(result)
}

async fn load(sources: &SkillSources) -> Result<SkillLibrary, String> {
    let sources = sources.clone();
    tokio::task::spawn_blocking(move || SkillLibrary::load(&sources))
        .await
        .map_err(|e| format!("cannot load the skills: {e}"))
}

/// The store, for usage counts; skills work without it.
async fn store(config: &Config) -> Option<Store> {
    super::open_store(config).await.ok()
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

fn source_of(skill: &Skill) -> &'static str {
    if skill.overrides_bundled {
        "user*"
    } else {
        skill.source_label()
    }
}

fn problems_text(problems: &[SkillProblem]) -> String {
    problems.iter().map(|p| format!("{p}\n")).collect()
}

async fn list(config: &Config, sources: &SkillSources) -> Outcome {
    let library = load(sources).await?;
    let store = store(config).await;
    let mut out = String::new();
    if library.skills().is_empty() {
        out.push_str("No skills.\n");
    } else {
        out.push_str(&format!(
            "{:<28}  {:<7}  {:<8}  {:>4}  DESCRIPTION\n",
            "NAME", "SOURCE", "VERSION", "USES"
        ));
    }
    for skill in library.skills() {
        let uses = match &store {
            Some(s) => skills::usage(&**s, &skill.name)
                .await
                .map_or("?".into(), |u| u.count.to_string()),
            None => "?".into(),
        };
        out.push_str(&format!(
            "{:<28}  {:<7}  {:<8}  {:>4}  {}\n",
            skill.name,
            source_of(skill),
            skill.manifest.version.as_deref().unwrap_or("-"),
            uses,
            one_line(&skill.description, 70)
        ));
    }
    if library.skills().iter().any(|s| s.overrides_bundled) {
        out.push_str("(user*: your copy, replacing the bundled skill of that name)\n");
    }
    if !library.turned_off().is_empty() {
        let names: Vec<&str> = library
            .turned_off()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        out.push_str(&format!(
            "\nTurned off (hermes skills enable <name>): {}\n",
            names.join(", ")
        ));
    }
    if !library.problems().is_empty() {
        out.push_str(&format!(
            "\nLeft out because of problems ({}):\n{}",
            library.problems().len(),
            problems_text(library.problems())
        ));
    }
    out.push_str(&format!(
        "\nYour skills are in {}.\n",
        sources.user_dir().display()
    ));
    emit(&out)
}

async fn show(config: &Config, sources: &SkillSources, name: &str) -> Outcome {
    let library = load(sources).await?;
    let off = library.turned_off().iter().find(|s| s.name == name);
    let Some(skill) = library.get(name).or(off).cloned() else {
        let own: Vec<SkillProblem> = library
            .problems()
            .iter()
            .filter(|p| {
                p.file
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|f| f == name)
            })
            .cloned()
            .collect();
        if own.is_empty() {
            return Err(format!(
                "there is no skill named `{name}`; `hermes skills list` shows them"
            ));
        }
        return Err(format!(
            "skill `{name}` is not loaded because of these problems:\n{}",
            problems_text(&own).trim_end()
        ));
    };
    let m = &skill.manifest;
    let mut out = format!("{} ({}", skill.name, skill.source_label());
    if let Some(v) = &m.version {
        out.push_str(&format!(", version {v}"));
    }
    if off.is_some() {
        out.push_str(", turned off");
    }
    out.push_str(")\n");
    if let SkillSource::User(dir) = &skill.source {
        out.push_str(&format!("folder: {}\n", dir.display()));
    }
    out.push_str(&format!("description: {}\n", skill.description));
    let fact = |out: &mut String, label: &str, items: &[String]| {
        if !items.is_empty() {
            out.push_str(&format!("{label}: {}\n", items.join(", ")));
        }
    };
    fact(&mut out, "tags", &skill.tags);
    let platforms: Vec<String> = m.platforms.iter().map(|p| p.to_string()).collect();
    fact(&mut out, "platforms", &platforms);
    fact(&mut out, "requires tools", &m.requires_tools);
    fact(&mut out, "requires toolsets", &m.requires_toolsets);
    let env: Vec<String> = m
        .required_environment_variables
        .iter()
        .map(|v| v.name.clone())
        .collect();
    fact(&mut out, "requires environment variables", &env);
    fact(&mut out, "stands in for tools", &m.fallback_for_tools);
    fact(&mut out, "stands in for toolsets", &m.fallback_for_toolsets);
    fact(&mut out, "related skills", &m.related_skills);
    if let Some(store) = store(config).await
        && let Ok(u) = skills::usage(&*store, &skill.name).await
    {
        let last = u.last_used.map_or(String::new(), |t| {
            format!(", last {}", t.round(jiff::Unit::Second).unwrap_or(t))
        });
        out.push_str(&format!("uses: {}{last}\n", u.count));
    }
    let files = tokio::task::spawn_blocking({
        let skill = skill.clone();
        move || skill.files()
    })
    .await
    .unwrap_or_default();
    for f in files {
        out.push_str(&format!("file: {} ({} bytes)\n", f.path, f.bytes));
    }
    out.push_str(&format!("\n{}\n", skill.body));
    emit(&out)
}

/// Every problem of the skills at `path` (or of all skills), and how many skills are valid.
fn check_path(path: &Path) -> Result<(usize, Vec<SkillProblem>), String> {
    let folder = if path.is_file() {
        path.parent().unwrap_or(Path::new(".")).to_owned()
    } else {
        path.to_owned()
    };
    let folders =
        skill_folders(&folder).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if folders.is_empty() {
        return Err(format!(
            "{} holds no SKILL.md, neither at its top nor in its immediate subfolders",
            path.display()
        ));
    }
    let mut valid = 0;
    let mut problems = Vec::new();
    for f in folders {
        // A skill must be named after its folder, wherever that folder is.
        let name = std::path::absolute(&f)
            .ok()
            .and_then(|a| a.file_name().map(|n| n.to_string_lossy().into_owned()));
        match check_folder(&f, name.as_deref()) {
            Ok(_) => valid += 1,
            Err(found) => problems.extend(found),
        }
    }
    Ok((valid, problems))
}

async fn validate(sources: &SkillSources, path: Option<PathBuf>) -> Outcome {
    let (valid, problems) = match path {
        Some(path) => tokio::task::spawn_blocking(move || check_path(&path))
            .await
            .map_err(|e| format!("cannot validate: {e}"))??,
        None => {
            let library = load(sources).await?;
            (library.skills().len(), library.problems().to_vec())
        }
    };
    if problems.is_empty() {
        return emit(&format!("{}, all valid.\n", plural(valid, "skill")));
    }
    emit(&problems_text(&problems))?;
    Err(format!(
        "{}; {} valid",
        plural(problems.len(), "problem"),
        plural(valid, "skill")
    ))
}

async fn install(sources: &SkillSources, source: &str, force: bool) -> Outcome {
    let installed = skills::install(source, sources, force)
        .await
        .map_err(|e| match e {
            InstallError::Invalid(_) => format!("cannot install from {source}: {e}"),
            _ => e.to_string(),
        })?;
    let mut out = String::new();
    for i in &installed {
        out.push_str(&format!("installed {} in {}", i.name, i.path.display()));
        if i.replaced {
            out.push_str(" (replacing your earlier copy)");
        }
        out.push('\n');
        if !i.skipped.is_empty() {
            out.push_str(&format!(
                "  not copied (links and hidden files): {}\n",
                i.skipped.join(", ")
            ));
        }
    }
    out.push_str("New conversations list them; `hermes skills show <name>` shows one.\n");
    emit(&out)
}

async fn remove(config: &Config, sources: &SkillSources, name: &str) -> Outcome {
    let removed = {
        let (sources, name) = (sources.clone(), name.to_owned());
        tokio::task::spawn_blocking(move || skills::remove_user_skill(&sources, &name))
            .await
            .map_err(|e| format!("cannot remove: {e}"))?
            .map_err(|e| e.to_string())?
    };
    if removed {
        return emit(&format!(
            "removed your copy of {name}; the bundled {name} is used again\n"
        ));
    }
    if let Some(store) = store(config).await {
        let _ = skills::forget_usage(&*store, name).await;
    }
    emit(&format!("removed {name}\n"))
}

/// `hermes skills enable|disable <name>`.
async fn switch(sources: &SkillSources, name: &str, enabled: bool) -> Outcome {
    let library = load(sources).await?;
    let known = library.get(name).is_some() || library.turned_off().iter().any(|s| s.name == name);
    if !known {
        return Err(format!(
            "there is no skill named `{name}`; `hermes skills list` shows them"
        ));
    }
    let dir = sources.user_dir().to_owned();
    let changed = {
        let name = name.to_owned();
        tokio::task::spawn_blocking(move || skills::set_enabled(&dir, &name, enabled))
            .await
            .map_err(|e| format!("cannot change the skill: {e}"))?
            .map_err(|e| {
                format!(
                    "cannot write {}: {e}",
                    sources.user_dir().join(skills::DISABLED_FILE).display()
                )
            })?
    };
    let state = if enabled { "on" } else { "off" };
    if !changed {
        return emit(&format!("{name} was already {state}\n"));
    }
    emit(&format!(
        "{name} is {state}; conversations started from now on see the change (/new in a chat)\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::testing::{skill_md, write_skill};

    #[test]
    fn validate_checks_a_folder_a_skill_md_or_a_folder_of_skills() {
        let dir = tempfile::tempdir().unwrap();
        let good = write_skill(dir.path(), "good", "Fine.", "");
        let bad = write_skill(dir.path(), "bad", "Broken.", "");
        std::fs::write(bad.join("SKILL.md"), skill_md("not-bad", "Broken.", "")).unwrap();

        assert_eq!(check_path(&good).unwrap(), (1, vec![]));
        assert_eq!(check_path(&good.join("SKILL.md")).unwrap(), (1, vec![]));
        let (valid, problems) = check_path(dir.path()).unwrap();
        assert_eq!(valid, 1);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, bad.join("SKILL.md"));
        assert_eq!(problems[0].line, Some(2));
        assert!(problems[0].message.contains("the skill's folder is `bad`"));
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(
            check_path(&empty)
                .unwrap_err()
                .contains("holds no SKILL.md")
        );
    }

    #[test]
    fn descriptions_are_flattened_and_cut() {
        assert_eq!(one_line("a\n  b", 10), "a b");
        assert_eq!(one_line("abcdefghijk", 5), "abcd…");
    }
}
