//! Skills the operator turned off: a plain list, one name per line, in the user's skills
//! directory (`$HERMES_HOME/skills/.disabled`), so it is readable and editable by hand and
//! survives upgrades of the bundled skills. A turned-off skill stays on disk; the agent no longer
//! sees it (not in the prompt's index, not by `skill_view` or `/skill-name`) from the next
//! conversation on.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

/// The file, in the user's skills directory.
pub const DISABLED_FILE: &str = ".disabled";

/// The names turned off in `user_dir` (none when the file is missing or unreadable; `#` starts a
/// comment).
pub fn disabled_names(user_dir: &Path) -> BTreeSet<String> {
    let Ok(text) = std::fs::read_to_string(user_dir.join(DISABLED_FILE)) else {
        return BTreeSet::new();
    };
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Turn skill `name` on or off in `user_dir`; returns whether anything changed. The file is
/// replaced atomically (written beside it, then renamed), so a crash leaves the old or the new
/// list, never half of one.
pub fn set_enabled(user_dir: &Path, name: &str, enabled: bool) -> std::io::Result<bool> {
    let mut names = disabled_names(user_dir);
    let changed = if enabled {
        names.remove(name)
    } else {
        names.insert(name.to_owned())
    };
    if !changed {
        return Ok(false);
    }
    std::fs::create_dir_all(user_dir)?;
    let mut text = String::from(
        "# Skills turned off by the operator (hermes skills disable, or the dashboard); one per line.\n",
    );
    for n in &names {
        text.push_str(n);
        text.push('\n');
    }
    let mut staged = tempfile::NamedTempFile::new_in(user_dir)?;
    staged.write_all(text.as_bytes())?;
    staged.as_file().sync_all()?;
    staged
        .persist(user_dir.join(DISABLED_FILE))
        .map_err(|e| e.error)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turning_off_and_on_again_is_kept_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let skills = dir.path().join("skills");
        assert!(disabled_names(&skills).is_empty(), "no file: nothing off");
        assert!(set_enabled(&skills, "deploy", false).unwrap());
        assert!(
            !set_enabled(&skills, "deploy", false).unwrap(),
            "already off"
        );
        assert!(set_enabled(&skills, "notes", false).unwrap());
        assert_eq!(
            disabled_names(&skills).into_iter().collect::<Vec<_>>(),
            ["deploy", "notes"]
        );
        assert!(set_enabled(&skills, "deploy", true).unwrap());
        assert_eq!(
            disabled_names(&skills).into_iter().collect::<Vec<_>>(),
            ["notes"]
        );
        std::fs::write(skills.join(DISABLED_FILE), "# mine\n  a  # why\n\nb\n").unwrap();
        assert_eq!(
            disabled_names(&skills).into_iter().collect::<Vec<_>>(),
            ["a", "b"],
            "comments and blank lines are skipped"
        );
    }
}
