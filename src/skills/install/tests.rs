//! Installing from folders and git repositories, refusals, and removing user skills.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::*;
use crate::skills::SkillLibrary;
use crate::skills::testing::{skill_md, sources, write_skill};

fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args([
            "-c",
            "user.name=hermes-test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn git_available() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

#[tokio::test]
async fn a_local_folder_is_installed_under_the_skills_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let src = dir.path().join("checkout-of-something");
    fs::create_dir_all(src.join("scripts")).unwrap();
    fs::write(
        src.join("SKILL.md"),
        skill_md("backup-db", "Back up the database.", ""),
    )
    .unwrap();
    fs::write(src.join("scripts/run.sh"), "pg_dump\n").unwrap();
    fs::write(src.join(".env"), "SECRET=1").unwrap();

    let installed = install(src.to_str().unwrap(), &sources(&user), false)
        .await
        .unwrap();
    assert_eq!(installed.len(), 1);
    let i = &installed[0];
    assert_eq!((i.name.as_str(), i.replaced), ("backup-db", false));
    assert_eq!(i.path, user.join("backup-db"));
    assert_eq!(i.skipped, [".env"]);
    assert_eq!(
        fs::read_to_string(user.join("backup-db/scripts/run.sh")).unwrap(),
        "pg_dump\n"
    );
    assert!(!user.join("backup-db/.env").exists());
    let lib = SkillLibrary::load(&sources(&user));
    assert!(lib.problems().iter().all(|p| !p.file.starts_with(&user)));
    assert!(lib.get("backup-db").is_some());
}

#[tokio::test]
async fn every_skill_in_the_immediate_subfolders_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let src = dir.path().join("collection");
    write_skill(&src, "one", "First.", "");
    write_skill(&src, "two", "Second.", "");
    fs::create_dir_all(src.join("docs")).unwrap();
    let installed = install(src.to_str().unwrap(), &sources(&user), false)
        .await
        .unwrap();
    let names: Vec<&str> = installed.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["one", "two"]);
}

#[tokio::test]
async fn install_from_a_local_git_repository_works_offline() {
    if !git_available() {
        eprintln!("note: git is not installed; skipping the git install test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let repo = dir.path().join("repo");
    fs::create_dir_all(repo.join("references")).unwrap();
    fs::write(
        repo.join("SKILL.md"),
        skill_md("from-git", "Installed from git.", ""),
    )
    .unwrap();
    fs::write(repo.join("references/notes.md"), "committed\n").unwrap();
    assert!(git(&repo, &["init", "-q"]));
    assert!(git(&repo, &["add", "."]));
    assert!(git(&repo, &["commit", "-q", "-m", "a skill"]));
    fs::write(repo.join("references/draft.md"), "not committed\n").unwrap();

    let installed = install(repo.to_str().unwrap(), &sources(&user), false)
        .await
        .unwrap();
    assert_eq!(installed.len(), 1);
    assert_eq!(installed[0].name, "from-git");
    assert_eq!(installed[0].skipped, [".git"]);
    let folder = user.join("from-git");
    assert_eq!(
        fs::read_to_string(folder.join("references/notes.md")).unwrap(),
        "committed\n"
    );
    assert!(
        !folder.join("references/draft.md").exists(),
        "only committed files"
    );
    assert!(!folder.join(".git").exists());
    let lib = SkillLibrary::load(&sources(&user));
    assert_eq!(
        lib.get("from-git").unwrap().description,
        "Installed from git."
    );

    // The same through a file:// URL.
    let url = format!("file://{}", repo.display());
    let err = install(&url, &sources(&user), false).await.unwrap_err();
    assert!(
        matches!(err, InstallError::ClashUser(ref n) if n == "from-git"),
        "{err}"
    );
    let again = install(&url, &sources(&user), true).await.unwrap();
    assert!(again[0].replaced);

    let err = install(
        &format!("file://{}", dir.path().join("no-such-repo").display()),
        &sources(&user),
        false,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, InstallError::Git { .. }), "{err}");
}

#[tokio::test]
async fn install_refuses_a_name_clash() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    write_skill(&user, "mine", "Already here.", "");
    let src = dir.path().join("src");
    write_skill(&src, "mine", "A new version.", "");

    let err = install(src.join("mine").to_str().unwrap(), &sources(&user), false)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "you already have a skill named `mine`; add --force to replace it"
    );
    let md = fs::read_to_string(user.join("mine/SKILL.md")).unwrap();
    assert!(md.contains("Already here."));

    let replaced = install(src.join("mine").to_str().unwrap(), &sources(&user), true)
        .await
        .unwrap();
    assert!(replaced[0].replaced);
    let md = fs::read_to_string(user.join("mine/SKILL.md")).unwrap();
    assert!(md.contains("A new version."));

    let bundled = write_skill(&src, "alpha", "Pretends to be bundled.", "");
    for force in [false, true] {
        let err = install(bundled.to_str().unwrap(), &sources(&user), force)
            .await
            .unwrap_err();
        assert!(
            matches!(err, InstallError::ClashBundled(ref n) if n == "alpha"),
            "{err}"
        );
    }
    assert!(!user.join("alpha").exists());
}

#[tokio::test]
async fn install_refuses_a_bad_manifest_and_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let src = dir.path().join("src");
    write_skill(&src, "fine", "Good.", "");
    write_skill(&src, "wrong", "Bad.", "platforms: [fax]\n");
    write_skill(&src, "misnamed", "Bad name.", "");
    fs::write(
        src.join("misnamed/SKILL.md"),
        skill_md("other", "Bad name.", ""),
    )
    .unwrap();

    let err = install(src.to_str().unwrap(), &sources(&user), false)
        .await
        .unwrap_err();
    let InstallError::Invalid(problems) = &err else {
        panic!("{err}");
    };
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 2, "{text:#?}");
    assert!(
        text[0].starts_with(&format!(
            "{}:2: `name` is `other`",
            src.join("misnamed/SKILL.md").display()
        )),
        "{text:#?}"
    );
    assert!(
        text[1].starts_with(&format!("{}:4: ", src.join("wrong/SKILL.md").display()))
            && text[1].contains("`fax` is neither a platform"),
        "{text:#?}"
    );
    assert!(
        err.to_string()
            .starts_with("nothing was installed; fix these problems first:")
    );
    assert!(!user.exists() || fs::read_dir(&user).unwrap().next().is_none());

    let err = install(
        dir.path().join("missing").to_str().unwrap(),
        &sources(&user),
        false,
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("neither a folder nor a git URL"),
        "{err}"
    );
    fs::create_dir(dir.path().join("empty")).unwrap();
    let err = install(
        dir.path().join("empty").to_str().unwrap(),
        &sources(&user),
        false,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("has no SKILL.md"), "{err}");
}

#[test]
fn only_user_skills_can_be_removed() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    write_skill(&user, "mine", "d", "");
    write_skill(&user, "shared", "My copy.", "");
    let s = sources(&user);
    assert!(!remove_user_skill(&s, "mine").unwrap());
    assert!(!user.join("mine").exists());
    assert!(
        remove_user_skill(&s, "shared").unwrap(),
        "the bundled one is back"
    );
    assert!(matches!(
        remove_user_skill(&s, "alpha"),
        Err(InstallError::Bundled(_))
    ));
    assert!(matches!(
        remove_user_skill(&s, "mine"),
        Err(InstallError::NotFound(_))
    ));
    assert!(matches!(
        remove_user_skill(&s, "../x"),
        Err(InstallError::Source(_))
    ));
    assert_eq!(fs::read_dir(&user).unwrap().count(), 0, "no trash is left");
}
