//! Loading, precedence, availability, the prompt index and confined file reads.

use std::fs;
use std::path::Path;

use hermes_adapter::Platform;

use super::*;
use crate::skills::testing::{sources, write_skill};

fn names(skills: &[&Skill]) -> Vec<String> {
    skills.iter().map(|s| s.name.clone()).collect()
}

fn all(lib: &SkillLibrary) -> Vec<String> {
    names(&lib.skills().iter().collect::<Vec<_>>())
}

#[test]
fn the_bundled_skills_are_valid_and_carry_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let lib = SkillLibrary::load(&SkillSources::new(dir.path()));
    assert_eq!(
        lib.problems(),
        &[],
        "the repository's skills/ must validate"
    );
    assert_eq!(
        all(&lib),
        ["daily-briefing", "email-triage", "hermes-operations"]
    );
    let ops = lib.get("hermes-operations").unwrap();
    assert_eq!(ops.source, SkillSource::Bundled);
    assert!(ops.tags.contains(&"hermes".to_owned()));
    let files: Vec<String> = ops.files().into_iter().map(|f| f.path).collect();
    assert_eq!(files, ["references/configuration.md"]);
    let reference = ops.read_file("references/configuration.md").unwrap();
    assert!(reference.contains("HERMES_HOME"), "{reference}");
    let briefing = lib.get("daily-briefing").unwrap();
    assert!(briefing.body.contains("[SILENT]"));
    assert_eq!(briefing.manifest.requires_tools, ["web_fetch"]);
}

#[test]
fn a_broken_skill_next_to_good_ones_hides_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path();
    write_skill(user, "good-one", "Fine.", "");
    write_skill(user, "zeta", "Fine too.", "");
    let bad = write_skill(user, "bad-one", "Broken.", "platforms: [pager]\n");
    fs::create_dir(user.join("empty-folder")).unwrap();
    fs::create_dir(user.join(".staging-x-1-0")).unwrap();
    fs::write(user.join("README.txt"), "not a skill").unwrap();

    let lib = SkillLibrary::load(&sources(user));
    assert_eq!(all(&lib), ["alpha", "good-one", "shared", "zeta"]);
    let problems: Vec<String> = lib.problems().iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].starts_with(&format!("{}:4: ", bad.join("SKILL.md").display()))
            && problems[0].contains("`pager` is neither a platform"),
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("empty-folder/SKILL.md: this folder has no SKILL.md"),
        "{problems:#?}"
    );
    assert_eq!(
        problems[2],
        "skills/broken/SKILL.md:2: `name` is `not-broken` but the skill's folder is `broken`; \
         they must be equal (rename the folder or change the name)"
    );
}

#[test]
fn a_user_skill_beats_the_bundled_one_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let folder = write_skill(dir.path(), "shared", "The user's version.", "");
    let lib = SkillLibrary::load(&sources(dir.path()));
    assert_eq!(all(&lib), ["alpha", "shared"]);
    let shared = lib.get("shared").unwrap();
    assert_eq!(shared.description, "The user's version.");
    assert_eq!(shared.source, SkillSource::User(folder));
    assert!(shared.overrides_bundled);
    assert!(!lib.get("alpha").unwrap().overrides_bundled);
}

#[test]
fn requirements_and_fallbacks_decide_what_is_available() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path();
    write_skill(user, "plain", "d", "");
    write_skill(user, "needs-terminal", "d", "requires_tools: [terminal]\n");
    write_skill(user, "needs-web-set", "d", "requires_toolsets: [web]\n");
    write_skill(
        user,
        "needs-token",
        "d",
        "required_environment_variables: [TOKEN]\n",
    );
    write_skill(user, "telegram-only", "d", "platforms: [telegram]\n");
    write_skill(
        user,
        "instead-of-fetch",
        "d",
        "fallback_for_tools: [web_fetch]\n",
    );
    write_skill(
        user,
        "instead-of-web",
        "d",
        "fallback_for_toolsets: [web]\n",
    );
    let lib = SkillLibrary::load(&SkillSources::new(user).with_bundled(&EMPTY));

    let bare = Availability::new(Platform::Cli, Vec::<String>::new(), Vec::<String>::new())
        .with_env(|_| false);
    assert_eq!(
        names(&lib.available(&bare)),
        ["instead-of-fetch", "instead-of-web", "plain"]
    );
    let rich = Availability::new(
        Platform::Telegram,
        ["terminal", "web_fetch"],
        ["terminal", "web"],
    )
    .with_env(|v| v == "TOKEN");
    assert_eq!(
        names(&lib.available(&rich)),
        [
            "needs-terminal",
            "needs-token",
            "needs-web-set",
            "plain",
            "telegram-only"
        ]
    );
    let m = &lib.get("instead-of-fetch").unwrap().manifest;
    assert_eq!(
        rich.hidden_because(m).as_deref(),
        Some("stands in for the tool `web_fetch`, which is enabled")
    );
    assert_eq!(
        bare.hidden_because(&lib.get("needs-token").unwrap().manifest)
            .as_deref(),
        Some("needs the environment variable TOKEN")
    );
}

static EMPTY: include_dir::Dir<'static> = include_dir::Dir::new("", &[]);

