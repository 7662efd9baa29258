//! The terminal on another host (`tools.sandbox.backend = "ssh"`), each call a client of the
//! connection [`SshTarget`] keeps (`tools/ssh`).
//!
//! On the remote side a small POSIX `sh` wrapper enters the person's directory (`<root>/<platform>/<id>`),
//! sets the limits with `ulimit`, starts the command in a session of its own with a cleared
//! environment marked by `HERMES_CALL`, and kills it (its group and every process still
//! carrying the mark) when it ends or when the connection closes: a watchdog reads the
//! channel's standard input, which the daemon holds open for the length of the call, so a
//! timeout, a stopped turn or a dropped connection all end the remote command too.

use std::path::Path;
use std::time::Duration;

use crate::config::SandboxConfig;
pub use crate::tools::ssh::{SshTarget, quote};

/// Exit code of the wrapper when it cannot enter the workspace or the working directory.
pub const WRAPPER_FAILED: i32 = 125;
/// Exit code of `ssh` itself when the connection failed.
pub const CONNECTION_FAILED: i32 = 255;

/// The remote wrapper for `command` in `workspace` (remote path) and `workdir` (relative to
/// it), with `env` for the command and `marker` as its `HERMES_CALL`.
///
/// The watchdog reads the channel through a copy of standard input made first (fd 3): a
/// non-interactive `sh` gives a background job `/dev/null` as its standard input, and a
/// watchdog reading that would end every command at once.
pub fn wrapper(
    workspace: &str,
    workdir: &str,
    command: &str,
    env: &[(String, String)],
    limits: &SandboxConfig,
    marker: &str,
) -> String {
    let assignments: String = env
        .iter()
        .map(|(k, v)| format!(" {k}={}", quote(v)))
        .collect();
    // One grep over every process's environment (not one per process: a busy host has hundreds).
    let sweep = "for f in $(grep -lzx \"HERMES_CALL=$m\" /proc/[0-9]*/environ 2>/dev/null); do \
                 q=${f%/environ}; kill -KILL \"${q#/proc/}\" 2>/dev/null; done";
    let watchdog =
        format!("cat >/dev/null 2>&1; kill -KILL -- -\"$1\" 2>/dev/null; m=\"$2\"; {sweep}");
    format!(
        "exec 3<&0\n\
         d={ws}; mkdir -p -- \"$d\" && cd -- \"$d\" || {{ echo \"hermes: cannot enter the workspace $d on the remote host\" >&2; exit {WRAPPER_FAILED}; }}\n\
         cd -- {wd} 2>/dev/null || {{ echo \"hermes: workdir {wd_text} does not exist in the workspace\" >&2; exit {WRAPPER_FAILED}; }}\n\
         ulimit -t {cpu} 2>/dev/null; ulimit -f {blocks} 2>/dev/null; ulimit -v {kb} 2>/dev/null\n\
         ulimit -u {procs} 2>/dev/null || ulimit -p {procs} 2>/dev/null\n\
         m={marker_q}\n\
         env -i HERMES_CALL=\"$m\" PATH=\"$PATH\" HOME=\"$d\" PWD=\"$PWD\"{assignments} setsid sh -c {cmd} </dev/null 3<&- &\n\
         p=$!\n\
         setsid sh -c {dog} watchdog \"$p\" \"$m\" <&3 >/dev/null 2>&1 3<&- &\n\
         w=$!\n\
         exec 3<&-\n\
         wait \"$p\"; s=$?\n\
         kill -KILL -- -\"$w\" \"$w\" 2>/dev/null; kill -KILL -- -\"$p\" 2>/dev/null\n\
         {sweep}\n\
         exit \"$s\"\n",
        ws = quote(workspace),
        wd = quote(workdir),
        wd_text = workdir.replace(['"', '`', '$', '\\'], "_"),
        cpu = limits.cpu_secs,
        blocks = limits.max_file_mb.saturating_mul(2048),
        kb = limits.memory_mb.saturating_mul(1024),
        procs = limits.max_processes,
        marker_q = quote(marker),
        cmd = quote(command),
        dog = quote(&watchdog),
    )
}

/// The remote directory of a workspace: the remote root joined with the workspace's path
/// below the local root (the same `<platform>/<id>` layout).
pub fn remote_workspace(root: &str, below: &Path) -> String {
    let below = below.to_string_lossy();
    match (root.trim_end_matches('/'), below.as_ref()) {
        (root, "") => root.to_owned(),
        ("", below) => format!("/{below}"),
        (root, below) => format!("{root}/{below}"),
    }
}

