//! DOCX and PPTX: zips of XML whose text sits in `w:t` (Word) and `a:t` (DrawingML) elements.
//! A streaming reader keeps paragraphs, line breaks, tabs, table rows and Word's heading levels;
//! everything else (styles, drawings, fields' codes, deleted revisions) is skipped.

use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesRef, Event};

use crate::{Document, Error, Format, Limits, Wanted, parts_note, tidy};

/// Entries a document zip may hold.
const MAX_ENTRIES: usize = 20_000;

type Zip<'a> = zip::ZipArchive<Cursor<&'a [u8]>>;

fn open<'a>(bytes: &'a [u8], what: &str) -> Result<Zip<'a>, Error> {
    zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| Error::Corrupt(format!("{what} ({e})")))
}

/// Refuse a zip whose entries declare more than `max` bytes in all, or too many entries.
pub(crate) fn check_unzipped_size(bytes: &[u8], max: u64) -> Result<(), Error> {
    let mut zip = open(bytes, "zip file")?;
    if zip.len() > MAX_ENTRIES {
        return Err(Error::TooLarge(max / 1024 / 1024));
    }
    let mut total: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| Error::Corrupt(format!("zip file ({e})")))?;
        total = total.saturating_add(entry.size());
    }
    if total > max {
        return Err(Error::TooLarge(max / 1024 / 1024));
    }
    Ok(())
}

/// One entry of the zip, read to at most `max` bytes (an entry that unpacks further is refused).
fn entry(zip: &mut Zip<'_>, name: &str, max: u64) -> Result<Option<Vec<u8>>, Error> {
    let file = match zip.by_name(name) {
        Ok(file) => file,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(Error::Corrupt(format!("zip entry {name} ({e})"))),
    };
    let mut out = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::Corrupt(format!("zip entry {name} ({e})")))?;
    if out.len() as u64 > max {
        return Err(Error::TooLarge(max / 1024 / 1024));
    }
    Ok(Some(out))
}

/// A Word document's body text.
pub(crate) fn docx(bytes: &[u8], limits: &Limits) -> Result<Document, Error> {
    check_unzipped_size(bytes, limits.max_unzipped)?;
    let mut zip = open(bytes, "Word document")?;
    if zip.by_name("EncryptedPackage").is_ok() {
        return Err(Error::Encrypted);
    }
    let main = main_part(&mut zip, limits)?.unwrap_or_else(|| "word/document.xml".to_owned());
    let xml = entry(&mut zip, &main, limits.max_unzipped)?
        .ok_or_else(|| Error::Corrupt("Word document (no document.xml)".into()))?;
    Ok(Document {
        format: Format::Docx,
        text: tidy(&xml_text(&xml)?),
        parts: None,
        shown: None,
        notes: Vec::new(),
    })
}

/// The main part named by the package's relationships (`word/document.xml` in practice).
fn main_part(zip: &mut Zip<'_>, limits: &Limits) -> Result<Option<String>, Error> {
    let Some(rels) = entry(zip, "_rels/.rels", limits.max_unzipped)? else {
        return Ok(None);
    };
    let mut reader = Reader::from_reader(rels.as_slice());
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Empty(e) | Event::Start(e)) if e.local_name().as_ref() == b"Relationship" => {
                let attr = |key: &[u8]| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == key)
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
                };
                if attr(b"Type").is_some_and(|t| t.ends_with("/officeDocument"))
                    && let Some(target) = attr(b"Target")
                {
                    return Ok(Some(target.trim_start_matches('/').to_owned()));
                }
            }
            Ok(Event::Eof) | Err(_) => return Ok(None),
            _ => {}
        }
        buf.clear();
    }
}

