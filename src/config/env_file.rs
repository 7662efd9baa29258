//! `$HERMES_HOME/hermes.env`, where `hermes setup` writes the secrets: read by hermes itself, so
//! a daemon or command started in a shell sees what systemd's `EnvironmentFile=` would give it.
//! The process environment wins over the file; the file never enters the live environment
//! block (nor the children's), only the configuration's copy.

use std::collections::HashMap;
use std::path::Path;

/// `value` as an environment file's value that a shell (`set -a; . hermes.env`), systemd and
/// [`parse`] read back the same: bare when it is plain, else single-quoted.
pub fn quote(value: &str) -> String {
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.:/@+=,".contains(c));
    if plain && !value.is_empty() {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

/// The `NAME=value` pairs of an environment file as a shell's `set -a; . file` reads the ones
/// hermes writes ([`quote`]): blank lines and `#` comments skipped, an
/// optional `export `, the value unquoted (single quotes literal, `'\''` for a quote, double
/// quotes and backslashes as in a shell). Lines that are not an assignment to a valid name are
/// skipped.
pub(super) fn parse(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (name, value) = l.split_once('=')?;
            let name = name.trim();
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return None;
            }
            Some((name.to_owned(), unquote(value.trim())))
        })
        .collect()
}

/// A shell word's value: quotes removed, escapes applied; it ends at unquoted whitespace.
fn unquote(word: &str) -> String {
    let mut out = String::new();
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => out.extend(chars.by_ref().take_while(|c| *c != '\'')),
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => out.push(e),
                            Some(e) => {
                                out.push('\\');
                                out.push(e);
                            }
                            None => out.push('\\'),
                        },
                        c => out.push(c),
                    }
                }
            }
            '\\' => out.extend(chars.next()),
            c if c.is_whitespace() => break,
            c => out.push(c),
        }
    }
    out
}

/// Add the file's `pairs` to the process's `env` where the process has no value: one set and
/// not blank wins (blank counts as unset, as for every variable hermes reads).
pub(super) fn fill(env: &mut HashMap<String, String>, pairs: Vec<(String, String)>) {
    for (name, value) in pairs {
        if env.get(&name).is_none_or(|v| v.trim().is_empty()) {
            env.insert(name, value);
        }
    }
}

/// The pairs of `home`'s `hermes.env`; none when it is missing or unreadable.
pub(super) fn read(home: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(home.join("hermes.env"))
        .map(|text| parse(&text))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_are_read_and_everything_else_skipped() {
        let pairs = parse(
            "# secrets\n\nTELEGRAM_BOT_TOKEN=123:abc\nexport OPENAI_API_KEY=\"sk-1 2\"\n\
             MATRIX_PASSWORD='p=w'\n  EMPTY=\nnot an assignment\n1BAD=x\nBAD-NAME=y\n\
             KEY='it'\\''s'\nESC=a\\ b\"c\" \n",
        );
        assert_eq!(
            pairs,
            [
                ("TELEGRAM_BOT_TOKEN".to_owned(), "123:abc".to_owned()),
                ("OPENAI_API_KEY".to_owned(), "sk-1 2".to_owned()),
                ("MATRIX_PASSWORD".to_owned(), "p=w".to_owned()),
                ("EMPTY".to_owned(), String::new()),
                ("KEY".to_owned(), "it's".to_owned()),
                ("ESC".to_owned(), "a bc".to_owned()),
            ]
        );
    }

    #[test]
    fn what_hermes_writes_reads_back_the_same() {
        for value in ["plain", "it's", "a b", "x\"y", "$HOME", "back\\slash", ""] {
            let line = format!("K={}", quote(value));
            assert_eq!(parse(&line), [("K".to_owned(), value.to_owned())], "{line}");
        }
    }

    #[test]
    fn the_process_wins_and_the_file_fills_what_it_lacks() {
        let mut env: HashMap<String, String> = [("A", "process"), ("B", " ")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        fill(&mut env, parse("A=file\nB=file\nC=file\n"));
        assert_eq!(env["A"], "process");
        assert_eq!(env["B"], "file");
        assert_eq!(env["C"], "file");
    }

    #[test]
    fn a_missing_file_gives_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_empty());
        std::fs::write(dir.path().join("hermes.env"), "A=1\n").unwrap();
        assert_eq!(read(dir.path()), [("A".to_owned(), "1".to_owned())]);
    }
}
