//! The terminal side of the wizard: dialoguer's prompts on standard error, each run off the
//! async runtime's worker (they block on the keyboard), and a cancelled prompt (Esc, Ctrl-C,
//! a closed terminal) turned into one error that ends setup without writing.

use std::io::IsTerminal;

use dialoguer::console::Term;
use dialoguer::{Confirm, Input, MultiSelect, Password, Select};

use crate::config::Secret;

/// Prompts on the terminal.
pub(super) struct Ui {
    term: Term,
}

/// What ends setup when a prompt cannot be answered.
const CANCELLED: &str = "setup cancelled; nothing was written";

impl Ui {
    /// The terminal, or why there is none (then `--non-interactive` is the way).
    pub(super) fn new() -> Result<Ui, String> {
        let term = Term::stderr();
        if !term.is_term() || !std::io::stdin().is_terminal() {
            return Err(
                "hermes setup asks its questions in a terminal, and this is none: run it in one, \
                 or give every answer as flags with --non-interactive (see `hermes setup --help`)"
                    .into(),
            );
        }
        Ok(Ui { term })
    }

    /// A line of text.
    pub(super) fn say(&self, line: &str) {
        let _ = self.term.write_line(line);
    }

    fn blocking<T>(f: impl FnOnce() -> dialoguer::Result<T>) -> Result<T, String> {
        tokio::task::block_in_place(f).map_err(|_| CANCELLED.to_owned())
    }

    /// One of `items`; the index.
    pub(super) fn select(
        &self,
        prompt: &str,
        items: &[String],
        default: usize,
    ) -> Result<usize, String> {
        let term = self.term.clone();
        Self::blocking(|| {
            Select::new()
                .with_prompt(prompt)
                .items(items)
                .default(default)
                .interact_on_opt(&term)
        })?
        .ok_or_else(|| CANCELLED.to_owned())
    }

    /// Any of `items` (space toggles, enter accepts); the indices.
    pub(super) fn multi_select(
        &self,
        prompt: &str,
        items: &[String],
        checked: &[bool],
    ) -> Result<Vec<usize>, String> {
        let term = self.term.clone();
        Self::blocking(|| {
            MultiSelect::new()
                .with_prompt(prompt)
                .items(items)
                .defaults(checked)
                .interact_on_opt(&term)
        })?
        .ok_or_else(|| CANCELLED.to_owned())
    }

    /// Hidden input: nothing typed is shown.
    pub(super) fn secret(&self, prompt: &str, may_be_empty: bool) -> Result<Secret, String> {
        let term = self.term.clone();
        let value = Self::blocking(|| {
            Password::new()
                .with_prompt(prompt)
                .allow_empty_password(may_be_empty)
                .interact_on(&term)
        })?;
        Ok(super::verify::secret(&value))
    }

    /// A line of text, `default` taken on a bare enter; empty only when `may_be_empty`.
    pub(super) fn input(
        &self,
        prompt: &str,
        default: Option<&str>,
        may_be_empty: bool,
    ) -> Result<String, String> {
        let term = self.term.clone();
        Self::blocking(|| {
            let mut input = Input::<String>::new()
                .with_prompt(prompt)
                .allow_empty(may_be_empty);
            if let Some(d) = default {
                input = input.default(d.to_owned());
            }
            input.interact_text_on(&term)
        })
        .map(|s| s.trim().to_owned())
    }

    /// Yes or no (one key).
    pub(super) fn confirm(&self, prompt: &str, default: bool) -> Result<bool, String> {
        let term = self.term.clone();
        Self::blocking(|| {
            Confirm::new()
                .with_prompt(prompt)
                .default(default)
                .interact_on_opt(&term)
        })?
        .ok_or_else(|| CANCELLED.to_owned())
    }
}
