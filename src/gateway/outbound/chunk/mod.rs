//! Splits a long markdown answer into messages that fit a platform's length limit.
//!
//! Each chunk is sent as its own message and rendered on its own, so a chunk must make sense
//! alone: splits fall at the most natural place that keeps the chunk large (a blank line, else a
//! line break, else a space, else between two characters, never inside one), and a code fence
//! is never left open. When a split has to fall inside a fenced code block, the chunk is closed
//! with the block's fence and the next chunk reopens it with the same opening line (info string
//! included); the budget reserves room for both lines, so the limit holds for the text actually
//! sent. A block that would fit whole in the next chunk is moved there instead of being cut.
//!
//! Fences follow CommonMark: three or more backticks or tildes, indented by at most three
//! spaces, closed by a run of the same character at least as long. A fence left open at the end
//! of the answer is closed in the last chunk. If the opening line would take more than half the
//! limit, continuation chunks reopen with the bare fence (no info string). Only fence lines too
//! long to repeat (an opening line that nearly fills the limit, a run of more than about a
//! quarter of it) defeat this: such a block is split like ordinary text. So does a run of
//! backticks or tildes inside a line that is longer than a chunk can hold: the chunk that
//! continues it starts with what looks like a fence.

use hermes_adapter::LengthUnit;

/// The smallest limit honoured: a lower `max_len` is raised to this, so that a chunk always has
/// room for a reopened fence and some content.
pub const MIN_CHUNK_LEN: usize = 64;

/// Splits `text` into chunks of at most `max_len` (at least [`MIN_CHUNK_LEN`]) measured in `unit`,
/// with balanced code fences. Blank input gives no chunks; text that fits gives one chunk, the
/// input without its surrounding blank lines.
pub fn chunk_markdown(text: &str, max_len: usize, unit: LengthUnit) -> Vec<String> {
    let max_len = max_len.max(MIN_CHUNK_LEN);
    let text = trim_blank_lines(text);
    if text.is_empty() {
        return Vec::new();
    }
    let closed;
    let text = match scan_fences(text, max_len, unit).1 {
        Some(closer) => {
            closed = format!("{text}\n{closer}");
            closed.as_str()
        }
        None => text,
    };
    let splitter = Splitter {
        text,
        unit,
        max_len,
        fences: scan_fences(text, max_len, unit).0,
    };
    splitter.chunks()
}

/// A fenced code block, with byte offsets into the text.
#[derive(Debug)]
struct Fence<'a> {
    /// Start of the opening line.
    open_start: usize,
    /// Start of the first line after the opening line.
    body_start: usize,
    /// End of the body's last non-whitespace character.
    content_end: usize,
    /// End of the closing line (before its line break).
    close_end: usize,
    /// Repeated at the top of a chunk that continues the block: the opening line, or just its
    /// fence if the whole line would take more than half the limit.
    reopener: &'a str,
    /// Indentation and fence run, appended to a chunk that stops inside the block.
    closer: &'a str,
    /// Units a chunk spends to close the block: a line break and the closer.
    close_cost: usize,
}

/// A line's start and end offsets.
type Line = (usize, usize);

/// Where a split position falls relative to the fences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Zone {
    Outside,
    /// Inside this fence's body, with content on both sides: splitting needs closing and reopening.
    Inside(usize),
    /// On this fence's own lines or at the edge of its body: no split here.
    Forbidden(usize),
}

/// A chosen split: the chunk is `text[start..at]`; `fence` is the block it stops inside.
#[derive(Debug, Clone, Copy)]
struct Split {
    at: usize,
    used: usize,
    fence: Option<usize>,
}

impl Split {
    fn outside(at: usize) -> Self {
        Split {
            at,
            used: 0,
            fence: None,
        }
    }
}

struct Splitter<'a> {
    text: &'a str,
    unit: LengthUnit,
    max_len: usize,
    fences: Vec<Fence<'a>>,
}

