//! What `chunk_markdown` promises, as checks that panic with the offending chunk: used by the
//! unit tests and by the `chunk_markdown` fuzz target (hidden from the docs).

use std::collections::BTreeSet;

use hermes_adapter::LengthUnit;

use super::{MIN_CHUNK_LEN, closes, fence_run};

/// Every chunk within the limit in `unit`, not blank, without leading blank lines or trailing
/// whitespace; no chunks exactly when `text` is blank; all content kept in order.
pub fn assert_chunks_valid(text: &str, chunks: &[String], max_len: usize, unit: LengthUnit) {
    let limit = max_len.max(MIN_CHUNK_LEN);
    for chunk in chunks {
        let len = unit.len(chunk);
        assert!(len <= limit, "{len} > {limit} ({unit:?}): {chunk:?}");
        assert!(!chunk.trim().is_empty(), "blank chunk");
        assert_eq!(chunk, chunk.trim_end(), "trailing whitespace");
        assert!(!chunk.starts_with('\n'), "leading blank line: {chunk:?}");
    }
    assert_eq!(chunks.is_empty(), text.trim().is_empty());
    assert_content_preserved(text, chunks);
}

/// Panics unless the chunks hold all non-whitespace content of `text`, in order, with only
/// fence lines added. Tracks every alignment, as an added fence may look like source text.
pub fn assert_content_preserved(text: &str, chunks: &[String]) {
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

/// Panics if a fence opened in `chunk` is not closed in it.
pub fn assert_balanced(chunk: &str) {
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

/// Whether `line` starts like a fence (up to three spaces, then three or more ` or ~).
pub fn is_fence_line(line: &str) -> bool {
    fence_run(line).is_some()
}
