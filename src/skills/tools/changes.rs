//! What `skill_manage` does to the disk, run on the blocking pool. Every change is checked
//! before anything is written: a new `SKILL.md` must parse and validate under the skill's name,
//! and a supporting file must stay inside the folder and under the size cap. Single files are
//! replaced atomically (temporary file + rename); a new folder, or the copy of a bundled skill
//! made before its first change, is built under a hidden name and renamed into place.

use std::fs;
use std::path::{Path, PathBuf};

use include_dir::Dir;

use crate::skills::files::{self, FileError, MAX_FILE_BYTES};
use crate::skills::folder::{self, Staging};
use crate::skills::{SKILL_MD, SkillSources, check_name, parse};
use crate::tools::ToolError;
use crate::tools::files::disk::write_atomically;

/// One requested change to skill `name`.
pub(super) enum Change {
    Create { content: String },
    Delete,
    Modify(Modify),
}

/// A change to an existing skill.
pub(super) enum Modify {
    Edit {
        content: String,
    },
    Patch {
        path: Option<String>,
        old_text: String,
        new_text: String,
    },
    WriteFile {
        path: String,
        content: String,
    },
    RemoveFile {
        path: String,
    },
}

fn failed(message: impl Into<String>) -> ToolError {
    ToolError::Failed(message.into())
}

fn io_failed(what: &str, e: std::io::Error) -> ToolError {
    failed(format!("cannot {what}: {e}; nothing was changed"))
}

/// Refuse `content` for `name`'s SKILL.md with every problem found.
fn validate(name: &str, content: &str) -> Result<(), ToolError> {
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(failed(format!(
            "SKILL.md would be {} bytes, more than the {MAX_FILE_BYTES} allowed; move details \
             into files under references/ (action write_file). Nothing was written.",
            content.len()
        )));
    }
    let file = Path::new(name).join(SKILL_MD);
    parse(content, &file, Some(name))
        .map(drop)
        .map_err(|problems| {
            let mut out = String::from("the new SKILL.md is not valid, so nothing was written:\n");
            for p in problems {
                match p.line {
                    Some(line) => out.push_str(&format!("- line {line}: {}\n", p.message)),
                    None => out.push_str(&format!("- {}\n", p.message)),
                }
            }
            out.push_str(
                "SKILL.md is `---`, YAML with `name` (the skill's name) and `description` (what it \
             does and when to use it), `---`, then the instructions in Markdown.",
            );
            failed(out)
        })
}

/// A supporting file path: inside the folder and not SKILL.md.
fn supporting(path: &str) -> Result<PathBuf, ToolError> {
    let rel = files::relative(path)?;
    if files::is_skill_md(&rel) {
        return Err(ToolError::InvalidArguments(
            "SKILL.md is changed with action edit (whole file) or patch, not with write_file or \
             remove_file"
                .into(),
        ));
    }
    Ok(rel)
}

/// Whether `at` (a supporting file about to be written or removed) is really the skill's
/// SKILL.md, reached through a linked folder: that change would skip validation.
fn is_skill_md_via_link(root: &Path, at: &Path) -> bool {
    let parent = at.parent().and_then(|p| p.canonicalize().ok());
    let name_is = at
        .file_name()
        .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(SKILL_MD));
    name_is && parent.is_some() && parent == root.canonicalize().ok()
}

/// A supporting file's place, refusing SKILL.md reached through a link.
fn supporting_target(root: &Path, shown: &str) -> Result<PathBuf, ToolError> {
    let at = files::resolve_for_write(root, shown)?;
    if is_skill_md_via_link(root, &at) {
        return Err(ToolError::InvalidArguments(format!(
            "`{shown}` leads to SKILL.md; change SKILL.md with action edit or patch"
        )));
    }
    Ok(at)
}

/// Where skill `name` exists.
struct Found {
    user: Option<PathBuf>,
    bundled: Option<&'static Dir<'static>>,
}

fn find(sources: &SkillSources, name: &str) -> Found {
    let dir = sources.user_dir().join(name);
    Found {
        user: fs::symlink_metadata(&dir).is_ok().then_some(dir),
        bundled: sources.bundled(name),
    }
}

/// Apply `change` to skill `name`; the result tells the model what happened.
pub(super) fn apply(
    sources: &SkillSources,
    name: &str,
    change: Change,
) -> Result<String, ToolError> {
    check_name(name).map_err(|e| {
        ToolError::InvalidArguments(format!("{e}; skill names look like `deploy-checklist`"))
    })?;
    let found = find(sources, name);
    let target = sources.user_dir().join(name);
    let modify = match change {
        Change::Create { content } => return create(sources, name, &found, &content),
        Change::Delete => return delete(name, &found),
        Change::Modify(m) => m,
    };
    // Every other change edits an existing skill, in the user's folder: a bundled skill is
    // copied there first, with the change applied to the copy before it is moved into place.
    let (root, staging) = match (&found.user, found.bundled) {
        (Some(dir), _) => (dir.clone(), None),
        (None, Some(bundled)) => {
            let staging = Staging::new(sources.user_dir(), name)
                .map_err(|e| io_failed("copy the bundled skill", e))?;
            folder::copy_embedded(bundled, staging.path())
                .map_err(|e| io_failed("copy the bundled skill", e))?;
            (staging.path().to_owned(), Some(staging))
        }
        (None, None) => {
            return Err(failed(format!(
                "there is no skill named `{name}`; create it with action create"
            )));
        }
    };
    let done = modify_in(&root, name, modify)?;
    let Some(staging) = staging else {
        return Ok(done);
    };
    staging
        .commit(&target)
        .map_err(|e| io_failed("save the copy of the bundled skill", e))?;
    Ok(format!(
        "{done}. `{name}` was a bundled skill: it was first copied to {}, and that copy now \
         replaces the bundled one",
        target.display()
    ))
}

