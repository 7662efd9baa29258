//! Text out of the documents people send and keep: PDF, DOCX, PPTX, spreadsheets (XLSX, XLS,
//! XLSB, ODS), CSV/TSV, JSON, Markdown, HTML and plain text or code. Pure: bytes in, text out,
//! with limits on what it reads and says. Callers run it where a crash or a bomb costs nothing
//! (the daemon runs it in a child process with resource limits).

mod ooxml;
mod pdf;
mod sheet;
mod text;

use serde::{Deserialize, Serialize};

/// A document format this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Pdf,
    Docx,
    Pptx,
    /// XLSX, XLSM, XLSB, XLS or ODS.
    Spreadsheet,
    Csv,
    Tsv,
    Json,
    Markdown,
    Html,
    /// Plain text or source code.
    Text,
}

impl Format {
    /// What the format is called in notes to the model and to people.
    pub fn label(self) -> &'static str {
        match self {
            Format::Pdf => "PDF",
            Format::Docx => "Word document",
            Format::Pptx => "PowerPoint presentation",
            Format::Spreadsheet => "spreadsheet",
            Format::Csv => "CSV",
            Format::Tsv => "TSV",
            Format::Json => "JSON",
            Format::Markdown => "Markdown",
            Format::Html => "HTML",
            Format::Text => "text",
        }
    }

    /// What a part of the format is called (`page 3`, `sheet "Costs"`), if it has parts.
    pub fn part_name(self) -> Option<&'static str> {
        match self {
            Format::Pdf => Some("page"),
            Format::Pptx => Some("slide"),
            Format::Spreadsheet => Some("sheet"),
            _ => None,
        }
    }

    /// The format of a file from its name, its declared type and its first bytes; `None` when it
    /// is not a document this crate reads (an image, an archive, an executable…). The bytes
    /// decide over the name where they can: a `.pdf` that is not a PDF is not read as one.
    pub fn detect(name: Option<&str>, mime: Option<&str>, head: &[u8]) -> Option<Format> {
        let ext = name
            .and_then(|n| n.rsplit_once('.'))
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        let mime = mime
            .map(|m| {
                m.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
        if head.starts_with(b"%PDF-") || ext == "pdf" || mime == "application/pdf" {
            return Some(Format::Pdf);
        }
        let by_name = match ext.as_str() {
            "docx" | "docm" => Some(Format::Docx),
            "pptx" | "pptm" => Some(Format::Pptx),
            "xlsx" | "xlsm" | "xlsb" | "xls" | "ods" => Some(Format::Spreadsheet),
            "csv" => Some(Format::Csv),
            "tsv" | "tab" => Some(Format::Tsv),
            "json" | "jsonl" | "ndjson" | "geojson" => Some(Format::Json),
            "md" | "markdown" | "mdx" => Some(Format::Markdown),
            "html" | "htm" | "xhtml" => Some(Format::Html),
            e if text::CODE_EXTENSIONS.contains(&e) => Some(Format::Text),
            _ => None,
        };
        let by_mime = match mime.as_str() {
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => {
                Some(Format::Docx)
            }
            "application/vnd.openxmlformats-officedocument.presentationml.presentation" => {
                Some(Format::Pptx)
            }
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
            | "application/vnd.ms-excel"
            | "application/vnd.ms-excel.sheet.binary.macroenabled.12"
            | "application/vnd.ms-excel.sheet.macroenabled.12"
            | "application/vnd.oasis.opendocument.spreadsheet" => Some(Format::Spreadsheet),
            "text/csv" => Some(Format::Csv),
            "text/tab-separated-values" => Some(Format::Tsv),
            "application/json" | "application/x-ndjson" => Some(Format::Json),
            "text/markdown" | "text/x-markdown" => Some(Format::Markdown),
            "text/html" | "application/xhtml+xml" => Some(Format::Html),
            m if m.starts_with("text/") => Some(Format::Text),
            _ => None,
        };
        by_name.or(by_mime).or_else(|| {
            // A name without a known extension: plain text when the bytes say so.
            (!head.is_empty() && text::looks_textual(head)).then_some(Format::Text)
        })
    }
}

/// How much of a document is read and returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Characters of text returned; the rest is cut and said so.
    pub max_chars: usize,
    /// Pages, slides or sheets returned.
    pub max_parts: usize,
    /// Rows per sheet (and lines of a CSV/TSV) returned.
    pub max_rows: usize,
    /// Bytes a zipped format (DOCX, PPTX, XLSX, ODS) may unpack to.
    pub max_unzipped: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_chars: 60_000,
            max_parts: 50,
            max_rows: 500,
            max_unzipped: 200 * 1024 * 1024,
        }
    }
}

/// Which parts (pages, slides, sheets) to return, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Wanted {
    pub from: Option<usize>,
    pub to: Option<usize>,
}

impl Wanted {
    fn first(self) -> usize {
        self.from.unwrap_or(1).max(1)
    }

    /// The 1-based parts of `total` to return, at most `max` of them.
    fn range(self, total: usize, max: usize) -> std::ops::RangeInclusive<usize> {
        let first = self.first();
        let last = self.to.unwrap_or(total).min(total).min(first + max - 1);
        first..=last
    }
}

