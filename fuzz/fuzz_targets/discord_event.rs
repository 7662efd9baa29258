//! Fuzz target: arbitrary bytes as a Discord gateway frame through the listener's path: the
//! payload read, a MESSAGE_CREATE or INTERACTION_CREATE parsed with serenity's model and
//! converted as if posted in a DM, a channel and a thread. Must never panic; what is stored has
//! an id and a chat.
#![no_main]

use hermes_discord::fuzzing::frame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for msg in frame(&text) {
        assert!(!msg.id.as_str().is_empty(), "message without an id");
        assert!(!msg.chat.id.as_str().is_empty(), "message without a chat");
    }
});