impl Splitter<'_> {
    fn chunks(&self) -> Vec<String> {
        let text = self.text;
        let mut chunks = Vec::new();
        let (mut start, mut reopen) = (0, None::<usize>);
        while start < text.len() {
            let mut chunk = String::new();
            if let Some(fence) = reopen.map(|i| &self.fences[i]) {
                chunk.push_str(fence.reopener);
                chunk.push('\n');
            }
            let budget = self.max_len.saturating_sub(self.unit.len(&chunk));
            let split = self.split(start, budget, reopen.is_some());
            debug_assert!(split.at > start, "no progress at {start}");
            chunk.push_str(text[start..split.at].trim_end());
            match split.fence {
                Some(i) => {
                    chunk.push('\n');
                    chunk.push_str(self.fences[i].closer);
                    start = split.at;
                }
                None => start = skip_blank_lines(text, split.at),
            }
            reopen = split.fence;
            debug_assert!(self.unit.len(&chunk) <= self.max_len, "{chunk:?}");
            if !chunk.trim().is_empty() {
                chunks.push(chunk);
            }
        }
        chunks
    }

    /// The best split of the text from `start` into a chunk of at most `budget` units.
    fn split(&self, start: usize, budget: usize, reopened: bool) -> Split {
        let rest = &self.text[start..];
        if self.unit.len(rest) <= budget {
            return Split::outside(self.text.len());
        }
        // The latest valid position of each kind: paragraph break, line break, space, any.
        let [mut para, mut line, mut space, mut any] = [None::<Split>; 4];
        let (mut used, mut window) = (0, start);
        // Nothing but whitespace is not worth a chunk; a reopened fence already is content.
        let mut has_content = reopened;
        let (mut line_blank, mut ended_blank, mut prev) = (true, false, None::<char>);
        let mut current = (start, line_end(self.text, start));
        for (i, c) in rest.char_indices() {
            let cut = (prev != Some('\n')).then_some(current);
            if let Some(prev) = prev
                && has_content
                && let Some(split) = self.candidate(start + i, used, budget, cut)
            {
                if prev == '\n' {
                    line = Some(split);
                    if ended_blank {
                        para = Some(split);
                    }
                } else if prev.is_whitespace() && !c.is_whitespace() {
                    space = Some(split);
                }
                any = Some(split);
            }
            let width = self.unit.char_len(c);
            if used + width > budget {
                break;
            }
            used += width;
            window = start + i + c.len_utf8();
            if c == '\n' {
                ended_blank = line_blank;
                line_blank = true;
                current = (window, line_end(self.text, window));
            } else if !c.is_whitespace() {
                line_blank = false;
                has_content = true;
            }
            prev = Some(c);
        }
        if let Some(split) = self.move_fence_whole(start, window) {
            return split;
        }
        let soft = [para, line, space].into_iter().flatten();
        soft.clone()
            .find(|s| s.used >= budget / 2)
            // Else the latest one, unless what follows it is too long for any chunk anyway.
            .or_else(|| {
                soft.max_by_key(|s| s.at)
                    .filter(|s| self.word_fits(s.at, budget))
            })
            .or(any)
            // Only whitespace fits (a huge indentation): cut it, fences or not.
            .unwrap_or(Split::outside(window))
    }

    /// Whether the word starting at `at` fits in `budget`.
    fn word_fits(&self, at: usize, budget: usize) -> bool {
        let word = self.text[at..]
            .split(char::is_whitespace)
            .next()
            .unwrap_or("");
        self.unit.len(word) <= budget
    }

    /// `at` as a split position if the chunk, with any closing fence, stays within `budget`.
    /// `cut` is the line that `at` cuts in two (from the chunk's start), if any.
    fn candidate(&self, at: usize, used: usize, budget: usize, cut: Option<Line>) -> Option<Split> {
        let (cost, fence) = match self.zone(at) {
            Zone::Outside => (used, None),
            Zone::Inside(i) => (used + self.fences[i].close_cost, Some(i)),
            Zone::Forbidden(_) => return None,
        };
        if cost > budget {
            return None;
        }
        // Neither half of a cut line may become a fence line of its own.
        if let Some((line_start, line_end)) = cut {
            let halves = [&self.text[line_start..at], &self.text[at..line_end]];
            let makes_fence = |half: &&str| match fence {
                Some(i) => closes(half, self.fences[i].closer),
                None => fence_run(half).is_some(),
            };
            if halves.iter().any(makes_fence) {
                return None;
            }
        }
        Some(Split { at, used, fence })
    }

    /// If the window ends in a fenced block that starts after some content and would fit whole
    /// in a chunk of its own, split just before the block.
    fn move_fence_whole(&self, start: usize, window: usize) -> Option<Split> {
        let (Zone::Inside(i) | Zone::Forbidden(i)) = self.zone(window) else {
            return None;
        };
        let fence = &self.fences[i];
        let before = &self.text[start..fence.open_start.max(start)];
        let block = &self.text[fence.open_start..fence.close_end];
        (fence.open_start > start
            && !before.trim().is_empty()
            && self.unit.len(block) <= self.max_len)
            .then_some(Split::outside(fence.open_start))
    }

    fn zone(&self, at: usize) -> Zone {
        let after = self.fences.partition_point(|f| f.open_start < at);
        let Some(i) = after.checked_sub(1) else {
            return Zone::Outside;
        };
        let fence = &self.fences[i];
        if at >= fence.close_end {
            Zone::Outside
        } else if at > fence.body_start && at < fence.content_end {
            Zone::Inside(i)
        } else {
            Zone::Forbidden(i)
        }
    }
}