/// A document's text, and what was left out of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub format: Format,
    /// The text, with a `--- page N ---` (slide, sheet) line before each part.
    pub text: String,
    /// How many pages, slides or sheets the document has (formats with parts).
    pub parts: Option<usize>,
    /// The first and last part returned.
    pub shown: Option<(usize, usize)>,
    /// What was cut or could not be read, each a sentence for the model.
    pub notes: Vec<String>,
}

/// Why a document gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum Error {
    #[error("the file is damaged or not a {0}")]
    Corrupt(String),
    #[error("the file is encrypted (password-protected)")]
    Encrypted,
    #[error(
        "it is a scanned PDF without a text layer ({pages} pages of images); its text cannot be read without OCR"
    )]
    NoTextLayer { pages: usize },
    #[error("it unpacks to more than {0} MB (a zip bomb or an unusually large document)")]
    TooLarge(u64),
    #[error("it holds binary data, not text")]
    Binary,
    #[error("the reader failed on it: {0}")]
    Failed(String),
}

/// The text of `bytes` read as `format`, within `limits`, the parts `wanted`. Panics of the
/// readers (their inputs are anybody's files) come back as [`Error::Failed`].
pub fn extract(
    bytes: &[u8],
    format: Format,
    limits: &Limits,
    wanted: Wanted,
) -> Result<Document, Error> {
    let read = std::panic::catch_unwind(|| match format {
        Format::Pdf => pdf::extract(bytes, limits, wanted),
        Format::Docx => ooxml::docx(bytes, limits),
        Format::Pptx => ooxml::pptx(bytes, limits, wanted),
        Format::Spreadsheet => sheet::extract(bytes, limits, wanted),
        Format::Csv | Format::Tsv => text::table(bytes, format, limits),
        Format::Json | Format::Markdown | Format::Html | Format::Text => {
            text::plain(bytes, format, limits)
        }
    });
    let mut doc = read.unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "it stopped on malformed content".to_owned());
        Err(Error::Failed(why.chars().take(200).collect()))
    })?;
    cap_chars(&mut doc, limits.max_chars);
    Ok(doc)
}

/// Cut `doc`'s text to `max` characters (at a line end when one is near), saying so.
fn cap_chars(doc: &mut Document, max: usize) {
    let total = doc.text.chars().count();
    if total <= max {
        return;
    }
    let mut end = doc
        .text
        .char_indices()
        .nth(max)
        .map_or(doc.text.len(), |(i, _)| i);
    if let Some(nl) = doc.text[..end].rfind('\n')
        && nl > end.saturating_sub(2_000)
    {
        end = nl;
    }
    doc.text.truncate(end);
    doc.notes.push(format!(
        "The text was cut at {} of its {total} characters.",
        doc.text.chars().count()
    ));
}

/// Tidy extracted text: no trailing spaces, no runs of more than one blank line.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The note for parts left out: `Showing pages 1-50 of 120.`
fn parts_note(name: &str, shown: (usize, usize), total: usize) -> Option<String> {
    (shown != (1, total)).then(|| {
        format!(
            "Showing {name}s {}-{} of {total}; ask for others by {name} number.",
            shown.0, shown.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_decide_over_the_name() {
        assert_eq!(
            Format::detect(Some("x.txt"), None, b"%PDF-1.7"),
            Some(Format::Pdf)
        );
        assert_eq!(
            Format::detect(Some("a.DOCX"), None, b"PK\x03\x04"),
            Some(Format::Docx)
        );
        assert_eq!(
            Format::detect(Some("run.py"), None, b"print(1)"),
            Some(Format::Text)
        );
        assert_eq!(
            Format::detect(Some("notes"), None, b"plain words\n"),
            Some(Format::Text)
        );
        assert_eq!(
            Format::detect(Some("blob"), None, b"\x7fELF\x02\x01\0\0"),
            None
        );
        assert_eq!(
            Format::detect(Some("photo.jpg"), Some("image/jpeg"), b"\xff\xd8"),
            None
        );
        assert_eq!(
            Format::detect(None, Some("text/csv; charset=utf-8"), b"a,b"),
            Some(Format::Csv)
        );
    }

    #[test]
    fn long_text_is_cut_at_a_line_end_and_says_so() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let limits = Limits {
            max_chars: 100,
            ..Limits::default()
        };
        let doc = extract(text.as_bytes(), Format::Text, &limits, Wanted::default()).unwrap();
        assert!(doc.text.chars().count() <= 100, "{}", doc.text.len());
        assert!(doc.text.ends_with(char::is_numeric), "{:?}", doc.text);
        assert!(doc.notes[0].contains("cut at"), "{:?}", doc.notes);
    }

    #[test]
    fn part_ranges_are_bounded_by_the_document_and_the_limit() {
        let w = Wanted {
            from: Some(3),
            to: None,
        };
        assert_eq!(w.range(10, 50), 3..=10);
        assert_eq!(w.range(100, 5), 3..=7);
        assert_eq!(Wanted::default().range(2, 50), 1..=2);
        assert!(
            Wanted {
                from: Some(9),
                to: None
            }
            .range(3, 50)
            .is_empty()
        );
    }
}
