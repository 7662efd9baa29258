//! The frontmatter's fields as written ([`Raw`]) and their checks, which turn them into a
//! [`Manifest`] or report each problem by its top-level key.

use serde::Deserialize;
use serde_json::{Map, Value};

use hermes_adapter::Platform;

use super::{EnvRequirement, MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, Manifest, check_name};

/// The frontmatter as written; checked into a [`Manifest`] by [`check`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Raw {
    name: Option<String>,
    description: Option<String>,
    license: Option<String>,
    compatibility: Option<String>,
    // Fields of several shapes are read as plain values and checked in `check`, where a problem
    // can name its line (a serde error raised after the value was read loses its position).
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<Value>,
    metadata: Option<Map<String, Value>>,
    version: Option<Value>,
    platforms: Option<Vec<Platform>>,
    #[serde(default)]
    related_skills: Vec<String>,
    #[serde(default)]
    requires_tools: Vec<String>,
    #[serde(default)]
    requires_toolsets: Vec<String>,
    #[serde(default)]
    fallback_for_tools: Vec<String>,
    #[serde(default)]
    fallback_for_toolsets: Vec<String>,
    required_environment_variables: Option<Value>,
    config: Option<Map<String, Value>>,
}

/// Check the fields of `raw`; report each problem by its top-level key.
pub(super) fn check(
    raw: Raw,
    folder: Option<&str>,
    report: &mut dyn FnMut(&str, String),
) -> Manifest {
    let name = match raw.name.as_deref().map(str::trim) {
        None => {
            report(
                "name",
                format!(
                    "`name` is missing; add `name: {}`",
                    folder.unwrap_or("<folder-name>")
                ),
            );
            String::new()
        }
        Some(name) => {
            if let Err(e) = check_name(name) {
                report("name", e);
            } else if let Some(folder) = folder.filter(|f| *f != name) {
                report(
                    "name",
                    format!(
                        "`name` is `{name}` but the skill's folder is `{folder}`; they must be \
                         equal (rename the folder or change the name)"
                    ),
                );
            }
            name.to_owned()
        }
    };
    let description = raw.description.as_deref().map(str::trim).unwrap_or("");
    if description.is_empty() {
        report(
            "description",
            "`description` is missing or empty; add one line saying what the skill does and \
             when to use it"
                .into(),
        );
    } else if description.chars().count() > MAX_DESCRIPTION_CHARS {
        report(
            "description",
            format!(
                "`description` is {} characters long; at most {MAX_DESCRIPTION_CHARS} are \
                 allowed (move details into the body)",
                description.chars().count()
            ),
        );
    }
    if let Some(c) = &raw.compatibility
        && c.chars().count() > MAX_COMPATIBILITY_CHARS
    {
        report(
            "compatibility",
            format!("`compatibility` is longer than {MAX_COMPATIBILITY_CHARS} characters"),
        );
    }
    if raw.platforms.as_ref().is_some_and(Vec::is_empty) {
        report(
            "platforms",
            "`platforms` is an empty list; list at least one platform or leave the field out \
             (all platforms)"
                .into(),
        );
    }
    let allowed_tools = words_or_list(raw.allowed_tools).unwrap_or_else(|e| {
        report("allowed-tools", e);
        Vec::new()
    });
    let version = version(raw.version).unwrap_or_else(|e| {
        report("version", e);
        None
    });
    let env = env_requirements(raw.required_environment_variables).unwrap_or_else(|e| {
        report("required_environment_variables", e);
        Vec::new()
    });
    let metadata = raw.metadata.unwrap_or_default();
    let tags = hermes_tags(&metadata).unwrap_or_else(|e| {
        report("metadata", e);
        Vec::new()
    });
    for other in &raw.related_skills {
        if let Err(e) = check_name(other) {
            report("related_skills", format!("related_skills: {e}"));
        }
    }
    for (key, list) in [
        ("requires_tools", &raw.requires_tools),
        ("requires_toolsets", &raw.requires_toolsets),
        ("fallback_for_tools", &raw.fallback_for_tools),
        ("fallback_for_toolsets", &raw.fallback_for_toolsets),
        ("allowed-tools", &allowed_tools),
    ] {
        if list.iter().any(|s| s.trim().is_empty()) {
            report(key, format!("`{key}` has an empty entry"));
        }
    }
    for var in &env {
        let valid = var
            .name
            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && var
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            report(
                "required_environment_variables",
                format!(
                    "required_environment_variables: `{}` is not a variable name (letters, \
                     digits and `_`, not starting with a digit)",
                    var.name
                ),
            );
        }
    }
    Manifest {
        name,
        description: description.to_owned(),
        license: raw.license,
        compatibility: raw.compatibility,
        allowed_tools,
        metadata,
        version,
        platforms: raw.platforms.unwrap_or_default(),
        tags,
        related_skills: raw.related_skills,
        requires_tools: raw.requires_tools,
        requires_toolsets: raw.requires_toolsets,
        fallback_for_tools: raw.fallback_for_tools,
        fallback_for_toolsets: raw.fallback_for_toolsets,
        required_environment_variables: env,
        config: raw.config.unwrap_or_default(),
    }
}

/// `metadata.hermes.tags`, checking that `metadata.hermes` holds nothing else: hermes reads its
/// other fields at the top level, and one put here by mistake would be ignored.
fn hermes_tags(metadata: &Map<String, Value>) -> Result<Vec<String>, String> {
    let Some(hermes) = metadata.get("hermes") else {
        return Ok(Vec::new());
    };
    let Value::Object(hermes) = hermes else {
        return Err("`metadata.hermes` must be a map (holding `tags: [...]`)".into());
    };
    if let Some(key) = hermes.keys().find(|k| *k != "tags") {
        return Err(format!(
            "`metadata.hermes.{key}` is not read: hermes reads only `tags` there; other hermes \
             fields (`requires_tools`, `platforms`, …) go at the top level of the frontmatter"
        ));
    }
    match hermes.get("tags") {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| match t {
                Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
                _ => Err(format!(
                    "`metadata.hermes.tags` must be a list of words; `{t}` is not one"
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "`metadata.hermes.tags` must be a list such as `[email, writing]`, not `{other}`"
        )),
    }
}

fn words_or_list(value: Option<Value>) -> Result<Vec<String>, String> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                other => Err(format!("`allowed-tools`: `{other}` is not a tool name")),
            })
            .collect(),
        Some(_) => Err("`allowed-tools` must be tool names, space-separated or as a list".into()),
    }
}

fn version(value: Option<Value>) -> Result<Option<String>, String> {
    match value {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(format!(
            "`version` must be a version such as \"1.2.0\", not `{other}`"
        )),
    }
}

fn env_requirements(value: Option<Value>) -> Result<Vec<EnvRequirement>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Detailed {
        name: String,
        #[serde(default)]
        help: Option<String>,
    }
    let items = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err("`required_environment_variables` must be a list of variable names".into());
        }
    };
    items
        .into_iter()
        .map(|v| match v {
            Value::String(name) => Ok(EnvRequirement { name, help: None }),
            Value::Object(_) => serde_json::from_value::<Detailed>(v)
                .map(|d| EnvRequirement {
                    name: d.name,
                    help: d.help,
                })
                .map_err(|e| {
                    format!(
                        "required_environment_variables: an entry must be a variable name or \
                         `{{name: VAR, help: \"...\"}}` ({e})"
                    )
                }),
            other => Err(format!(
                "required_environment_variables: `{other}` is not a variable name"
            )),
        })
        .collect()
}