/// The fenced blocks of `text` that can be closed and reopened within `max_len / 2` and whose
/// opening line fits in a chunk, and the closer of a block left open at the end, if any.
fn scan_fences(text: &str, max_len: usize, unit: LengthUnit) -> (Vec<Fence<'_>>, Option<&str>) {
    let mut fences = Vec::new();
    // The open block: opening line start, body start, line, closer.
    let mut open: Option<(usize, usize, &str, &str)> = None;
    let mut pos = 0;
    for raw_line in text.split_inclusive('\n') {
        let line_start = pos;
        pos += raw_line.len();
        let line = raw_line.trim_end_matches(['\n', '\r']);
        let Some((ch, _, fence, info)) = fence_run(line) else {
            continue;
        };
        match open {
            None if ch == '~' || !info.contains('`') => {
                open = Some((line_start, pos, line.trim_end(), fence));
            }
            Some((open_start, body_start, opener, closer)) if closes(line, closer) => {
                open = None;
                // Fence lines this long cannot be kept whole; the block is split like text.
                let close_cost = unit.len("\n") + unit.len(closer);
                let overhead = |line: &str| unit.len(line) + unit.len("\n") + close_cost;
                let reopener = if overhead(opener) <= max_len / 2 {
                    opener
                } else {
                    closer
                };
                if overhead(reopener) > max_len / 2 || overhead(opener) + 4 > max_len {
                    continue;
                }
                let body = &text[body_start..line_start];
                fences.push(Fence {
                    open_start,
                    body_start,
                    content_end: body_start + body.trim_end().len(),
                    close_end: line_start + line.len(),
                    reopener,
                    closer,
                    close_cost,
                });
            }
            _ => {}
        }
    }
    (fences, open.map(|(.., closer)| closer))
}

/// Splits a line that starts like a fence (up to three spaces, then three or more ` or ~) into
/// its character, run length, indentation-and-run, and the rest.
fn fence_run(line: &str) -> Option<(char, usize, &str, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.len() - rest.trim_start_matches(ch).len();
    (indent <= 3 && run >= 3).then(|| (ch, run, &line[..indent + run], &rest[run..]))
}

/// Whether `line` closes a block whose closer is `closer`: the same character, at least as many.
fn closes(line: &str, closer: &str) -> bool {
    let fence = closer.trim_start();
    fence_run(line.trim_end()).is_some_and(|(ch, run, _, info)| {
        fence.starts_with(ch) && run >= fence.len() && info.trim().is_empty()
    })
}

/// The end of the line holding byte `at` (before its line break).
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |n| at + n)
}

/// The position of the first line from `at` on that is not blank (or `at` itself, mid-line).
fn skip_blank_lines(text: &str, mut at: usize) -> usize {
    loop {
        let rest = &text[at..];
        match rest.find('\n') {
            Some(nl) if rest[..nl].trim().is_empty() => at += nl + 1,
            _ if rest.trim().is_empty() => return text.len(),
            _ => return at,
        }
    }
}

/// `text` without leading blank lines (indentation of the first line kept) or trailing whitespace.
fn trim_blank_lines(text: &str) -> &str {
    text[skip_blank_lines(text, 0)..].trim_end()
}

#[doc(hidden)]
pub mod invariants;

#[cfg(test)]
mod tests {
    use super::invariants::*;
    use super::*;

    const UNITS: [LengthUnit; 3] = [LengthUnit::Utf16, LengthUnit::Chars, LengthUnit::Bytes];

