//! The `hermes` binary: parse the command line, set up logging and TLS, run the command.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A child reading one document (see `tools::documents`): nothing else of the CLI starts.
    if let Some(code) = hermes::tools::documents::child_main() {
        return code;
    }
    let cli = hermes::cli::Cli::parse();
    // Two TLS backends are linked (via different HTTP stacks); pick one for the process.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    if matches!(cli.command, hermes::cli::Command::Setup(_)) {
        // The wizard's prompts share the terminal with the log.
        hermes::logging::init_with_default(cli.log_format, "warn");
    } else {
        hermes::logging::init(cli.log_format);
    }
    // Fault injection for tests (`FAILPOINTS`); nothing without the `failpoints` feature.
    let _faults = fail::FailScenario::setup();
    // Before any thread: the process closed to its children, its credentials out of its
    // environment block (the configuration reads a copy taken first).
    hermes::cli::guard_process();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hermes: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(hermes::cli::run(cli))
}
