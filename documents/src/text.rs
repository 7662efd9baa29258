//! Text formats: plain text and code, Markdown, JSON, HTML (returned as its source: the caller
//! renders it), CSV and TSV (cut by rows). Decodes UTF-8 and UTF-16 with a byte-order mark;
//! refuses binary data.

use crate::{Document, Error, Format, Limits, tidy};

/// Extensions of source code and plain-text files read as text.
pub(crate) const CODE_EXTENSIONS: &[&str] = &[
    "txt",
    "text",
    "log",
    "rst",
    "adoc",
    "org",
    "tex",
    "rs",
    "py",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "go",
    "java",
    "kt",
    "kts",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "rb",
    "php",
    "swift",
    "scala",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "sql",
    "r",
    "lua",
    "pl",
    "hs",
    "ml",
    "ex",
    "exs",
    "erl",
    "clj",
    "dart",
    "vue",
    "svelte",
    "css",
    "scss",
    "less",
    "xml",
    "svg",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "env",
    "properties",
    "gradle",
    "dockerfile",
    "makefile",
    "mk",
    "cmake",
    "proto",
    "graphql",
    "gql",
    "tf",
    "nix",
    "diff",
    "patch",
    "srt",
    "vtt",
    "ics",
    "vcf",
    "bib",
];

/// Whether the first bytes of a file look like text (no NUL, mostly valid UTF-8 or a BOM).
pub(crate) fn looks_textual(head: &[u8]) -> bool {
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    let head = &head[..head.len().min(8192)];
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        // A multi-byte character cut by the sample's end is still text.
        Err(e) => e.error_len().is_none() || e.valid_up_to() > head.len().saturating_sub(4),
    }
}

/// Bytes as text: UTF-8 (invalid sequences replaced) or UTF-16 with a byte-order mark.
pub(crate) fn decode(bytes: &[u8]) -> Result<String, Error> {
    let utf16 = |le: bool| {
        let units: Vec<u16> = bytes[2..]
            .chunks_exact(2)
            .map(|c| {
                if le {
                    u16::from_le_bytes([c[0], c[1]])
                } else {
                    u16::from_be_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return Ok(utf16(true));
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return Ok(utf16(false));
    }
    if !looks_textual(bytes) {
        return Err(Error::Binary);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Plain text, code, Markdown, JSON or HTML source.
pub(crate) fn plain(bytes: &[u8], format: Format, _limits: &Limits) -> Result<Document, Error> {
    let text = decode(bytes)?;
    let mut notes = Vec::new();
    if format == Format::Json
        && let Err(e) = serde_json_check(&text)
    {
        notes.push(format!("It is not valid JSON ({e}); shown as text."));
    }
    Ok(Document {
        format,
        text: text.replace("\r\n", "\n"),
        parts: None,
        shown: None,
        notes,
    })
}

/// Whether `text` is JSON (or JSON lines), without building it.
fn serde_json_check(text: &str) -> Result<(), String> {
    let whole = serde_json::from_str::<serde::de::IgnoredAny>(text);
    if whole.is_ok() {
        return Ok(());
    }
    // JSON lines: every non-empty line a value.
    let lines_ok = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .all(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok());
    if lines_ok {
        return Ok(());
    }
    Err(whole.err().map(|e| e.to_string()).unwrap_or_default())
}

/// CSV or TSV: the text, cut after `max_rows` lines.
pub(crate) fn table(bytes: &[u8], format: Format, limits: &Limits) -> Result<Document, Error> {
    let text = decode(bytes)?.replace("\r\n", "\n");
    let total = text.lines().count();
    let mut notes = Vec::new();
    let text = if total > limits.max_rows {
        notes.push(format!(
            "Showing the first {} of its {total} lines.",
            limits.max_rows
        ));
        let mut kept: String = text
            .lines()
            .take(limits.max_rows)
            .collect::<Vec<_>>()
            .join("\n");
        kept.push('\n');
        kept
    } else {
        text
    };
    Ok(Document {
        format,
        text: tidy(&text),
        parts: None,
        shown: None,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Wanted, extract};

    #[test]
    fn utf16_with_a_bom_is_text_and_binary_is_refused() {
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend("héllo".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode(&utf16).unwrap(), "héllo");
        assert_eq!(decode(b"\x00\x01\x02binary"), Err(Error::Binary));
    }

    #[test]
    fn broken_json_is_still_shown_with_a_note() {
        let limits = Limits::default();
        let ok = extract(b"{\"a\": [1, 2]}", Format::Json, &limits, Wanted::default()).unwrap();
        assert!(ok.notes.is_empty());
        let lines = extract(
            b"{\"a\":1}\n{\"b\":2}\n",
            Format::Json,
            &limits,
            Wanted::default(),
        );
        assert!(lines.unwrap().notes.is_empty());
        let bad = extract(b"{\"a\": [1, 2", Format::Json, &limits, Wanted::default()).unwrap();
        assert!(bad.text.contains("[1, 2"));
        assert!(bad.notes[0].contains("not valid JSON"), "{:?}", bad.notes);
    }

    #[test]
    fn a_long_csv_keeps_its_first_rows() {
        let csv: String = (0..2000).map(|i| format!("{i},x{i}\r\n")).collect();
        let limits = Limits {
            max_rows: 10,
            ..Limits::default()
        };
        let doc = extract(csv.as_bytes(), Format::Csv, &limits, Wanted::default()).unwrap();
        assert_eq!(doc.text.lines().count(), 10);
        assert!(doc.text.starts_with("0,x0\n1,x1"));
        assert!(
            doc.notes[0].contains("first 10 of its 2000 lines"),
            "{:?}",
            doc.notes
        );
    }
}
