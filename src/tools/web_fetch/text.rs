//! Turning a fetched body into text for the model: which content types are readable, decoding,
//! HTML to plain text (headings, paragraphs, lists and links kept; scripts, styles, navigation
//! and forms dropped), and cutting to a number of characters.

use std::borrow::Cow;

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Html,
    Text,
}

/// The kind of a `Content-Type`, or `Err(media type)` for one the model cannot read. A missing
/// type is read as text (and refused later if the body turns out to be binary).
pub(super) fn kind_of(content_type: Option<&str>) -> Result<Kind, String> {
    let Some(content_type) = content_type else {
        return Ok(Kind::Text);
    };
    let essence = media_type(content_type);
    match essence.as_str() {
        "text/html" | "application/xhtml+xml" => Ok(Kind::Html),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-ndjson" => Ok(Kind::Text),
        e if e.starts_with("text/") || e.ends_with("+json") || e.ends_with("+xml") => {
            Ok(Kind::Text)
        }
        _ => Err(essence),
    }
}

/// `text/html; charset=UTF-8` -> `text/html`.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether a body without a declared type looks binary.
pub(super) fn looks_binary(body: &[u8]) -> bool {
    body.iter().take(4096).any(|b| *b == 0)
}

/// The body as a string: Latin-1 when the type says so, UTF-8 otherwise (invalid sequences
/// become U+FFFD; a multi-byte character cut by the byte cap is dropped).
pub(super) fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let charset = content_type
        .and_then(|ct| {
            ct.split(';')
                .find_map(|p| p.trim().strip_prefix("charset="))
                .map(|c| c.trim_matches('"').to_ascii_lowercase())
        })
        .unwrap_or_default();
    if matches!(
        charset.as_str(),
        "iso-8859-1" | "latin1" | "latin-1" | "us-ascii" | "windows-1252"
    ) {
        return body.iter().map(|b| char::from(*b)).collect();
    }
    let body = match std::str::from_utf8(body) {
        Err(e) if e.error_len().is_none() => &body[..e.valid_up_to()],
        _ => body,
    };
    String::from_utf8_lossy(body).into_owned()
}

/// Elements that carry no reading matter.
const HIDDEN: &str = "nav, footer, aside, noscript, template, svg, form, button, select, iframe, \
    [hidden], [aria-hidden=true] { display: none }";
/// Text is wrapped at this many columns (long words and tables may overflow it).
const WIDTH: usize = 120;

/// Readable text of an HTML document: headings marked with `#`, lists with `*`, links as
/// `[text][n]` with the addresses listed at the end. CPU-bound: call it off the async runtime.
pub(crate) fn html_to_text(html: &str) -> String {
    let html = limit_nesting(html, MAX_DEPTH);
    let config = html2text::config::plain();
    let config = config
        .add_agent_css(HIDDEN)
        .unwrap_or_else(|_| html2text::config::plain());
    let text = config
        .allow_width_overflow()
        .string_from_read(html.as_bytes(), WIDTH)
        .unwrap_or_else(|e| format!("[the page could not be converted to text: {e}]"));
    tidy(&text)
}

/// Elements nested deeper than this lose their tags (not their text) before parsing.
const MAX_DEPTH: usize = 128;
/// Elements that are empty or whose end tag is implied: they do not deepen the nesting.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option",
];
/// Elements whose content is raw text, not markup; they do not deepen the nesting either.
const RAW_TEXT: &[&str] = &["script", "style", "textarea", "title", "xmp"];

