//! Which shell commands need the user's approval before they run, and why.
//!
//! The command line is turned into the commands it would run by [`commands`](super::commands)
//! (wrappers such as `sudo` or `xargs` peeled off, scripts given to `bash -c`, `sh <<EOF`, `eval`
//! or `$(…)` expanded). Each rule of [`RULES`] then looks at command names and arguments, so
//! spelling (`r''m`, `\rm`, `/bin/rm`), spacing and flag order (`rm -f -r`, `rm -r -f`) do not
//! matter.
//!
//! Arguments of a command that does not execute them are data: `echo rm -rf /` or
//! `git commit -m "rm -rf"` are not flagged. The exceptions are SQL statements and the daemon's
//! own paths, which are looked for in the whole text because they are almost always quoted
//! (`psql -c 'DROP TABLE t'`), so `echo 'DROP TABLE'` asks for approval too. The check is a
//! safety net against mistakes, not a sandbox: a determined script (`$X -rf`, a file it wrote
//! first) can always hide what it does.

use std::path::PathBuf;

use super::commands::{self, Cmd, SHELLS, basename, skip_options, strip_wrappers};
use super::lex;

/// What the check knows about the daemon it protects.
#[derive(Debug, Clone)]
pub(crate) struct DangerContext {
    /// The daemon's process id (`kill <pid>` stops it).
    pub daemon_pid: u32,
    /// The daemon's state directory (its `config.toml` and `.env` hold secrets).
    pub hermes_home: Option<PathBuf>,
    /// Commands run on the host, not in a sandbox: the stricter rules of `unsandboxed.rs`
    /// apply too.
    pub unsandboxed: bool,
}

/// A dangerous pattern and the reason shown to the user in the approval request.
struct Rule {
    reason: &'static str,
    matches: fn(&Scan<'_>) -> bool,
}

#[rustfmt::skip]
const RULES: &[Rule] = &[
    Rule { reason: "deletes files recursively (rm -r, find -delete)", matches: recursive_delete },
    Rule { reason: "runs a script downloaded from the internet (curl/wget piped to a shell)", matches: download_to_shell },
    Rule { reason: "creates a filesystem or wipes a disk (mkfs, wipefs)", matches: make_filesystem },
    Rule { reason: "writes directly to a disk device (dd of=/dev/…, > /dev/sd…)", matches: block_device },
    Rule { reason: "deletes or empties database tables (DROP TABLE, DROP DATABASE, TRUNCATE)", matches: sql_drop },
    Rule { reason: "shuts down or reboots the machine", matches: power },
    Rule { reason: "a fork bomb: spawns processes until the machine stops responding", matches: fork_bomb },
    Rule { reason: "changes permissions or owners of a whole tree (chmod -R 777, chown -R)", matches: recursive_permissions },
    Rule { reason: "stops the hermes daemon itself (kill, pkill, killall)", matches: kill_daemon },
    Rule { reason: "stops, restarts or disables the hermes service", matches: daemon_service },
    Rule { reason: "reads or changes hermes' configuration, service unit or a .env file (they hold API keys and tokens)", matches: daemon_config },
    Rule { reason: "force-pushes with git, which can overwrite commits on the remote", matches: force_push },
    Rule { reason: "nests shells too deeply to be checked", matches: |scan| scan.too_deep },
];

/// Why `command` needs approval (every reason that applies, joined), or `None`.
pub(crate) fn check(command: &str, ctx: &DangerContext) -> Option<String> {
    let found = commands::commands(command);
    let scan = Scan {
        text: command,
        commands: found.list,
        too_deep: found.too_deep,
        ctx,
    };
    let mut reasons: Vec<&str> = RULES
        .iter()
        .filter(|rule| (rule.matches)(&scan))
        .map(|rule| rule.reason)
        .collect();
    if ctx.unsandboxed {
        reasons.extend(
            unsandboxed::RULES
                .iter()
                .filter(|(_, matches)| matches(&scan))
                .map(|(reason, _)| *reason),
        );
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// The command line as the rules see it.
struct Scan<'a> {
    text: &'a str,
    commands: Vec<Cmd>,
    /// Scripts were nested too deeply to be looked at.
    too_deep: bool,
    ctx: &'a DangerContext,
}

impl Scan<'_> {
    fn any(&self, f: impl Fn(&Cmd) -> bool) -> bool {
        self.commands.iter().any(f)
    }
}

mod unsandboxed;

/// One command after its wrappers were removed.
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch", "aria2c", "http", "https", "xh"];

fn recursive_delete(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        (c.is(&["rm"]) && c.has_flag(&['r', 'R'], &["--recursive"]))
            || (c.is(&["find"]) && c.args.iter().any(|a| a == "-delete"))
            || (c.is(&["rsync"]) && c.args.iter().any(|a| a.starts_with("--delete")))
            || (c.is(&["git"])
                && c.args.iter().any(|a| a == "clean")
                && c.has_flag(&['f'], &["--force"]))
    })
}

