//! `terminal`: run a shell command in the workspace and return its exit code and output.
//!
//! Each command runs as `/bin/sh -c` in a process group of its own, with standard input closed,
//! a cleared environment holding only an allowlist (never the daemon's tokens and keys), and
//! behind a Landlock fence that keeps it out of the daemon's state and process (`fence.rs`). On
//! timeout, when the turn is stopped, or when the call is abandoned, the whole group is killed, so
//! nothing the command started outlives it; the same happens to background processes still
//! running when the shell exits. Commands matching the patterns in `dangerous.rs` report a reason
//! through [`Tool::danger`] so that the agent asks the user first.

mod cgroup;
mod commands;
mod dangerous;
#[cfg(feature = "docker")]
pub mod docker;
mod fence;
mod leftovers;
mod lex;
mod process;
mod sandbox;
mod ssh;

pub use cgroup::describe as describe_cgroup;
pub use fence::{FenceSettings, active as fence_active, describe as describe_fence};
pub use leftovers::{VARIABLE as CALL_MARKER, kill_marked};
pub use sandbox::{
    Resolved as SandboxResolved, describe as describe_sandbox, resolve as resolve_sandbox,
};

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use self::dangerous::DangerContext;
use self::process::{Ending, Finished, Spec};
use super::files::Workspaces;
use super::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// Longest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// Environment variables passed to commands by default.
pub const DEFAULT_ENV_ALLOWLIST: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "TZ",
];

/// How the terminal tool runs commands.
#[derive(Debug, Clone)]
pub struct TerminalSettings {
    /// The workspace root: each call runs in its session's workspace below it
    /// ([`Workspaces`]). `workdir` arguments are relative to that workspace and may not leave it
    /// (symbolic links included).
    pub workspace_root: PathBuf,
    /// Timeout of a call that gives none. Default 60 s; calls may ask for up to 600 s.
    pub default_timeout: Duration,
    /// Bytes of output kept per call: the first and the last half, with a note of how much was
    /// cut in between. Default 64 KiB.
    pub max_output_bytes: usize,
    /// Variables of the daemon's environment passed to commands; names that look like
    /// credentials (`*_TOKEN`, `*_KEY`, `*SECRET*`, `*PASSWORD*`, `HERMES_*`…) are dropped even
    /// when listed. `HOME` and `PWD` are always set. Default [`DEFAULT_ENV_ALLOWLIST`].
    pub env_allowlist: Vec<String>,
    /// The daemon's state directory: commands touching its `config.toml` need approval.
    pub hermes_home: Option<PathBuf>,
    /// What commands may not open (the state directory, the config), see `fence.rs`. The
    /// workspace root is added to its private paths and the call's workspace to its writable
    /// ones at each call.
    pub fence: FenceSettings,
    /// Where commands run (`sandbox.rs`). Default: on the host.
    pub sandbox: crate::config::SandboxConfig,
}

impl TerminalSettings {
    /// Defaults for a workspace.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        TerminalSettings {
            workspace_root: workspace_root.into(),
            default_timeout: Duration::from_secs(60),
            max_output_bytes: 64 * 1024,
            env_allowlist: DEFAULT_ENV_ALLOWLIST
                .iter()
                .map(|s| s.to_string())
                .collect(),
            hermes_home: None,
            fence: FenceSettings::default(),
            sandbox: crate::config::SandboxConfig {
                backend: crate::config::SandboxBackend::None,
                ..Default::default()
            },
        }
    }
}

/// Runs shell commands for the agent.
pub struct TerminalTool {
    spec: ToolSpec,
    settings: TerminalSettings,
    workspaces: Workspaces,
    danger: DangerContext,
    /// The backend the configured one resolved to, once, at construction.
    sandbox: sandbox::Resolved,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The command line, run by `/bin/sh -c` (pipes, `&&`, redirections and globs work).
    command: String,
    /// Seconds before the command and everything it started are killed (default 60, at most
    /// 600).
    #[serde(default)]
    timeout_secs: Option<u64>,
    /// Directory to run in, relative to the workspace root (default: the root). It must be
    /// inside the workspace.
    #[serde(default)]
    workdir: Option<String>,
}

