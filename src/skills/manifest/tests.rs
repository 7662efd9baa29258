//! Parsing SKILL.md: every field, and each broken field reported with its line and reason.

use std::path::Path;

use hermes_adapter::Platform;

use super::*;

const FILE: &str = "skills/demo/SKILL.md";

fn doc(front: &str) -> String {
    format!("---\n{front}---\n\n# Demo\n\nDo the thing.\n")
}

fn ok(front: &str) -> SkillDoc {
    parse(&doc(front), Path::new(FILE), Some("demo")).unwrap_or_else(|p| panic!("{p:?}"))
}

/// The single problem of `text`, as `line: message`.
fn problem_of(text: &str) -> (Option<usize>, String) {
    let problems = parse(text, Path::new(FILE), Some("demo")).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].file, Path::new(FILE));
    (problems[0].line, problems[0].message.clone())
}

#[test]
fn every_field_is_read() {
    let d = ok("name: demo
description: Shows every field.
license: MIT
compatibility: needs git
allowed-tools: terminal web_fetch
metadata:
  author: ann
  hermes:
    tags: [git, ' ops ']
version: 1.2
platforms: [telegram, cli]
related_skills: [other-skill]
requires_tools: [terminal]
requires_toolsets: [files]
fallback_for_tools: [browser]
fallback_for_toolsets: [browser]
required_environment_variables:
  - GITHUB_TOKEN
  - name: GITLAB_TOKEN
    help: create one in your profile
config:
  wiki_path: ~/wiki
");
    let m = &d.manifest;
    assert_eq!(m.name, "demo");
    assert_eq!(m.description, "Shows every field.");
    assert_eq!(m.license.as_deref(), Some("MIT"));
    assert_eq!(m.compatibility.as_deref(), Some("needs git"));
    assert_eq!(m.allowed_tools, ["terminal", "web_fetch"]);
    assert_eq!(m.metadata["author"], "ann");
    assert_eq!(m.tags, ["git", "ops"]);
    assert_eq!(m.version.as_deref(), Some("1.2"));
    assert_eq!(m.platforms, [Platform::Telegram, Platform::Cli]);
    assert_eq!(m.related_skills, ["other-skill"]);
    assert_eq!(m.requires_tools, ["terminal"]);
    assert_eq!(m.requires_toolsets, ["files"]);
    assert_eq!(m.fallback_for_tools, ["browser"]);
    assert_eq!(m.fallback_for_toolsets, ["browser"]);
    assert_eq!(
        m.required_environment_variables,
        [
            EnvRequirement {
                name: "GITHUB_TOKEN".into(),
                help: None
            },
            EnvRequirement {
                name: "GITLAB_TOKEN".into(),
                help: Some("create one in your profile".into())
            }
        ]
    );
    assert_eq!(m.config["wiki_path"], "~/wiki");
    assert_eq!(d.body, "# Demo\n\nDo the thing.");
}

#[test]
fn a_minimal_skill_has_empty_lists_and_crlf_works() {
    let text = "\u{feff}---\r\nname: demo\r\ndescription: Minimal.\r\n---\r\nBody\r\n";
    let d = parse(text, Path::new(FILE), Some("demo")).unwrap();
    assert!(d.manifest.platforms.is_empty() && d.manifest.tags.is_empty());
    assert_eq!(d.body, "Body");
}

#[test]
fn each_broken_field_is_reported_with_its_line_and_reason() {
    let long_name = format!("name: {}\ndescription: d\n", "a".repeat(65));
    let long_description = format!("name: demo\ndescription: {}\n", "d".repeat(1025));
    let long_compat = format!(
        "name: demo\ndescription: d\ncompatibility: {}\n",
        "c".repeat(501)
    );
    let cases: &[(&str, usize, &str)] = &[
        ("description: d\n", 1, "`name` is missing; add `name: demo`"),
        (
            "name: Demo_Skill\ndescription: d\n",
            2,
            "may contain only lowercase letters",
        ),
        (
            "name: -demo\ndescription: d\n",
            2,
            "must not start or end with a hyphen",
        ),
        (
            "name: demo-\ndescription: d\n",
            2,
            "must not start or end with a hyphen",
        ),
        ("name: de--mo\ndescription: d\n", 2, "two hyphens in a row"),
        (&long_name, 2, "65 characters long; at most 64"),
        (
            "name: other\ndescription: d\n",
            2,
            "but the skill's folder is `demo`",
        ),
        ("name: demo\n", 1, "`description` is missing"),
        (
            "name: demo\ndescription: '  '\n",
            3,
            "`description` is missing or empty",
        ),
        (
            "name: demo\ndescription:\n",
            3,
            "`description` is missing or empty",
        ),
        (
            "name:\ndescription: d\n",
            2,
            "`name` is missing; add `name: demo`",
        ),
        (&long_description, 3, "1025 characters long; at most 1024"),
        (&long_compat, 4, "`compatibility` is longer than 500"),
        (
            "name: demo\ndescription: d\nplatforms: []\n",
            4,
            "`platforms` is an empty list",
        ),
        (
            "name: demo\ndescription: d\nmetadata:\n  hermes:\n    tags: oops\n",
            4,
            "`metadata.hermes.tags` must be a list",
        ),
        (
            "name: demo\ndescription: d\nmetadata:\n  hermes:\n    requires_tools: x\n",
            4,
            "`metadata.hermes.requires_tools` must be a list",
        ),
        (
            "name: demo\ndescription: d\nrelated_skills: [Bad Name]\n",
            4,
            "related_skills: `name` `Bad Name`",
        ),
        (
            "name: demo\ndescription: d\nrequired_environment_variables: [1TOKEN]\n",
            4,
            "`1TOKEN` is not a variable name",
        ),
        (
            "name: demo\ndescription: d\nrequires_tools: ['']\n",
            4,
            "`requires_tools` has an empty entry",
        ),
        // Errors of the YAML parser: syntax, unknown keys, wrong types, at the parser's line.
        (
            "name: demo\ndescription: d\ntags: [a]\n",
            4,
            "unknown field `tags`",
        ),
        (
            "name: demo\ndescription: d\ncolour: red\n",
            4,
            "unknown field `colour`",
        ),
        (
            "name: demo\ndescription: d\nplatforms: [amiga]\n",
            4,
            "`amiga` is neither a platform",
        ),
        (
            "name: demo\ndescription: d\nrequires_tools: terminal\n",
            4,
            "requires_tools: invalid type",
        ),
        (
            "name: demo\ndescription: [d\n",
            3,
            "description: invalid type: sequence",
        ),
        (
            "name: demo\ndescription: d\nversion: 1\n  oops: 2\n",
            5,
            "frontmatter: mapping values are not allowed in this context",
        ),
        (
            "name: demo\ndescription: d\nversion: [1]\n",
            4,
            "`version` must be a version such as",
        ),
        (
            "name: demo\ndescription: d\nallowed-tools: {a: b}\n",
            4,
            "`allowed-tools` must be tool names",
        ),
        (
            "name: demo\ndescription: d\nrequired_environment_variables:\n  - {name: A, why: x}\n",
            4,
            "an entry must be a variable name or",
        ),
    ];
    for (front, line, message) in cases {
        let (got_line, got) = problem_of(&doc(front));
        assert!(got.contains(message), "{front:?}: {got}");
        assert_eq!(got_line, Some(*line), "{front:?}: {got}");
    }
}

/// A skill as hermes-agent 0.19 writes them (its bundled `apple-notes`, its `config` prompts)
/// loads: its own fields are accepted, its `metadata.hermes` lists count, the rest is kept
/// unread.
#[test]
fn a_hermes_agent_skill_is_accepted() {
    let d = ok("name: demo
description: \"Manage Apple Notes via memo CLI: create, search, edit.\"
version: 1.0.0
author: Hermes Agent
license: MIT
platforms: [macos, linux]
metadata:
  hermes:
    tags: [Notes, Apple, macOS]
    related_skills: [other-skill]
    requires_toolsets: [terminal]
    config:
      - key: wiki.path
        description: Path to the wiki
        default: \"~/wiki\"
    blueprint:
      schedule: daily
prerequisites:
  commands: [memo]
");
    let m = &d.manifest;
    assert_eq!(m.version.as_deref(), Some("1.0.0"));
    assert_eq!(m.tags, ["Notes", "Apple", "macOS"]);
    assert_eq!(m.related_skills, ["other-skill"]);
    assert_eq!(m.requires_toolsets, ["terminal"]);
    assert_eq!(m.os, ["macos", "linux"]);
    assert!(m.platforms.is_empty(), "{:?}", m.platforms);
    assert_eq!(m.metadata["author"], "Hermes Agent");
    assert!(m.metadata["hermes"]["config"].is_array());
    assert!(
        m.config.is_empty(),
        "hermes-agent's config prompts are not our `config`"
    );
}

#[test]
fn unknown_tags_field_says_where_tags_go() {
    let (_, message) = problem_of(&doc("name: demo\ndescription: d\ntags: [a]\n"));
    assert!(message.contains("tags go under `metadata:`"), "{message}");
    assert!(!message.contains("at line"), "{message}");
}

#[test]
fn broken_documents_are_reported_at_the_right_line() {
    assert_eq!(
        problem_of("name: demo\n").0,
        Some(1),
        "no opening `---` is reported at line 1"
    );
    let (line, message) = problem_of("---\nname: demo\ndescription: d\n");
    assert_eq!(line, Some(1));
    assert!(message.contains("never closed"), "{message}");
    let (line, message) = problem_of("---\n---\nbody\n");
    assert_eq!(line, Some(1));
    assert!(message.contains("frontmatter is empty"), "{message}");
    let (line, message) = problem_of("---\nname: demo\ndescription: d\n---\n\n  \n");
    assert_eq!(line, Some(5));
    assert!(
        message.contains("body after the frontmatter is empty"),
        "{message}"
    );
}

#[test]
fn several_problems_are_reported_together() {
    let problems = parse(
        &doc("name: Demo\ndescription: ''\nplatforms: []\n"),
        Path::new(FILE),
        Some("demo"),
    )
    .unwrap_err();
    let lines: Vec<Option<usize>> = problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [Some(2), Some(3), Some(4)], "{problems:#?}");
    assert_eq!(
        problems[0].to_string(),
        format!("{FILE}:2: {}", problems[0].message)
    );
}

#[test]
fn the_folder_check_can_be_skipped_for_installs() {
    let text = doc("name: other\ndescription: d\n");
    assert!(parse(&text, Path::new(FILE), None).is_ok());
}

#[test]
fn names_follow_the_agent_skills_rules() {
    for good in ["a", "pdf-tools", "v2", &"a".repeat(64)] {
        assert!(check_name(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "A",
        "a_b",
        "a b",
        "-a",
        "a-",
        "a--b",
        "ä",
        "../x",
        &"a".repeat(65),
    ] {
        assert!(check_name(bad).is_err(), "{bad}");
    }
}
