//! Fuzz target: `chunk_markdown` with arbitrary text, limit and length unit. Checks what it
//! promises: every chunk within the limit in that unit, not blank, without trailing whitespace;
//! no chunks exactly when the text is blank; all non-whitespace content kept in order (only
//! fence lines added); and, unless a fence line is too long to repeat, every fence closed in the
//! chunk that opens it.
#![no_main]

use std::collections::BTreeSet;

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
    let limit = max_len.max(MIN_CHUNK_LEN);
    for chunk in &chunks {
        let len = unit.len(chunk);
        assert!(len <= limit, "{len} > {limit} ({unit:?}): {chunk:?}");
        assert!(!chunk.trim().is_empty(), "blank chunk");
        assert_eq!(chunk, chunk.trim_end(), "trailing whitespace");
        assert!(!chunk.starts_with('\n'), "leading blank line: {chunk:?}");
    }
    assert_eq!(chunks.is_empty(), text.trim().is_empty());
    assert_content_preserved(text, &chunks);
    // The documented exceptions to balanced fences: fence lines too long to repeat, and runs of
    // backticks or tildes too long for a chunk (here: longer than a quarter of the limit).
    let fence_line_fits = |l: &str| fence_run(l).is_none() || 4 * unit.len(l) + 4 <= limit;
    if text.lines().all(fence_line_fits) && longest_fence_run(text) * 4 <= limit {
        chunks.iter().for_each(|c| assert_balanced(c));
    }
});

/// Panics unless the chunks hold all non-whitespace content of `text`, in order, with only
/// fence lines added. Tracks every alignment, as an added fence may look like source text.
fn assert_content_preserved(text: &str, chunks: &[String]) {
    let source: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut positions = BTreeSet::from([0]);
    for line in chunks.iter().flat_map(|c| c.lines()) {
        let chars: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
        let t = line.trim_start();
        let fence = t.starts_with("```") || t.starts_with("~~~");
        positions = (positions.iter())
            .flat_map(|&at| {
                let matched = source[at..].starts_with(&chars).then_some(at + chars.len());
                matched.into_iter().chain(fence.then_some(at))
            })
            .collect();
        assert!(!positions.is_empty(), "line not in the source: {line:?}");
    }
    assert!(positions.contains(&source.len()), "content lost");
}

/// Panics if a fence opened in `chunk` is not closed in it (CommonMark fences, as chunk.rs).
fn assert_balanced(chunk: &str) {
    let mut open = None;
    for line in chunk.lines() {
        match (open, fence_run(line)) {
            (None, Some((ch, _, fence, info))) if ch == '~' || !info.contains('`') => {
                open = Some(fence);
            }
            (Some(closer), _) if closes(line, closer) => open = None,
            _ => {}
        }
    }
    assert_eq!(open, None, "unbalanced fence in {chunk:?}");
}

/// A line that starts like a fence (up to three spaces, then three or more ` or ~): its
/// character, run length, indentation-and-run, and the rest.
fn fence_run(line: &str) -> Option<(char, usize, &str, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.len() - rest.trim_start_matches(ch).len();
    (indent <= 3 && run >= 3).then(|| (ch, run, &line[..indent + run], &rest[run..]))
}

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

/// Whether `line` closes a block whose closer is `closer`: the same character, at least as many.
fn closes(line: &str, closer: &str) -> bool {
    let fence = closer.trim_start();
    fence_run(line.trim_end()).is_some_and(|(ch, run, _, info)| {
        fence.starts_with(ch) && run >= fence.len() && info.trim().is_empty()
    })
}
