//! The `hermes` binary: parse the command line, set up logging and TLS, run the command.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = hermes::cli::Cli::parse();
    // Two TLS backends are linked (via different HTTP stacks); pick one for the process.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let filter = EnvFilter::try_from_env("HERMES_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info,hyper=warn,reqwest=warn,teloxide=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
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