impl TerminalTool {
    /// The terminal of `settings`, resolving its sandbox backend now.
    pub fn new(settings: TerminalSettings) -> Self {
        let home = settings
            .hermes_home
            .clone()
            .unwrap_or_else(|| settings.workspace_root.join(".hermes"));
        let sandbox = sandbox::resolve(&settings.sandbox, &home);
        Self::with_sandbox(settings, sandbox)
    }

    /// The terminal of `settings` running commands where `sandbox` says (resolved once by the
    /// caller, who keeps it for the containers' lifecycle).
    pub fn with_sandbox(settings: TerminalSettings, sandbox: SandboxResolved) -> Self {
        let dropped: Vec<&str> = settings
            .env_allowlist
            .iter()
            .map(String::as_str)
            .filter(|name| process::looks_secret(name))
            .collect();
        if !dropped.is_empty() {
            tracing::warn!(
                ?dropped,
                "terminal: variables that look like secrets are never passed to commands"
            );
        }
        TerminalTool {
            spec: ToolSpec {
                name: "terminal",
                description: "Run a shell command (`/bin/sh -c`) in the workspace and get its \
                    exit code and output (stdout and stderr interleaved). Use it for builds, \
                    tests, git, inspecting files and running scripts. There is no terminal and no \
                    standard input: interactive programs (editors, pagers, password prompts) will \
                    not work, so pass flags such as `-y` or `--no-pager`. Commands are killed \
                    after 60 s unless `timeout_secs` (at most 600) says otherwise, together with \
                    everything they started; background processes still running when the command \
                    ends are stopped too. Long output keeps its beginning and end. Only a few \
                    environment variables are set (PATH, HOME, LANG…). Destructive commands \
                    (recursive deletes, piping downloads into a shell, force pushes…) wait for \
                    the user's approval.",
                category: Category::System,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                // The per-call timeout is enforced here; the registry's only backs it up.
                timeout: MAX_TIMEOUT + Duration::from_secs(30),
                max_output_chars: settings.max_output_bytes + 1_000,
            },
            danger: DangerContext {
                daemon_pid: std::process::id(),
                hermes_home: settings.hermes_home.clone(),
                unsandboxed: matches!(sandbox, sandbox::Resolved::Host(_)),
            },
            sandbox,
            workspaces: Workspaces::new(&settings.workspace_root).unwrap_or_else(|e| {
                tracing::warn!(root = %settings.workspace_root.display(), "terminal: the workspace root cannot be created: {e}");
                Workspaces::unchecked(&settings.workspace_root)
            }),
            settings,
        }
    }

    /// The directory a call runs in: its workspace's root (`root`, canonical) or a directory
    /// inside it.
    async fn workdir(&self, root: &Path, requested: Option<&str>) -> Result<PathBuf, ToolError> {
        let root = root.to_owned();
        let Some(requested) = requested
            .map(str::trim)
            .filter(|w| !w.is_empty() && *w != ".")
        else {
            return Ok(root);
        };
        let outside = || {
            ToolError::InvalidArguments(format!(
                "workdir `{requested}` is outside the workspace; give a directory relative to the \
                 workspace root"
            ))
        };
        if Path::new(requested).is_absolute() {
            return Err(outside());
        }
        let resolved = tokio::fs::canonicalize(root.join(requested))
            .await
            .map_err(|_| {
                ToolError::InvalidArguments(format!(
                    "workdir `{requested}` does not exist in the workspace"
                ))
            })?;
        if !resolved.starts_with(&root) {
            return Err(outside());
        }
        if !tokio::fs::metadata(&resolved)
            .await
            .is_ok_and(|m| m.is_dir())
        {
            return Err(ToolError::InvalidArguments(format!(
                "workdir `{requested}` is not a directory"
            )));
        }
        Ok(resolved)
    }
}

