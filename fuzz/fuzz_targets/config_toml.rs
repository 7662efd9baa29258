//! Fuzz target: arbitrary text as `config.toml`, parsed and validated as at startup and on
//! SIGHUP. Errors are expected; a panic is a bug.
#![no_main]

use std::path::Path;

use hermes::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let path = Path::new("/etc/hermes/config.toml");
    match Config::parse(text, path) {
        Ok(config) => {
            if let Err(e) = config.validate() {
                let _ = e.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
