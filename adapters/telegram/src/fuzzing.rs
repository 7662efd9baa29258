//! Exists for the fuzz targets in `fuzz/`: the adapter's private parsing steps, and the checker
//! of Telegram's HTML subset that the formatter's unit tests use. Not an API.

use hermes_adapter::Message;
pub use teloxide::types::Update;

use crate::inbound::{self, BotIdentity, Inbound};

/// The listener's fallback for a `getUpdates` body teloxide cannot parse as a whole.
pub fn salvage(raw: &str) -> (Vec<Update>, Option<i32>) {
    crate::salvage(raw)
}

/// The update converted as the listener converts it; `None` for an update it skips.
pub fn convert(update: &Update, me: &BotIdentity) -> Option<Message> {
    match inbound::convert(update, me) {
        Inbound::Message(m) | Inbound::Button(m, _) => Some(m),
        Inbound::Skip => None,
    }
}

/// Panics unless `html` uses only Telegram's tags and entities, balanced and nested the way
/// Telegram allows (nothing inside code, no quote in a quote, no link in a link). Returns the
/// text Telegram shows: tags removed, entities decoded.
pub fn visible_html(html: &str) -> String {
    let (mut stack, mut shown, mut rest) = (Vec::new(), String::new(), html);
    while let Some(c) = rest.chars().next() {
        assert_ne!(c, '>', "unescaped > in {html}");
        if c == '&' {
            let (entity, after) = rest.split_once(';').expect("unterminated entity");
            let decoded = ["&lt", "&gt", "&amp", "&quot"]
                .iter()
                .position(|e| *e == entity);
            shown.push(b"<>&\""[decoded.expect("entity Telegram rejects")] as char);
            rest = after;
            continue;
        } else if c != '<' {
            shown.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let (tag, after) = rest[1..].split_once('>').expect("unterminated tag");
        rest = after;
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name), "mis-nested </{name}> in {html}");
            continue;
        }
        let (name, attr) = tag.split_once(' ').unwrap_or((tag, ""));
        let quoted = |prefix: &str| {
            let value = attr.strip_prefix(prefix).and_then(|v| v.strip_suffix('"'));
            value.is_some_and(|v| !v.contains(['"', '<']))
        };
        let parent = stack.last().copied();
        let allowed = match name {
            "b" | "i" | "u" | "s" | "tg-spoiler" | "pre" => attr.is_empty(),
            "code" if attr.is_empty() => !stack.contains(&"a"),
            "code" => parent == Some("pre") && quoted("class=\"language-"),
            "blockquote" => attr.is_empty() && !stack.contains(&"blockquote"),
            "a" => !stack.contains(&"a") && quoted("href=\""),
            _ => false,
        };
        let in_code = matches!(parent, Some("code" | "pre")) && name != "code";
        let repeated = matches!(name, "b" | "i" | "s") && stack.contains(&name);
        assert!(!repeated, "<{name}> inside <{name}>: {html}");
        assert!(allowed && !in_code, "<{tag}> not allowed here: {html}");
        stack.push(name);
    }
    assert!(stack.is_empty(), "unclosed {stack:?} in {html}");
    shown
}
