//! The terminal tool against real `/bin/sh` processes in a temporary workspace.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tempfile::TempDir;

use super::*;

fn tool_in(dir: &TempDir) -> TerminalTool {
    TerminalTool::new(TerminalSettings::new(dir.path()))
}

async fn run(tool: &TerminalTool, args: Value) -> Result<String, ToolError> {
    tool.call(args, &ToolContext::for_tests()).await
}

/// Whether `pid` has exited (gone, or a zombie waiting for its new parent to reap it), waiting up
/// to five seconds for a signal to take effect.
async fn gone(pid: u32) -> bool {
    for _ in 0..200 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat
                    .rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next());
                if matches!(state, Some('Z' | 'X')) {
                    return true;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// Pids the command wrote to `file` in the workspace, once there are `count` of them.
async fn pids_in(dir: &TempDir, file: &str, count: usize) -> Vec<u32> {
    for _ in 0..200 {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap_or_default();
        let pids: Vec<u32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() >= count {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the command never wrote {count} pids to {file}");
}

#[tokio::test]
async fn output_and_exit_code_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_in(&dir);
    let out = run(&tool, json!({"command": "echo out; echo err >&2"}))
        .await
        .unwrap();
    assert!(out.starts_with("exit code: 0\n"), "{out}");
    assert!(out.contains("out\n") && out.contains("err\n"), "{out}");

    let out = run(&tool, json!({"command": "echo failing; exit 3"}))
        .await
        .unwrap();
    assert_eq!(out, "exit code: 3\nfailing\n");
    let out = run(&tool, json!({"command": "true"})).await.unwrap();
    assert_eq!(out, "exit code: 0\n(no output)");
}

#[tokio::test]
async fn timeout_kills_the_command_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_in(&dir);
    let started = Instant::now();
    let out = run(
        &tool,
        json!({"command": "sleep 30 & echo $!; sleep 30", "timeout_secs": 1}),
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        out.starts_with(
            "timed out after 1 s; the command and its children were killed\noutput so far:\n"
        ),
        "{out}"
    );
    let child: u32 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(
        gone(child).await,
        "background child {child} survived the timeout"
    );
}

#[tokio::test]
async fn background_processes_are_stopped_when_the_shell_exits() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_in(&dir);
    let started = Instant::now();
    let out = run(&tool, json!({"command": "sleep 30 & echo $!"}))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.contains("background were stopped"), "{out}");
    let child: u32 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(
        gone(child).await,
        "background child {child} outlived the command"
    );
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = TerminalSettings::new(dir.path());
    settings.max_output_bytes = 1_000;
    let tool = TerminalTool::new(settings);
    let out = run(&tool, json!({"command": "seq 1 20000"})).await.unwrap();
    assert!(out.starts_with("exit code: 0\n1\n2\n3\n"), "{}", &out[..50]);
    assert!(
        out.ends_with("19999\n20000\n"),
        "{}",
        &out[out.len() - 50..]
    );
    assert!(out.contains("bytes of output cut"), "{out}");
    assert!(out.len() < 1_200, "{} bytes", out.len());
}

#[tokio::test]
async fn environment_holds_only_allowlisted_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&tool_in(&dir), json!({"command": "env"}))
        .await
        .unwrap();
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect();
    // `PWD`, `SHLVL`, `_` and `OLDPWD` are set by the shell itself.
    let shell_own = ["PWD", "SHLVL", "_", "OLDPWD"];
    for name in &names {
        assert!(
            DEFAULT_ENV_ALLOWLIST.contains(name) || shell_own.contains(name),
            "`{name}` leaked into the command's environment"
        );
    }
    assert!(
        names.contains(&"HOME") && names.contains(&"PATH"),
        "{names:?}"
    );
    // cargo runs tests with CARGO_* variables set: they must not get through.
    assert!(!names.iter().any(|n| n.starts_with("CARGO")), "{names:?}");
}

#[tokio::test]
async fn workdir_must_stay_inside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("escape")).unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let tool = tool_in(&dir);

    let out = run(&tool, json!({"command": "pwd", "workdir": "sub"}))
        .await
        .unwrap();
    let expected = dir.path().canonicalize().unwrap().join("sub");
    assert_eq!(out, format!("exit code: 0\n{}\n", expected.display()));

    for (workdir, problem) in [
        ("..", "outside the workspace"),
        ("sub/../..", "outside the workspace"),
        ("/etc", "outside the workspace"),
        ("escape", "outside the workspace"),
        ("missing", "does not exist"),
        ("file", "not a directory"),
    ] {
        let err = run(&tool, json!({"command": "pwd", "workdir": workdir}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains(problem)),
            "{workdir}: {err}"
        );
    }
}

