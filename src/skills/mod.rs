//! Skills: the agent's procedural memory. A skill is a folder holding a `SKILL.md` (YAML
//! frontmatter + Markdown instructions) and optionally `references/`, `scripts/` and `assets/`.
//!
//! Skills come from two places: the ones bundled in the binary (the repository's `skills/`
//! folder) and the user's `$HERMES_HOME/skills/<name>/`, which wins on a name clash and is the
//! only place anything is written. An invalid skill never stops anything: [`SkillLibrary::load`]
//! leaves it out and reports its problems by file and line.
//!
//! Disclosure is progressive, so the prompt stays small and its prefix stable:
//!
//! - level 0: [`index`], one line per available skill, in the system prompt;
//! - level 1: the `skill_view` tool returns a skill's body and the list of its other files;
//! - level 2: `skill_view` with a `path` returns one of those files.
//!
//! `skill_manage` lets the agent write its own skills (validated before they land, atomically),
//! and `hermes skills` lets the operator list, check, install and remove them.
//!
//! ```no_run
//! use hermes::skills::{Availability, SkillLibrary, SkillSources, index};
//! use hermes_adapter::Platform;
//!
//! let sources = SkillSources::for_home(std::path::Path::new("/var/lib/hermes"));
//! let library = SkillLibrary::load(&sources);
//! for problem in library.problems() {
//!     eprintln!("{problem}");
//! }
//! let ctx = Availability::new(Platform::Telegram, ["web_fetch", "terminal"], ["web", "terminal"]);
//! let prompt_section = index(&library.available(&ctx));
//! # let _ = prompt_section;
//! ```

mod files;
mod folder;
mod install;
mod library;
mod manifest;
mod switch;
#[cfg(test)]
pub(crate) mod testing;
pub mod tools;
mod usage;

use include_dir::{Dir, include_dir};

pub use files::{FileError, MAX_FILE_BYTES, SkillFile};
pub use install::{
    InstallError, Installed, check_folder, install, remove_user_skill, skill_folders,
};
pub use library::{
    Availability, SKILL_MD, Skill, SkillLibrary, SkillSource, SkillSources, index, read_skill_md,
};
pub use manifest::{EnvRequirement, Manifest, SkillDoc, SkillProblem, check_name, parse};
pub use switch::{DISABLED_FILE, disabled_names, set_enabled};
pub use tools::{SkillManage, SkillView, SkillsList};
pub use usage::{Usage, forget as forget_usage, record_use, usage};

/// The skills shipped with hermes: the repository's `skills/` folder, embedded at build time.
pub static BUNDLED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/skills");

/// For the system prompt, next to the [`index`]: when to write and fix skills.
pub const GUIDANCE: &str = "After completing a complex task (5 or more tool calls), fixing a \
    tricky error, or discovering a non-trivial workflow, save the approach as a skill with \
    skill_manage so you can reuse it next time. When a skill you are using turns out outdated, \
    incomplete or wrong, patch it with skill_manage (action patch) right away, without waiting \
    to be asked.";