/// `html` with the start and end tags of elements nested deeper than `max` removed (their text
/// stays). The HTML parser checks element scope by walking the stack of open elements, which
/// makes a page of thousands of nested `<div>`s take minutes; browsers cap the depth likewise.
/// A linear scan that only approximates the parser (implied end tags aside), which is enough:
/// ordinary pages stay untouched.
fn limit_nesting(html: &str, max: usize) -> Cow<'_, str> {
    let lower = html.to_ascii_lowercase();
    let mut out = String::new();
    let (mut depth, mut copied, mut at) = (0usize, 0, 0);
    while let Some(found) = lower[at..].find('<') {
        let start = at + found;
        if lower[start..].starts_with("<!--") {
            at = lower[start..]
                .find("-->")
                .map_or(lower.len(), |e| start + e + 3);
            continue;
        }
        let closing = lower[start..].starts_with("</");
        let name_start = start + if closing { 2 } else { 1 };
        let name_len = lower[name_start..]
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(lower.len() - name_start);
        if !lower[name_start..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            at = start + 1;
            continue;
        }
        let name = &lower[name_start..name_start + name_len];
        let end = tag_end(&lower, name_start + name_len);
        at = end;
        if RAW_TEXT.contains(&name) {
            // Contains no elements: skip its text, never drop its tags (that would show a script).
            if !closing {
                at = lower[end..]
                    .find(&format!("</{name}"))
                    .map_or(lower.len(), |e| end + e);
            }
            continue;
        }
        if NOT_NESTING.contains(&name) || (!closing && lower[..end].ends_with("/>")) {
            continue;
        }
        let too_deep = if closing {
            let deep = depth > max;
            depth = depth.saturating_sub(1);
            deep
        } else {
            depth += 1;
            depth > max
        };
        if too_deep {
            out.push_str(&html[copied..start]);
            out.push(' ');
            copied = end;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(html);
    }
    out.push_str(&html[copied..]);
    Cow::Owned(out)
}

/// Index just past the `>` closing a tag whose attributes start at `from` (quotes respected).
fn tag_end(html: &str, from: usize) -> usize {
    let mut quote = None;
    for (i, b) in html.bytes().enumerate().skip(from) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if q == b => quote = None,
            (None, b'>') => return i + 1,
            _ => {}
        }
    }
    html.len()
}

/// Trailing spaces removed and runs of blank lines collapsed to one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines().map(str::trim_end) {
        blank_run = if line.is_empty() { blank_run + 1 } else { 0 };
        if blank_run <= 1 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim().to_owned()
}

/// The link list html2text puts at the end (`[3]: /docs`) with addresses made absolute against
/// the page's URL, so that the model can fetch them.
pub(super) fn absolute_links(text: &str, base: &reqwest::Url) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let list_start = lines.len()
        - lines
            .iter()
            .rev()
            .take_while(|l| footnote(l).is_some())
            .count();
    let mut out: Vec<String> = lines[..list_start].iter().map(|l| l.to_string()).collect();
    for line in &lines[list_start..] {
        let (label, target) = footnote(line).unwrap_or_default();
        match base.join(target) {
            Ok(url) => out.push(format!("{label}]: {url}")),
            Err(_) => out.push(line.to_string()),
        }
    }
    out.join("\n")
}

/// `[12]: target` -> (`[12`, `target`).
fn footnote(line: &str) -> Option<(&str, &str)> {
    let (label, target) = line.split_once("]: ")?;
    let number = label.strip_prefix('[')?;
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some((label, target))
}