/// Change the existing skill folder `root`.
fn modify_in(root: &Path, name: &str, change: Modify) -> Result<String, ToolError> {
    match change {
        Modify::Edit { content } => {
            validate(name, &content)?;
            write_atomically(&root.join(SKILL_MD), content.as_bytes())
                .map_err(|e| io_failed("write SKILL.md", e))?;
            Ok(format!("replaced SKILL.md of `{name}`"))
        }
        Modify::Patch {
            path,
            old_text,
            new_text,
        } => {
            let rel = match path.as_deref() {
                Some(p) => files::relative(p)?,
                None => PathBuf::from(SKILL_MD),
            };
            let shown = rel.to_string_lossy().replace('\\', "/");
            let text = files::read_disk(root, &shown)?;
            if old_text.is_empty() {
                return Err(ToolError::InvalidArguments(
                    "`old_text` is empty; give the exact text to replace".into(),
                ));
            }
            let patched = match text.matches(&old_text).count() {
                1 => text.replacen(&old_text, &new_text, 1),
                0 => {
                    return Err(failed(format!(
                        "`old_text` does not occur in {shown} of `{name}`; it must match exactly, \
                         spaces and line breaks included (skill_view shows the current text)"
                    )));
                }
                n => {
                    return Err(failed(format!(
                        "`old_text` occurs {n} times in {shown} of `{name}`; include more of the \
                         surrounding text so that it occurs once"
                    )));
                }
            };
            if files::is_skill_md(&rel) {
                validate(name, &patched)?;
            } else if patched.len() as u64 > MAX_FILE_BYTES {
                return Err(failed(format!(
                    "{shown} would be larger than {MAX_FILE_BYTES} bytes; nothing was written"
                )));
            }
            let at = if files::is_skill_md(&rel) {
                files::resolve_for_write(root, &shown)?
            } else {
                supporting_target(root, &shown)?
            };
            write_atomically(&at, patched.as_bytes()).map_err(|e| io_failed("write", e))?;
            Ok(format!("patched {shown} of `{name}`"))
        }
        Modify::WriteFile { path, content } => {
            let rel = supporting(&path)?;
            if content.len() as u64 > MAX_FILE_BYTES {
                return Err(failed(format!(
                    "the file would be {} bytes, more than the {MAX_FILE_BYTES} allowed; split \
                     it. Nothing was written.",
                    content.len()
                )));
            }
            let shown = rel.to_string_lossy().replace('\\', "/");
            let at = supporting_target(root, &shown)?;
            if at.is_dir() {
                return Err(FileError::IsDir(shown).into());
            }
            if let Some(parent) = at.parent() {
                fs::create_dir_all(parent).map_err(|e| io_failed("create the folder", e))?;
            }
            write_atomically(&at, content.as_bytes()).map_err(|e| io_failed("write", e))?;
            Ok(format!(
                "wrote {shown} of `{name}` ({} bytes)",
                content.len()
            ))
        }
        Modify::RemoveFile { path } => {
            let rel = supporting(&path)?;
            let shown = rel.to_string_lossy().replace('\\', "/");
            let at = supporting_target(root, &shown)?;
            match fs::symlink_metadata(&at) {
                Err(_) => return Err(FileError::NotFound(shown).into()),
                Ok(meta) if meta.is_dir() => return Err(FileError::IsDir(shown).into()),
                Ok(_) => {}
            }
            fs::remove_file(&at).map_err(|e| io_failed("remove the file", e))?;
            if let (Ok(root), Some(parent)) = (root.canonicalize(), at.parent()) {
                folder::prune_empty(&root, parent);
            }
            Ok(format!("removed {shown} from `{name}`"))
        }
    }
}

fn create(
    sources: &SkillSources,
    name: &str,
    found: &Found,
    content: &str,
) -> Result<String, ToolError> {
    if found.user.is_some() || found.bundled.is_some() {
        let which = if found.user.is_some() {
            "your"
        } else {
            "a bundled"
        };
        return Err(failed(format!(
            "{which} skill named `{name}` already exists; change it with action patch or edit, \
             or pick another name"
        )));
    }
    validate(name, content)?;
    let target = sources.user_dir().join(name);
    let staging = Staging::new(sources.user_dir(), name)
        .map_err(|e| io_failed("create the skill folder", e))?;
    fs::write(staging.path().join(SKILL_MD), content)
        .and_then(|()| staging.commit(&target))
        .map_err(|e| io_failed("write the skill", e))?;
    Ok(format!(
        "created skill `{name}` in {}; it is listed from the next conversation on",
        target.display()
    ))
}

fn delete(name: &str, found: &Found) -> Result<String, ToolError> {
    match (&found.user, found.bundled) {
        (Some(dir), bundled) => {
            folder::remove_folder(dir).map_err(|e| io_failed("delete the skill", e))?;
            Ok(if bundled.is_some() {
                format!("deleted your copy of `{name}`; the bundled version is used again")
            } else {
                format!("deleted skill `{name}`")
            })
        }
        (None, Some(_)) => Err(failed(format!(
            "`{name}` is a bundled skill and cannot be deleted; patch or edit it to change what \
             it says"
        ))),
        (None, None) => Err(failed(format!(
            "there is no skill named `{name}` to delete"
        ))),
    }
}
