//! Markdown (what the model writes) to Discord's markdown dialect.
//!
//! Discord renders most of CommonMark itself (emphasis, code spans and fenced blocks, lists,
//! quotes, `#`–`###` headings, masked links in bot messages) and never rejects a message for
//! its formatting, so the conversion only rewrites what Discord shows as clutter: headings
//! deeper than `###` become bold lines, thematic breaks (`---`) become a drawn line, and
//! images (`![alt](url)`) become links. Code blocks are left alone. The core splits at
//! Discord's 2000-character limit before rendering, so every rewrite is no longer than its
//! source.

/// Renders `markdown` for Discord; the result is never longer (in characters) than the input.
///
/// ```
/// assert_eq!(hermes_discord::to_discord_markdown("#### Notes"), "**Notes**");
/// ```
pub fn to_discord_markdown(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fence: Option<String> = None;
    for (i, line) in markdown.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        match &fence {
            Some(open) => {
                if trimmed.starts_with(open.as_str()) && trimmed.trim_end() == marker {
                    fence = None;
                }
                out.push_str(line);
                continue;
            }
            None if marker.len() >= 3
                && marker.chars().all(|c| c == marker.as_bytes()[0] as char) =>
            {
                fence = Some(marker);
                out.push_str(line);
                continue;
            }
            None => {}
        }
        out.push_str(&render_line(line));
    }
    out
}

fn render_line(line: &str) -> String {
    let trimmed = line.trim();
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    if (4..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let title = trimmed[hashes..].trim().trim_end_matches('#').trim_end();
        if !title.is_empty() {
            return format!("**{title}**");
        }
    }
    if is_thematic_break(trimmed) {
        return "───".to_owned();
    }
    images_as_links(line)
}

fn is_thematic_break(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    compact.chars().count() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| compact.chars().all(|c| c == *m))
}

/// `![alt](url)` -> `[alt](url)`, outside code spans.
fn images_as_links(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            in_code = !in_code;
        }
        if c == '!' && !in_code && chars.peek() == Some(&'[') {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_headings_become_bold_and_shallow_ones_stay() {
        assert_eq!(
            to_discord_markdown("## Plan\n#### Step"),
            "## Plan\n**Step**"
        );
    }

    #[test]
    fn code_blocks_are_untouched() {
        let src = "```md\n#### not a heading\n---\n![x](y)\n```\n---";
        assert_eq!(
            to_discord_markdown(src),
            "```md\n#### not a heading\n---\n![x](y)\n```\n───"
        );
    }

    #[test]
    fn images_become_links_but_not_in_code_spans() {
        assert_eq!(
            to_discord_markdown("see ![chart](http://e/x.png) and `![a](b)` wow!"),
            "see [chart](http://e/x.png) and `![a](b)` wow!"
        );
    }

    #[test]
    fn never_longer_than_the_source() {
        for src in [
            "#### a",
            "---",
            "* * *",
            "![](u)",
            "plain **bold** _it_",
            "```\nunclosed",
        ] {
            assert!(
                to_discord_markdown(src).chars().count() <= src.chars().count(),
                "{src}"
            );
        }
    }
}