/// `text` cut to `max` characters, and the number of characters left out.
pub(super) fn cut_chars(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        None => (text, 0),
        Some((at, _)) => (&text[..at], text[at..].chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_sorted_into_readable_and_not() {
        assert_eq!(kind_of(Some("text/html; charset=utf-8")), Ok(Kind::Html));
        assert_eq!(kind_of(Some("application/xhtml+xml")), Ok(Kind::Html));
        assert_eq!(kind_of(Some("text/plain")), Ok(Kind::Text));
        assert_eq!(kind_of(Some("Application/JSON")), Ok(Kind::Text));
        assert_eq!(kind_of(Some("application/ld+json")), Ok(Kind::Text));
        assert_eq!(kind_of(Some("application/rss+xml")), Ok(Kind::Text));
        assert_eq!(kind_of(None), Ok(Kind::Text));
        assert_eq!(kind_of(Some("image/png")), Err("image/png".into()));
        assert_eq!(
            kind_of(Some("application/pdf")),
            Err("application/pdf".into())
        );
        assert!(looks_binary(b"PK\x03\x04\0\0"));
        assert!(!looks_binary(b"plain"));
    }

    #[test]
    fn html_keeps_the_reading_matter_and_drops_the_rest() {
        let html = r#"<html><head><title>T</title><style>body { color: red }</style>
            <script>var secret = "SCRIPT-CONTENT";</script></head><body>
            <nav><a href="/">Home</a> | <a href="/about">NAV-LINK</a></nav>
            <h1>Main title</h1><p>First <b>paragraph</b> with a <a href="https://example.org/x">link</a>.</p>
            <ul><li>one</li><li>two</li></ul>
            <script>document.write("MORE-SCRIPT")</script>
            <footer>FOOTER-TEXT</footer></body></html>"#;
        let text = html_to_text(html);
        for kept in [
            "Main title",
            "First",
            "paragraph",
            "link",
            "one",
            "two",
            "https://example.org/x",
        ] {
            assert!(text.contains(kept), "`{kept}` missing from:\n{text}");
        }
        for dropped in [
            "SCRIPT-CONTENT",
            "MORE-SCRIPT",
            "color: red",
            "NAV-LINK",
            "FOOTER-TEXT",
        ] {
            assert!(!text.contains(dropped), "`{dropped}` kept in:\n{text}");
        }
        assert!(!text.contains("\n\n\n"));
    }

    #[test]
    fn deeply_nested_markup_is_flattened_and_stays_fast() {
        let html = format!(
            "{}deep{}",
            "<div>".repeat(100_000),
            "</div>".repeat(100_000)
        );
        let started = std::time::Instant::now();
        assert!(html_to_text(&html).contains("deep"));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );

        let nested = "<div><b>1</b><div>2<div>3<span>4</span></div></div></div>";
        assert_eq!(limit_nesting(nested, 4), Cow::Borrowed(nested));
        assert_eq!(
            limit_nesting(nested, 2),
            "<div><b>1</b><div>2 3 4  </div></div>"
        );
        // Markup inside scripts, comments and attribute values is not counted.
        let tricky = r#"<div title="<div>"><script>"<div><div>"</script><!-- <div><div> --></div>"#;
        assert_eq!(limit_nesting(tricky, 1), Cow::Borrowed(tricky));
        assert_eq!(
            limit_nesting("a < b <br> <p>x<p>y", 0),
            "a < b <br> <p>x<p>y"
        );
    }

    #[test]
    fn bodies_are_decoded_by_charset() {
        assert_eq!(
            decode(b"caf\xe9", Some("text/plain; charset=ISO-8859-1")),
            "café"
        );
        assert_eq!(decode("café".as_bytes(), Some("text/plain")), "café");
        // A character cut in half by the byte cap is dropped, not replaced.
        assert_eq!(decode(&"café".as_bytes()[..4], None), "caf");
    }

    #[test]
    fn links_are_made_absolute() {
        let base = reqwest::Url::parse("https://example.org/docs/page").unwrap();
        let text = "See [1]: not a link\n\n[1]: /next\n[2]: other#x\n[3]: https://a.example/";
        assert_eq!(
            absolute_links(text, &base),
            "See [1]: not a link\n\n[1]: https://example.org/next\n\
             [2]: https://example.org/docs/other#x\n[3]: https://a.example/"
        );
        assert_eq!(absolute_links("no links", &base), "no links");
    }

    #[test]
    fn text_is_cut_on_character_boundaries() {
        assert_eq!(cut_chars("héllo", 10), ("héllo", 0));
        assert_eq!(cut_chars("héllo", 2), ("hé", 3));
    }
}