fn download_to_shell(scan: &Scan<'_>) -> bool {
    let runs_script = |c: &Cmd| {
        SHELLS.contains(&c.name.as_str())
            || c.name.starts_with("python")
            || c.is(&["perl", "ruby", "node", "php", "source", ".", "eval"])
    };
    let downloads = |text: &str| {
        lex::split(text).iter().any(|sc| {
            let words = strip_wrappers(&sc.words);
            words
                .first()
                .is_some_and(|w| DOWNLOADERS.contains(&basename(w)))
        })
    };
    scan.commands.iter().enumerate().any(|(i, c)| {
        runs_script(c)
            && ((c.piped_in
                && reads_script_from_stdin(c)
                && scan.commands[..i]
                    .iter()
                    .any(|d| d.pipeline == c.pipeline && d.is(DOWNLOADERS)))
                || c.substitutions.iter().any(|s| downloads(s)))
    })
}

/// `sh`, `bash -s`, `python3 -`: no script file or `-c`/`-e` script on the command line.
fn reads_script_from_stdin(c: &Cmd) -> bool {
    let shell = SHELLS.contains(&c.name.as_str());
    for a in &c.args {
        if a == "--" || a == "-" {
            return true;
        }
        if !a.starts_with('-') {
            return false;
        }
        let inline_script = if shell {
            !a.starts_with("--") && a.contains('c')
        } else {
            matches!(a.as_str(), "-c" | "-e" | "-E" | "-m" | "-p" | "-r")
        };
        if inline_script {
            return false;
        }
    }
    true
}

fn make_filesystem(scan: &Scan<'_>) -> bool {
    scan.any(|c| c.name.starts_with("mkfs") || c.is(&["mke2fs", "mkswap", "wipefs"]))
}

/// A path under `/dev` that is a disk or another device worth protecting (not `/dev/null`,
/// `/dev/stdout`, a terminal or bash's `/dev/tcp`).
fn is_device(path: &str) -> bool {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    match parts.as_slice() {
        ["dev", rest @ ..] if !rest.is_empty() => !matches!(
            rest[0],
            "null"
                | "zero"
                | "full"
                | "random"
                | "urandom"
                | "stdin"
                | "stdout"
                | "stderr"
                | "tty"
                | "ptmx"
                | "fd"
                | "pts"
                | "shm"
                | "mqueue"
                | "tcp"
                | "udp"
        ),
        _ => false,
    }
}

fn block_device(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        c.redirects.iter().any(|r| is_device(r))
            || (c.is(&["dd"])
                && c.args
                    .iter()
                    .any(|a| a.strip_prefix("of=").is_some_and(is_device)))
            || (c.is(&["tee", "cp", "shred", "blkdiscard"]) && c.operands().any(is_device))
    })
}

fn sql_drop(scan: &Scan<'_>) -> bool {
    const CLIENTS: &[&str] = &[
        "psql",
        "mysql",
        "mariadb",
        "sqlite3",
        "sqlite",
        "duckdb",
        "sqlcmd",
        "usql",
        "clickhouse-client",
    ];
    // Quotes go first, as the shell removes them: `"DROP TAB""LE"` is `DROP TABLE`.
    let unquoted: String = scan
        .text
        .chars()
        .filter(|c| !matches!(c, '"' | '\''))
        .collect();
    let tokens: Vec<String> = unquoted
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    // `TRUNCATE name` is also English and the `truncate -s 0 file` command: without `TABLE`
    // it counts only when a database client runs.
    let sql_client = scan.any(|c| c.is(CLIENTS));
    tokens
        .windows(2)
        .any(|pair| match (pair[0].as_str(), pair[1].as_str()) {
            ("DROP", "TABLE" | "DATABASE" | "SCHEMA") | ("TRUNCATE", "TABLE") => true,
            ("TRUNCATE", next) => sql_client && !next.starts_with('-'),
            _ => false,
        })
}

fn power(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        let first = c.operands().next().unwrap_or("");
        c.is(&["shutdown", "reboot", "halt", "poweroff"])
            || (c.is(&["init", "telinit"]) && matches!(first, "0" | "6"))
            || (c.is(&["systemctl"])
                && matches!(
                    first,
                    "poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot"
                ))
    })
}

fn fork_bomb(scan: &Scan<'_>) -> bool {
    let compact: String = scan.text.chars().filter(|c| !c.is_whitespace()).collect();
    compact.match_indices("(){").any(|(at, _)| {
        let before = &compact[..at];
        let name_start = before
            .rfind(|c: char| "(){};|&<>'\"`$\n".contains(c))
            .map_or(0, |i| i + 1);
        let name = &before[name_start..];
        !name.is_empty() && compact[at + 3..].starts_with(&format!("{name}|{name}"))
    })
}

