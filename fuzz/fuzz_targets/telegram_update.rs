//! Fuzz target: arbitrary bytes as a Bot API `getUpdates` body, or as one update, through the
//! listener's path: teloxide's parse of the whole body, the adapter's salvage of a body that
//! does not parse as a whole, and the conversion to our `Message`. Must never panic.
#![no_main]

use hermes_telegram::BotIdentity;
use hermes_telegram::fuzzing::{Update, convert, salvage};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

/// The shape teloxide parses a successful response into (`TelegramResponse::Ok`, untagged as
/// there, so the update parser sees the same buffered input).
#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    Ok {
        #[allow(dead_code)]
        ok: bool,
        result: Vec<Update>,
    },
}

fuzz_target!(|data: &[u8]| {
    // The client reads the body as text, replacing invalid UTF-8.
    let raw = String::from_utf8_lossy(data);
    let me = BotIdentity {
        id: 999,
        username: "hermes_test_bot".into(),
    };
    // Updates are parsed from text: teloxide's parser borrows keys and rejects an owned Value.
    if let Ok(update) = serde_json::from_str::<Update>(&raw) {
        check(&update, &me);
    }
    let (updates, max_id) = match serde_json::from_str::<Body>(&raw) {
        Ok(Body::Ok { result, .. }) => (result, None),
        Err(_) => salvage(&raw),
    };
    for update in &updates {
        check(update, &me);
    }
    if max_id.is_none() && serde_json::from_str::<Body>(&raw).is_err() {
        assert!(updates.is_empty(), "salvaged updates without an id");
    }
});

fn check(update: &Update, me: &BotIdentity) {
    // Not `update.id.as_offset()`: it debug-asserts an id below i32::MAX, which Telegram's ids
    // are (the Bot API's offset is a signed 32-bit integer).
    if let Some(msg) = convert(update, me) {
        assert!(!msg.id.as_str().is_empty(), "message without an id");
        assert!(!msg.chat.id.as_str().is_empty(), "message without a chat");
    }
}
