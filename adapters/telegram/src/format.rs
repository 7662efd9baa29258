//! Markdown (what the model writes) to the HTML subset Telegram accepts with `parse_mode=HTML`.
//!
//! Telegram refuses the whole message ("can't parse entities") when it meets a tag it does not
//! know, an entity other than `&lt; &gt; &amp; &quot;`, or tags that are not properly nested. So
//! the renderer never copies HTML from the input: raw HTML is shown as escaped text, and every tag
//! comes from a fixed set (`b i s code pre a blockquote`). Tags are opened lazily, when the first
//! visible character inside them is written, so empty elements (`#` alone, `>` alone) leave no
//! empty tag behind.
//!
//! The caller splits the markdown at Telegram's length limit before rendering, and Telegram counts
//! the limit on the *visible* text. The rendering must therefore never be longer, in UTF-16 units,
//! than its input. Almost every construct is replaced by something no longer than its markup
//! (`- ` becomes `• `, `***` becomes `———`, a blank line between blocks is kept only where the
//! source has one). The few that can grow (lists renumbered past the digits the author wrote,
//! `|` widened to ` | ` in tables) are measured: if the result is too long, the list numbers and
//! cell separators are taken literally from the source, and if even that is too long the input is
//! sent as escaped plain text.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Renders `markdown` as Telegram HTML whose visible text is never longer (in UTF-16 code units)
/// than `markdown` itself. For example, the first line below renders as the second:
///
/// ```text
/// **Hi** <b> & [docs](https://e.org)
/// <b>Hi</b> &lt;b&gt; &amp; <a href="https://e.org">docs</a>
/// ```
pub fn to_telegram_html(markdown: &str) -> String {
    let budget = markdown.encode_utf16().count();
    for style in [Style::Pretty, Style::Literal] {
        let renderer = Renderer {
            src: markdown,
            style,
            ..Renderer::default()
        };
        let (html, visible) = renderer.render();
        if visible <= budget {
            return html;
        }
    }
    let mut plain = String::new();
    escape_into(&mut plain, markdown.trim_end(), false);
    plain
}

/// How faithfully list numbers and table separators follow the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Style {
    /// Ordered lists renumbered from their start, table cells joined by ` | `.
    #[default]
    Pretty,
    /// Numbers as the author wrote them, cells joined by `|`: never longer than the source.
    Literal,
}

/// An element whose opening tag is written only once something visible goes inside it. The
/// default frame has no tags: it renders only its content (a link we may not show, a nested
/// quote).
#[derive(Default)]
struct Frame {
    open: String,
    close: &'static str,
    written: bool,
    /// Visible text for a link that would otherwise be empty (its URL).
    fallback: Option<String>,
}

impl Frame {
    fn tag(open: impl Into<String>, close: &'static str) -> Self {
        let open = open.into();
        Frame {
            open,
            close,
            ..Frame::default()
        }
    }
}

#[derive(Default)]
struct Renderer<'a> {
    src: &'a str,
    style: Style,
    out: String,
    /// UTF-16 units of visible text written so far.
    visible: usize,
    frames: Vec<Frame>,
    /// Whitespace owed before the next visible text: a block separator or the space after a list
    /// marker. Dropped if nothing follows, so the output never ends in whitespace.
    pending: &'static str,
    /// Something visible was written in the current container since the last block began.
    needs_sep: bool,
    /// Next number of each open list (`None` for bullet lists).
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    link_depth: usize,
    /// Text of the code or HTML block being read, written whole when the block ends.
    raw: Option<String>,
    /// The current table already has a row, the current row a cell.
    table_has_row: bool,
    row_has_cell: bool,
}

impl<'a> Renderer<'a> {
    /// Returns the HTML and the UTF-16 length of its visible text.
    fn render(mut self) -> (String, usize) {
        let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
        for (event, range) in Parser::new_ext(self.src, options).into_offset_iter() {
            self.event(event, range.start);
        }
        while !self.frames.is_empty() {
            self.pop();
        }
        let trimmed = self.out.trim_end().len();
        self.out.truncate(trimmed);
        (self.out, self.visible)
    }

