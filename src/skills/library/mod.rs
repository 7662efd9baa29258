//! [`SkillLibrary`]: every skill from the bundled and the user's sources, the ones available in
//! a given context, and the level-0 index for the system prompt.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_adapter::Platform;
use include_dir::Dir;

use super::files::{self, FileError, SkillFile};
use super::manifest::{self, Manifest, SkillProblem};

/// The file that makes a folder a skill.
pub const SKILL_MD: &str = "SKILL.md";

/// Where skills come from: the ones embedded in the binary and the user's directory.
#[derive(Clone)]
pub struct SkillSources {
    bundled: &'static Dir<'static>,
    user_dir: PathBuf,
}

impl std::fmt::Debug for SkillSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSources")
            .field("bundled", &self.bundled.dirs().count())
            .field("user_dir", &self.user_dir)
            .finish()
    }
}

impl SkillSources {
    /// The bundled skills and the user's skills in `user_dir` (`$HERMES_HOME/skills`).
    pub fn new(user_dir: impl Into<PathBuf>) -> Self {
        SkillSources {
            bundled: &super::BUNDLED,
            user_dir: user_dir.into(),
        }
    }

    /// The sources of a hermes home directory: its `skills/` folder for the user's skills.
    pub fn for_home(home: &Path) -> Self {
        Self::new(home.join("skills"))
    }

    /// Use `dir` instead of the skills built into the binary (tests, other distributions).
    pub fn with_bundled(mut self, dir: &'static Dir<'static>) -> Self {
        self.bundled = dir;
        self
    }

    /// The directory of the user's skills; the only place skills are ever written.
    pub fn user_dir(&self) -> &Path {
        &self.user_dir
    }

    /// The bundled skill folder named `name`, if there is one.
    pub fn bundled(&self, name: &str) -> Option<&'static Dir<'static>> {
        self.bundled
            .dirs()
            .find(|d| d.path().file_name().is_some_and(|f| f == name))
    }
}

/// Where a skill was loaded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    /// Embedded in the binary from the repository's `skills/` folder.
    Bundled,
    /// A folder in the user's skills directory.
    User(PathBuf),
}

/// One valid skill.
#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    /// The instructions (level 1), without the frontmatter.
    pub body: String,
    pub source: SkillSource,
    /// A user skill that replaces a bundled skill of the same name.
    pub overrides_bundled: bool,
    pub manifest: Manifest,
    embedded: Option<&'static Dir<'static>>,
}

impl Skill {
    /// The text of file `rel` of this skill (`references/api.md`), confined to the skill's
    /// folder and capped at [`files::MAX_FILE_BYTES`].
    pub fn read_file(&self, rel: &str) -> Result<String, FileError> {
        match (&self.source, self.embedded) {
            (SkillSource::User(dir), _) => files::read_disk(dir, rel),
            (SkillSource::Bundled, Some(dir)) => files::read_embedded(dir, rel),
            (SkillSource::Bundled, None) => Err(FileError::NotFound(rel.into())),
        }
    }

    /// The skill's files other than `SKILL.md`, sorted by path.
    pub fn files(&self) -> Vec<SkillFile> {
        match (&self.source, self.embedded) {
            (SkillSource::User(dir), _) => files::list_disk(dir),
            (SkillSource::Bundled, Some(dir)) => files::list_embedded(dir),
            (SkillSource::Bundled, None) => Vec::new(),
        }
    }

    /// `bundled` or `user`.
    pub fn source_label(&self) -> &'static str {
        match self.source {
            SkillSource::Bundled => "bundled",
            SkillSource::User(_) => "user",
        }
    }
}

/// All loaded skills, sorted by name, and the problems of the ones that could not be loaded.
/// Skills the operator turned off ([`super::switch`]) are kept apart: nothing that asks for
/// skills by name or availability sees them.
#[derive(Debug, Clone, Default)]
pub struct SkillLibrary {
    skills: Vec<Skill>,
    turned_off: Vec<Skill>,
    problems: Vec<SkillProblem>,
}

