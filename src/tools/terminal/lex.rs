//! A small POSIX-shell lexer for the danger check: splits a command line into simple commands
//! with their words unquoted, the targets of their output redirections, the text of their command
//! substitutions and here-documents, and which ones read a pipe.
//!
//! It is not a shell: it expands nothing and does not know about functions or aliases. It only
//! has to see through the ways a command can be written (`r''m`, `"rm"`, `\rm`, `rm  -r  -f`,
//! `a;rm -rf b`) so that the rules in `dangerous.rs` look at words, not at spelling. Where it is
//! unsure it errs towards showing more text to the rules: an unterminated quote swallows the rest
//! of the line into one word, and every substitution is also analysed as a command of its own.

/// One simple command as the shell would run it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SimpleCommand {
    /// Words with quotes and escapes removed; substitutions appear in their raw `$(…)` form.
    pub words: Vec<String>,
    /// Targets of `>`, `>>`, `>|`, `&>`, `<>`.
    pub redirects: Vec<String>,
    /// Inner text of `$(…)`, `` `…` ``, `<(…)` and `>(…)`: commands that run too.
    pub substitutions: Vec<String>,
    /// Text fed to the command's standard input by a here-document or here-string.
    pub stdin_text: Option<String>,
    /// Commands joined by `|` share a pipeline number.
    pub pipeline: usize,
    /// Standard input comes from the previous command of the pipeline.
    pub piped_in: bool,
}

/// Split `text` into simple commands.
pub(super) fn split(text: &str) -> Vec<SimpleCommand> {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        ..Lexer::default()
    };
    lexer.run();
    lexer.out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    Output,
    Input,
    HereDoc { strip_tabs: bool },
    HereString,
}

#[derive(Default)]
struct Lexer {
    chars: Vec<char>,
    pos: usize,
    out: Vec<SimpleCommand>,
    cur: SimpleCommand,
    /// The word being built; `None` between words (an empty quoted word is `Some("")`).
    word: Option<String>,
    /// The next finished word is the target of this redirection.
    redirect: Option<Redirect>,
    /// Here-documents whose bodies start at the next newline: (delimiter, strip tabs, command).
    heredocs: Vec<(String, bool, usize)>,
    pipeline: usize,
}

