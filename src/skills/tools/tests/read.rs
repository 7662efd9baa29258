//! `skill_view` and `skills_list`.

use std::fs;
use std::sync::Arc;

use hermes_adapter::Platform;
use serde_json::json;

use super::{call, setup};
use crate::skills::testing::{sources, write_skill};
use crate::skills::{Availability, SkillsList, usage};
use crate::tools::{ToolContext, ToolError};

#[tokio::test]
async fn skill_view_shows_the_body_and_files_and_counts_a_use() {
    let s = setup();
    let out = call(&s.view, json!({"name": "alpha"})).await.unwrap();
    assert!(
        out.starts_with(
            "# Skill `alpha` (bundled, version 0.1)\n\n# Alpha\n\nRead references/notes.md.\n"
        ),
        "{out}"
    );
    assert!(out.contains("- references/notes.md (13 B)"), "{out}");
    assert_eq!(usage::usage(&*s.store, "alpha").await.unwrap().count, 1);
    let out = call(
        &s.view,
        json!({"name": "alpha", "path": "references/notes.md"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "Alpha notes.\n");
    assert_eq!(usage::usage(&*s.store, "alpha").await.unwrap().count, 1);
    let err = call(&s.view, json!({"name": "alpah"})).await.unwrap_err();
    assert!(
        err.to_string().contains("there is no skill named `alpah`"),
        "{err}"
    );
}

#[tokio::test]
async fn skill_view_refuses_paths_that_leave_the_skill() {
    let s = setup();
    let folder = write_skill(&s.user, "local", "d", "");
    fs::write(s._dir.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(s._dir.path().join("secret.txt"), folder.join("leak.md")).unwrap();
    let secret = s._dir.path().join("secret.txt");
    let mut bad = vec![
        ("local", "../secret.txt".to_owned()),
        ("local", "../../secret.txt".to_owned()),
        ("local", secret.display().to_string()),
        ("alpha", "../shared/SKILL.md".to_owned()),
        ("alpha", "/etc/passwd".to_owned()),
    ];
    if cfg!(unix) {
        bad.push(("local", "leak.md".to_owned()));
    }
    for (name, path) in bad {
        let err = call(&s.view, json!({"name": name, "path": path}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(_)),
            "{path}: {err}"
        );
        assert!(
            err.to_string().contains("outside the skill folder"),
            "{path}: {err}"
        );
    }
    let _ = folder;
}

#[tokio::test]
async fn skills_list_filters_by_tag_and_query_and_shows_uses() {
    let s = setup();
    write_skill(
        &s.user,
        "mail-sorter",
        "Sort incoming mail.",
        "version: 1.1\nmetadata:\n  hermes:\n    tags: [email]\n",
    );
    usage::record_use(&*s.store, "mail-sorter").await.unwrap();
    usage::record_use(&*s.store, "mail-sorter").await.unwrap();
    let out = call(&s.list, json!({"tag": "EMAIL"})).await.unwrap();
    assert_eq!(
        out,
        "1 of 3 skills. Call skill_view with a name to read one.\n\
         - mail-sorter (v1.1; tags: email; used 2 times): Sort incoming mail.\n"
    );
    let out = call(&s.list, json!({"query": "BUNDLED"})).await.unwrap();
    assert!(out.starts_with("2 of 3 skills"), "{out}");
    assert!(
        out.contains("- alpha (v0.1; tags: test, Alpha; never used)"),
        "{out}"
    );
    let out = call(&s.list, json!({"query": "nothing like this"}))
        .await
        .unwrap();
    assert!(out.starts_with("No skill matches; 3 skills exist"), "{out}");

    let only_cli = SkillsList::new(sources(&s.user), s.store.clone()).with_availability(Arc::new(
        |_: &ToolContext| {
            Availability::new(Platform::Cli, Vec::<String>::new(), Vec::<String>::new())
        },
    ));
    write_skill(&s.user, "tg", "Telegram only.", "platforms: [telegram]\n");
    let out = call(&only_cli, json!({})).await.unwrap();
    assert!(
        out.starts_with("3 of 3 skills") && !out.contains("- tg"),
        "{out}"
    );
}
