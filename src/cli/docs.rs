//! `hermes completions <shell>` and `hermes man`: the shell completion scripts and the man page,
//! generated from this command line's own definition, so they never drift from it.
//!
//! They are subcommands rather than files written by `build.rs` because the CLI is defined in
//! this crate, which a build script cannot import, and so that a binary installed any way
//! (`cargo install`, the Debian package) can print them for its own version.

use clap::{CommandFactory, ValueEnum};

use super::{Cli, Outcome};

/// The shells `hermes completions` writes a script for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

impl From<Shell> for clap_complete::Shell {
    fn from(shell: Shell) -> Self {
        match shell {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
            Shell::Elvish => clap_complete::Shell::Elvish,
            Shell::Powershell => clap_complete::Shell::PowerShell,
        }
    }
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(
        clap_complete::Shell::from(shell),
        &mut Cli::command(),
        "hermes",
        &mut out,
    );
    out
}

/// The man page `hermes(1)` in roff: the global options and every subcommand with its help.
pub fn man_page() -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| format!("cannot render the man page: {e}"))?;
    Ok(out)
}

pub(super) fn print_completions(shell: Shell) -> Outcome {
    super::emit(&String::from_utf8_lossy(&completions(shell)))
}

pub(super) fn print_man_page() -> Outcome {
    super::emit(&String::from_utf8_lossy(&man_page()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_that_knows_the_subcommands() {
        for shell in Shell::value_variants() {
            let script = String::from_utf8(completions(*shell)).unwrap();
            assert!(script.contains("gateway"), "{shell:?}");
            assert!(script.contains("completions"), "{shell:?}");
        }
        let bash = String::from_utf8(completions(Shell::Bash)).unwrap();
        assert!(bash.contains("complete -F _hermes"), "{bash}");
    }

    #[test]
    fn the_man_page_names_the_command_and_its_subcommands() {
        let page = String::from_utf8(man_page().unwrap()).unwrap();
        assert!(page.contains(".TH hermes 1"), "{page}");
        assert!(page.contains("gateway"), "{page}");
        assert!(page.contains("\\-\\-config"), "{page}");
    }
}
