//! `SKILL.md`: YAML frontmatter between `---` lines, then a Markdown body; parsed into a
//! [`Manifest`] or a list of [`SkillProblem`]s that name the file, the line and the field.
//!
//! The frontmatter follows the open Agent Skills format (`name`, `description`, `license`,
//! `compatibility`, `allowed-tools`, `metadata`) plus hermes' own top-level fields (`version`,
//! `platforms`, `related_skills`, `requires_*`, `fallback_for_*`,
//! `required_environment_variables`, `config`) and `metadata.hermes.tags`. Any other top-level
//! key is an error rather than being ignored: a misspelt `requires_tool` silently ignored would
//! show a skill where it cannot work.
//!
//! Skills written for hermes-agent load as they are: its `author` and `prerequisites` are
//! accepted, `platforms` may name operating systems (`[macos, linux]`; the skill is hidden on
//! the others), its lists under `metadata.hermes` (`related_skills`, `requires_*`,
//! `fallback_for_*`) count as at the top level, and its other `metadata.hermes` keys (`config`
//! prompts, `blueprint`, …) are left in `metadata` unread.
//!
//! YAML is read with `serde_norway`, the maintained fork of the archived `serde_yaml` 0.9: the
//! same API and error locations, its libyaml port (`unsafe-libyaml-norway`) is maintained too,
//! and it is licensed MIT OR Apache-2.0 like hermes. (`serde_yaml_ng` is MIT only and still
//! builds on the archived `unsafe-libyaml`.)

mod fields;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use hermes_adapter::Platform;
use serde_json::{Map, Value};

use fields::{Raw, check};

/// Longest `name`, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters (Agent Skills format).
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// Something wrong with a skill, worded for the person (or model) who will fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    pub file: PathBuf,
    /// 1-based line in `file`, where one can be named.
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// An environment variable a skill needs: `- GITHUB_TOKEN` or
/// `- {name: GITHUB_TOKEN, help: "create one at …"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvRequirement {
    pub name: String,
    /// How to get a value, for the person setting it up.
    pub help: Option<String>,
}

/// A valid `SKILL.md` frontmatter. Lists are empty when the field is absent.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// Tools the skill expects to use (`allowed-tools`, space-separated or a list).
    pub allowed_tools: Vec<String>,
    /// The free-form `metadata` map, `hermes.tags` included.
    pub metadata: Map<String, Value>,
    pub version: Option<String>,
    /// Platforms the skill is meant for; empty: all.
    pub platforms: Vec<Platform>,
    /// Operating systems the skill is meant for, as `std::env::consts::OS` names them
    /// (`linux`, `macos`); empty: all.
    pub os: Vec<String>,
    /// `metadata.hermes.tags`.
    pub tags: Vec<String>,
    pub related_skills: Vec<String>,
    /// Shown only when all of these tools are enabled.
    pub requires_tools: Vec<String>,
    /// Shown only when all of these toolsets are enabled.
    pub requires_toolsets: Vec<String>,
    /// Shown only when none of these tools is enabled (the skill replaces them).
    pub fallback_for_tools: Vec<String>,
    /// Shown only when none of these toolsets is enabled.
    pub fallback_for_toolsets: Vec<String>,
    /// Shown only when all of these are set.
    pub required_environment_variables: Vec<EnvRequirement>,
    /// Settings the skill reads, with their defaults.
    pub config: Map<String, Value>,
}

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillDoc {
    pub manifest: Manifest,
    /// The Markdown after the frontmatter, trimmed.
    pub body: String,
}

/// Parse the text of `file`. `folder` is the name of the folder the skill lives in (its name
/// must equal it); `None` skips that check, for a skill about to be installed under its own name.
pub fn parse(text: &str, file: &Path, folder: Option<&str>) -> Result<SkillDoc, Vec<SkillProblem>> {
    let problem = |line: Option<usize>, message: String| SkillProblem {
        file: file.to_owned(),
        line,
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (yaml, body, body_line) = split(text).map_err(|(line, m)| vec![problem(line, m)])?;
    if yaml.trim().is_empty() {
        return Err(vec![problem(
            Some(1),
            "the frontmatter is empty; it needs at least `name` and `description`".into(),
        )]);
    }
    let raw: Raw = serde_norway::from_str(yaml).map_err(|e| {
        // The frontmatter starts on the file's second line.
        let line = e.location().map(|l| l.line() + 1);
        vec![problem(line, yaml_message(&e))]
    })?;
    let key_line = |key: &str| Some(field_line(yaml, key));
    let mut problems = Vec::new();
    let manifest = check(raw, folder, &mut |key, message| {
        problems.push(problem(key_line(key), message))
    });
    if body.trim().is_empty() {
        problems.push(problem(
            Some(body_line),
            "the body after the frontmatter is empty; write the skill's instructions there".into(),
        ));
    }
    if problems.is_empty() {
        Ok(SkillDoc {
            manifest,
            body: body.trim().to_owned(),
        })
    } else {
        Err(problems)
    }
}

/// Whether `name` is a valid skill name; the reason if not.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("`name` is empty".into());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "`name` is {chars} characters long; at most {MAX_NAME_CHARS} are allowed"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        let suggestion: String = name
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        return Err(format!(
            "`name` `{name}` may contain only lowercase letters, digits and hyphens (e.g. \
             `{suggestion}`)"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!(
            "`name` `{name}` must not start or end with a hyphen"
        ));
    }
    if name.contains("--") {
        return Err(format!(
            "`name` `{name}` must not contain two hyphens in a row"
        ));
    }
    Ok(())
}

/// Split `---\n<yaml>\n---\n<body>`: the YAML, the body and the body's first line number.
fn split(text: &str) -> Result<(&str, &str, usize), (Option<usize>, String)> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err((
            Some(1),
            "SKILL.md must start with a `---` line, then the YAML frontmatter (`name`, \
             `description`), then another `---` line, then the instructions"
                .into(),
        ));
    }
    let start = first.len();
    let mut at = start;
    for (i, line) in lines.enumerate() {
        if line.trim_end() == "---" {
            // Line 1 is the opening `---`; this closing one is line i + 2.
            return Ok((&text[start..at], &text[at + line.len()..], i + 3));
        }
        at += line.len();
    }
    Err((
        Some(1),
        "the frontmatter opened on line 1 is never closed: add a line holding only `---` after it"
            .into(),
    ))
}

/// The file line of top-level `key` in the frontmatter (line 1 is the opening `---`).
fn field_line(yaml: &str, key: &str) -> usize {
    yaml.lines()
        .position(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map_or(1, |i| i + 2)
}

/// The parser's message without its ` at line N column M` (the line is reported apart), with a
/// hint for keys that belong elsewhere.
fn yaml_message(e: &serde_norway::Error) -> String {
    static AT: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r" at line \d+ column \d+").expect("valid regex"));
    let message = AT.replace_all(&e.to_string(), "").into_owned();
    let hint = if message.starts_with("unknown field `tags`") {
        "; tags go under `metadata:` → `hermes:` → `tags: [...]`"
    } else if message.starts_with("unknown field `allowed_tools`") {
        "; the field is spelt `allowed-tools`"
    } else {
        ""
    };
    format!("frontmatter: {message}{hint}")
}

#[cfg(test)]
mod tests;
