//! `skills_list`: the skills there are, filtered by tag or by words in their name and
//! description, with their version and how often they were used.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{AvailabilityFn, load};
use crate::skills::{Skill, SkillSources, usage};
use crate::store::Store;
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only skills with this tag (case-insensitive), e.g. "email".
    #[serde(default)]
    tag: Option<String>,
    /// Only skills whose name or description contains this text (case-insensitive).
    #[serde(default)]
    query: Option<String>,
}

/// Lists skills for the model.
pub struct SkillsList {
    spec: ToolSpec,
    sources: SkillSources,
    store: Store,
    availability: Option<AvailabilityFn>,
}

impl SkillsList {
    pub fn new(sources: SkillSources, store: Store) -> Self {
        SkillsList {
            spec: ToolSpec {
                name: "skills_list",
                description: "List your skills (saved how-tos): name, description, tags, \
                    version and how often each was used. Filter by `tag` or by `query` (words in \
                    the name or description). Then call skill_view with a name to read a skill \
                    before doing a task it covers.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(20),
                max_output_chars: 20_000,
            },
            sources,
            store,
            availability: None,
        }
    }

    /// List only the skills `f` makes available to the calling session (its platform, tools and
    /// environment); without it every valid skill is listed.
    pub fn with_availability(mut self, f: AvailabilityFn) -> Self {
        self.availability = Some(f);
        self
    }
}

fn matches(skill: &Skill, tag: Option<&str>, query: Option<&str>) -> bool {
    let tag_ok = tag.is_none_or(|t| skill.tags.iter().any(|s| s.eq_ignore_ascii_case(t)));
    let query_ok = query.is_none_or(|q| {
        let q = q.to_lowercase();
        skill.name.to_lowercase().contains(&q) || skill.description.to_lowercase().contains(&q)
    });
    tag_ok && query_ok
}

fn line(skill: &Skill, uses: u64) -> String {
    let mut facts = Vec::new();
    if let Some(v) = &skill.manifest.version {
        facts.push(format!("v{}", v.trim_start_matches('v')));
    }
    if !skill.tags.is_empty() {
        facts.push(format!("tags: {}", skill.tags.join(", ")));
    }
    facts.push(match uses {
        0 => "never used".to_owned(),
        1 => "used once".to_owned(),
        n => format!("used {n} times"),
    });
    format!(
        "- {} ({}): {}\n",
        skill.name,
        facts.join("; "),
        skill.description
    )
}

#[async_trait]
impl Tool for SkillsList {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let tag = args.tag.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let query = args
            .query
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty());
        let library = load(&self.sources).await?;
        let visible = match &self.availability {
            Some(f) => library.available(&f(ctx)),
            None => library.skills().iter().collect(),
        };
        let total = visible.len();
        let found: Vec<&Skill> = visible
            .into_iter()
            .filter(|s| matches(s, tag, query))
            .collect();
        if found.is_empty() {
            return Ok(if total == 0 {
                "There are no skills yet. Save one with skill_manage (action create) after \
                 solving something worth repeating."
                    .to_owned()
            } else {
                format!(
                    "No skill matches; {total} skills exist. Call skills_list without `tag` and \
                     `query` to see them all."
                )
            });
        }
        let mut out = format!(
            "{} of {total} skills. Call skill_view with a name to read one.\n",
            found.len()
        );
        for skill in found {
            let uses = usage(&*self.store, &skill.name)
                .await
                .map(|u| u.count)
                .unwrap_or(0);
            out.push_str(&line(skill, uses));
        }
        Ok(out)
    }
}
