//! Fuzz target: arbitrary markdown through `to_discord_markdown`, which promises an answer
//! never longer (in characters) than the markdown, so the chunker's limit holds.
#![no_main]

use hermes_discord::to_discord_markdown;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|markdown: &str| {
    let out = to_discord_markdown(markdown);
    assert!(
        out.chars().count() <= markdown.chars().count(),
        "{markdown:?} -> {out:?}"
    );
});
