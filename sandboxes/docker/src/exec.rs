//! `exec`: one command in a session's container, bounded in time and output, and the kill of
//! everything it left behind.
//!
//! A call runs `/bin/sh -c <command>` with exactly the given environment (the image's variables,
//! `HOME` and `HOSTNAME` are unset unless the call sets them), stdin closed, and stderr joined
//! to stdout so their order is kept; the output is capped. The call ends when the command exits,
//! at the timeout, or when the token is cancelled; a background child holding the output open
//! does not keep it waiting, because dockerd is polled for the command's own exit.
//!
//! The command runs under a wrapper shell that, when the command exits, runs `kill -KILL -1`. The
//! kernel delivers that to every process of the container except the caller and PID 1 (a reaping
//! shell loop, see `spec`), in one pass that a concurrent fork cannot slip past. The wrapper then
//! reports on its own stderr how many processes it saw, and exits with the command's status.
//! When that report is missing (timeout, cancel, or the command killed its wrapper), a second exec
//! runs the same kill; if even that cannot start (a fork bomb holds every pid), the container is
//! restarted, which ends all its processes.

use std::pin::Pin;
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::exec::{StartExecOptions, StartExecResults};
use bollard::models::{ContainerStateStatusEnum, ExecConfig};
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::leftovers::{BASELINE_PROCESSES, CleanupGuard, KILL_SCRIPT, kill_leftovers};
use crate::output::CappedOutput;
use crate::{Docker, DockerError};

/// When dockerd is first asked whether the command itself has exited while its output stays
/// open; the interval doubles from there up to [`EXIT_POLL_MAX`].
const EXIT_POLL: Duration = Duration::from_millis(100);
/// The longest interval between two such questions.
const EXIT_POLL_MAX: Duration = Duration::from_secs(1);
/// Variables Docker adds to every exec besides the image's.
const DOCKER_ADDED: [&str; 2] = ["HOME", "HOSTNAME"];

/// One command to run with [`Docker::exec`].
#[derive(Debug, Clone)]
pub struct ExecCall<'a> {
    /// Run as `/bin/sh -c command`.
    pub command: &'a str,
    /// The working directory inside the container, normally under the workspace mount.
    pub workdir: &'a str,
    /// The command's whole environment: nothing else is inherited.
    pub env: Vec<(String, String)>,
    /// When to stop waiting and kill the command.
    pub timeout: Duration,
    /// Output beyond this is cut from the middle; the head and the tail are kept.
    pub max_output_bytes: usize,
}

/// How a command ended and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutcome {
    /// The exit code, if the command exited by itself (none on timeout or cancel).
    pub exit_code: Option<i64>,
    /// stdout and stderr interleaved as they arrived, capped.
    pub output: String,
    /// The timeout was reached and the command was killed.
    pub timed_out: bool,
    /// The cancellation token fired and the command was killed.
    pub cancelled: bool,
    /// Processes were still alive after the command ended (or it was killed) and were killed.
    pub stopped_leftovers: bool,
}

/// Why the wait for a command ended.
enum Ending {
    Exited(Option<i64>),
    TimedOut,
    Cancelled,
}

type OutputStream = Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

impl Docker {
    /// Runs `call.command` in the running container `id` and then kills whatever it left
    /// running there. Calls for one container run one at a time.
    pub async fn exec(
        &self,
        id: &str,
        call: ExecCall<'_>,
        cancel: &CancellationToken,
    ) -> Result<ExecOutcome, DockerError> {
        for (name, _) in &call.env {
            if !is_variable_name(name) {
                return Err(DockerError::Invalid {
                    what: "environment variable",
                    reason: format!("{name:?} is not a valid variable name"),
                });
            }
        }
        let lock = self.lock_for(id);
        let _held = lock.lock().await;

        let found = self
            .inspect(id)
            .await?
            .ok_or_else(|| DockerError::NoSuchContainer {
                container: id.to_owned(),
            })?;
        let status = found.state.as_ref().and_then(|s| s.status);
        if status != Some(ContainerStateStatusEnum::RUNNING) {
            return Err(DockerError::NotRunning {
                container: id.to_owned(),
                state: status.map(|s| s.to_string()).unwrap_or_default(),
            });
        }
        let image_env = found.config.and_then(|c| c.env).unwrap_or_default();
        let cmd = command_line(call.command, &image_env, &call.env);

        // From here on the container must be cleaned whatever happens, even if this future is
        // dropped half-way: the guard does it in a task then.
        let guard = CleanupGuard {
            api: Some(self.api.clone()),
            id: id.to_owned(),
            lock: lock.clone(),
        };
        let mut streams = Streams {
            output: CappedOutput::new(call.max_output_bytes),
            report: Vec::new(),
        };
        let ending = self.run(id, &call, cmd, cancel, &mut streams).await;
        let reported = match ending {
            Ok(Ending::Exited(_)) => streams.counted(),
            _ => None,
        };
        let api = guard.disarm();
        let stopped_leftovers = match reported {
            Some(count) => count > BASELINE_PROCESSES,
            None => kill_leftovers(&api, id).await?,
        };
        let ending = ending?;
        let output = streams.output;
        let outcome = ExecOutcome {
            exit_code: match ending {
                Ending::Exited(code) => code,
                _ => None,
            },
            output: output.finish(),
            timed_out: matches!(ending, Ending::TimedOut),
            cancelled: matches!(ending, Ending::Cancelled),
            stopped_leftovers,
        };
        tracing::debug!(
            container = id,
            exit_code = ?outcome.exit_code,
            timed_out = outcome.timed_out,
            cancelled = outcome.cancelled,
            stopped_leftovers,
            "command ended"
        );
        Ok(outcome)
    }