impl SkillLibrary {
    /// Load every skill of `sources`. Never fails: an invalid skill is left out and its
    /// problems are kept in [`SkillLibrary::problems`]; a user skill replaces a bundled skill of
    /// the same name. Reads the disk: call it off the async runtime.
    pub fn load(sources: &SkillSources) -> SkillLibrary {
        let mut lib = SkillLibrary::default();
        for dir in sources.bundled.dirs() {
            let folder = dir.path().to_string_lossy().into_owned();
            let file = Path::new("skills").join(&folder).join(SKILL_MD);
            let Some(text) = dir
                .get_file(dir.path().join(SKILL_MD))
                .and_then(|f| f.contents_utf8())
            else {
                lib.problem(&file, "no SKILL.md (UTF-8) in this bundled folder");
                continue;
            };
            lib.add(text, &file, &folder, SkillSource::Bundled, Some(dir));
        }
        for (folder, path) in user_folders(sources.user_dir()) {
            let file = path.join(SKILL_MD);
            match read_skill_md(&file) {
                Ok(text) => {
                    lib.add(&text, &file, &folder, SkillSource::User(path), None);
                }
                Err(message) => lib.problem(&file, &message),
            }
        }
        lib.skills.sort_by(|a, b| a.name.cmp(&b.name));
        let off = super::switch::disabled_names(sources.user_dir());
        (lib.turned_off, lib.skills) = std::mem::take(&mut lib.skills)
            .into_iter()
            .partition(|s| off.contains(&s.name));
        lib.problems
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        lib
    }

    fn problem(&mut self, file: &Path, message: &str) {
        self.problems.push(SkillProblem {
            file: file.to_owned(),
            line: None,
            message: message.to_owned(),
        });
    }

    fn add(
        &mut self,
        text: &str,
        file: &Path,
        folder: &str,
        source: SkillSource,
        embedded: Option<&'static Dir<'static>>,
    ) {
        let doc = match manifest::parse(text, file, Some(folder)) {
            Ok(doc) => doc,
            Err(problems) => return self.problems.extend(problems),
        };
        let m = doc.manifest;
        let mut overrides_bundled = false;
        if let Some(at) = self.skills.iter().position(|s| s.name == m.name) {
            // Bundled skills are loaded first; the user's copy replaces them.
            self.skills.remove(at);
            overrides_bundled = true;
        }
        self.skills.push(Skill {
            name: m.name.clone(),
            description: m.description.clone(),
            tags: m.tags.clone(),
            body: doc.body,
            source,
            overrides_bundled,
            manifest: m,
            embedded,
        });
    }

    /// Every valid skill, sorted by name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The valid skills the operator turned off, sorted by name.
    pub fn turned_off(&self) -> &[Skill] {
        &self.turned_off
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// What is wrong with the skills that were left out, by file and line.
    pub fn problems(&self) -> &[SkillProblem] {
        &self.problems
    }

    /// The skills usable in `ctx`, sorted by name.
    pub fn available(&self, ctx: &Availability) -> Vec<&Skill> {
        self.skills
            .iter()
            .filter(|s| ctx.hidden_because(&s.manifest).is_none())
            .collect()
    }
}

/// The user's skill folders (not hidden ones: those are staging and trash folders), sorted.
fn user_folders(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let path = e.path();
            (!name.starts_with('.') && path.is_dir()).then_some((name, path))
        })
        .collect();
    out.sort();
    out
}

/// The text of a `SKILL.md` on disk, or why it cannot be read.
pub fn read_skill_md(file: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            "this folder has no SKILL.md; every skill folder needs one (or remove the folder)"
                .to_owned()
        }
        _ => format!("cannot read: {e}"),
    })?;
    if meta.len() > files::MAX_FILE_BYTES {
        return Err(format!(
            "SKILL.md is {} bytes, more than the {} allowed; move details into references/",
            meta.len(),
            files::MAX_FILE_BYTES
        ));
    }
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "SKILL.md is not valid UTF-8".to_owned())
}