    fn event(&mut self, event: Event<'a>, at: usize) {
        match event {
            Event::Start(tag) => self.start(tag, at),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Html(text) => match &mut self.raw {
                Some(buf) => buf.push_str(&text),
                None => self.text(&text),
            },
            Event::InlineHtml(text) | Event::InlineMath(text) | Event::DisplayMath(text) => {
                self.text(&text);
            }
            Event::Code(code) if self.link_depth > 0 => self.text(&code),
            Event::Code(code) => {
                self.frames.push(Frame::tag("<code>", "</code>"));
                self.text(&code);
                self.pop();
            }
            Event::SoftBreak | Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.begin_block(at);
                self.text("———");
            }
            // Footnotes and task lists are not enabled.
            Event::FootnoteReference(_) | Event::TaskListMarker(_) => {}
        }
    }

    fn start(&mut self, tag: Tag<'a>, at: usize) {
        match tag {
            Tag::Paragraph => self.begin_block(at),
            Tag::Heading { .. } => {
                self.begin_block(at);
                self.push_style("<b>", "</b>");
            }
            Tag::BlockQuote(_) => {
                self.begin_block(at);
                // Telegram does not nest quotes; inner ones merge into the outer one.
                let frame = match self.quote_depth {
                    0 => Frame::tag("<blockquote>", "</blockquote>"),
                    _ => Frame::default(),
                };
                self.frames.push(frame);
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.begin_block(at);
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => language(info),
                    CodeBlockKind::Indented => None,
                };
                self.frames.push(match lang {
                    Some(lang) => Frame::tag(
                        format!("<pre><code class=\"language-{lang}\">"),
                        "</code></pre>",
                    ),
                    None => Frame::tag("<pre>", "</pre>"),
                });
                self.raw = Some(String::new());
            }
            Tag::HtmlBlock => {
                self.begin_block(at);
                self.raw = Some(String::new());
            }
            Tag::List(first) => self.lists.push(first),
            Tag::Item => self.item(at),
            Tag::Table(_) => {
                self.begin_block(at);
                self.table_has_row = false;
            }
            Tag::TableHead | Tag::TableRow => {
                if self.table_has_row {
                    self.pending = "\n";
                }
                (self.table_has_row, self.row_has_cell) = (true, false);
                if matches!(tag, Tag::TableHead) {
                    self.push_style("<b>", "</b>");
                }
            }
            Tag::TableCell => {
                if self.row_has_cell {
                    self.text(if self.style == Style::Pretty {
                        " | "
                    } else {
                        "|"
                    });
                }
                self.row_has_cell = true;
            }
            Tag::Emphasis => self.push_style("<i>", "</i>"),
            Tag::Strong => self.push_style("<b>", "</b>"),
            Tag::Strikethrough => self.push_style("<s>", "</s>"),
            Tag::Link {
                link_type,
                dest_url,
                ..
            }
            | Tag::Image {
                link_type,
                dest_url,
                ..
            } => {
                self.link(link_type, dest_url);
            }
            // Not enabled: footnotes, definition lists, super/subscript, metadata blocks.
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_)
            | TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::TableHead => self.pop(),
            TagEnd::BlockQuote(_) => {
                self.pop();
                self.quote_depth = self.quote_depth.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                self.flush_raw();
                self.pop();
            }
            TagEnd::HtmlBlock => self.flush_raw(),
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Item => self.needs_sep = true,
            TagEnd::Link | TagEnd::Image => {
                self.link_depth = self.link_depth.saturating_sub(1);
                if let Some(frame) = self.frames.last_mut()
                    && !frame.written
                    && let Some(url) = frame.fallback.take()
                {
                    self.text(&url);
                }
                self.pop();
            }
            _ => {}
        }
    }

    /// Starts a block: owes a separator if the container already shows something, a blank line
    /// only where the source has one.
    fn begin_block(&mut self, at: usize) {
        if self.needs_sep {
            let blank = blank_line_before(self.src, at);
            self.pending = if blank { "\n\n" } else { "\n" };
            self.needs_sep = false;
        }
    }

    fn item(&mut self, at: usize) {
        self.begin_block(at);
        // An item opening right after its parent's marker (`- - a`) stays on that line.
        if self.pending != " " {
            self.text(&"  ".repeat(self.lists.len().saturating_sub(1)));
        }
        let marker = match self.lists.last_mut() {
            Some(Some(next)) => {
                let written = self.src.get(at..).unwrap_or("").trim_start();
                let digits = written.split(|c: char| !c.is_ascii_digit()).next();
                let number = match (self.style, digits) {
                    (Style::Literal, Some(d)) if !d.is_empty() => d.to_owned(),
                    _ => next.to_string(),
                };
                *next = next.saturating_add(1);
                format!("{number}.")
            }
            _ => "•".to_owned(),
        };
        self.text(&marker);
        self.pending = " ";
        self.needs_sep = false;
    }

    fn link(&mut self, link_type: LinkType, url: CowStr<'a>) {
        let href = match link_type {
            LinkType::Email if !url.starts_with("mailto:") => format!("mailto:{url}"),
            _ => url.to_string(),
        };
        let frame = if self.link_depth == 0 && linkable(&href) {
            let mut open = String::from("<a href=\"");
            escape_into(&mut open, &href, true);
            open.push_str("\">");
            let fallback = Some(url.to_string());
            Frame {
                fallback,
                ..Frame::tag(open, "</a>")
            }
        } else {
            Frame::default()
        };
        self.frames.push(frame);
        self.link_depth += 1;
    }

    /// Opens a text style, unless it is already in effect (`**bold**` in a heading).
    fn push_style(&mut self, open: &'static str, close: &'static str) {
        let active = self.frames.iter().any(|f| f.close == close);
        self.frames.push(if active {
            Frame::default()
        } else {
            Frame::tag(open, close)
        });
    }

    fn flush_raw(&mut self) {
        if let Some(raw) = self.raw.take() {
            self.text(raw.strip_suffix('\n').unwrap_or(&raw));
        }
    }

    /// Writes visible text, preceded by owed whitespace and the tags still waiting to open.
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.out.push_str(self.pending);
        self.visible += self.pending.len();
        self.pending = "";
        for frame in self.frames.iter_mut().filter(|f| !f.written) {
            self.out.push_str(&frame.open);
            frame.written = true;
        }
        escape_into(&mut self.out, text, false);
        self.visible += text.encode_utf16().count();
        self.needs_sep = true;
    }

    fn pop(&mut self) {
        if let Some(frame) = self.frames.pop()
            && frame.written
        {
            self.out.push_str(frame.close);
        }
    }
}

