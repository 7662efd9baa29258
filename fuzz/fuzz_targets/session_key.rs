//! Fuzz target: `SessionKey` parsing. Any string either fails to parse or gives a key whose
//! canonical form parses back to the same key (and is its own canonical form).
#![no_main]

use hermes_adapter::SessionKey;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| {
    let Ok(key) = input.parse::<SessionKey>() else {
        return;
    };
    let canonical = key.to_string();
    let again: SessionKey = match canonical.parse() {
        Ok(k) => k,
        Err(e) => panic!("{input:?} parsed, its form {canonical:?} does not: {e}"),
    };
    assert_eq!(again, key, "{input:?} -> {canonical:?}");
    assert_eq!(again.to_string(), canonical);
    let _ = key.owner();
});