/// What a session can use, deciding which skills it sees.
#[derive(Clone)]
pub struct Availability {
    pub platform: Platform,
    /// Names of the enabled tools.
    pub tools: BTreeSet<String>,
    /// Names of the enabled toolsets.
    pub toolsets: BTreeSet<String>,
    env_is_set: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl std::fmt::Debug for Availability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Availability")
            .field("platform", &self.platform)
            .field("tools", &self.tools)
            .field("toolsets", &self.toolsets)
            .finish_non_exhaustive()
    }
}

impl Availability {
    /// `tools` and `toolsets` enabled on `platform`; environment variables are looked up in the
    /// process environment (set and not blank) unless [`Availability::with_env`] says otherwise.
    pub fn new<T, S>(
        platform: Platform,
        tools: impl IntoIterator<Item = T>,
        toolsets: impl IntoIterator<Item = S>,
    ) -> Self
    where
        T: Into<String>,
        S: Into<String>,
    {
        Availability {
            platform,
            tools: tools.into_iter().map(Into::into).collect(),
            toolsets: toolsets.into_iter().map(Into::into).collect(),
            env_is_set: Arc::new(|name| {
                use crate::config::EnvSource;
                crate::config::ProcessEnv.var(name).is_some()
            }),
        }
    }

    /// Decide with `is_set` whether an environment variable is set.
    pub fn with_env(mut self, is_set: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.env_is_set = Arc::new(is_set);
        self
    }

    /// Why a skill with manifest `m` is hidden here, or `None` when it is available.
    ///
    /// `requires_*`, `required_environment_variables` and `platforms` must all be met. A
    /// `fallback_for_*` skill stands in for tools or toolsets the session lacks: it is hidden as
    /// soon as any of what it replaces is enabled.
    pub fn hidden_because(&self, m: &Manifest) -> Option<String> {
        if !m.platforms.is_empty() && !m.platforms.contains(&self.platform) {
            return Some(format!("not meant for {}", self.platform));
        }
        let os = std::env::consts::OS;
        if !m.os.is_empty() && !m.os.iter().any(|o| o == os) {
            return Some(format!("meant for {}, not {os}", m.os.join(", ")));
        }
        if let Some(t) = m.requires_tools.iter().find(|t| !self.tools.contains(*t)) {
            return Some(format!("needs the tool `{t}`"));
        }
        if let Some(t) = m
            .requires_toolsets
            .iter()
            .find(|t| !self.toolsets.contains(*t))
        {
            return Some(format!("needs the toolset `{t}`"));
        }
        if let Some(v) = m
            .required_environment_variables
            .iter()
            .find(|v| !(self.env_is_set)(&v.name))
        {
            return Some(format!("needs the environment variable {}", v.name));
        }
        if let Some(t) = m
            .fallback_for_tools
            .iter()
            .find(|t| self.tools.contains(*t))
        {
            return Some(format!("stands in for the tool `{t}`, which is enabled"));
        }
        if let Some(t) = m
            .fallback_for_toolsets
            .iter()
            .find(|t| self.toolsets.contains(*t))
        {
            return Some(format!("stands in for the toolset `{t}`, which is enabled"));
        }
        None
    }
}

/// The level-0 skills index for the system prompt: a short header, then `- name: description`
/// per skill, sorted by name whatever the order of `skills`, so the same skills always give the
/// same bytes (and the cached prompt prefix stays valid). Empty when there are no skills.
pub fn index(skills: &[&Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&&Skill> = skills.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted.dedup_by(|a, b| a.name == b.name);
    let mut out = String::from(
        "## Skills\n\
         Skills are how-tos saved from earlier work. Before acting on a task that matches one \
         below, call skill_view with its name and follow it; skills_list filters them by tag or \
         word.\n",
    );
    for s in sorted {
        let description = s
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!("- {}: {description}\n", s.name));
    }
    out
}

#[cfg(test)]
mod tests;
