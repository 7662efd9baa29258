//! Markdown (what the model writes) to the two bodies of a Matrix message: `formatted_body` in
//! `org.matrix.custom.html` and the plain `body` that clients without HTML show.
//!
//! Matrix clients sanitize HTML themselves and accept the tags CommonMark produces (`p strong em
//! del code pre a ul ol li blockquote h1-h6 table hr br`), so pulldown-cmark's renderer fits. Raw
//! HTML in the model's text is never passed through: it is shown as text, so a model cannot inject
//! markup (or a fake mention pill) into the room.

use pulldown_cmark::{Event, Options, Parser, html};

/// Both bodies of a message: `(plain, html)`. The plain body is the markdown as written, which
/// is how people read markdown anyway.
pub fn render(markdown: &str) -> (String, String) {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TABLES);
    let parser = Parser::new_ext(markdown, opts).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, parser);
    let out = out.trim_end().to_owned();
    (markdown.trim_end().to_owned(), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html_and_plain_keeps_the_source() {
        let (plain, html) = render("**Hi** `x` and\n\n```rust\nfn main() {}\n```\n");
        assert_eq!(plain, "**Hi** `x` and\n\n```rust\nfn main() {}\n```");
        assert!(html.contains("<strong>Hi</strong>"), "{html}");
        assert!(html.contains("<code>x</code>"), "{html}");
        assert!(
            html.contains("<pre><code class=\"language-rust\">fn main() {}"),
            "{html}"
        );
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let (_, html) = render("a <b>bold</b> <a href=\"https://matrix.to/#/@x:y\">pill</a>");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("<a "), "{html}");
        assert!(html.contains("&lt;b&gt;bold&lt;/b&gt;"), "{html}");
    }

    #[test]
    fn ampersands_and_angle_brackets_are_escaped() {
        let (_, html) = render("1 < 2 & 3 > 2");
        assert_eq!(html, "<p>1 &lt; 2 &amp; 3 &gt; 2</p>");
    }
}
