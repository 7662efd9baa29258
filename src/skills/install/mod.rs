//! Installing skills into the user's directory from a local folder or a git repository, and
//! removing them again (`hermes skills install` / `remove`).
//!
//! A source is a folder with `SKILL.md` at its top or in its immediate subfolders. A local git
//! repository or a URL is cloned first (`git clone --depth 1` into a temporary folder: only
//! committed files, no `.git`, and no network for a local path). Everything is validated before
//! anything is copied, and a skill is copied under a hidden name and renamed into place, so a
//! failed install leaves the user's skills as they were.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::folder::{self, Staging};
use super::library::{SKILL_MD, SkillSources, read_skill_md};
use super::manifest::{SkillDoc, SkillProblem, check_name, parse};

/// Longest a `git clone` may take.
const CLONE_TIMEOUT: Duration = Duration::from_secs(300);

/// A skill that was installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub name: String,
    /// Its folder in the user's skills directory.
    pub path: PathBuf,
    /// A user skill of the same name was replaced (`--force`).
    pub replaced: bool,
    /// Entries that were not copied: symbolic links and hidden files.
    pub skipped: Vec<String>,
}

/// Why installing or removing skills failed; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}")]
    Source(String),
    #[error(
        "the `git` command is not installed; install git, or clone the repository yourself and \
         install from the folder"
    )]
    NoGit,
    #[error("git clone of {url} failed: {reason}")]
    Git { url: String, reason: String },
    #[error("{}", problems_text(.0))]
    Invalid(Vec<SkillProblem>),
    #[error(
        "`{0}` is a bundled skill; a skill of another name can be installed, or change the \
         bundled one by editing it (hermes copies it to your skills)"
    )]
    ClashBundled(String),
    #[error("you already have a skill named `{0}`; add --force to replace it")]
    ClashUser(String),
    #[error("there is no skill named `{0}` in your skills")]
    NotFound(String),
    #[error("`{0}` is a bundled skill; bundled skills cannot be removed")]
    Bundled(String),
    #[error("{0}")]
    Io(String),
}

fn problems_text(problems: &[SkillProblem]) -> String {
    let mut out = String::from("nothing was installed; fix these problems first:");
    for p in problems {
        out.push_str(&format!("\n  {p}"));
    }
    out
}

/// Install the skills found at `source` (a folder, a local git repository or a git URL) into
/// `sources.user_dir()`. Refuses invalid skills, and names already used by a bundled skill or
/// (unless `force`) by one of the user's.
pub async fn install(
    source: &str,
    sources: &SkillSources,
    force: bool,
) -> Result<Vec<Installed>, InstallError> {
    let local = Path::new(source);
    let (dir, label, clone) = if local.is_dir() && !is_git_repository(local) {
        (local.to_owned(), source.to_owned(), None)
    } else if local.is_file() && local.file_name().is_some_and(|n| n == SKILL_MD) {
        let parent = local.parent().unwrap_or(Path::new(".")).to_owned();
        (parent, source.to_owned(), None)
    } else if local.is_dir() || looks_like_url(source) {
        let url = if local.is_dir() {
            // A plain local path ignores --depth; a file:// URL clones shallowly.
            let abs = std::path::absolute(local).map_err(|e| InstallError::Io(e.to_string()))?;
            format!("file://{}", abs.display())
        } else {
            source.to_owned()
        };
        let tmp = TempDir::new()?;
        git_clone(&url, tmp.path()).await?;
        (tmp.path().to_owned(), source.to_owned(), Some(tmp))
    } else {
        return Err(InstallError::Source(format!(
            "`{source}` is neither a folder nor a git URL; give a folder holding SKILL.md (or \
             skill folders) or a git repository"
        )));
    };
    let sources = sources.clone();
    tokio::task::spawn_blocking(move || {
        let result = install_from(&dir, &label, &sources, force);
        drop(clone);
        result
    })
    .await
    .map_err(|e| InstallError::Io(format!("the install did not finish: {e}")))?
}

fn looks_like_url(s: &str) -> bool {
    s.contains("://") || s.starts_with("git@") || s.ends_with(".git")
}

fn is_git_repository(dir: &Path) -> bool {
    dir.join(".git").exists() || (dir.join("HEAD").is_file() && dir.join("objects").is_dir())
}

