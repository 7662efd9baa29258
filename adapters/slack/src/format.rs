//! Markdown (what the model writes) to Slack mrkdwn.
//!
//! mrkdwn is not markdown: bold is `*b*`, italics `_i_`, strike `~s~`, links `<url|label>`,
//! there are no headings, tables or nested lists, and `&`, `<`, `>` must be written as entities
//! or Slack reads them as markup. So the renderer never copies markup from the input: text is
//! escaped, and every piece of markup comes from the fixed set above. Headings become bold lines,
//! list items get `•` or their number, tables become ` | `-separated lines, quotes keep `>`.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Escape text for mrkdwn: only `&`, `<` and `>` are special.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Render `markdown` as Slack mrkdwn. For example:
///
/// ```text
/// **Hi** <b> & [docs](https://e.org)
/// *Hi* &lt;b&gt; &amp; <https://e.org|docs>
/// ```
pub fn to_mrkdwn(markdown: &str) -> String {
    let mut r = Renderer::default();
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(markdown, opts) {
        r.event(event);
    }
    r.out.trim_end().to_owned()
}

#[derive(Default)]
struct Renderer {
    out: String,
    /// Ordered list counters (`None`: bulleted), innermost last.
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    /// Output offsets where open links' labels start, with their destinations.
    links: Vec<(usize, String)>,
    /// A table cell was already written on this row.
    cell_written: bool,
}

impl Renderer {
    /// Start a new line (with the quote prefix), unless the output is already at one.
    fn line(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        self.prefix();
    }

    fn prefix(&mut self) {
        for _ in 0..self.quote_depth {
            self.out.push_str("> ");
        }
    }

    /// End a block: a blank line before whatever comes next (none inside lists).
    fn block_end(&mut self) {
        if self.lists.is_empty() {
            self.out.push_str("\n\n");
        } else {
            self.out.push('\n');
        }
    }

