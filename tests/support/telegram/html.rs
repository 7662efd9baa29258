//! Telegram formatting parser for the fake Bot API: turns `HTML`, `MarkdownV2` and legacy
//! `Markdown` text into the visible text Telegram would show, or the reason Telegram gives in
//! `400 Bad Request: can't parse entities: <reason>`.
//!
//! The HTML rules and reason strings follow Telegram's server-side parser (TDLib `parse_html`):
//! tags `b strong i em u ins s strike del tg-spoiler span(class="tg-spoiler") a(href) code pre
//! blockquote(expandable) tg-emoji(emoji-id)`, case-insensitive tag names, quoted or bare
//! attribute values, `</>` closes the innermost tag. One deliberate difference: this fake only
//! accepts the entities the Bot API documents (`&lt; &gt; &amp; &quot;` and numeric `&#NN;` /
//! `&#xHH;`) and rejects any other `&`, because the docs require every bare `&` to be escaped
//! (the real server is lenient and shows an unknown `&…` literally).
//!
//! MarkdownV2 and Markdown are SIMPLIFIED: MarkdownV2 rejects unescaped reserved characters
//! ``_*[]()~`>#+-=|{}.!`` outside formatting and unclosed entities, but it does not model every
//! ambiguity rule of the real parser (e.g. `___` sequences, nested-entity restrictions).

/// Parses `text` according to `parse_mode` (case-insensitive `HTML`, `MarkdownV2`, `Markdown`;
/// `None` = plain text). `Ok(visible text)` or `Err(reason)` for "can't parse entities".
/// An unknown parse mode is `Err` with a reason starting "unsupported parse_mode".
pub fn visible_text(text: &str, parse_mode: Option<&str>) -> Result<String, String> {
    match parse_mode.map(str::to_ascii_lowercase).as_deref() {
        None | Some("") => Ok(text.to_string()),
        Some("html") => parse_html(text),
        Some("markdownv2") => parse_markdown_v2(text),
        Some("markdown") => parse_markdown_legacy(text),
        Some(other) => Err(format!("unsupported parse_mode {other}")),
    }
}

/// Length as Telegram counts it: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

const HTML_TAGS: &[&str] = &[
    "a",
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "tg-spoiler",
    "span",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
];

/// Decodes the entity starting at byte `i` (which is `&`). Returns the char and bytes consumed.
fn html_entity(text: &str, i: usize) -> Result<(char, usize), String> {
    let rest = &text[i + 1..];
    let err = || format!("Unsupported HTML entity at byte offset {i}: escape '&' as &amp;");
    let semi = rest.find(';').filter(|&n| n <= 10).ok_or_else(err)?;
    let name = &rest[..semi];
    let ch = if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
        u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
    } else if let Some(dec) = name.strip_prefix('#') {
        dec.parse::<u32>().ok().and_then(char::from_u32)
    } else {
        match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            _ => None,
        }
    };
    ch.map(|c| (c, semi + 2)).ok_or_else(err)
}

