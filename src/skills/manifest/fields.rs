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
    /// Messaging platforms (ours) or operating systems (hermes-agent's `[macos, linux]`).
    platforms: Option<Vec<String>>,
    /// hermes-agent's skills name their author; kept in `metadata.author` when that is free.
    author: Option<Value>,
    /// hermes-agent's `prerequisites: {commands: [...]}`: informative there, not read here.
    #[serde(rename = "prerequisites")]
    _prerequisites: Option<Value>,
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
    mut raw: Raw,
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
    let (platforms, os) = platforms(raw.platforms.unwrap_or_default()).unwrap_or_else(|e| {
        report("platforms", e);
        (Vec::new(), Vec::new())
    });
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
    let mut metadata = raw.metadata.unwrap_or_default();
    if let Some(author) = raw.author {
        metadata.entry("author").or_insert(author);
    }
    let hermes = hermes_metadata(&metadata).unwrap_or_else(|e| {
        report("metadata", e);
        HermesMetadata::default()
    });
    let tags = hermes.tags;
    // hermes-agent keeps these under `metadata.hermes`; both places count.
    for (top, nested) in [
        (&mut raw.related_skills, hermes.related_skills),
        (&mut raw.requires_tools, hermes.requires_tools),
        (&mut raw.requires_toolsets, hermes.requires_toolsets),
        (&mut raw.fallback_for_tools, hermes.fallback_for_tools),
        (&mut raw.fallback_for_toolsets, hermes.fallback_for_toolsets),
    ] {
        for item in nested {
            if !top.contains(&item) {
                top.push(item);
            }
        }
    }
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
        platforms,
        os,
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

/// What hermes reads from `metadata.hermes`.
#[derive(Default)]
struct HermesMetadata {
    tags: Vec<String>,
    related_skills: Vec<String>,
    requires_tools: Vec<String>,
    requires_toolsets: Vec<String>,
    fallback_for_tools: Vec<String>,
    fallback_for_toolsets: Vec<String>,
}

/// `metadata.hermes`: its `tags`, and the lists hermes-agent keeps there (`related_skills`,
/// `requires_*`, `fallback_for_*`, which hermes also reads at the top level). Its other keys
/// (hermes-agent's `config` prompts, `blueprint`, …) belong to hermes-agent and are left alone:
/// `metadata` is free-form by the Agent Skills format.
fn hermes_metadata(metadata: &Map<String, Value>) -> Result<HermesMetadata, String> {
    let Some(hermes) = metadata.get("hermes") else {
        return Ok(HermesMetadata::default());
    };
    let Value::Object(hermes) = hermes else {
        return Err("`metadata.hermes` must be a map (holding `tags: [...]`)".into());
    };
    let list = |key: &str, example: &str| -> Result<Vec<String>, String> {
        match hermes.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| match t {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
                    _ => Err(format!(
                        "`metadata.hermes.{key}` must be a list of words; `{t}` is not one"
                    )),
                })
                .collect(),
            Some(other) => Err(format!(
                "`metadata.hermes.{key}` must be a list such as `{example}`, not `{other}`"
            )),
        }
    };
    Ok(HermesMetadata {
        tags: list("tags", "[email, writing]")?,
        related_skills: list("related_skills", "[other-skill]")?,
        requires_tools: list("requires_tools", "[terminal]")?,
        requires_toolsets: list("requires_toolsets", "[files]")?,
        fallback_for_tools: list("fallback_for_tools", "[browser]")?,
        fallback_for_toolsets: list("fallback_for_toolsets", "[browser]")?,
    })
}

/// Operating systems a skill may name in `platforms` (hermes-agent's use of the field), each
/// with the name `std::env::consts::OS` gives it.
const OPERATING_SYSTEMS: &[(&str, &str)] = &[
    ("linux", "linux"),
    ("macos", "macos"),
    ("darwin", "macos"),
    ("windows", "windows"),
    ("win32", "windows"),
    ("android", "android"),
    ("termux", "android"),
    ("freebsd", "freebsd"),
];

/// Split `platforms` into messaging platforms and operating systems (as `std::env::consts::OS`
/// names them).
fn platforms(items: Vec<String>) -> Result<(Vec<Platform>, Vec<String>), String> {
    let mut platforms = Vec::new();
    let mut os = Vec::new();
    for item in items {
        let name = item.trim().to_ascii_lowercase();
        if let Ok(p) = name.parse::<Platform>() {
            platforms.push(p);
        } else if let Some((_, canonical)) = OPERATING_SYSTEMS.iter().find(|(n, _)| *n == name) {
            os.push((*canonical).to_owned());
        } else {
            let names: Vec<&str> = Platform::ALL.iter().map(|p| p.as_str()).collect();
            return Err(format!(
                "`platforms`: `{item}` is neither a platform ({}) nor an operating system \
                 (linux, macos, windows)",
                names.join(", ")
            ));
        }
    }
    Ok((platforms, os))
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
