//! Fuzz target: `chunk_markdown` with arbitrary text, limit and length unit. Checks what it
//! promises: every chunk within the limit in that unit, not blank, without trailing whitespace;
//! no chunks exactly when the text is blank; all non-whitespace content kept in order (only
//! fence lines added); and, unless a fence line is too long to repeat, every fence closed in the
//! chunk that opens it.
#![no_main]

use hermes::gateway::chunk::invariants::{assert_balanced, assert_chunks_valid, is_fence_line};
use hermes::gateway::chunk::{MIN_CHUNK_LEN, chunk_markdown};
use hermes_adapter::LengthUnit;
use libfuzzer_sys::fuzz_target;

const UNITS: [LengthUnit; 3] = [LengthUnit::Utf16, LengthUnit::Chars, LengthUnit::Bytes];

fuzz_target!(|input: (u16, u8, &str)| {
    let (max_len, unit, text) = input;
    // 16..5000: below MIN_CHUNK_LEN is raised to it, which is part of the contract too.
    let max_len = 16 + usize::from(max_len) % 4984;
    let unit = UNITS[usize::from(unit) % UNITS.len()];
    let chunks = chunk_markdown(text, max_len, unit);
    assert_chunks_valid(text, &chunks, max_len, unit);
    let limit = max_len.max(MIN_CHUNK_LEN);
    // The documented exceptions to balanced fences: fence lines too long to repeat, and runs of
    // backticks or tildes too long for a chunk (here: longer than a quarter of the limit).
    let fence_line_fits = |l: &str| !is_fence_line(l) || 4 * unit.len(l) + 4 <= limit;
    if text.lines().all(fence_line_fits) && longest_fence_run(text) * 4 <= limit {
        chunks.iter().for_each(|c| assert_balanced(c));
    }
});

/// The longest run of backticks or of tildes anywhere in `text`, in characters (one unit each).
fn longest_fence_run(text: &str) -> usize {
    let (mut longest, mut run, mut prev) = (0, 0, None);
    for c in text.chars() {
        run = if matches!(c, '`' | '~') && prev == Some(c) {
            run + 1
        } else {
            1
        };
        if matches!(c, '`' | '~') {
            longest = longest.max(run);
        }
        prev = Some(c);
    }
    longest
}