/// Whether the source line before the one holding byte `at` is blank (quote markers aside).
fn blank_line_before(src: &str, at: usize) -> bool {
    let before = src.get(..at).unwrap_or("");
    let Some(line_start) = before.rfind('\n') else {
        return false;
    };
    let previous = before[..line_start].rsplit('\n').next().unwrap_or("");
    previous.chars().all(|c| c.is_whitespace() || c == '>')
}

/// The language of a fenced block's info string, if it is a plain identifier (`rust`, `c++`).
fn language(info: &str) -> Option<String> {
    let lang: String = info
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || "+-_.#".contains(*c))
        .collect();
    (!lang.is_empty()).then_some(lang)
}

/// Whether Telegram may be given `url` as a link: web, `tg:` and `mailto:` only.
fn linkable(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let schemes = ["http://", "https://", "tg://", "mailto:"];
    schemes
        .iter()
        .any(|s| lower.len() > s.len() && lower.starts_with(s))
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn escape_into(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fuzzing::visible_html as visible;

    /// Renders, checks both guarantees, and returns the HTML.
    fn render(markdown: &str) -> String {
        let html = to_telegram_html(markdown);
        let shown = visible(&html).encode_utf16().count();
        let source = markdown.encode_utf16().count();
        assert!(
            shown <= source,
            "{shown} > {source}: {markdown:?} -> {html:?}"
        );
        assert_eq!(html, html.trim_end(), "trailing whitespace");
        html
    }

    fn assert_renders(cases: &[(&str, &str)]) {
        for (markdown, html) in cases {
            assert_eq!(render(markdown), *html, "rendering {markdown:?}");
        }
    }

    /// Inputs beyond those of the rendering tests, most of them hostile to one guarantee.
    const CORPUS: &[&str] = &[
        "*a **b\n\n**unclosed _x",
        "a <b>b</b> &amp; &lt; & < > \"q\" <script>alert(1)</script>",
        "# H1\n## H2 *x*\ntext\n\n#\n\n######\n\nIntro:\n- a\n- b\n  - c\n    - d\n- e",
        "-\n-\n-\n- \n-\n\n- - - a\n\n- - a\n  - b\n\n9. a\n10. b\n\n0. z\n\n3) x\n4) y",
        "> quote\n>\n> > nested\n\nafter\n>\n\n>\n\n> - a\n>   - b\n> ```rust\n> code\n> ```",
        "***\n***\n---\n___\n- - -\n|a|b|c|d|\n|-|-|-|-|\n|e|f|g|h|\n|i|j|k|l|",
        "a|b|c|d|e|f\n-|-|-|-|-|-\n1|2|3|4|5|6\n1|2|3|4|5|6\n1|2|3|4|5|6",
        "| h | `c` |\n|---|---|\n| **b** | [l](http://x) |\n| | |",
        "```rust\nfn main() {}\n```\n```\nplain & <raw>\n```\n~~~py title\nx\n~~~\n```\n```\n\n```",
        "[q](<http://a \"b\">) [t](http://t \"title\") <http://x.y/a?b&c> [\"](http://\"\")",
        "![alt](http://i.png) ![](http://j.png) [![in](http://i)](http://l) ![x](data:x)",
        "emoji 😀👍🏽 and CJK 漢字 **粗体** `😀`\n\n😀\n- 😀\n- 漢\r\nb\r\n\r\n- c\r\n- d",
        "\\*not\\* \\<tag\\> \\&amp; &#128512; &copy; &nbsp;&NotNestedGreaterGreater;",
        "- a\n\n  para in item\n\n  ```\n  code in item\n  ```\n- b\n\t- tab\n\t\t- tab2\n-\tx",
        ">\t\tcode in quote\n\n***bold italic*** ~strike~ **`c`** trailing   ",
    ];

    #[test]
    fn hostile_inputs_give_valid_telegram_html_never_longer() {
        for markdown in CORPUS {
            render(markdown);
        }
        let pieces = [
            "- a", "1. b", "  - c", "x", "> q", "# h", "|a|b|", "|-|-|", "```", "`", "**", "_",
            "[l](u)", "<i>", "&amp;", "😀", "漢", "", "***", "    c", "~~", "\t", "10) x", "\\",
        ];
        for (i, a) in pieces.iter().enumerate() {
            for b in &pieces {
                for sep in ["\n", "\n\n", " ", ""] {
                    render(&format!("{a}{sep}{b}{sep}{a}"));
                    render(&format!("{}{sep}{b}", pieces[(i * 7 + 3) % pieces.len()]));
                }
            }
        }
        render(&"- x\n".repeat(300));
        render(&"1. x\n".repeat(300));
        let deep: String = (0..40).map(|d| "  ".repeat(d) + "- x\n").collect();
        render(&deep);
        render(&"|a|b|c|\n|-|-|-|\n".repeat(50));
        render(&"a|b|c|d|e|f|g|h\n-|-|-|-|-|-|-|-\n".to_owned().repeat(20));
    }

    // The case tables below are laid out by hand, one case a line.

    #[test]
    #[rustfmt::skip]
    fn inline_styles_map_to_telegram_tags() {
        assert_renders(&[
            ("**b** *i* ~~s~~ `c`", "<b>b</b> <i>i</i> <s>s</s> <code>c</code>"),
            ("**a *b* c**", "<b>a <i>b</i> c</b>"),
            ("line  \nhard\nsoft", "line\nhard\nsoft"),
            // The example in the documentation of `to_telegram_html`.
            ("**Hi** <b> & [docs](https://e.org)",
                "<b>Hi</b> &lt;b&gt; &amp; <a href=\"https://e.org\">docs</a>"),
        ]);
    }

    #[test]
    #[rustfmt::skip]
    fn text_and_raw_html_are_escaped_never_passed_through() {
        assert_renders(&[
            ("a < b & c > d", "a &lt; b &amp; c &gt; d"),
            ("<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"),
            ("<div>\nhi\n</div>\n\nnext", "&lt;div&gt;\nhi\n&lt;/div&gt;\n\nnext"),
            ("&amp; already", "&amp; already"),
            ("`<b>`", "<code>&lt;b&gt;</code>"),
        ]);
    }

    #[test]
    #[rustfmt::skip]
    fn code_blocks_become_pre_with_language() {
        assert_renders(&[
            ("```rust\nlet a = 1 < 2;\n```",
                "<pre><code class=\"language-rust\">let a = 1 &lt; 2;</code></pre>"),
            ("~~~c++ {x}\ny\n~~~", "<pre><code class=\"language-c++\">y</code></pre>"),
            ("```\nplain\n```", "<pre>plain</pre>"),
            ("    indented\n    two", "<pre>indented\ntwo</pre>"),
            ("```\n```\n\ntext", "text"),
        ]);
    }

    #[test]
    #[rustfmt::skip]
    fn links_and_images_keep_safe_schemes_and_escape_the_href() {
        assert_renders(&[
            ("[x](https://e.com/?a=1&b=\"2\")",
                "<a href=\"https://e.com/?a=1&amp;b=&quot;2&quot;\">x</a>"),
            ("[x](javascript:alert(1)) [y](/relative)", "x y"),
            ("[](http://e.org)", "<a href=\"http://e.org\">http://e.org</a>"),
            ("<me@x.org>", "<a href=\"mailto:me@x.org\">me@x.org</a>"),
            ("[`c` **d**](tg://user?id=1)", "<a href=\"tg://user?id=1\">c <b>d</b></a>"),
            ("![a cat](http://c.png)", "<a href=\"http://c.png\">a cat</a>"),
            ("[![in](http://i)](http://l)", "<a href=\"http://l\">in</a>"),
            ("![alt](data:x)", "alt"),
        ]);
    }

    #[test]
    #[rustfmt::skip]
    fn lists_use_bullets_numbers_and_indentation() {
        assert_renders(&[
            ("- a\n- b\n  - c\n    - d", "• a\n• b\n  • c\n    • d"),
            ("3. x\n4. y\n   1. z", "3. x\n4. y\n  1. z"),
            ("Intro:\n- a", "Intro:\n• a"),
            ("-\n- a", "•\n• a"),
            ("- a\n\n- b", "• a\n\n• b"),
        ]);
    }

    #[test]
    fn renumbering_that_would_grow_keeps_the_written_numbers() {
        let html = render(&"1. x\n".repeat(12));
        assert_eq!(html, "1. x\n".repeat(12).trim_end());
        // Markup elsewhere pays for the wider numbers.
        assert!(render(&"1. **a**\n".repeat(12)).ends_with("\n12. <b>a</b>"));
    }

    #[test]
    #[rustfmt::skip]
    fn headings_quotes_rules_tables_and_separators() {
        assert_renders(&[
            ("# Title\nText", "<b>Title</b>\nText"),
            ("## A\n\nB\n---\nx", "<b>A</b>\n\n<b>B</b>\nx"),
            ("# A **b** *c*", "<b>A b <i>c</i></b>"),
            ("> a\n> b\n\nc", "<blockquote>a\nb</blockquote>\n\nc"),
            ("> a\n>\n> > b", "<blockquote>a\n\nb</blockquote>"),
            ("a\n\n***\n\nb", "a\n\n———\n\nb"),
            ("| h1 | h2 |\n|----|----|\n| a | **b** |", "<b>h1 | h2</b>\na | <b>b</b>"),
            ("a|b|c\n-|-|-\nd|e|f", "<b>a|b|c</b>\nd|e|f"),
            ("one\ntwo\n\n\n\nthree\n\n", "one\ntwo\n\nthree"),
            ("#\n\n>\n\nonly", "only"),
            ("   \n", ""),
            ("", ""),
        ]);
    }

    #[test]
    #[rustfmt::skip]
    fn the_checker_rejects_what_telegram_rejects() {
        let bad = ["<b>x", "<b><i>x</b></i>", "<div>x</div>", "a > b", "&nbsp;", "&amp", "</b>",
            "<code><b>x</b></code>", "<pre><i>x</i></pre>", "<code class=\"language-x\">y</code>",
            "<blockquote><blockquote>x</blockquote></blockquote>", "<a href='x'>y</a>"];
        for html in bad {
            assert!(std::panic::catch_unwind(|| visible(html)).is_err(), "accepted {html}");
        }
        let good = "<pre><code class=\"language-rs\">a &lt; b</code></pre><a href=\"h\">&quot;</a>";
        assert_eq!(visible(good), "a < b\"", "decoded");
    }
}