async fn git_clone(url: &str, into: &Path) -> Result<(), InstallError> {
    let child = tokio::process::Command::new("git")
        .args(["clone", "--depth", "1", "--quiet", "--"])
        .arg(url)
        .arg(into)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => InstallError::NoGit,
            _ => InstallError::Io(format!("cannot run git: {e}")),
        })?;
    let git = |reason: String| InstallError::Git {
        url: url.to_owned(),
        reason,
    };
    let out = tokio::time::timeout(CLONE_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            git(format!(
                "no result after {} seconds",
                CLONE_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| git(e.to_string()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(git(stderr.trim().to_owned()));
    }
    Ok(())
}

/// The skill folders of `dir`: itself if it holds SKILL.md, else its immediate subfolders
/// (not hidden ones) that do; sorted.
pub fn skill_folders(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if dir.join(SKILL_MD).is_file() {
        return Ok(vec![dir.to_owned()]);
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && entry.file_type()?.is_dir() && path.join(SKILL_MD).is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Read and check the skill in `folder`, whose name must be `expected` when given.
pub fn check_folder(folder: &Path, expected: Option<&str>) -> Result<SkillDoc, Vec<SkillProblem>> {
    let file = folder.join(SKILL_MD);
    let text = read_skill_md(&file).map_err(|message| {
        vec![SkillProblem {
            file: file.clone(),
            line: None,
            message,
        }]
    })?;
    parse(&text, &file, expected)
}

fn install_from(
    dir: &Path,
    label: &str,
    sources: &SkillSources,
    force: bool,
) -> Result<Vec<Installed>, InstallError> {
    let found = skill_folders(dir).map_err(|e| InstallError::Source(format!("{label}: {e}")))?;
    if found.is_empty() {
        return Err(InstallError::Source(format!(
            "{label} has no SKILL.md, neither at its top nor in its immediate subfolders"
        )));
    }
    // Problems name files as the user knows them: below the source they gave.
    let shown = |file: &Path| Path::new(label).join(file.strip_prefix(dir).unwrap_or(file));
    let mut problems = Vec::new();
    let mut valid = Vec::new();
    for folder in found {
        // The top folder may be called anything (a repository, a temporary clone); a skill in
        // a subfolder must be named after it.
        let expected = (folder != dir)
            .then(|| folder.file_name().map(|n| n.to_string_lossy().into_owned()))
            .flatten();
        match check_folder(&folder, expected.as_deref()) {
            Ok(doc) => valid.push((folder, doc.manifest.name)),
            Err(found) => problems.extend(found.into_iter().map(|p| SkillProblem {
                file: shown(&p.file),
                ..p
            })),
        }
    }
    if !problems.is_empty() {
        return Err(InstallError::Invalid(problems));
    }
    for (_, name) in &valid {
        if sources.bundled(name).is_some() {
            return Err(InstallError::ClashBundled(name.clone()));
        }
        let exists = std::fs::symlink_metadata(sources.user_dir().join(name)).is_ok();
        if exists && !force {
            return Err(InstallError::ClashUser(name.clone()));
        }
    }
    let io = |e: std::io::Error| InstallError::Io(format!("cannot copy the skill: {e}"));
    let mut installed = Vec::new();
    for (folder, name) in valid {
        let target = sources.user_dir().join(&name);
        let replaced = std::fs::symlink_metadata(&target).is_ok();
        let staging = Staging::new(sources.user_dir(), &name).map_err(io)?;
        let skipped = folder::copy_tree(&folder, staging.path()).map_err(io)?;
        staging.commit(&target).map_err(io)?;
        installed.push(Installed {
            name,
            path: target,
            replaced,
            skipped,
        });
    }
    Ok(installed)
}

/// Remove the user's skill `name` (a bundled skill of the same name becomes visible again,
/// which the returned `true` says). Blocking.
pub fn remove_user_skill(sources: &SkillSources, name: &str) -> Result<bool, InstallError> {
    check_name(name).map_err(InstallError::Source)?;
    let dir = sources.user_dir().join(name);
    let bundled = sources.bundled(name).is_some();
    if std::fs::symlink_metadata(&dir).is_err() {
        return Err(if bundled {
            InstallError::Bundled(name.to_owned())
        } else {
            InstallError::NotFound(name.to_owned())
        });
    }
    folder::remove_folder(&dir)
        .map_err(|e| InstallError::Io(format!("cannot remove {}: {e}", dir.display())))?;
    Ok(bundled)
}

/// A temporary folder for a clone, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, InstallError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "hermes-skill-install-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path)
            .map_err(|e| InstallError::Io(format!("cannot create {}: {e}", path.display())))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests;