/// A presentation's slides, in order, each under a `--- slide N ---` line.
pub(crate) fn pptx(bytes: &[u8], limits: &Limits, wanted: Wanted) -> Result<Document, Error> {
    check_unzipped_size(bytes, limits.max_unzipped)?;
    let mut zip = open(bytes, "PowerPoint presentation")?;
    if zip.by_name("EncryptedPackage").is_ok() {
        return Err(Error::Encrypted);
    }
    let mut slides: Vec<(usize, String)> = zip
        .file_names()
        .filter_map(|name| {
            let n = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?;
            Some((n.parse().ok()?, name.to_owned()))
        })
        .collect();
    slides.sort();
    let total = slides.len();
    if total == 0 {
        return Err(Error::Corrupt("PowerPoint presentation (no slides)".into()));
    }
    let range = wanted.range(total, limits.max_parts);
    if range.is_empty() {
        return Err(Error::Failed(format!("it has {total} slides")));
    }
    let mut text = String::new();
    for n in range.clone() {
        let xml = entry(&mut zip, &slides[n - 1].1, limits.max_unzipped)?.unwrap_or_default();
        text.push_str(&format!("--- slide {n} ---\n"));
        text.push_str(&tidy(&xml_text(&xml)?));
        text.push('\n');
    }
    let shown = (*range.start(), *range.end());
    Ok(Document {
        format: Format::Pptx,
        text,
        parts: Some(total),
        shown: Some(shown),
        notes: parts_note("slide", shown, total).into_iter().collect(),
    })
}

/// The text of WordprocessingML or DrawingML: `t` elements' text, a line per paragraph, table
/// cells joined by ` | `, Word headings as `#` lines.
fn xml_text(xml: &[u8]) -> Result<String, Error> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = String::new();
    let mut in_t = false;
    let mut cells = 0usize;
    let mut para_start = 0usize;
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| Error::Corrupt(format!("document XML ({e})")))?;
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"t" => in_t = true,
                b"p" => para_start = out.len(),
                b"tc" => cells += 1,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                b"tab" => out.push('\t'),
                b"br" | b"cr" => out.push('\n'),
                b"pStyle" => {
                    let style = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == b"val")
                        .map(|a| String::from_utf8_lossy(&a.value).to_ascii_lowercase());
                    if let Some(level) = style.as_deref().and_then(heading_level)
                        && para_start <= out.len()
                    {
                        out.insert_str(para_start, &format!("{} ", "#".repeat(level)));
                    }
                }
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                b"t" => in_t = false,
                b"p" => out.push(if cells > 0 { ' ' } else { '\n' }),
                b"tc" => {
                    cells = cells.saturating_sub(1);
                    let kept = out.trim_end_matches(' ').len();
                    out.truncate(kept);
                    out.push_str(" | ");
                }
                b"tr" => {
                    let kept = out.trim_end_matches([' ', '|']).len();
                    out.truncate(kept);
                    out.push('\n');
                }
                b"tbl" => out.push('\n'),
                _ => {}
            },
            Event::Text(t) if in_t => out.push_str(
                &t.decode()
                    .map_err(|e| Error::Corrupt(format!("document XML ({e})")))?,
            ),
            Event::GeneralRef(r) if in_t => out.push_str(&entity(&r)),
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

/// `heading1` → 1 … `heading6` → 6, `title` → 1.
fn heading_level(style: &str) -> Option<usize> {
    if style == "title" {
        return Some(1);
    }
    let n: usize = style.strip_prefix("heading")?.parse().ok()?;
    (1..=6).contains(&n).then_some(n)
}

/// The text an entity reference stands for (`&amp;`, `&#233;`); unknown ones as written.
fn entity(r: &BytesRef<'_>) -> String {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return c.to_string();
    }
    let name = String::from_utf8_lossy(r.as_ref()).into_owned();
    quick_xml::escape::resolve_predefined_entity(&name)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("&{name};"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_tables_headings_and_entities() {
        let xml = br#"<w:document xmlns:w="w"><w:body>
            <w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Plan</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">AT&amp;T </w:t></w:r><w:r><w:tab/><w:t>caf&#233;</w:t></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            <w:p><w:r><w:delText>gone</w:delText></w:r></w:p>
        </w:body></w:document>"#;
        let text = tidy(&xml_text(xml).unwrap());
        assert_eq!(text, "## Plan\nAT&T \tcafé\na | b\n");
    }

    #[test]
    fn damaged_xml_is_corrupt_not_a_panic() {
        assert!(matches!(
            xml_text(b"<w:p><w:t>x</w:p>"),
            Err(Error::Corrupt(_))
        ));
        assert!(matches!(
            docx(b"PK\x03\x04garbage", &Limits::default()),
            Err(Error::Corrupt(_))
        ));
    }
}
