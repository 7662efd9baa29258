//! Finding hermes-agent's home and reading its settings: the directory given (default
//! `~/.hermes`, which is also hermes' own default home, so that case needs care), its layout
//! checked, its `.env` and `config.yaml` parsed.

use std::path::{Path, PathBuf};

use super::mapping::{AgentSettings, parse_env};

/// A hermes-agent home directory.
#[derive(Debug)]
pub(super) struct AgentHome {
    pub dir: PathBuf,
}

impl AgentHome {
    /// The home to import from: `dir`, else `~/.hermes` (hermes-agent's default). Refused when
    /// it is hermes' own home (`our_home`) or does not look like hermes-agent's.
    pub fn locate(dir: Option<PathBuf>, our_home: &Path, user_home: &Path) -> Result<Self, String> {
        let explicit = dir.is_some();
        let dir = dir.unwrap_or_else(|| user_home.join(".hermes"));
        if !dir.is_dir() {
            return Err(if explicit {
                format!("{} is not a directory", dir.display())
            } else {
                format!(
                    "no hermes-agent home at {}; name its directory: `hermes import hermes-agent DIR`",
                    dir.display()
                )
            });
        }
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        if same(&dir, our_home) {
            return Err(format!(
                "{} is hermes' own home ($HERMES_HOME) as well as hermes-agent's default; importing \
                 a directory into itself would mix the two. Move hermes-agent's home aside \
                 (`mv ~/.hermes ~/.hermes-agent`) and run `hermes import hermes-agent \
                 ~/.hermes-agent`, or give hermes another home with HERMES_HOME",
                dir.display()
            ));
        }
        let home = AgentHome { dir };
        let marks = ["config.yaml", ".env", "state.db", "memories", "SOUL.md"];
        if !marks.iter().any(|m| home.dir.join(m).exists()) {
            return Err(format!(
                "{} does not look like a hermes-agent home (none of {} is in it)",
                home.dir.display(),
                marks.join(", ")
            ));
        }
        Ok(home)
    }

    pub fn skills(&self) -> PathBuf {
        self.dir.join("skills")
    }

    pub fn memory_file(&self, name: &str) -> PathBuf {
        self.dir.join("memories").join(name)
    }

    pub fn state_db(&self) -> PathBuf {
        self.dir.join("state.db")
    }

    /// Its `.env` and `config.yaml` (each may be missing).
    pub fn settings(&self) -> Result<AgentSettings, String> {
        let read = |name: &str| match std::fs::read_to_string(self.dir.join(name)) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!(
                "cannot read {}: {e}",
                self.dir.join(name).display()
            )),
        };
        let env = read(".env")?.map(|t| parse_env(&t)).unwrap_or_default();
        let yaml = match read("config.yaml")? {
            Some(text) if !text.trim().is_empty() => {
                serde_norway::from_str(&text).map_err(|e| {
                    format!(
                        "{} is not valid YAML: {e}",
                        self.dir.join("config.yaml").display()
                    )
                })?
            }
            _ => serde_json::Value::Null,
        };
        Ok(AgentSettings { env, yaml })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_home_is_refused_when_it_is_ours_too() {
        let user = tempfile::tempdir().unwrap();
        let both = user.path().join(".hermes");
        std::fs::create_dir_all(&both).unwrap();
        std::fs::write(both.join("config.yaml"), "model: x\n").unwrap();
        let err = AgentHome::locate(None, &both, user.path()).unwrap_err();
        assert!(err.contains("hermes' own home"), "{err}");
        assert!(err.contains("mv ~/.hermes ~/.hermes-agent"), "{err}");
        // hermes elsewhere: the default is hermes-agent's.
        let ours = user.path().join("hermes-home");
        let home = AgentHome::locate(None, &ours, user.path()).unwrap();
        assert_eq!(home.dir, both);
    }

    #[test]
    fn a_directory_without_hermes_agent_files_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = AgentHome::locate(Some(dir.path().into()), Path::new("/nowhere"), dir.path())
            .unwrap_err();
        assert!(
            err.contains("does not look like a hermes-agent home"),
            "{err}"
        );
        let err = AgentHome::locate(None, Path::new("/nowhere"), dir.path()).unwrap_err();
        assert!(err.contains("no hermes-agent home at"), "{err}");
    }
}
