//! Tests of `search_files`: ignore rules, globs, modes, caps and symbolic links.

use std::fs;

use serde_json::json;

use super::*;

/// A workspace with a source file, ignored and hidden files, and a note.
fn tool() -> (tempfile::TempDir, SearchFiles) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (path, content) in [
        (".gitignore", "target/\n*.log\nsrc/gen/\n"),
        ("src/a.rs", "fn alpha() {}\nfn beta() {}\n"),
        ("src/gen/g.rs", "fn alpha_generated() {}\n"),
        ("target/b.rs", "fn alpha() {}\n"),
        ("x.log", "alpha\n"),
        (".hidden/c.rs", "alpha\n"),
        ("notes.md", "Alpha and alpha\n"),
    ] {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    let ws = Arc::new(Workspaces::new(root).unwrap());
    (dir, SearchFiles::new(ws))
}

async fn search(t: &SearchFiles, args: Value) -> Result<String, ToolError> {
    t.call(args, &ToolContext::for_tests()).await
}

#[tokio::test]
async fn gitignored_and_hidden_files_are_skipped() {
    let (_d, t) = tool();
    let out = search(&t, json!({"pattern": "alpha"})).await.unwrap();
    assert_eq!(
        out,
        "notes.md:1: Alpha and alpha\nsrc/a.rs:1: fn alpha() {}\n[2 matching lines in 2 files]"
    );
    let out = search(&t, json!({"pattern": "alpha", "include_hidden": true}))
        .await
        .unwrap();
    assert!(out.starts_with(".hidden/c.rs:1: alpha\n"), "{out}");
    assert!(!out.contains(".gitignore"), "{out}");
}

#[tokio::test]
async fn glob_narrows_without_reviving_ignored_files() {
    let (_d, t) = tool();
    let out = search(&t, json!({"pattern": "alpha", "glob": "*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "src/a.rs:1: fn alpha() {}\n[1 matching line in 1 file]"
    );
    let out = search(&t, json!({"pattern": "alpha", "glob": "*.log"}))
        .await
        .unwrap();
    assert!(out.starts_with("[no matching lines in `.`"), "{out}");
    let err = search(&t, json!({"pattern": "a", "glob": "[z"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`glob` \"[z\" is not a valid glob")
    );
}

#[tokio::test]
async fn a_subdirectory_keeps_the_ignore_rules_above_it() {
    let (_d, t) = tool();
    let out = search(&t, json!({"pattern": "alpha", "path": "src"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "src/a.rs:1: fn alpha() {}\n[1 matching line in 1 file]"
    );
    // An ignored directory asked for by name is searched.
    let out = search(&t, json!({"pattern": "alpha", "path": "target"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "target/b.rs:1: fn alpha() {}\n[1 matching line in 1 file]"
    );
}

#[tokio::test]
async fn names_mode_literal_and_case() {
    let (_d, t) = tool();
    let out = search(&t, json!({"pattern": "a\\.rs$", "mode": "names"}))
        .await
        .unwrap();
    assert_eq!(out, "src/a.rs\n[1 matching file]");
    let out = search(&t, json!({"pattern": "alpha()", "literal": true}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "src/a.rs:1: fn alpha() {}\n[1 matching line in 1 file]"
    );
    let out = search(&t, json!({"pattern": "^ALPHA", "ignore_case": true}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "notes.md:1: Alpha and alpha\n[1 matching line in 1 file]"
    );
    let err = search(&t, json!({"pattern": "alpha("})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments(_)));
    assert!(err.to_string().contains("set `literal` to true"));
}

#[tokio::test]
async fn matches_are_capped_and_long_lines_cut() {
    let (d, t) = tool();
    let many: String = (0..250).map(|i| format!("hit {i}\n")).collect();
    fs::write(d.path().join("many.txt"), many).unwrap();
    fs::write(d.path().join("wide.txt"), format!("hit{}", "x".repeat(400))).unwrap();
    let out = search(&t, json!({"pattern": "hit"})).await.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), MAX_MATCHES + 1);
    assert_eq!(lines[199], "many.txt:200: hit 199");
    assert!(lines[200].starts_with("[showing the first 200 matching lines; there are more"));
    let out = search(&t, json!({"pattern": "hit", "path": "wide.txt"}))
        .await
        .unwrap();
    assert!(out.starts_with("wide.txt:1: hitxxx"), "{out}");
    assert!(out.contains("… [103 more characters]"), "{out}");
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let (d, t) = tool();
    fs::write(d.path().join("blob.bin"), b"alpha\0\x01\x02").unwrap();
    let out = search(&t, json!({"pattern": "alpha", "glob": "*.bin"}))
        .await
        .unwrap();
    assert!(out.starts_with("[no matching lines"), "{out}");
}

#[tokio::test]
async fn escaping_paths_are_refused() {
    let (_d, t) = tool();
    for path in ["..", "/etc"] {
        let err = search(&t, json!({"pattern": "root", "path": path}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn links_are_followed_only_inside_the_workspace() {
    use std::os::unix::fs::symlink;
    let (d, t) = tool();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.rs"), "fn alpha() {}\n").unwrap();
    symlink(outside.path(), d.path().join("out")).unwrap();
    symlink(outside.path().join("secret.rs"), d.path().join("s.rs")).unwrap();
    symlink(d.path().join("src/a.rs"), d.path().join("alias.rs")).unwrap();
    let out = search(&t, json!({"pattern": "alpha", "glob": "*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "alias.rs:1: fn alpha() {}\nsrc/a.rs:1: fn alpha() {}\n[2 matching lines in 2 files]"
    );
    let err = search(&t, json!({"pattern": "alpha", "path": "out"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("outside the workspace"), "{err}");
}