/// A `workdir` argument checked from its text: relative, and not climbing out.
pub fn relative_workdir(requested: Option<&str>) -> Result<String, String> {
    let Some(w) = requested.map(str::trim).filter(|w| !w.is_empty()) else {
        return Ok(".".into());
    };
    let path = Path::new(w);
    let mut depth = 0i32;
    for c in path.components() {
        match c {
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => depth -= 1,
            _ => depth = -1,
        }
        if depth < 0 {
            return Err(format!(
                "workdir `{w}` is outside the workspace; give a directory relative to the \
                 workspace root"
            ));
        }
    }
    Ok(w.to_owned())
}

impl super::TerminalTool {
    /// Run `args` on the remote host of `target`, in the caller's workspace there.
    pub(super) async fn call_over_ssh(
        &self,
        target: &SshTarget,
        args: &super::Args,
        timeout: Duration,
        ctx: &crate::tools::ToolContext,
    ) -> Result<String, crate::tools::ToolError> {
        use super::process::{self, Ending, Spec, Wrapped};
        use crate::tools::ToolError;
        let workdir =
            relative_workdir(args.workdir.as_deref()).map_err(ToolError::InvalidArguments)?;
        let root = self.workspaces.root();
        let below = self
            .workspaces
            .dir_for(ctx)
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let remote = remote_workspace(&target.config.root, &below);
        if let Err(why) = target.ensure_master().await {
            return Err(ToolError::Failed(format!(
                "cannot connect to {} over SSH: {}; the command was not run (the next call tries \
                 again)",
                target.name(),
                crate::logging::scrub(&why)
            )));
        }
        // The remote host has its own PATH, HOME and user; the rest of the allowlist goes along.
        let env = super::process::remote_env(&self.settings.env_allowlist);
        let script = wrapper(
            &remote,
            &workdir,
            &args.command,
            &env,
            &self.settings.sandbox,
            &super::leftovers::new_marker(),
        );
        let spec = Spec {
            command: &args.command,
            workdir: root,
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            timeout,
            max_output_bytes: self.settings.max_output_bytes,
            fence: None,
            sandbox: Some(Wrapped {
                program: target.program.clone(),
                args: target.call_args(&script),
                limits: Vec::new(),
                shell_after: false,
                hold_stdin: true,
            }),
            cgroup: None,
        };
        let finished = process::run(spec, &ctx.cancel)
            .await
            .map_err(|e| ToolError::Failed(format!("could not run ssh: {e}")))?;
        let code = match finished.ending {
            Ending::Cancelled => return Err(ToolError::Cancelled),
            Ending::Exited(status) => status.code(),
            Ending::TimedOut => None,
        };
        let said = || crate::logging::scrub(finished.output.trim());
        match code {
            Some(CONNECTION_FAILED) => Err(ToolError::Failed(format!(
                "the SSH connection to {} failed: {}; the command may not have finished (the next \
                 call reconnects)",
                target.name(),
                said()
            ))),
            Some(WRAPPER_FAILED) if finished.output.starts_with("hermes: ") => {
                Err(ToolError::Failed(said()))
            }
            _ => Ok(super::report(&finished, timeout)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_word_survives_any_text() {
        let nasty = "it's $(rm -rf /) `x` \"y\" \\ \n";
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", &format!("printf %s {}", quote(nasty))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), nasty);
    }

    #[test]
    fn workspaces_and_workdirs_keep_to_the_layout() {
        assert_eq!(
            remote_workspace("hermes-workspaces", Path::new("telegram/42")),
            "hermes-workspaces/telegram/42"
        );
        assert_eq!(remote_workspace("/srv/ws/", Path::new("")), "/srv/ws");
        assert_eq!(relative_workdir(None).unwrap(), ".");
        assert_eq!(relative_workdir(Some("a/../b")).unwrap(), "a/../b");
        for bad in ["..", "a/../..", "/etc"] {
            assert!(relative_workdir(Some(bad)).is_err(), "{bad}");
        }
    }

    /// The wrapper run by a local `sh` as the remote shell would: it enters the directory,
    /// runs the command with only the given environment, and leaves nothing behind.
    #[test]
    fn the_wrapper_runs_the_command_and_ends_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("telegram/42");
        let script = wrapper(
            ws.to_str().unwrap(),
            ".",
            "pwd; echo \"lang=$LANG secret=${SECRET:-none}\"; setsid sleep 4242.5 & echo $! > pid; \
             sleep 0.5; echo slept",
            &[("LANG".into(), "C.UTF-8".into())],
            &SandboxConfig::default(),
            "test-marker",
        );
        // The channel's standard input stays open for the call, as the daemon holds it.
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", &script])
            .env("SECRET", "hunter2")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let held = child.stdin.take();
        let out = child.wait_with_output().unwrap();
        drop(held);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(ws.to_str().unwrap()), "{text}");
        assert!(text.contains("lang=C.UTF-8 secret=none"), "{text}");
        // A command that takes its time is not ended while the channel is open.
        assert!(text.contains("slept"), "{text}");
        let pid: i32 = std::fs::read_to_string(ws.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z");
        assert!(!alive, "the setsid child outlived the call");
    }
}