    fn text(&mut self, text: &str) {
        if self.quote_depth > 0 && text.contains('\n') {
            let prefix = "> ".repeat(self.quote_depth);
            let escaped = escape(text);
            let mut lines = escaped.split('\n').peekable();
            while let Some(l) = lines.next() {
                self.out.push_str(l);
                if lines.peek().is_some() {
                    self.out.push('\n');
                    self.out.push_str(&prefix);
                }
            }
        } else {
            self.out.push_str(&escape(text));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                self.out.push('`');
                self.out.push_str(&escape(&t));
                self.out.push('`');
            }
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::SoftBreak | Event::HardBreak => {
                self.out.push('\n');
                self.prefix();
            }
            Event::Rule => {
                self.line();
                self.out.push_str("———");
                self.block_end();
            }
            Event::TaskListMarker(done) => self.out.push_str(if done { "☑ " } else { "☐ " }),
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph if !self.out.ends_with("• ") && !self.out.ends_with(". ") => {
                self.line();
            }
            Tag::Heading { .. } => {
                self.line();
                self.out.push('*');
            }
            Tag::BlockQuote(_) => {
                self.quote_depth += 1;
            }
            Tag::CodeBlock(_) => {
                self.line();
                self.out.push_str("```\n");
            }
            Tag::List(start) => {
                if !self.lists.is_empty() {
                    self.out.push('\n');
                }
                self.lists.push(start);
            }
            Tag::Item => {
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                self.prefix();
                let depth = self.lists.len().saturating_sub(1);
                self.out.push_str(&"    ".repeat(depth));
                match self.lists.last_mut() {
                    Some(Some(n)) => {
                        self.out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => self.out.push_str("• "),
                }
            }
            Tag::Emphasis => self.out.push('_'),
            Tag::Strong => self.out.push('*'),
            Tag::Strikethrough => self.out.push('~'),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links.push((self.out.len(), dest_url.to_string()));
            }
            Tag::Table(_) => self.line(),
            Tag::TableHead | Tag::TableRow => {
                self.line();
                self.cell_written = false;
            }
            Tag::TableCell => {
                if self.cell_written {
                    self.out.push_str(" | ");
                }
                self.cell_written = true;
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.block_end(),
            TagEnd::Heading(level) => {
                let _: HeadingLevel = level;
                self.out.push('*');
                self.block_end();
            }
            TagEnd::BlockQuote(_) => {
                self.quote_depth = self.quote_depth.saturating_sub(1);
                if self.quote_depth == 0 && self.lists.is_empty() && !self.out.ends_with("\n\n") {
                    self.out.push('\n');
                }
            }
            TagEnd::CodeBlock => {
                if !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                self.out.push_str("```");
                self.block_end();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                if self.lists.is_empty() {
                    if !self.out.ends_with('\n') {
                        self.out.push('\n');
                    }
                    if !self.out.ends_with("\n\n") {
                        self.out.push('\n');
                    }
                }
            }
            TagEnd::Item => {}
            TagEnd::Emphasis => self.out.push('_'),
            TagEnd::Strong => self.out.push('*'),
            TagEnd::Strikethrough => self.out.push('~'),
            TagEnd::Link | TagEnd::Image => {
                if let Some((at, url)) = self.links.pop() {
                    let label: String = self.out[at..]
                        .chars()
                        .filter(|c| !matches!(c, '|' | '*' | '_' | '~' | '`'))
                        .collect();
                    self.out.truncate(at);
                    let url = escape(&url);
                    // Inside `<…>` Slack reads `@U…` as a mention and `!here` as a ping: only
                    // web and mail addresses become links; anything else is shown as text.
                    let linkable = ["http://", "https://", "mailto:"].iter().any(|s| {
                        url.get(..s.len())
                            .is_some_and(|p| p.eq_ignore_ascii_case(s))
                    });
                    if !linkable {
                        if label.trim().is_empty() || label == url {
                            self.out.push_str(&url);
                        } else {
                            self.out.push_str(&format!("{label} ({url})"));
                        }
                    } else if label.trim().is_empty() || label == url {
                        self.out.push_str(&format!("<{url}>"));
                    } else {
                        self.out.push_str(&format!("<{url}|{label}>"));
                    }
                }
            }
            TagEnd::Table => self.block_end(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_formatting() {
        assert_eq!(
            to_mrkdwn("**Hi** _there_ ~~old~~ `x < y`"),
            "*Hi* _there_ ~old~ `x &lt; y`"
        );
    }

    #[test]
    fn special_characters_are_escaped_and_html_is_not_copied() {
        assert_eq!(to_mrkdwn("a <b> & c"), "a &lt;b&gt; &amp; c");
        assert_eq!(to_mrkdwn("<@U123> hi"), "&lt;@U123&gt; hi");
    }

    #[test]
    fn links_use_slack_syntax() {
        assert_eq!(
            to_mrkdwn("see [the docs](https://e.org/a?b=1&c=2)"),
            "see <https://e.org/a?b=1&amp;c=2|the docs>"
        );
        assert_eq!(to_mrkdwn("<https://e.org>"), "<https://e.org>");
    }

    #[test]
    fn a_link_to_anything_but_the_web_or_mail_cannot_ping_or_mention() {
        // Found by the fuzz target slack_mrkdwn: `<@…|img>` is a mention in Slack.
        assert_eq!(
            to_mrkdwn("![img](@ttps://e.org/i.png)"),
            "img (@ttps://e.org/i.png)"
        );
        assert_eq!(to_mrkdwn("[everyone](!everyone)"), "everyone (!everyone)");
        assert_eq!(to_mrkdwn("[x](mailto:a@b.c)"), "<mailto:a@b.c|x>");
        assert!(!to_mrkdwn("[a](<@U123>)").contains("<@"));
    }

    #[test]
    fn lists_headings_and_code_blocks() {
        let md =
            "# Plan\n\n- one\n- **two**\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n";
        assert_eq!(
            to_mrkdwn(md),
            "*Plan*\n\n• one\n• *two*\n\n1. first\n2. second\n\n```\nfn main() {}\n```"
        );
    }

    #[test]
    fn quotes_keep_their_marker() {
        assert_eq!(to_mrkdwn("> quoted\n\nafter"), "> quoted\n\nafter");
    }

    #[test]
    fn tables_become_lines() {
        assert_eq!(
            to_mrkdwn("| a | b |\n|---|---|\n| 1 | 2 |\n"),
            "a | b\n1 | 2"
        );
    }
}
