//! Where `hermes setup` writes and how: the keys into `config.toml` (toml_edit, so the rest of
//! an existing file, comments included, stays), the secrets into `hermes.env` beside the state
//! (where the systemd units and `hermes import` keep them), both mode 0600 and replaced
//! atomically, an existing file first copied aside. What is written is loaded the way the
//! daemon will load it before it replaces anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plan::{Plan, Setting};
use crate::cli::import::write::{quote, section, to_item, write_private};
use crate::config::{Config, EnvSource};

/// The two files setup writes.
pub(super) struct Targets {
    pub config: PathBuf,
    pub env: PathBuf,
    pub home: PathBuf,
}

impl Targets {
    /// `config.toml` where the configuration was (or would be) read from; `hermes.env` in the
    /// state directory.
    pub(super) fn of(config: &Config, explicit: Option<&Path>) -> Targets {
        let path = explicit
            .map(Path::to_path_buf)
            .or_else(|| config.source.clone())
            .unwrap_or_else(|| config.home.join("config.toml"));
        Targets {
            config: path,
            env: config.home.join("hermes.env"),
            home: config.home.clone(),
        }
    }

    /// The files that exist already.
    pub(super) fn existing(&self) -> Vec<&Path> {
        [self.config.as_path(), self.env.as_path()]
            .into_iter()
            .filter(|p| p.exists())
            .collect()
    }
}

/// What was written: the files, and the copies of the files they replaced.
pub(super) struct Written {
    pub backups: Vec<PathBuf>,
}

/// Write `plan` into `targets`: check that the result loads, copy existing files aside, then
/// replace them.
pub(super) fn write(targets: &Targets, plan: &Plan) -> Result<Written, String> {
    let read = |p: &Path| match std::fs::read_to_string(p) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("cannot read {}: {e}", p.display())),
    };
    let old_config = read(&targets.config)?;
    let old_env = read(&targets.env)?;
    let config_text = set_toml(&old_config, &plan.settings())
        .map_err(|e| format!("{}: {e}", targets.config.display()))?;
    let (vars, remove) = plan.env_vars();
    let env_text = set_env(&old_env, &vars, &remove);
    check_loads(targets, &config_text, &env_text, plan)?;
    let io = |p: &Path, e: std::io::Error| format!("cannot write {}: {e}", p.display());
    let mut backups = Vec::new();
    for path in targets.existing() {
        let copy = backup_name(path);
        let text = read(path)?;
        write_private(&copy, &text).map_err(|e| io(&copy, e))?;
        backups.push(copy);
    }
    write_private(&targets.config, &config_text).map_err(|e| io(&targets.config, e))?;
    write_private(&targets.env, &env_text).map_err(|e| io(&targets.env, e))?;
    Ok(Written { backups })
}

/// `config.toml.bak-20260102-030405` (UTC), beside the file.
fn backup_name(path: &Path) -> PathBuf {
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.bak-{stamp}"))
}

/// The daemon's view of the new files: `Config::load` on the new text with the new
/// environment file as its only environment. A failure here is a bug in setup, reported with
/// the key at fault and no secret.
fn check_loads(
    targets: &Targets,
    config_text: &str,
    env_text: &str,
    plan: &Plan,
) -> Result<(), String> {
    let dir = targets.config.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".config.toml.setup.{}.tmp", std::process::id()));
    write_private(&tmp, config_text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let mut env = parse_env(env_text);
    env.insert("HERMES_HOME".into(), targets.home.display().to_string());
    let loaded = Config::load(Some(&tmp), &MapEnv(env));
    let _ = std::fs::remove_file(&tmp);
    loaded
        .map(|_| ())
        .map_err(|e| plan.scrub(&format!("the configuration setup made does not load: {e}")))
}

struct MapEnv(BTreeMap<String, String>);

impl EnvSource for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }
}