fn recursive_permissions(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        if !c.has_flag(&['R'], &["--recursive"]) {
            return false;
        }
        if c.is(&["chown", "chgrp"]) {
            return true;
        }
        let mut operands = c.operands();
        c.is(&["chmod"])
            && (operands.next().is_some_and(world_writable) || operands.any(is_top_level))
    })
}

/// `777`, `0666`, `o+w`, `a=rwx`: gives everyone write access.
fn world_writable(mode: &str) -> bool {
    if mode.bytes().all(|b| b.is_ascii_digit()) {
        return mode.bytes().last().is_some_and(|b| (b - b'0') & 2 != 0);
    }
    mode.split(',').any(|clause| {
        clause.find(['+', '=']).is_some_and(|op| {
            let who = &clause[..op];
            (who.contains('o') || who.contains('a')) && clause[op..].contains('w')
        })
    })
}

/// `/`, `/*`, `/etc`, `~`, `$HOME`: the root or a whole top-level tree.
fn is_top_level(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    trimmed.is_empty()
        || path == "/*"
        || (trimmed.starts_with('/') && !trimmed[1..].contains('/'))
        || matches!(trimmed, "~" | "$HOME" | "${HOME}")
}

fn kill_daemon(scan: &Scan<'_>) -> bool {
    let pid = scan.ctx.daemon_pid.to_string();
    let group = format!("-{pid}");
    let names_us = |a: &str| a.to_ascii_lowercase().contains("hermes");
    scan.any(|c| {
        if c.is(&["killall5"]) {
            return true;
        }
        if c.is(&["pkill", "killall", "skill"]) {
            return c.operands().any(names_us);
        }
        if !c.is(&["kill"]) {
            return false;
        }
        // The first argument may be a signal (`-9`, `-KILL`, `-s KILL`); everything after it,
        // or after `--`, is a target, including `-1` (every process we may signal).
        let first_is_signal = c
            .args
            .first()
            .is_some_and(|a| a.starts_with('-') && a != "--");
        let skip = match c.args.first().map(String::as_str) {
            Some("-s" | "-n") => 2,
            _ => usize::from(first_is_signal),
        };
        c.args
            .iter()
            .skip(skip)
            .filter(|a| *a != "--")
            .any(|a| a == &pid || a == &group || a == "-1" || names_us(a) || a.contains("PPID"))
    })
}

/// What `systemctl` / `service` do that stops a service.
const STOP_VERBS: &[&str] = &[
    "stop",
    "disable",
    "mask",
    "kill",
    "restart",
    "try-restart",
    "reload-or-restart",
    "try-reload-or-restart",
    "isolate",
];

fn daemon_service(scan: &Scan<'_>) -> bool {
    const VERBS: &[&str] = STOP_VERBS;
    let names_us = |a: &str| a.contains("hermes");
    scan.any(|c| {
        let mut operands = c.operands();
        match c.name.as_str() {
            "systemctl" => {
                operands.next().is_some_and(|verb| VERBS.contains(&verb)) && operands.any(names_us)
            }
            "service" => {
                operands.next().is_some_and(names_us)
                    && operands.next().is_some_and(|verb| VERBS.contains(&verb))
            }
            _ => false,
        }
    })
}

fn daemon_config(scan: &Scan<'_>) -> bool {
    let home = scan
        .ctx
        .hermes_home
        .as_deref()
        .and_then(|h| h.to_str())
        .filter(|h| h.len() > 1);
    let in_home = |w: &str| {
        w.contains(".hermes") || w.contains("HERMES_HOME") || home.is_some_and(|h| w.contains(h))
    };
    let words = || scan.commands.iter().flat_map(Cmd::words);
    let mentions_home = words().any(in_home);
    words().any(|w| {
        let base = basename(w);
        w.contains("hermes.service")
            || w.contains("/etc/hermes")
            || base == ".env"
            || (base.starts_with(".env.")
                && !base.ends_with(".example")
                && !base.ends_with(".sample"))
            || (base == "config.toml" && mentions_home)
    })
}

fn force_push(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        if !c.is(&["git"]) {
            return false;
        }
        let i = skip_options(
            &c.args,
            &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
        );
        if c.args.get(i).map(String::as_str) != Some("push") {
            return false;
        }
        let push = Cmd {
            args: c.args[i + 1..].to_vec(),
            ..Cmd::default()
        };
        push.has_flag(&['f'], &["--force", "--mirror"])
            || push
                .args
                .iter()
                .any(|a| a.starts_with("--force-with-lease"))
            || push.operands().any(|a| a.starts_with('+'))
    })
}

#[cfg(test)]
mod tests;
