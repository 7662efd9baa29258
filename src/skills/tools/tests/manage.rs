//! `skill_manage`: every action, and the refusals that leave the disk untouched.

use std::fs;

use serde_json::{Value, json};

use super::{call, setup, snapshot};
use crate::skills::testing::{skill_md, sources, write_skill};
use crate::skills::{SkillLibrary, SkillSource, usage};
use crate::tools::{Tool, ToolError};

#[tokio::test]
async fn a_skill_is_created_patched_edited_given_files_and_deleted() {
    let s = setup();
    let m = &s.manage;
    let out = call(m, json!({"action": "create", "name": "deploy-app", "content": skill_md("deploy-app", "Deploy the app.", "")}))
        .await
        .unwrap();
    assert!(out.starts_with("created skill `deploy-app`"), "{out}");
    let md = s.user.join("deploy-app/SKILL.md");
    assert!(fs::read_to_string(&md).unwrap().contains("Deploy the app."));

    let out = call(m, json!({"action": "patch", "name": "deploy-app", "old_text": "Steps.", "new_text": "1. Build.\n2. Ship."}))
        .await
        .unwrap();
    assert_eq!(out, "patched SKILL.md of `deploy-app`");
    assert!(
        fs::read_to_string(&md)
            .unwrap()
            .contains("1. Build.\n2. Ship.")
    );

    let out = call(m, json!({"action": "write_file", "name": "deploy-app", "path": "references/hosts.md", "content": "web-1\nweb-2\n"}))
        .await
        .unwrap();
    assert_eq!(out, "wrote references/hosts.md of `deploy-app` (12 bytes)");
    let out = call(m, json!({"action": "patch", "name": "deploy-app", "path": "references/hosts.md", "old_text": "web-2", "new_text": "web-3"}))
        .await
        .unwrap();
    assert_eq!(out, "patched references/hosts.md of `deploy-app`");
    assert_eq!(
        fs::read_to_string(s.user.join("deploy-app/references/hosts.md")).unwrap(),
        "web-1\nweb-3\n"
    );

    let edited = skill_md("deploy-app", "Deploy the app, v2.", "version: \"2\"\n");
    call(
        m,
        json!({"action": "edit", "name": "deploy-app", "content": edited}),
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(&md).unwrap(), edited);
    let lib = SkillLibrary::load(&sources(&s.user));
    let skill = lib.get("deploy-app").unwrap();
    assert_eq!(skill.manifest.version.as_deref(), Some("2"));
    assert_eq!(skill.files()[0].path, "references/hosts.md");

    let out = call(
        m,
        json!({"action": "remove_file", "name": "deploy-app", "path": "references/hosts.md"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "removed references/hosts.md from `deploy-app`");
    assert!(
        !s.user.join("deploy-app/references").exists(),
        "empty folders go too"
    );

    usage::record_use(&*s.store, "deploy-app").await.unwrap();
    let out = call(m, json!({"action": "delete", "name": "deploy-app"}))
        .await
        .unwrap();
    assert_eq!(out, "deleted skill `deploy-app`");
    assert!(!s.user.join("deploy-app").exists());
    assert_eq!(
        usage::usage(&*s.store, "deploy-app").await.unwrap().count,
        0
    );
    assert_eq!(snapshot(&s.user), [], "no staging or trash folder is left");
}

#[tokio::test]
async fn invalid_names_are_refused_and_nothing_is_written() {
    let s = setup();
    for name in ["Deploy_App", "../evil", "-x", "a--b", "", "x/y"] {
        let err = call(
            &s.manage,
            json!({"action": "create", "name": name, "content": skill_md(name, "d", "")}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(_)),
            "{name}: {err}"
        );
        assert!(err.to_string().contains("`name`"), "{name}: {err}");
    }
    assert!(!s.user.exists() || snapshot(&s.user).is_empty());
    assert!(!s._dir.path().join("evil").exists());
}

#[tokio::test]
async fn invalid_frontmatter_is_refused_and_nothing_changes() {
    let s = setup();
    let bad = [
        "no frontmatter at all".to_owned(),
        skill_md("other-name", "d", ""),
        skill_md("fresh", "d", "colour: red\n"),
        "---\nname: fresh\n---\nbody\n".to_owned(),
    ];
    for content in &bad {
        let err = call(
            &s.manage,
            json!({"action": "create", "name": "fresh", "content": content}),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("not valid, so nothing was written"),
            "{err}"
        );
    }
    assert!(snapshot(&s.user).is_empty(), "{:?}", snapshot(&s.user));

    write_skill(&s.user, "kept", "Original.", "");
    let before = snapshot(&s.user);
    let err = call(
        &s.manage,
        json!({"action": "edit", "name": "kept", "content": skill_md("kept", "", "")}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("line 3: `description` is missing or empty"),
        "{err}"
    );
    let err = call(&s.manage, json!({"action": "patch", "name": "kept", "old_text": "name: kept", "new_text": "name: Kept"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("line 2: `name` `Kept`"), "{err}");
    assert_eq!(snapshot(&s.user), before);
}

#[tokio::test]
async fn patch_needs_text_that_occurs_exactly_once() {
    let s = setup();
    write_skill(&s.user, "twice", "d", "");
    fs::write(s.user.join("twice/notes.md"), "a a").unwrap();
    let err = call(
        &s.manage,
        json!({"action": "patch", "name": "twice", "old_text": "missing", "new_text": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`old_text` does not occur in SKILL.md"),
        "{err}"
    );
    let err = call(&s.manage, json!({"action": "patch", "name": "twice", "path": "notes.md", "old_text": "a", "new_text": "b"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("occurs 2 times in notes.md"),
        "{err}"
    );
    let err = call(
        &s.manage,
        json!({"action": "patch", "name": "twice", "old_text": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments: `new_text` is required for action patch"
    );
}

#[tokio::test]
async fn supporting_file_paths_stay_inside_and_leave_skill_md_alone() {
    let s = setup();
    write_skill(&s.user, "tidy", "d", "");
    let before = snapshot(s.user.parent().unwrap());
    for (path, expected) in [
        ("SKILL.md", "changed with action edit"),
        ("./skill.md", "changed with action edit"),
        ("../escape.md", "outside the skill folder"),
        ("/tmp/escape.md", "outside the skill folder"),
        ("a/../../escape.md", "outside the skill folder"),
    ] {
        for action in ["write_file", "remove_file"] {
            let err = call(
                &s.manage,
                json!({"action": action, "name": "tidy", "path": path, "content": "x"}),
            )
            .await
            .unwrap_err();
            assert!(err.to_string().contains(expected), "{action} {path}: {err}");
        }
    }
    let err = call(
        &s.manage,
        json!({"action": "remove_file", "name": "tidy", "path": "none.md"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("`none.md` does not exist"),
        "{err}"
    );
    assert_eq!(snapshot(s.user.parent().unwrap()), before);
}

#[cfg(unix)]
#[tokio::test]
async fn writes_through_a_link_out_of_the_skill_are_refused() {
    let s = setup();
    let folder = write_skill(&s.user, "linked", "d", "");
    let outside = s._dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, folder.join("out")).unwrap();
    let err = call(
        &s.manage,
        json!({"action": "write_file", "name": "linked", "path": "out/x.md", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!outside.join("x.md").exists());

    // A folder link back to the skill itself does not let SKILL.md skip validation.
    std::os::unix::fs::symlink(&folder, folder.join("again")).unwrap();
    let before = fs::read_to_string(folder.join("SKILL.md")).unwrap();
    for action in ["write_file", "remove_file"] {
        let err = call(&s.manage, json!({"action": action, "name": "linked", "path": "again/SKILL.md", "content": "junk"}))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("leads to SKILL.md"),
            "{action}: {err}"
        );
    }
    assert_eq!(fs::read_to_string(folder.join("SKILL.md")).unwrap(), before);
}

#[tokio::test]
async fn a_bundled_skill_is_copied_to_the_user_before_its_first_change() {
    let s = setup();
    let out = call(&s.manage, json!({"action": "patch", "name": "alpha", "old_text": "Read references/notes.md.", "new_text": "Read the notes first."}))
        .await
        .unwrap();
    assert!(
        out.starts_with(
            "patched SKILL.md of `alpha`. `alpha` was a bundled skill: it was first copied to"
        ),
        "{out}"
    );
    let copy = s.user.join("alpha");
    assert!(
        fs::read_to_string(copy.join("SKILL.md"))
            .unwrap()
            .contains("Read the notes first.")
    );
    assert_eq!(
        fs::read_to_string(copy.join("references/notes.md")).unwrap(),
        "Alpha notes.\n",
        "the bundled skill's other files come along"
    );
    let lib = SkillLibrary::load(&sources(&s.user));
    let alpha = lib.get("alpha").unwrap();
    assert_eq!(alpha.source, SkillSource::User(copy.clone()));
    assert!(alpha.overrides_bundled);

    // A second change edits the copy in place.
    let out = call(
        &s.manage,
        json!({"action": "write_file", "name": "alpha", "path": "notes2.md", "content": "more"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "wrote notes2.md of `alpha` (4 bytes)");

    // A failed change to a bundled skill leaves no copy behind.
    let err = call(
        &s.manage,
        json!({"action": "edit", "name": "shared", "content": "---\nname: shared\n---\n"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("nothing was written"), "{err}");
    assert!(!s.user.join("shared").exists());
    let names: Vec<String> = snapshot(&s.user).into_iter().map(|(p, _)| p).collect();
    assert!(names.iter().all(|p| p.starts_with("alpha")), "{names:?}");

    let err = call(&s.manage, json!({"action": "delete", "name": "shared"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("bundled skill and cannot be deleted"),
        "{err}"
    );
    let err = call(
        &s.manage,
        json!({"action": "create", "name": "shared", "content": skill_md("shared", "d", "")}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("a bundled skill named `shared` already exists"),
        "{err}"
    );
    let out = call(&s.manage, json!({"action": "delete", "name": "alpha"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "deleted your copy of `alpha`; the bundled version is used again"
    );
    let lib = SkillLibrary::load(&sources(&s.user));
    assert_eq!(lib.get("alpha").unwrap().source, SkillSource::Bundled);
}

#[test]
fn writes_names_the_target_without_touching_the_disk() {
    let s = setup();
    let w = |args: Value| s.manage.writes(&args);
    let dir = s.user.join("x");
    assert_eq!(
        w(json!({"action": "create", "name": "x"})),
        vec![dir.clone()]
    );
    assert_eq!(
        w(json!({"action": "delete", "name": "x"})),
        vec![dir.clone()]
    );
    assert_eq!(
        w(json!({"action": "edit", "name": "x"})),
        [dir.join("SKILL.md")]
    );
    assert_eq!(
        w(json!({"action": "patch", "name": "x"})),
        [dir.join("SKILL.md")]
    );
    assert_eq!(
        w(json!({"action": "write_file", "name": "x", "path": "a/b.md"})),
        [dir.join("a/b.md")]
    );
    assert!(w(json!({"action": "write_file", "name": "x", "path": "../b.md"})).is_empty());
    assert!(w(json!({"action": "create", "name": "../x"})).is_empty());
    assert!(!s.user.exists());
}