#[async_trait]
impl Tool for TerminalTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn danger(&self, args: &Value) -> Option<String> {
        dangerous::check(args.get("command")?.as_str()?, &self.danger)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments("`command` is empty".into()));
        }
        let timeout = match args.timeout_secs {
            None => self.settings.default_timeout,
            Some(secs @ 1..=600) => Duration::from_secs(secs),
            Some(other) => {
                return Err(ToolError::InvalidArguments(format!(
                    "timeout_secs must be between 1 and {}, not {other}",
                    MAX_TIMEOUT.as_secs()
                )));
            }
        };
        match &self.sandbox {
            sandbox::Resolved::Ssh(target) => {
                return self.call_over_ssh(target, &args, timeout, ctx).await;
            }
            #[cfg(feature = "docker")]
            sandbox::Resolved::Docker(target) => {
                return self.call_in_docker(target, &args, timeout, ctx).await;
            }
            _ => {}
        }
        let workspace = self.workspaces.open(ctx).await?;
        let workdir = self
            .workdir(workspace.root(), args.workdir.as_deref())
            .await?;
        let env = process::child_env(
            &self.settings.env_allowlist,
            |name| std::env::var_os(name),
            workspace.root(),
            &workdir,
        );
        // Every workspace is out of reach but the call's own.
        let mut fence = self.settings.fence.clone();
        fence.private.push(self.workspaces.root().to_owned());
        fence.writable.push(workspace.root().to_owned());
        let wrapped = match &self.sandbox {
            sandbox::Resolved::Broken(why) => {
                return Err(ToolError::Failed(format!(
                    "the terminal's sandbox does not work here: {why}; the command was not run"
                )));
            }
            sandbox::Resolved::Bwrap(program) => Some(process::Wrapped {
                program: program.clone(),
                args: sandbox::bwrap_args(&fence, &self.settings.sandbox, &workdir),
                limits: sandbox::limits(&self.settings.sandbox),
                shell_after: true,
                hold_stdin: false,
            }),
            _ => None,
        };
        // Bubblewrap hides the private paths itself (and Landlock would forbid its mounts).
        let fence = if wrapped.is_some() {
            FenceSettings::default()
        } else {
            fence
        };
        let fence = tokio::task::spawn_blocking(move || fence::ruleset(&fence))
            .await
            .map_err(|e| ToolError::Failed(format!("the terminal's fence: {e}")))?
            .map_err(|e| {
                ToolError::Failed(format!(
                    "the terminal's fence could not be set up ({e}); the command was not run"
                ))
            })?;
        let cgroup = match cgroup::get() {
            Some(cgroups) => {
                let max = self.settings.sandbox.max_processes;
                let made = tokio::task::spawn_blocking(move || cgroups.group(max))
                    .await
                    .map_err(|e| ToolError::Failed(format!("the terminal's cgroup: {e}")))?;
                Some(made.map_err(|e| {
                    ToolError::Failed(format!(
                        "the command's process limit could not be set up ({e}); the command was \
                         not run"
                    ))
                })?)
            }
            None => None,
        };
        let spec = Spec {
            command: &args.command,
            workdir: &workdir,
            env,
            timeout,
            max_output_bytes: self.settings.max_output_bytes,
            fence,
            sandbox: wrapped,
            cgroup,
        };
        let finished = process::run(spec, &ctx.cancel)
            .await
            .map_err(|e| ToolError::Failed(format!("could not run /bin/sh: {e}")))?;
        if matches!(finished.ending, Ending::Cancelled) {
            return Err(ToolError::Cancelled);
        }
        Ok(report(&finished, timeout))
    }
}

/// The text the model sees: how the command ended, then its output.
fn report(finished: &Finished, timeout: Duration) -> String {
    use std::os::unix::process::ExitStatusExt;
    let status = match finished.ending {
        Ending::Exited(status) => match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit code: {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "exit status unknown".to_owned(),
        },
        Ending::TimedOut | Ending::Cancelled => format!(
            "timed out after {} s; the command and its children were killed",
            timeout.as_secs()
        ),
    };
    let mut text = status;
    if finished.stopped_leftovers {
        text.push_str("\nnote: processes it left running in the background were stopped");
    }
    // A command may print a secret the daemon knows (say, `cat` of a file holding a token).
    let output = crate::logging::scrub(&finished.output);
    if output.trim().is_empty() {
        text.push_str("\n(no output)");
    } else {
        text.push_str(if matches!(finished.ending, Ending::TimedOut) {
            "\noutput so far:\n"
        } else {
            "\n"
        });
        text.push_str(&output);
    }
    text
}

#[cfg(test)]
mod tests;