fn parse_html(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let mut out = String::new();
    let mut stack: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'&' => {
                let (c, n) = html_entity(text, i)?;
                out.push(c);
                i += n;
            }
            b'<' if at(i + 1) == b'/' => {
                let begin = i;
                if stack.is_empty() {
                    return Err(format!("Unexpected end tag at byte offset {begin}"));
                }
                i += 2;
                while i < b.len() && !at(i).is_ascii_whitespace() && at(i) != b'>' {
                    i += 1;
                }
                let name = text[begin + 2..i].to_ascii_lowercase();
                while at(i).is_ascii_whitespace() {
                    i += 1;
                }
                if at(i) != b'>' {
                    return Err(format!("Unclosed end tag at byte offset {begin}"));
                }
                i += 1;
                let open = stack.pop().unwrap_or_default();
                if !name.is_empty() && name != open {
                    return Err(format!(
                        "Unmatched end tag at byte offset {begin}, expected \"</{open}>\", found \"</{name}>\""
                    ));
                }
            }
            b'<' => {
                let begin = i;
                i += 1;
                while i < b.len() && !at(i).is_ascii_whitespace() && at(i) != b'>' {
                    i += 1;
                }
                if i >= b.len() {
                    return Err(format!("Unclosed start tag at byte offset {begin}"));
                }
                let name = text[begin + 1..i].to_ascii_lowercase();
                if !HTML_TAGS.contains(&name.as_str()) {
                    return Err(format!(
                        "Unsupported start tag \"{name}\" at byte offset {begin}"
                    ));
                }
                let mut class = String::new();
                loop {
                    while at(i).is_ascii_whitespace() {
                        i += 1;
                    }
                    match at(i) {
                        0 => return Err(format!("Unclosed start tag at byte offset {begin}")),
                        b'>' => break,
                        _ => {}
                    }
                    let attr_begin = i;
                    while i < b.len() && !at(i).is_ascii_whitespace() && !b"=>".contains(&at(i)) {
                        i += 1;
                    }
                    let attr = text[attr_begin..i].to_ascii_lowercase();
                    if attr.is_empty() {
                        return Err(format!(
                            "Empty attribute name in the tag \"{name}\" at byte offset {begin}"
                        ));
                    }
                    while at(i).is_ascii_whitespace() {
                        i += 1;
                    }
                    if at(i) != b'=' {
                        if name == "blockquote" && attr == "expandable" {
                            continue;
                        }
                        return Err(format!(
                            "Expected equal sign in declaration of an attribute of the tag \"{name}\" at byte offset {begin}"
                        ));
                    }
                    i += 1;
                    while at(i).is_ascii_whitespace() {
                        i += 1;
                    }
                    let mut value = String::new();
                    match at(i) {
                        0 => return Err(format!("Unclosed start tag at byte offset {begin}")),
                        q @ (b'"' | b'\'') => {
                            i += 1;
                            while i < b.len() && at(i) != q {
                                if at(i) == b'&' {
                                    let (c, n) = html_entity(text, i)?;
                                    value.push(c);
                                    i += n;
                                } else {
                                    let c = text[i..].chars().next().unwrap_or('\0');
                                    value.push(c);
                                    i += c.len_utf8();
                                }
                            }
                            if at(i) == q {
                                i += 1;
                            }
                        }
                        _ => {
                            let start = i;
                            while at(i).is_ascii_alphanumeric() || at(i) == b'.' || at(i) == b'-' {
                                i += 1;
                            }
                            if !at(i).is_ascii_whitespace() && at(i) != b'>' {
                                return Err(format!(
                                    "Unexpected end of name token at byte offset {start}"
                                ));
                            }
                            value = text[start..i].to_ascii_lowercase();
                        }
                    }
                    if attr == "class" {
                        class = value;
                    }
                }
                i += 1;
                if name == "span" && class != "tg-spoiler" {
                    return Err(format!(
                        "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
                    ));
                }
                stack.push(name);
            }
            _ => {
                let c = text[i..].chars().next().unwrap_or('\0');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    match stack.last() {
        Some(open) => Err(format!(
            "Can't find end tag corresponding to start tag \"{open}\""
        )),
        None => Ok(out),
    }
}

const MDV2_RESERVED: &str = "_*[]()~`>#+-=|{}.!";

type Stack = Vec<(&'static str, usize)>;

/// Opens `kind`, or closes it if it is the innermost open entity.
fn toggle(
    stack: &mut Stack,
    off: usize,
    kind: &'static str,
    width: usize,
) -> Result<usize, String> {
    match stack.iter().rposition(|&(s, _)| s == kind) {
        Some(p) if p + 1 == stack.len() => {
            stack.pop();
        }
        Some(_) => {
            let (open, at) = stack[stack.len() - 1];
            return Err(format!(
                "Can't find end of {open} entity at byte offset {at}"
            ));
        }
        None => stack.push((kind, off)),
    }
    Ok(width)
}

/// Simplified MarkdownV2 parser (see module doc).
fn parse_markdown_v2(text: &str) -> Result<String, String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let ch = |k: usize| chars.get(k).map(|&(_, c)| c);
    let mut out = String::new();
    let mut stack: Stack = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        let (off, c) = chars[k];
        let line_start = k == 0 || ch(k - 1) == Some('\n');
        // Inside code or pre: only '`' and '\' are special.
        if let Some(&(kind @ ("Code" | "Pre"), _)) = stack.last() {
            if c == '\\' && k + 1 < chars.len() {
                out.push(chars[k + 1].1);
                k += 2;
            } else if kind == "Pre" && text[off..].starts_with("```") {
                stack.pop();
                k += 3;
            } else if kind == "Code" && c == '`' {
                stack.pop();
                k += 1;
            } else {
                out.push(c);
                k += 1;
            }
            continue;
        }
        k += match c {
            '\\' => match ch(k + 1) {
                Some(n) if (n as u32) < 127 => {
                    out.push(n);
                    2
                }
                _ => {
                    return Err(format!(
                        "Character '\\' is reserved and must be escaped with the preceding '\\' (byte offset {off})"
                    ));
                }
            },
            '*' if line_start && text[off..].starts_with("**>") => 3,
            '>' if line_start => 1,
            '*' => toggle(&mut stack, off, "Bold", 1)?,
            '_' if ch(k + 1) == Some('_') => toggle(&mut stack, off, "Underline", 2)?,
            '_' => toggle(&mut stack, off, "Italic", 1)?,
            '~' => toggle(&mut stack, off, "Strikethrough", 1)?,
            '|' if ch(k + 1) == Some('|') => toggle(&mut stack, off, "Spoiler", 2)?,
            '`' if text[off..].starts_with("```") => {
                stack.push(("Pre", off));
                // The rest of the opening line names the language and is not visible.
                let mut j = k + 3;
                while j < chars.len() && !matches!(chars[j].1, '\n' | '`') {
                    j += 1;
                }
                if ch(j) == Some('\n') { j + 1 - k } else { 3 }
            }
            '`' => {
                stack.push(("Code", off));
                1
            }
            '[' => {
                stack.push(("TextUrl", off));
                1
            }
            ']' if stack.last().is_some_and(|&(s, _)| s == "TextUrl") => {
                let (_, start) = stack.pop().unwrap_or(("TextUrl", off));
                if ch(k + 1) != Some('(') {
                    return Err(format!(
                        "Can't find end of TextUrl entity at byte offset {start}"
                    ));
                }
                let mut j = k + 2;
                while j < chars.len() && chars[j].1 != ')' {
                    j += if chars[j].1 == '\\' { 2 } else { 1 };
                }
                if j >= chars.len() {
                    return Err(format!("Can't find end of a URL at byte offset {off}"));
                }
                j + 1 - k
            }
            c if MDV2_RESERVED.contains(c) => {
                return Err(format!(
                    "Character '{c}' is reserved and must be escaped with the preceding '\\'"
                ));
            }
            c => {
                out.push(c);
                1
            }
        };
    }
    match stack.last() {
        Some((kind, off)) => Err(format!(
            "Can't find end of {kind} entity at byte offset {off}"
        )),
        None => Ok(out),
    }
}

/// Simplified legacy Markdown: `*bold*`, `_italic_`, `` `code` ``, ```` ```pre``` ````,
/// `[text](url)`; no nesting; `\` escapes the next character.
fn parse_markdown_legacy(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let c = rest.chars().next().unwrap_or('\0');
        let start = i;
        let unclosed = || format!("Can't find end of the entity starting at byte offset {start}");
        let (closer, skip) = match c {
            '\\' => {
                let n = rest[1..].chars().next().unwrap_or('\\');
                out.push(n);
                i += 1 + n.len_utf8();
                continue;
            }
            '`' if rest.starts_with("```") => ("```", 3),
            '*' | '_' | '`' => (&rest[..1], 1),
            '[' => ("](", 1),
            _ => {
                out.push(c);
                i += c.len_utf8();
                continue;
            }
        };
        let end = rest[skip..].find(closer).ok_or_else(unclosed)? + skip;
        out.push_str(&rest[skip..end]);
        i += end + closer.len();
        if c == '[' {
            i += text[i..].find(')').ok_or_else(unclosed)? + 1;
        }
    }
    Ok(out)
}