#[test]
fn the_index_is_byte_identical_for_the_same_skills_and_changes_with_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(dir.path(), "beta", "Second\n  line folded.", "");
    let ctx = Availability::new(Platform::Telegram, ["web_fetch"], ["web"]);
    let first = index(&SkillLibrary::load(&sources(dir.path())).available(&ctx));
    let lib = SkillLibrary::load(&sources(dir.path()));
    let mut reversed = lib.available(&ctx);
    reversed.reverse();
    assert_eq!(
        index(&reversed),
        first,
        "order of the input does not matter"
    );
    assert!(first.starts_with("## Skills\n"), "{first}");
    assert!(first.contains("call skill_view"), "{first}");
    assert!(
        first.ends_with(
            "- alpha: A bundled test skill with a reference file.\n\
             - beta: Second line folded.\n\
             - shared: The bundled version of a skill the user overrides.\n"
        ),
        "{first}"
    );

    write_skill(dir.path(), "gamma", "Added later.", "");
    let second = index(&SkillLibrary::load(&sources(dir.path())).available(&ctx));
    assert_ne!(second, first);
    assert!(second.contains("- gamma: Added later.\n"), "{second}");
    assert_eq!(index(&[]), "");
}

#[test]
fn skill_files_are_read_inside_the_folder_only() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let folder = write_skill(&user, "docs", "d", "");
    fs::create_dir_all(folder.join("references")).unwrap();
    fs::write(folder.join("references/api.md"), "API").unwrap();
    fs::write(folder.join("big.txt"), vec![b'x'; 300 * 1024]).unwrap();
    fs::write(folder.join("blob.bin"), [0u8, 1, 2]).unwrap();
    fs::write(folder.join(".hidden.tmp"), "partial").unwrap();
    fs::write(dir.path().join("secret.txt"), "secret").unwrap();
    let lib = SkillLibrary::load(&sources(&user));
    let skill = lib.get("docs").unwrap();

    assert_eq!(skill.read_file("references/api.md").unwrap(), "API");
    assert_eq!(skill.read_file("./references/api.md").unwrap(), "API");
    let secret = dir.path().join("secret.txt");
    for bad in [
        "../secret.txt",
        "references/../../secret.txt",
        "..",
        secret.to_str().unwrap(),
        "/etc/passwd",
    ] {
        let err = skill.read_file(bad).unwrap_err();
        assert!(matches!(err, FileError::Outside(_)), "{bad}: {err}");
        assert!(
            err.to_string().contains("outside the skill folder"),
            "{err}"
        );
    }
    assert!(matches!(
        skill.read_file("big.txt"),
        Err(FileError::TooLarge { .. })
    ));
    assert!(matches!(
        skill.read_file("blob.bin"),
        Err(FileError::NotText(_))
    ));
    assert!(matches!(
        skill.read_file("nope.md"),
        Err(FileError::NotFound(_))
    ));
    assert!(matches!(
        skill.read_file("references"),
        Err(FileError::IsDir(_))
    ));
    let files: Vec<String> = skill.files().into_iter().map(|f| f.path).collect();
    assert_eq!(files, ["big.txt", "blob.bin", "references/api.md"]);

    let alpha = lib.get("alpha").unwrap();
    assert_eq!(
        alpha.read_file("references/notes.md").unwrap(),
        "Alpha notes.\n"
    );
    assert!(matches!(
        alpha.read_file("../shared/SKILL.md"),
        Err(FileError::Outside(_))
    ));
    assert!(matches!(
        alpha.read_file("references/none.md"),
        Err(FileError::NotFound(_))
    ));
}

#[cfg(unix)]
#[test]
fn links_out_of_a_skill_are_refused_and_links_inside_work() {
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let folder = write_skill(&user, "linky", "d", "");
    fs::write(dir.path().join("secret.txt"), "secret").unwrap();
    fs::create_dir(dir.path().join("outside")).unwrap();
    symlink(dir.path().join("secret.txt"), folder.join("leak.md")).unwrap();
    symlink(dir.path().join("outside"), folder.join("out")).unwrap();
    symlink(folder.join("SKILL.md"), folder.join("self.md")).unwrap();
    let lib = SkillLibrary::load(&sources(&user));
    let skill = lib.get("linky").unwrap();
    for bad in ["leak.md", "out", "out/anything"] {
        let err = skill.read_file(bad).unwrap_err();
        assert!(matches!(err, FileError::LinkOutside(_)), "{bad}: {err}");
    }
    assert!(skill.read_file("self.md").unwrap().contains("name: linky"));
    let files: Vec<String> = skill.files().into_iter().map(|f| f.path).collect();
    assert_eq!(files, ["self.md"], "links out are not listed");
    assert!(Path::new(&folder).join("leak.md").exists());
}

#[test]
fn a_turned_off_skill_is_seen_by_nothing_that_asks_for_skills() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path();
    write_skill(user, "mine", "Mine.", "");
    crate::skills::set_enabled(user, "mine", false).unwrap();
    crate::skills::set_enabled(user, "alpha", false).unwrap();
    let lib = SkillLibrary::load(&sources(user));
    assert_eq!(
        all(&lib),
        ["shared"],
        "neither the user's nor the bundled one"
    );
    assert!(lib.get("mine").is_none() && lib.get("alpha").is_none());
    let ctx = Availability::new(Platform::Telegram, ["x"], ["y"]);
    assert_eq!(names(&lib.available(&ctx)), ["shared"]);
    let off: Vec<&str> = lib.turned_off().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(off, ["alpha", "mine"]);
    crate::skills::set_enabled(user, "mine", true).unwrap();
    assert_eq!(all(&SkillLibrary::load(&sources(user))), ["mine", "shared"]);
}
