//! What a command line would run: the simple commands of [`lex`](super::lex) with the wrappers
//! that run their arguments as a command peeled off (`sudo`, `env`, `timeout`, `xargs`,
//! `nohup`…), and the scripts handed to a shell (`bash -c '…'`, `sh <<EOF`, `echo '…' | sh`,
//! `eval`, `su -c`, `ssh host '…'`, `watch`, `find -exec`, `$(…)`) expanded into commands of their
//! own, up to a nesting limit.

use super::lex::{self, SimpleCommand};

/// The commands found, in order.
#[derive(Debug, Default)]
pub(super) struct Commands {
    pub list: Vec<Cmd>,
    /// Scripts were nested deeper than [`MAX_DEPTH`]; the innermost were not looked at.
    pub too_deep: bool,
}

/// Everything `text` would run.
pub(super) fn commands(text: &str) -> Commands {
    let mut expander = Expander::default();
    expander.text(text, 0);
    Commands {
        list: expander.commands,
        too_deep: expander.too_deep,
    }
}

#[derive(Debug, Default)]
pub(super) struct Cmd {
    /// Program name without its directory.
    pub name: String,
    /// The program word as written (directory, expansions and all).
    pub program: String,
    pub args: Vec<String>,
    pub redirects: Vec<String>,
    pub substitutions: Vec<String>,
    pub pipeline: usize,
    pub piped_in: bool,
}

impl Cmd {
    pub(super) fn is(&self, names: &[&str]) -> bool {
        names.contains(&self.name.as_str())
    }

    /// Arguments that are not options (everything after `--` counts as an operand).
    pub(super) fn operands(&self) -> impl Iterator<Item = &str> {
        let mut after_dashes = false;
        self.args.iter().map(String::as_str).filter(move |a| {
            if after_dashes {
                return true;
            }
            if *a == "--" {
                after_dashes = true;
                return false;
            }
            !a.starts_with('-') || *a == "-"
        })
    }

    /// A short flag (alone or in a cluster such as `-rf`) or one of the long flags, before `--`.
    pub(super) fn has_flag(&self, short: &[char], long: &[&str]) -> bool {
        for a in self.args.iter().take_while(|a| *a != "--") {
            if let Some(l) = a.strip_prefix("--") {
                if long.iter().any(|f| f.strip_prefix("--") == Some(l)) {
                    return true;
                }
            } else if let Some(cluster) = a.strip_prefix('-')
                && cluster.chars().any(|c| short.contains(&c))
            {
                return true;
            }
        }
        false
    }

    pub(super) fn words(&self) -> impl Iterator<Item = &str> {
        self.args.iter().chain(&self.redirects).map(String::as_str)
    }
}

pub(super) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"];
/// Scripts inside scripts looked at; deeper nesting needs approval.
pub(super) const MAX_DEPTH: usize = 8;

#[derive(Default)]
struct Expander {
    commands: Vec<Cmd>,
    next_pipeline: usize,
    too_deep: bool,
}

impl Expander {
    fn text(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        let simple = lex::split(text);
        let base = self.next_pipeline;
        self.next_pipeline += simple.last().map_or(0, |c| c.pipeline + 1);
        for (i, sc) in simple.iter().enumerate() {
            for sub in &sc.substitutions {
                self.text(sub, depth + 1);
            }
            let feeder = i
                .checked_sub(1)
                .map(|j| &simple[j])
                .filter(|p| sc.piped_in && p.pipeline == sc.pipeline);
            self.command(&sc.words, sc, base + sc.pipeline, feeder, depth);
        }
    }

