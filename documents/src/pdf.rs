//! PDF: the text layer of each page (pdf-extract, on lopdf). A PDF whose pages carry no text
//! is a scan: said so, since reading it needs OCR.

use crate::{Document, Error, Format, Limits, Wanted, parts_note, tidy};

pub(crate) fn extract(bytes: &[u8], limits: &Limits, wanted: Wanted) -> Result<Document, Error> {
    if !bytes.starts_with(b"%PDF-")
        && !bytes[..bytes.len().min(1024)]
            .windows(5)
            .any(|w| w == b"%PDF-")
    {
        return Err(Error::Corrupt("PDF".into()));
    }
    let pages = pdf_extract::extract_text_from_mem_by_pages(bytes).map_err(|e| {
        let why = e.to_string();
        if why.to_ascii_lowercase().contains("crypt") {
            Error::Encrypted
        } else {
            Error::Corrupt(format!(
                "PDF ({})",
                why.chars().take(120).collect::<String>()
            ))
        }
    })?;
    let total = pages.len();
    let blank = |p: &String| p.trim().is_empty();
    if total == 0 || pages.iter().all(blank) {
        return Err(Error::NoTextLayer { pages: total });
    }
    let range = wanted.range(total, limits.max_parts);
    if range.is_empty() {
        return Err(Error::Failed(format!("it has {total} pages")));
    }
    let mut text = String::new();
    let mut scanned = Vec::new();
    for n in range.clone() {
        let page = &pages[n - 1];
        text.push_str(&format!("--- page {n} ---\n"));
        if blank(page) {
            scanned.push(n.to_string());
            text.push_str("(no text on this page: an image or a scan)\n");
        } else {
            text.push_str(&tidy(page));
            text.push('\n');
        }
    }
    let shown = (*range.start(), *range.end());
    let mut notes: Vec<String> = parts_note("page", shown, total).into_iter().collect();
    if !scanned.is_empty() {
        notes.push(format!(
            "Page(s) {} have no text layer (images or scans).",
            scanned.join(", ")
        ));
    }
    Ok(Document {
        format: Format::Pdf,
        text,
        parts: Some(total),
        shown: Some(shown),
        notes,
    })
}