impl Lexer {
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn run(&mut self) {
        while let Some(c) = self.peek_at(0) {
            let next = self.peek_at(1);
            match c {
                ' ' | '\t' | '\r' => self.skip(1),
                '\n' => {
                    self.end_command(false);
                    self.skip(1);
                    self.read_heredoc_bodies();
                }
                ';' => {
                    self.end_command(false);
                    self.skip(if next == Some(';') { 2 } else { 1 });
                }
                '&' if next == Some('&') => {
                    self.end_command(false);
                    self.skip(2);
                }
                '&' if next == Some('>') => self.redirection(),
                '&' => {
                    self.end_command(false);
                    self.skip(1);
                }
                '|' if next == Some('|') => {
                    self.end_command(false);
                    self.skip(2);
                }
                '|' => {
                    self.end_command(true);
                    self.skip(if next == Some('&') { 2 } else { 1 });
                }
                '<' | '>' if next == Some('(') => {
                    self.skip(1);
                    self.substitution('(', ')', if c == '<' { "<(" } else { ">(" });
                }
                '<' | '>' => self.redirection(),
                '(' | ')' => {
                    self.end_command(false);
                    self.skip(1);
                }
                '#' if self.word.is_none() => {
                    while self.peek_at(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => self.word_part(),
            }
        }
        self.end_command(false);
    }

    fn skip(&mut self, n: usize) {
        self.end_word();
        self.pos += n;
    }

    /// Read one piece of a word (plain characters, a quoted string, an escape, a substitution).
    fn word_part(&mut self) {
        let c = self.chars[self.pos];
        self.pos += 1;
        match c {
            '\'' => {
                let text = self.take_until(|c| c == '\'');
                self.push_str(&text);
                self.pos += 1;
            }
            '"' => self.double_quoted(),
            '\\' => match self.peek_at(0) {
                Some('\n') => self.pos += 1,
                Some(escaped) => {
                    self.push_char(escaped);
                    self.pos += 1;
                }
                None => self.push_char('\\'),
            },
            '`' => self.substitution('`', '`', "`"),
            '$' if self.peek_at(0) == Some('(') => self.substitution('(', ')', "$("),
            other => self.push_char(other),
        }
    }

    fn double_quoted(&mut self) {
        self.push_str("");
        while let Some(c) = self.peek_at(0) {
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' if matches!(self.peek_at(1), Some('"' | '\\' | '$' | '`')) => {
                    self.push_char(self.chars[self.pos + 1]);
                    self.pos += 2;
                }
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '`' => {
                    self.pos += 1;
                    self.substitution('`', '`', "`");
                }
                '$' if self.peek_at(1) == Some('(') => {
                    self.pos += 1;
                    self.substitution('(', ')', "$(");
                }
                _ => {
                    self.push_char(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// At an opening `open` (or just after a backtick): capture up to the balancing `close`,
    /// record it as a substitution and keep its raw text in the current word.
    fn substitution(&mut self, open: char, close: char, prefix: &str) {
        if open != close {
            self.pos += 1;
        }
        let start = self.pos;
        let mut depth = 1;
        while let Some(c) = self.peek_at(0) {
            match c {
                '\\' => self.pos += 1,
                '\'' if open != close => {
                    self.pos += 1;
                    self.take_until(|c| c == '\'');
                }
                c if c == close && open != close && depth > 1 => depth -= 1,
                c if c == close => break,
                c if c == open => depth += 1,
                _ => {}
            }
            self.pos += 1;
        }
        let end = self.pos.min(self.chars.len());
        let inner: String = self.chars[start..end].iter().collect();
        self.pos = (end + 1).min(self.chars.len());
        let suffix = if open == close { "`" } else { ")" };
        self.push_str(&format!("{prefix}{inner}{suffix}"));
        self.cur.substitutions.push(inner);
    }

    /// At `<`, `>` or `&>`: an optional file-descriptor number is dropped and the operator read;
    /// the next word is its target.
    fn redirection(&mut self) {
        if self
            .word
            .as_deref()
            .is_some_and(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
        {
            self.word = None;
        }
        self.end_word();
        let op: String = self.chars[self.pos..].iter().take(3).collect();
        let (kind, len) = if op.starts_with("<<<") {
            (Redirect::HereString, 3)
        } else if op.starts_with("<<-") {
            (Redirect::HereDoc { strip_tabs: true }, 3)
        } else if op.starts_with("<<") {
            (Redirect::HereDoc { strip_tabs: false }, 2)
        } else if op.starts_with("<>") || op.starts_with("&>>") {
            (Redirect::Output, if op.starts_with("&") { 3 } else { 2 })
        } else if op.starts_with('<') {
            (Redirect::Input, if op.starts_with("<&") { 2 } else { 1 })
        } else if [">>", ">|", ">&", "&>"]
            .iter()
            .any(|two| op.starts_with(two))
        {
            (Redirect::Output, 2)
        } else {
            (Redirect::Output, 1)
        };
        self.pos += len;
        self.redirect = Some(kind);
    }

    fn take_until(&mut self, stop: impl Fn(char) -> bool) -> String {
        let start = self.pos;
        while self.peek_at(0).is_some_and(|c| !stop(c)) {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn push_char(&mut self, c: char) {
        self.word.get_or_insert_with(String::new).push(c);
    }

    fn push_str(&mut self, s: &str) {
        self.word.get_or_insert_with(String::new).push_str(s);
    }

    fn end_word(&mut self) {
        let Some(word) = self.word.take() else {
            return;
        };
        match self.redirect.take() {
            None => self.cur.words.push(word),
            Some(Redirect::Output) => self.cur.redirects.push(word),
            Some(Redirect::Input) => {}
            Some(Redirect::HereString) => self.cur.stdin_text = Some(word),
            Some(Redirect::HereDoc { strip_tabs }) => {
                let command = self.out.len();
                self.heredocs.push((word, strip_tabs, command));
            }
        }
    }

    fn end_command(&mut self, piped: bool) {
        self.end_word();
        self.redirect = None;
        let cur = std::mem::take(&mut self.cur);
        if !cur.words.is_empty() || !cur.substitutions.is_empty() || !cur.redirects.is_empty() {
            self.out.push(SimpleCommand {
                pipeline: self.pipeline,
                ..cur
            });
        }
        if !piped {
            self.pipeline += 1;
        }
        self.cur.piped_in = piped;
    }

    /// After a newline: the bodies of pending here-documents, each up to its delimiter line.
    fn read_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs, command) in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while self.pos < self.chars.len() {
                let line = self.take_until(|c| c == '\n');
                self.pos += 1;
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if let Some(cmd) = self.out.get_mut(command) {
                cmd.stdin_text = Some(body);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<String>> {
        split(text).into_iter().map(|c| c.words).collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(
            words(r#"r''m -r"f" \x  'a b'"#),
            [["rm", "-rf", "x", "a b"]]
        );
        assert_eq!(words(r#"echo "say \"hi\"""#), [["echo", r#"say "hi""#]]);
        assert_eq!(words("echo ''"), [["echo", ""]]);
    }

    #[test]
    fn separators_split_commands_and_pipes_share_a_pipeline() {
        let cmds = split("a 1; b&&c || d & e | f |& g\nh");
        let names: Vec<_> = cmds.iter().map(|c| c.words[0].as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g", "h"]);
        assert_eq!(cmds[4].pipeline, cmds[5].pipeline);
        assert_eq!(cmds[5].pipeline, cmds[6].pipeline);
        assert!(!cmds[4].piped_in && cmds[5].piped_in && cmds[6].piped_in);
        assert_ne!(cmds[3].pipeline, cmds[4].pipeline);
        assert!(!cmds[7].piped_in);
    }

    #[test]
    fn redirect_targets_are_not_words() {
        let cmds = split("echo hi >/dev/sda 2>&1 <in >> log &>all");
        assert_eq!(cmds[0].words, ["echo", "hi"]);
        assert_eq!(cmds[0].redirects, ["/dev/sda", "1", "log", "all"]);
    }

    #[test]
    fn substitutions_are_captured() {
        let cmds = split(r#"kill "$(pidof x)" `date` <(curl -s u)"#);
        assert_eq!(cmds[0].substitutions, ["pidof x", "date", "curl -s u"]);
        assert_eq!(cmds[0].words[1], "$(pidof x)");
        assert_eq!(split("echo $(a $(b) c)")[0].substitutions, ["a $(b) c"]);
    }

    #[test]
    fn here_documents_feed_stdin_and_are_not_commands() {
        let cmds = split("bash <<'EOF'\nrm -rf x\nEOF\necho done");
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[0].stdin_text.as_deref(), Some("rm -rf x\n"));
        assert_eq!(cmds[1].words, ["echo", "done"]);
        assert_eq!(
            split("sh <<< 'reboot'")[0].stdin_text.as_deref(),
            Some("reboot")
        );
    }

    #[test]
    fn comments_and_unterminated_quotes() {
        assert_eq!(words("ls # rm -rf /"), [["ls"]]);
        assert_eq!(words("echo a#b"), [["echo", "a#b"]]);
        assert_eq!(words("echo 'rm -rf"), [["echo", "rm -rf"]]);
    }
}
