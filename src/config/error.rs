//! [`ConfigError`]: what is wrong with the configuration, where, and how to fix it.

use std::fmt;
use std::path::{Path, PathBuf};

/// A configuration problem. The message names the file (or environment variable), the key, the
/// line where known, and what is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, or `None` for a problem in the environment or the merged result.
    pub file: Option<PathBuf>,
    /// Dotted key (`gateway.busy_mode`) or environment variable name; empty when unknown.
    pub key: String,
    pub line: Option<usize>,
    pub problem: String,
}

impl ConfigError {
    pub(crate) fn unreadable(path: &Path, err: &std::io::Error) -> Self {
        ConfigError {
            file: Some(path.to_owned()),
            key: String::new(),
            line: None,
            problem: format!("cannot read the file: {err}"),
        }
    }

    pub(crate) fn invalid(file: Option<&Path>, key: &str, problem: String) -> Self {
        ConfigError {
            file: file.map(Path::to_owned),
            key: key.to_owned(),
            line: None,
            problem,
        }
    }

    pub(crate) fn env(var: &str, problem: String) -> Self {
        ConfigError {
            file: None,
            key: var.to_owned(),
            line: None,
            problem,
        }
    }

    pub(crate) fn toml(path: &Path, text: &str, key: &str, err: &toml::de::Error) -> Self {
        let line = err
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let key = if key.is_empty() || key == "." {
            String::new()
        } else {
            key.to_owned()
        };
        ConfigError {
            file: Some(path.to_owned()),
            key,
            line,
            problem: err.message().trim().to_owned(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}", file.display())?,
            None if self.key.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && !self.key.is_empty() =>
            {
                write!(f, "environment variable {}", self.key)?;
                return write!(f, ": {}", self.problem);
            }
            None => f.write_str("configuration")?,
        }
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        if !self.key.is_empty() {
            write!(f, ", key `{}`", self.key)?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for ConfigError {}