    /// Checks every guarantee and returns the chunks.
    fn chunks(text: &str, max_len: usize, unit: LengthUnit) -> Vec<String> {
        let chunks = chunk_markdown(text, max_len, unit);
        assert_chunks_valid(text, &chunks, max_len, unit);
        chunks.iter().for_each(|c| assert_balanced(c));
        chunks
    }

    fn prose(words: usize) -> String {
        let text = "The quick brown fox jumps over the lazy dog while the daemon hums.";
        let words: Vec<_> = text.split(' ').cycle().take(words).collect();
        words.join(" ")
    }

    fn code(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("    let value_{i} = compute({i}) + \"😀\";\n"))
            .collect()
    }

    #[test]
    fn blank_input_gives_no_chunks() {
        assert!(chunk_markdown("", 100, LengthUnit::Utf16).is_empty());
        assert!(chunk_markdown(" \n\n\t\n", 100, LengthUnit::Utf16).is_empty());
    }

    #[test]
    fn text_that_fits_is_one_trimmed_chunk() {
        let text = "\n\n  Hello **world**\n\n```rust\nfn main() {}\n```\n\nBye.  \n\n";
        let trimmed = text.trim_matches('\n').trim_end();
        assert_eq!(chunks(text, 4096, LengthUnit::Utf16), [trimmed]);
        assert_eq!(
            chunks("\n\nHi there\n\n", 4096, LengthUnit::Utf16),
            ["Hi there"]
        );
    }

    #[test]
    fn long_answer_with_two_code_blocks_at_telegram_limit() {
        let block = |lines| format!("```rust\nfn f() {{\n{}}}\n```", code(lines));
        let (short, long) = (block(60), block(120));
        let (a, b, c) = (prose(330), prose(150), prose(300));
        let text = format!("## Intro\n\n{a}\n\n{short}\n\n{b}\n\n{long}\n\n{c}");
        assert!(text.chars().count() >= 10_000, "{}", text.chars().count());
        assert!(short.encode_utf16().count() < 4096 && long.encode_utf16().count() > 4096);
        let out = chunks(&text, 4096, LengthUnit::Utf16);
        assert_eq!(out.len(), 3, "greedy: each chunk takes all it can");
        assert!(
            out.iter().any(|c| c.contains(&short)),
            "the short block is kept whole"
        );
        // The long block is cut once: one closing and one opening fence line added.
        let fence_lines = out
            .iter()
            .flat_map(|c| c.lines())
            .filter(|l| l.starts_with("```"));
        assert_eq!(fence_lines.count(), 6);
    }

    #[test]
    fn code_block_longer_than_limit_is_closed_and_reopened() {
        let text = format!("```python title=\"x\"\n{}```", code(150));
        let out = chunks(&text, 1000, LengthUnit::Utf16);
        assert!(out.len() >= 5);
        for chunk in &out {
            assert!(chunk.starts_with("```python title=\"x\"\n"), "{chunk:?}");
            assert!(chunk.ends_with("\n```"), "{chunk:?}");
            let between_lines = chunk
                .lines()
                .all(|l| l.starts_with("```") || l.ends_with(';'));
            assert!(between_lines, "{chunk}");
        }
    }

    #[test]
    fn block_that_fits_next_chunk_moves_there_whole() {
        let block = format!("~~~~sh\n{}~~~~", "echo hi\n".repeat(20));
        let text = format!("{}\n{block}\n\nafter", prose(40));
        let out = chunks(&text, 300, LengthUnit::Chars);
        assert_eq!(out[0], prose(40));
        assert_eq!(out[1], format!("{block}\n\nafter"));
    }

    #[test]
    fn inner_shorter_fence_does_not_close_the_block() {
        let text = format!("````md\n```\n{}```\n````\nend", "inner line\n".repeat(30));
        for chunk in chunks(&text, 100, LengthUnit::Bytes) {
            assert!(chunk.starts_with("````md") || chunk == "end", "{chunk:?}");
        }
    }

    #[test]
    fn unclosed_fence_is_closed_in_the_last_chunk() {
        assert_eq!(
            chunks("text\n```js\nx()", 100, LengthUnit::Utf16),
            vec!["text\n```js\nx()\n```"]
        );
        let out = chunks(&format!("```\n{}", code(30)), 200, LengthUnit::Utf16);
        assert!(out.last().is_some_and(|c| c.ends_with("\n```")));
    }

    #[test]
    fn emoji_at_the_boundary_is_never_split() {
        let text = format!("{}😀{}", "a".repeat(63), "😀".repeat(100));
        let out = chunks(&text, 64, LengthUnit::Utf16);
        assert_eq!(out[0], "a".repeat(63));
        assert_eq!(out[1], "😀".repeat(32));
        assert_eq!(out.concat(), text);
    }

    #[test]
    fn long_line_without_spaces_is_cut_greedily() {
        let text = "x".repeat(1000);
        let lens: Vec<_> = chunks(&text, 300, LengthUnit::Utf16)
            .iter()
            .map(String::len)
            .collect();
        assert_eq!(lens, [300, 300, 300, 100]);
    }

    #[test]
    fn chars_unit_counts_scalar_values() {
        let text = format!("{}\n\n{}", "漢字😀 ".repeat(600), "é".repeat(1500));
        let out = chunks(&text, 2000, LengthUnit::Chars);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], "漢字😀 ".repeat(500).trim_end());
        assert!(
            out[0].encode_utf16().count() > 2000,
            "measured in chars, not UTF-16"
        );
        assert!(out[1].starts_with(&format!("{}\n\né", "漢字😀 ".repeat(100))));
    }

    #[test]
    fn prefers_paragraph_then_line_then_space_breaks() {
        let (a, b) = (prose(30), prose(12));
        let out = chunks(&format!("{a}\n\n{b}\n{b}"), 250, LengthUnit::Utf16);
        assert_eq!(out, [a.clone(), format!("{b}\n{b}")]);
        let out = chunks(&format!("{a}\n{b}\n{b} {b}"), 250, LengthUnit::Utf16);
        assert_eq!(out[0], format!("{a}\n{b}"));
        let out = chunks(&prose(100), 200, LengthUnit::Utf16);
        let (_, full) = out.split_last().expect("chunks");
        assert!(
            full.iter().all(|c| c.len() > 150 && !c.starts_with(' ')),
            "{out:?}"
        );
    }

    #[test]
    fn small_limits_are_raised_to_the_minimum() {
        let out = chunks(&"y".repeat(200), 5, LengthUnit::Utf16);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].len(), MIN_CHUNK_LEN);
    }

    #[test]
    fn long_opening_lines_are_reopened_bare_or_split_as_text() {
        let text = format!("```{}\n{}```", "x".repeat(50), "code\n".repeat(40));
        let out = chunks(&text, 64, LengthUnit::Utf16);
        assert!(
            out[1..].iter().all(|c| c.starts_with("```\ncode")),
            "{out:?}"
        );
        // An opening line as long as the limit cannot be kept whole, but the limit holds.
        let text = format!("```{}\n{}```", "x".repeat(70), "code\n".repeat(40));
        assert!(
            chunk_markdown(&text, 64, LengthUnit::Utf16)
                .iter()
                .all(|c| c.len() <= 64)
        );
        let spaces = format!("{}x", " ".repeat(500));
        assert_eq!(
            chunk_markdown(&spaces, 64, LengthUnit::Utf16)
                .concat()
                .trim(),
            "x"
        );
    }

    #[test]
    fn random_inputs_keep_every_guarantee() {
        let pieces = [
            "```", "```rust", "~~~", "````", "\n", "\n\n", " ", "   ", "word", "- item", "😀",
            "\n   ",
        ];
        let (mut seed, long) = (7u64, "x".repeat(70));
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for round in 0..3000 {
            let text: String = (0..next(150))
                .map(|_| match next(pieces.len() + 2) {
                    i if i < pieces.len() => pieces[i],
                    i if i == pieces.len() => &long,
                    _ => "漢`~\t",
                })
                .collect();
            let (unit, max_len) = (UNITS[round % 3], [64, 100, 400][round / 3 % 3]);
            // The one case where fences cannot be balanced: fence lines too long to repeat.
            let fence_line_fits =
                |l: &str| fence_run(l).is_none() || 4 * unit.len(l) + 4 <= max_len;
            if text.lines().all(fence_line_fits) {
                chunks(&text, max_len, unit);
            } else {
                let out = chunk_markdown(&text, max_len, unit);
                assert!(out.iter().all(|c| unit.len(c) <= max_len));
                assert_content_preserved(&text, &out);
            }
        }
    }
}