    fn command(
        &mut self,
        words: &[String],
        sc: &SimpleCommand,
        pipeline: usize,
        feeder: Option<&SimpleCommand>,
        depth: usize,
    ) {
        let words = strip_wrappers(words);
        let name = words.first().map_or("", |w| basename(w)).to_owned();
        let args = words.get(1..).unwrap_or_default().to_vec();
        if SHELLS.contains(&name.as_str()) {
            if let Some(script) = shell_script(&args) {
                self.text(script, depth + 1);
            } else if let Some(stdin) = &sc.stdin_text {
                self.text(stdin, depth + 1);
            } else if let Some(feeder) = feeder
                && matches!(
                    feeder.words.first().map(|w| basename(w)),
                    Some("echo" | "printf")
                )
            {
                self.text(&feeder.words[1..].join(" "), depth + 1);
            }
        }
        match name.as_str() {
            "eval" => self.text(&args.join(" "), depth + 1),
            "su" | "runuser" => {
                if let Some(i) = args.iter().position(|a| a == "-c" || a == "--command") {
                    self.text(args.get(i + 1).map_or("", String::as_str), depth + 1);
                }
            }
            "ssh" => {
                let i = skip_options(
                    &args,
                    &[
                        "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m",
                        "-O", "-o", "-p", "-Q", "-R", "-S", "-W", "-w",
                    ],
                );
                self.text(&args.get(i + 1..).unwrap_or_default().join(" "), depth + 1);
            }
            "watch" => {
                let i = skip_options(&args, &["-n", "--interval", "-d"]);
                self.text(&args[i.min(args.len())..].join(" "), depth + 1);
            }
            "find" => {
                let mut rest = args.as_slice();
                while let Some(i) = rest
                    .iter()
                    .position(|a| a.starts_with("-exec") || a.starts_with("-ok"))
                {
                    let segment = &rest[i + 1..];
                    let end = segment
                        .iter()
                        .position(|a| a == ";" || a == "+")
                        .unwrap_or(segment.len());
                    let pipeline = self.next_pipeline;
                    self.next_pipeline += 1;
                    let empty = SimpleCommand::default();
                    self.command(&segment[..end], &empty, pipeline, None, depth + 1);
                    rest = &segment[end..];
                }
            }
            _ => {}
        }
        self.commands.push(Cmd {
            name,
            program: words.first().cloned().unwrap_or_default(),
            args,
            redirects: sc.redirects.clone(),
            substitutions: sc.substitutions.clone(),
            pipeline,
            piped_in: sc.piped_in,
        });
    }
}

/// Remove variable assignments, shell keywords and commands that run the rest of the line as a
/// command (`sudo -u x`, `env -i A=1`, `timeout 5`, `xargs -0`…).
pub(super) fn strip_wrappers(mut words: &[String]) -> &[String] {
    const KEYWORDS: &[&str] = &[
        "{", "}", "!", "if", "then", "else", "elif", "do", "while", "until",
    ];
    while let Some(first) = words.first() {
        if is_assignment(first) || KEYWORDS.contains(&first.as_str()) {
            words = &words[1..];
            continue;
        }
        let rest = &words[1..];
        let skip = match basename(first) {
            "sudo" => skip_options(
                rest,
                &[
                    "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user",
                    "--group", "--chdir",
                ],
            ),
            "doas" => skip_options(rest, &["-u", "-C"]),
            "env" => {
                let i = skip_options(rest, &["-u", "-C", "-S", "--unset", "--chdir"]);
                i + rest[i.min(rest.len())..]
                    .iter()
                    .take_while(|w| is_assignment(w))
                    .count()
            }
            "nice" => skip_options(rest, &["-n", "--adjustment"]),
            "ionice" => skip_options(
                rest,
                &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"],
            ),
            "timeout" => skip_options(rest, &["-s", "-k", "--signal", "--kill-after"]) + 1,
            "stdbuf" => skip_options(rest, &["-i", "-o", "-e"]),
            "xargs" => skip_options(rest, &["-n", "-L", "-P", "-s", "-d", "-E", "-I", "-a"]),
            "exec" => skip_options(rest, &["-a"]),
            "nohup" | "command" | "builtin" | "setsid" | "time" | "busybox" | "unbuffer" => {
                skip_options(rest, &[])
            }
            _ => return words,
        };
        words = &rest[skip.min(rest.len())..];
    }
    words
}

/// Index of the first operand after options (`with_value` options take the next word).
pub(super) fn skip_options(args: &[String], with_value: &[&str]) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            return i + 1;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        i += if with_value.contains(&a.as_str()) {
            2
        } else {
            1
        };
    }
    i
}

/// The script of `sh -c SCRIPT` (also `bash -lc`, `bash -o pipefail -c`).
fn shell_script(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-o" || a == "+o" || a == "-O" || a == "+O" {
            i += 2;
            continue;
        }
        if a == "--" || !(a.starts_with('-') || a.starts_with('+')) {
            return None;
        }
        if !a.starts_with("--") && a.contains('c') {
            return args.get(i + 1).map(String::as_str);
        }
        i += 1;
    }
    None
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

pub(super) fn basename(word: &str) -> &str {
    let trimmed = word.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}