    /// Starts the command and collects its output until it ends, times out or is cancelled.
    async fn run(
        &self,
        id: &str,
        call: &ExecCall<'_>,
        cmd: Vec<String>,
        cancel: &CancellationToken,
        streams: &mut Streams,
    ) -> Result<Ending, DockerError> {
        let deadline = Instant::now() + call.timeout;
        let config = ExecConfig {
            attach_stdin: Some(false),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            env: Some(call.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            cmd: Some(cmd),
            working_dir: Some(call.workdir.to_owned()),
            ..Default::default()
        };
        let exec_id = self
            .api
            .create_exec(id, config)
            .await
            .map_err(|e| DockerError::api(format!("start a command in {id}"), e))?
            .id;
        let options = StartExecOptions {
            detach: false,
            tty: false,
            output_capacity: Some(64 * 1024),
        };
        let started = self
            .api
            .start_exec(&exec_id, Some(options))
            .await
            .map_err(|e| DockerError::api(format!("start a command in {id}"), e))?;
        let StartExecResults::Attached { output: stream, .. } = started else {
            unreachable!("an exec started without detach is attached");
        };
        self.collect(&exec_id, stream, deadline, cancel, streams)
            .await
    }

    async fn collect(
        &self,
        exec_id: &str,
        mut stream: OutputStream,
        deadline: Instant,
        cancel: &CancellationToken,
        streams: &mut Streams,
    ) -> Result<Ending, DockerError> {
        let mut interval = EXIT_POLL;
        let mut next_poll = Instant::now() + interval;
        // Set once dockerd says the command exited; the output then gets [`EXIT_POLL`] more.
        let mut exited: Option<Option<i64>> = None;
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(Ending::Cancelled),
                () = tokio::time::sleep_until(deadline) => return Ok(Ending::TimedOut),
                item = stream.next() => match item {
                    Some(Ok(chunk)) => streams.push(chunk),
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "command output stream broke off");
                        break;
                    }
                    None => break,
                },
                () = tokio::time::sleep_until(next_poll) => {
                    interval = (interval * 2).min(EXIT_POLL_MAX);
                    next_poll = Instant::now() + interval;
                    if let Some(code) = exited {
                        // Still open after the command exited: a background child holds it.
                        return Ok(Ending::Exited(code));
                    }
                    if let Some(code) = self.exit_status(exec_id).await? {
                        exited = Some(code);
                        next_poll = Instant::now() + EXIT_POLL;
                    }
                }
            }
        }
        if let Some(code) = exited {
            return Ok(Ending::Exited(code));
        }
        // The output closed, so the command has exited; dockerd may take a moment to record it.
        for _ in 0..50 {
            if let Some(code) = self.exit_status(exec_id).await? {
                return Ok(Ending::Exited(code));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(Ending::Exited(None))
    }

    /// `Some(exit code)` once the exec's process has exited, `None` while it runs.
    async fn exit_status(&self, exec_id: &str) -> Result<Option<Option<i64>>, DockerError> {
        let inspected = self
            .api
            .inspect_exec(exec_id)
            .await
            .map_err(|e| DockerError::api("read a command's exit status", e))?;
        Ok((inspected.running == Some(false)).then_some(inspected.exit_code))
    }
}

/// `/bin/sh -c command` with stderr joined to stdout (one pipe keeps their order), under a
/// wrapper that first unsets every variable the container would add that the call did not set
/// (so the command sees exactly the call's environment) and afterwards runs [`KILL_SCRIPT`],
/// whose report on the wrapper's stderr is thus apart from the command's output.
fn command_line(command: &str, image_env: &[String], env: &[(String, String)]) -> Vec<String> {
    let mut unset: Vec<&str> = image_env
        .iter()
        .filter_map(|entry| entry.split('=').next())
        .chain(DOCKER_ADDED)
        .filter(|name| is_variable_name(name) && !env.iter().any(|(k, _)| k == name))
        .collect();
    unset.sort_unstable();
    unset.dedup();
    let unset = if unset.is_empty() {
        String::new()
    } else {
        format!("unset {}; ", unset.join(" "))
    };
    vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("{unset}/bin/sh -c \"$1\" 2>&1; rc=$?; {KILL_SCRIPT}; exit \"$rc\""),
        "sh".into(),
        command.into(),
    ]
}

/// What an exec prints: the command's output, and the wrapper's count of processes.
struct Streams {
    output: CappedOutput,
    report: Vec<u8>,
}

impl Streams {
    fn push(&mut self, chunk: LogOutput) {
        match chunk {
            LogOutput::StdErr { message } => {
                // A few digits are expected; anything long is not a report.
                if self.report.len() < 64 {
                    self.report.extend_from_slice(&message);
                }
            }
            other => self.output.push(&other.into_bytes()),
        }
    }

    /// The wrapper's count, if it printed exactly one number.
    fn counted(&self) -> Option<usize> {
        String::from_utf8_lossy(&self.report).trim().parse().ok()
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherited_variables_are_unset_unless_the_call_sets_them() {
        let image_env = ["PATH=/bin".to_owned(), "LANG=C.UTF-8".to_owned()];
        let env = [("PATH".to_owned(), "/usr/bin".to_owned())];
        let cmd = command_line("echo hi", &image_env, &env);
        assert!(
            cmd[2].starts_with("unset HOME HOSTNAME LANG; /bin/sh -c \"$1\" 2>&1; "),
            "{}",
            cmd[2]
        );
        assert_eq!(cmd[4], "echo hi");
    }

    #[test]
    fn variable_names_are_checked() {
        assert!(is_variable_name("_A1"));
        assert!(!is_variable_name("1A"));
        assert!(!is_variable_name("A=B"));
        assert!(!is_variable_name(""));
    }
}
