//! Fuzz target: arbitrary bytes as a Slack Socket Mode frame (`events_api`, `interactive`,
//! `slash_commands`) through the listener's path: the envelope read, its payload parsed with
//! slack-morphism's models and converted. Must never panic; what is stored has an id and a chat.
#![no_main]

use hermes_slack::fuzzing::envelope;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(msg) = envelope(&text) {
        assert!(!msg.id.as_str().is_empty(), "message without an id");
        assert!(!msg.chat.id.as_str().is_empty(), "message without a chat");
    }
});
