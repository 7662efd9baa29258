//! Skills from the chat: `/skill-name …` (or `/skill skill-name …`) makes that skill the explicit
//! skill of the message — its instructions go into that user message, not into the system
//! prompt, so the cached prefix stays the same — and `/skills` lists or restricts the skills of a
//! conversation.

use hermes_adapter::{Message, SessionKey};

use crate::agent::snapshots::{enabled_skills, set_enabled_skills};
use crate::config::Config;
use crate::gateway::Shared;
use crate::skills::{Availability, SkillLibrary, SkillSources};

async fn library(home: &std::path::Path) -> SkillLibrary {
    let sources = SkillSources::for_home(home);
    tokio::task::spawn_blocking(move || SkillLibrary::load(&sources))
        .await
        .unwrap_or_else(|_| SkillLibrary::load(&SkillSources::new(std::path::PathBuf::new())))
}

/// If `msg` names a skill as its command, the message text with the skill's directive;
/// otherwise `None`. The skill is used even if the conversation is restricted to others.
pub(crate) async fn explicit(shared: &Shared, config: &Config, msg: &Message) -> Option<String> {
    let (command, arg) = msg.command()?;
    let (name, rest) = if command == "skill" {
        let arg = arg.trim();
        let end = arg.find(char::is_whitespace).unwrap_or(arg.len());
        (arg[..end].to_lowercase(), arg[end..].trim())
    } else {
        (command, arg)
    };
    let library = library(&config.home).await;
    let skill = library.get(&name)?;
    if let Err(e) = crate::skills::record_use(&*shared.store, &skill.name).await {
        tracing::debug!(error = %e, "cannot count a skill use");
    }
    let rest = if rest.is_empty() {
        "(The user gave no further instructions: apply the skill to the conversation so far.)"
    } else {
        rest
    };
    Some(format!(
        "[Explicit skill: the user chose the skill \"{}\" for this message. Follow its instructions.]\n\
         <skill name=\"{}\">\n{}\n</skill>\n\n{rest}",
        skill.name,
        skill.name,
        skill.body.trim()
    ))
}

/// `/skills`, `/skills only <names…>`, `/skills all`.
pub(crate) async fn command(shared: &Shared, key: &SessionKey, arg: &str) -> String {
    let config = shared.config();
    let library = library(&config.home).await;
    let platform = key.platform;
    let toolsets = config.toolsets(platform);
    let ctx = Availability::new(platform, crate::config::tools_in(toolsets), toolsets.iter());
    let available = library.available(&ctx);
    let mut words = arg.split_whitespace();
    match words.next().map(str::to_lowercase).as_deref() {
        Some("all") => {
            return match set_enabled_skills(&*shared.store, key, None).await {
                Ok(()) => {
                    "All skills are enabled again, from the next conversation (/new) on.".into()
                }
                Err(e) => format!("⚠️ {e}"),
            };
        }
        Some("only") => {
            let wanted: Vec<String> = words.map(str::to_lowercase).collect();
            if let Some(unknown) = wanted
                .iter()
                .find(|w| !available.iter().any(|s| &s.name == *w))
            {
                return format!(
                    "No skill named `{unknown}` is available here. /skills lists them."
                );
            }
            if wanted.is_empty() {
                return "Name the skills to keep: /skills only <name> <name>…".into();
            }
            return match set_enabled_skills(&*shared.store, key, Some(&wanted)).await {
                Ok(()) => format!(
                    "This conversation will use only: {}. It takes effect with the next conversation (/new); \
                     /skills all undoes it.",
                    wanted.join(", ")
                ),
                Err(e) => format!("⚠️ {e}"),
            };
        }
        Some(other) => {
            return format!(
                "Unknown /skills option `{other}`: use /skills, /skills only <names…> or /skills all."
            );
        }
        None => {}
    }
    if available.is_empty() {
        return "No skills are available here yet. I save skills after complex work; you can also install some with `hermes skills install`.".into();
    }
    let only = enabled_skills(&*shared.store, key).await.ok().flatten();
    let mut out = String::from("Skills (use one explicitly with /<name> <request>):\n");
    for s in &available {
        let off = only.as_ref().is_some_and(|o| !o.contains(&s.name));
        let description: String = s.description.chars().take(120).collect();
        out.push_str(&format!(
            "• /{}{} — {description}\n",
            s.name,
            if off { " (off here)" } else { "" }
        ));
    }
    out.push_str("Restrict with /skills only <names…>; /skills all enables all again.");
    out
}
