//! The stricter rules for commands that run on the host (`tools.sandbox.backend = "none"`, or
//! `auto` without bubblewrap): there the check is the only thing between a command and the
//! machine, so whatever it cannot see through needs approval too. Each rule closes a way around
//! the ordinary rules (the bypass table of the security review): a command name that is
//! computed, inline interpreter code, a download run in two steps, a recursive function,
//! signals by name or by a computed pid, service control, hermes' files and other processes'
//! `/proc` entries, and `dd` to a computed path.

use super::{DOWNLOADERS, Scan};
use crate::tools::terminal::commands::{Cmd, SHELLS};

/// A rule for the host only: the reason shown, and its test.
type Strict = (&'static str, fn(&Scan<'_>) -> bool);

#[rustfmt::skip]
pub(super) const RULES: &[Strict] = &[
    ("the program it runs is computed (a variable, substitution, glob or brace expansion), so what it does cannot be checked", computed_name),
    ("runs inline interpreter code (python -c, perl -e…), which cannot be checked", inline_code),
    ("downloads something and runs a shell or interpreter in the same command line", download_and_run),
    ("defines a function that calls itself (the shape of a fork bomb)", recursive_function),
    ("signals processes by name or by a computed pid (it could be hermes)", kill_by_name),
    ("stops, restarts or disables a system service", service_control),
    ("touches hermes' files or another process's /proc entries (they hold its keys and tokens)", secrets),
    ("writes with dd to a computed path (it could be a disk)", computed_output),
];

const INTERPRETERS: &[&str] = &[
    "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "Rscript", "awk", "gawk",
];

fn computed(word: &str) -> bool {
    word.contains(['$', '`', '*', '?', '[', '{', '\\'])
}

fn computed_name(scan: &Scan<'_>) -> bool {
    scan.any(|c| computed(&c.program) || c.name.is_empty() && !c.args.is_empty())
}

fn is_interpreter(c: &Cmd) -> bool {
    c.name.starts_with("python") || c.is(INTERPRETERS)
}

fn inline_code(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        is_interpreter(c)
            && c.args.iter().any(|a| {
                matches!(a.as_str(), "-c" | "-e" | "-E" | "-r" | "--eval" | "-p")
                    || (c.is(&["awk", "gawk"]) && a.contains("system"))
            })
    })
}

fn download_and_run(scan: &Scan<'_>) -> bool {
    scan.any(|c| c.is(DOWNLOADERS))
        && scan.any(|c| {
            SHELLS.contains(&c.name.as_str())
                || is_interpreter(c)
                || c.is(&["source", ".", "eval", "exec"])
                || c.name.starts_with("./")
                || c.name.starts_with('/')
        })
}

fn recursive_function(scan: &Scan<'_>) -> bool {
    let text = scan.text;
    let mut rest = text;
    while let Some(at) = rest.find("()") {
        let before = rest[..at].trim_end();
        let name: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let body = &rest[at + 2..];
        if !name.is_empty() && body.contains(name.as_str()) {
            return true;
        }
        rest = body;
    }
    false
}

fn kill_by_name(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        c.is(&["pkill", "killall", "skill", "killall5"])
            || (c.is(&["kill"]) && c.args.iter().any(|a| computed(a)))
    })
}

fn service_control(scan: &Scan<'_>) -> bool {
    const VERBS: &[&str] = super::STOP_VERBS;
    scan.any(|c| {
        (c.is(&["systemctl", "service"]) && c.args.iter().any(|a| VERBS.contains(&a.as_str())))
            || c.is(&["initctl", "rc-service", "sv"])
    })
}

fn secrets(scan: &Scan<'_>) -> bool {
    let lower = scan.text.to_ascii_lowercase();
    if lower.contains("herm") {
        return true;
    }
    lower.match_indices("/proc/").any(|(at, _)| {
        let after = &lower[at + 6..];
        after.starts_with(|c: char| c.is_ascii_digit() || c == '$' || c == '`' || c == '*')
            || after.starts_with("self/")
            || after.starts_with("thread-self/")
    }) || lower.contains("environ")
}

fn computed_output(scan: &Scan<'_>) -> bool {
    scan.any(|c| {
        c.is(&["dd"])
            && c.args
                .iter()
                .any(|a| a.strip_prefix("of=").is_some_and(computed))
    }) || scan.text.contains("of=$(")
        || scan.text.contains("of=`")
}