/// `text` (a TOML document, possibly empty) with each setting set, replacing what was there.
pub(super) fn set_toml(text: &str, settings: &[Setting]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = if text.trim().is_empty() {
        "# Written by `hermes setup`; every key is described in config/hermes.example.toml.\n# Secrets are in hermes.env beside the state directory.\n"
            .parse()
            .map_err(|e| format!("{e}"))?
    } else {
        text.parse()
            .map_err(|e| format!("is not valid TOML ({e}); fix or move it, then run setup again"))?
    };
    for s in settings {
        section(&mut doc, s.section)?.insert(s.key, to_item(&s.value));
    }
    Ok(doc.to_string())
}

/// The variable a dotenv line sets (`NAME=…` or `export NAME=…`), if any.
fn variable_of(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let line = line.strip_prefix("export ").unwrap_or(line);
    if line.starts_with('#') {
        return None;
    }
    line.split_once('=').map(|(name, _)| name.trim())
}

/// `text` (a dotenv file) with `vars` set (a line replaced in place, or appended) and the
/// lines of `remove` dropped; other lines stay as they are.
pub(super) fn set_env(text: &str, vars: &[(&str, String)], remove: &[&str]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    for line in text.lines() {
        match variable_of(line) {
            Some(name) if remove.contains(&name) && !vars.iter().any(|(n, _)| *n == name) => {}
            Some(name) => match vars.iter().find(|(n, _)| *n == name) {
                Some((n, v)) if !done.contains(n) => {
                    lines.push(format!("{n}={}", quote(v)));
                    done.push(n);
                }
                Some(_) => {}
                None => lines.push(line.to_owned()),
            },
            None => lines.push(line.to_owned()),
        }
    }
    let new: Vec<&(&str, String)> = vars.iter().filter(|(n, _)| !done.contains(n)).collect();
    if !new.is_empty() {
        if lines.is_empty() {
            lines.push(
                "# Secrets for hermes, written by `hermes setup` (mode 0600). The systemd unit reads this file;"
                    .into(),
            );
            lines.push("# in a shell: set -a; . ./hermes.env; set +a".into());
        }
        for (n, v) in new {
            lines.push(format!("{n}={}", quote(v)));
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// `NAME=value` lines as a map (quotes removed as a shell would for the values setup writes).
pub(super) fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let name = variable_of(line)?;
            let value = line.split_once('=')?.1.trim();
            let value = match value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
                Some(v) => v.replace("'\\''", "'"),
                None => value.trim_matches('"').to_owned(),
            };
            Some((name.to_owned(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::setup::plan::Value;

    #[test]
    fn keys_are_set_and_the_rest_of_the_file_stays() {
        let text = "# mine\n[llm]\nmodel = \"old\"\ntimeout = 3\n";
        let settings = vec![Setting {
            section: "llm",
            key: "model",
            value: Value::Text("new".into()),
        }];
        let out = set_toml(text, &settings).unwrap();
        assert_eq!(out, "# mine\n[llm]\nmodel = \"new\"\ntimeout = 3\n");
    }

    #[test]
    fn env_lines_are_replaced_in_place_appended_or_removed() {
        let text = "# keep\nOPENAI_API_KEY=old\nOTHER=1\nexport TELEGRAM_BOT_TOKEN=x\n";
        let vars = vec![
            ("TELEGRAM_BOT_TOKEN", "1:new".to_owned()),
            ("ANTHROPIC_API_KEY", "it's".to_owned()),
        ];
        let out = set_env(text, &vars, &["OPENAI_API_KEY"]);
        assert_eq!(
            out,
            "# keep\nOTHER=1\nTELEGRAM_BOT_TOKEN=1:new\nANTHROPIC_API_KEY='it'\\''s'\n"
        );
        let parsed = parse_env(&out);
        assert_eq!(parsed["ANTHROPIC_API_KEY"], "it's");
        assert_eq!(parsed["TELEGRAM_BOT_TOKEN"], "1:new");
    }
}