#[tokio::test]
async fn cancelling_the_turn_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_in(&dir);
    let ctx = ToolContext::for_tests();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let command = "echo $$ > pids; sleep 30 & echo $! >> pids; sleep 30";
    let err = tool
        .call(json!({"command": command}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    for pid in pids_in(&dir, "pids", 2).await {
        assert!(gone(pid).await, "{pid} survived the cancellation");
    }
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = Arc::new(tool_in(&dir));
    let running = {
        let tool = tool.clone();
        tokio::spawn(async move {
            let command = "echo $$ > pids; sleep 30 & echo $! >> pids; sleep 30";
            run(&tool, json!({"command": command})).await
        })
    };
    let pids = pids_in(&dir, "pids", 2).await;
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    for pid in pids {
        assert!(gone(pid).await, "{pid} outlived the dropped call");
    }
}

#[tokio::test]
async fn bad_arguments_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_in(&dir);
    for args in [
        json!({"command": "true", "timeout_secs": 601}),
        json!({"command": "true", "timeout_secs": 0}),
        json!({"command": "  "}),
        json!({"cmd": "true"}),
    ] {
        let err = run(&tool, args.clone()).await.unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(_)),
            "{args}: {err}"
        );
    }
}

#[test]
fn danger_names_the_reason_and_ignores_harmless_commands() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_in(&dir);
    let reason = tool.danger(&json!({"command": "sudo rm -rf /"})).unwrap();
    assert!(reason.contains("recursively"), "{reason}");
    assert!(
        tool.danger(&json!({"command": format!("kill -9 {}", std::process::id())}))
            .is_some()
    );
    assert_eq!(tool.danger(&json!({"command": "ls -la"})), None);
    assert_eq!(tool.danger(&json!({})), None);
}

#[test]
fn spec_and_schema() {
    let dir = tempfile::tempdir().unwrap();
    let spec = tool_in(&dir).spec;
    assert_eq!(
        (spec.name, spec.category, spec.parallel_safe),
        ("terminal", Category::System, false)
    );
    assert_eq!(spec.parameters["required"], json!(["command"]));
    assert!(spec.timeout > MAX_TIMEOUT);
}

#[tokio::test]
async fn the_fence_keeps_commands_out_of_private_files_and_away_from_the_parent() {
    if !fence::active() {
        eprintln!("SKIP: this kernel has no Landlock");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = home.join("workspace");
    let skills = home.join("skills");
    for dir in [&workspace, &skills] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join("hermes.db"), "private-state").unwrap();
    std::fs::write(home.join("hermes.env"), "TOKEN=private-env").unwrap();
    std::fs::write(root.path().join("config.toml"), "private-config").unwrap();
    std::fs::write(root.path().join("notes.txt"), "public-notes").unwrap();
    std::fs::write(skills.join("run.sh"), "echo skill-ran").unwrap();
    let mut settings = TerminalSettings::new(&workspace);
    settings.fence = FenceSettings {
        // The env file inside the state directory must not open the directory's other files.
        private: vec![
            home.clone(),
            root.path().join("config.toml"),
            home.join("hermes.env"),
        ],
        shared: vec![skills.clone()],
        writable: vec![workspace.clone()],
    };
    let tool = TerminalTool::new(settings);
    let r = root.path().display();
    let command = format!(
        "cat {r}/home/hermes.db; cat {r}/config.toml; cat {r}/notes.txt; \
         sh {r}/home/skills/run.sh; echo made > {r}/home/skills/new 2>&1 || echo no-write; \
         echo ws > out && cat out; head -c 1 /proc/$PPID/mem; kill -0 $PPID && echo signalled"
    );
    let out = run(&tool, json!({ "command": command })).await.unwrap();
    for private in ["private-state", "private-config", "signalled"] {
        assert!(
            !out.contains(private),
            "{private} reached the command:\n{out}"
        );
    }
    for public in ["public-notes", "skill-ran", "no-write", "\nws\n"] {
        assert!(out.contains(public), "{public:?} missing:\n{out}");
    }
    assert!(
        out.matches("Permission denied").count() >= 3,
        "the state, the config and the parent's memory are refused:\n{out}"
    );
}

#[tokio::test]
async fn what_leaves_the_process_group_is_killed_with_or_without_a_cgroup() {
    for with_cgroup in [false, true] {
        let cgroup = match (with_cgroup, cgroup::get()) {
            (false, _) => None,
            (true, Some(cgroups)) => Some(cgroups.group(64).unwrap()),
            (true, None) => {
                eprintln!("no pids cgroup here: {}", cgroup::describe());
                continue;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let command = "setsid sleep 1000 & echo $! > pids; \
                       nohup sleep 1001 > /dev/null 2>&1 & echo $! >> pids; \
                       (sh -c 'sleep 1002 & echo $! >> pids' &); sleep 0.3";
        let spec = Spec {
            command,
            workdir: dir.path(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            timeout: Duration::from_secs(20),
            max_output_bytes: 1000,
            fence: None,
            sandbox: None,
            cgroup,
        };
        let finished = process::run(spec, &tokio_util::sync::CancellationToken::new())
            .await
            .unwrap();
        assert!(matches!(finished.ending, Ending::Exited(_)), "{finished:?}");
        for pid in pids_in(&dir, "pids", 3).await {
            assert!(
                gone(pid).await,
                "{pid} outlived its call (cgroup: {with_cgroup})"
            );
        }
    }
}
