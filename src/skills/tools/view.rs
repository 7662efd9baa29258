//! `skill_view`: a skill's instructions and the list of its files (level 1), or one of those
//! files (level 2). Viewing the instructions counts as a use of the skill.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{load, unknown};
use crate::skills::{Skill, SkillSources, record_use};
use crate::store::Store;
use crate::tools::files::disk::{blocking, human_size};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The skill's name, as skills_list or the skills index shows it.
    name: String,
    /// A file inside the skill's folder, as listed when viewing the skill, e.g.
    /// "references/sources.md". Omit to read the skill's instructions.
    #[serde(default)]
    path: Option<String>,
}

/// Shows skills to the model.
pub struct SkillView {
    spec: ToolSpec,
    sources: SkillSources,
    store: Store,
}

impl SkillView {
    pub fn new(sources: SkillSources, store: Store) -> Self {
        SkillView {
            spec: ToolSpec {
                name: "skill_view",
                description: "Read a skill before doing a task it covers: with `name` alone you \
                    get its instructions and a list of its other files (references, scripts, \
                    assets); with `path` as well you get one of those files. Follow the \
                    instructions; if they turn out wrong or outdated, fix them with skill_manage.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(20),
                max_output_chars: 60_000,
            },
            sources,
            store,
        }
    }
}

/// Level 1: the header, the body and the other files.
fn render(skill: &Skill) -> String {
    let mut out = format!("# Skill `{}` ({}", skill.name, skill.source_label());
    if let Some(v) = &skill.manifest.version {
        out.push_str(&format!(", version {v}"));
    }
    out.push_str(")\n\n");
    out.push_str(&skill.body);
    out.push('\n');
    let files = skill.files();
    if !files.is_empty() {
        out.push_str(&format!(
            "\nFiles of this skill (read one with skill_view name=\"{}\" path=\"…\"):\n",
            skill.name
        ));
        for f in files {
            out.push_str(&format!("- {} ({})\n", f.path, human_size(f.bytes)));
        }
    }
    if !skill.manifest.related_skills.is_empty() {
        out.push_str(&format!(
            "\nRelated skills: {}\n",
            skill.manifest.related_skills.join(", ")
        ));
    }
    out
}

#[async_trait]
impl Tool for SkillView {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let name = args.name.trim().to_owned();
        let path = args.path.filter(|p| !p.trim().is_empty());
        let library = load(&self.sources).await?;
        let Some(skill) = library.get(&name).cloned() else {
            return Err(unknown(&name, &library));
        };
        match path {
            Some(path) => blocking(move || Ok(skill.read_file(&path)?)).await,
            None => {
                let out = blocking(move || Ok(render(&skill))).await?;
                if let Err(e) = record_use(&*self.store, &name).await {
                    tracing::warn!(skill = %name, "cannot record the use of a skill: {e}");
                }
                Ok(out)
            }
        }
    }
}
