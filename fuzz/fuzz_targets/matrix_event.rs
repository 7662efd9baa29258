//! Fuzz target: arbitrary bytes as a Matrix `m.room.message` event through the listener's
//! conversion (in a direct chat and in a group). Must never panic; what is stored has an id and
//! a chat.
#![no_main]

use hermes_matrix::fuzzing::event;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let json = String::from_utf8_lossy(data);
    for msg in event(&json) {
        assert!(!msg.id.as_str().is_empty(), "message without an id");
        assert!(!msg.chat.id.as_str().is_empty(), "message without a chat");
    }
});
