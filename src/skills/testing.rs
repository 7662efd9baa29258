//! Helpers for the skills tests: a fixed set of bundled skills and a way to write user skills.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};

use super::SkillSources;

/// Bundled skills for tests: `alpha` (with `references/notes.md`), `shared` (which tests
/// override with a user skill) and `broken` (named `not-broken`).
pub static FIXTURES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/src/skills/testdata/bundled");

/// Sources with the fixture skills bundled and `user_dir` for the user's.
pub fn sources(user_dir: &Path) -> SkillSources {
    SkillSources::new(user_dir).with_bundled(&FIXTURES)
}

/// A SKILL.md for `name` with `extra` frontmatter lines.
pub fn skill_md(name: &str, description: &str, extra: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\n\nSteps.\n")
}

/// Write user skill `name` below `user_dir`; returns its folder.
pub fn write_skill(user_dir: &Path, name: &str, description: &str, extra: &str) -> PathBuf {
    let dir = user_dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_md(name, description, extra)).unwrap();
    dir
}
