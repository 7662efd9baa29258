//! hermes-agent's skills (`skills/<category>/<name>/SKILL.md`) into ours
//! (`$HERMES_HOME/skills/<name>/`): each is checked by our parser first, and copied only when
//! valid and its name is free.

use std::path::{Path, PathBuf};

use crate::skills::{SKILL_MD, SkillSources, check_folder};

/// What becomes of one of hermes-agent's skills.
#[derive(Debug)]
pub(super) enum SkillPlan {
    Copy {
        name: String,
        from: PathBuf,
    },
    /// Already among the user's skills (an earlier import, or their own).
    Present {
        name: String,
    },
    /// A bundled skill has that name.
    Bundled {
        name: String,
    },
    Invalid {
        from: PathBuf,
        problems: Vec<String>,
    },
}

/// Folders holding a SKILL.md under `root`, any depth, hidden folders (hermes-agent's
/// `.archive`, `.hub`) left out; sorted.
fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        if dir.join(SKILL_MD).is_file() {
            out.push(dir);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            if !hidden && e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Decide, for each skill under `root`, what the import does with it.
pub(super) fn plan(root: &Path, ours: &SkillSources) -> Vec<SkillPlan> {
    skill_dirs(root)
        .into_iter()
        .map(|from| {
            let folder = from
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match check_folder(&from, Some(&folder)) {
                Err(problems) => SkillPlan::Invalid {
                    from,
                    problems: problems.iter().map(ToString::to_string).collect(),
                },
                Ok(doc) => {
                    let name = doc.manifest.name;
                    if ours.bundled(&name).is_some() {
                        SkillPlan::Bundled { name }
                    } else if std::fs::symlink_metadata(ours.user_dir().join(&name)).is_ok() {
                        SkillPlan::Present { name }
                    } else {
                        SkillPlan::Copy { name, from }
                    }
                }
            }
        })
        .collect()
}

/// Copy one skill into place, as `hermes skills install <folder>` does (validated again,
/// staged under a hidden name, renamed).
pub(super) async fn copy(from: &Path, ours: &SkillSources) -> Result<(), String> {
    let source = from.to_string_lossy();
    crate::skills::install(&source, ours, false)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}
