//! The skill tools the model calls: `skills_list` and `skill_view` (reading, levels 1 and 2) and
//! `skill_manage` (writing its own skills). Each loads the library afresh on the blocking pool,
//! so a skill written a moment ago is visible to the next call.

mod changes;
mod list;
mod manage;
mod view;

use std::sync::Arc;

pub use list::SkillsList;
pub use manage::SkillManage;
pub use view::SkillView;

use super::{Availability, SkillLibrary, SkillSources};
use crate::tools::files::disk::blocking;
use crate::tools::{ToolContext, ToolError};

/// Decides, per call, which skills a session can use (see [`SkillsList::with_availability`]).
pub type AvailabilityFn = Arc<dyn Fn(&ToolContext) -> Availability + Send + Sync>;

/// The library of `sources`, loaded off the async runtime.
async fn load(sources: &SkillSources) -> Result<SkillLibrary, ToolError> {
    let sources = sources.clone();
    blocking(move || Ok(SkillLibrary::load(&sources))).await
}

/// The error for a name that matches no skill.
fn unknown(name: &str, library: &SkillLibrary) -> ToolError {
    let close: Vec<&str> = library
        .skills()
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| n.contains(name) || name.contains(n))
        .take(5)
        .collect();
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!(" Did you mean {}?", close.join(", "))
    };
    ToolError::Failed(format!(
        "there is no skill named `{name}`.{hint} skills_list shows the skills there are."
    ))
}

#[cfg(test)]
mod tests;
