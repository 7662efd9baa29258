//! The readers against documents written by the real producers (reportlab, python-docx,
//! openpyxl, odfpy, python-pptx: `tests/fixtures/documents/make.py`), damaged copies of them,
//! and a zip bomb.

use hermes_documents::{Error, Format, Limits, Wanted, extract};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/documents/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn read(name: &str, wanted: Wanted) -> Result<hermes_documents::Document, Error> {
    let bytes = fixture(name);
    let format = Format::detect(Some(name), None, &bytes).expect("a known format");
    extract(&bytes, format, &Limits::default(), wanted)
}

#[test]
fn a_pdf_gives_every_page_with_its_number_including_an_embedded_unicode_font() {
    let doc = read("report.pdf", Wanted::default()).unwrap();
    assert_eq!(doc.format, Format::Pdf);
    assert_eq!(doc.parts, Some(3));
    for marker in [
        "PDF-PAGE-ONE-ALPHA",
        "PDF-PAGE-TWO-BRAVO",
        "PDF-PAGE-THREE-CHARLIE",
    ] {
        assert!(
            doc.text.contains(marker),
            "{marker} missing from {}",
            doc.text
        );
    }
    assert!(
        doc.text.contains("Zürich office: café budget"),
        "{}",
        doc.text
    );
    let two = doc.text.find("--- page 2 ---").unwrap();
    assert!(
        doc.text[two..].starts_with("--- page 2 ---\nCosts fell"),
        "{}",
        doc.text
    );
    assert!(doc.notes.is_empty(), "{:?}", doc.notes);
}

#[test]
fn a_page_range_returns_only_those_pages_and_says_what_was_left() {
    let doc = read(
        "report.pdf",
        Wanted {
            from: Some(2),
            to: Some(2),
        },
    )
    .unwrap();
    assert!(doc.text.contains("PDF-PAGE-TWO-BRAVO"));
    assert!(
        !doc.text.contains("ALPHA") && !doc.text.contains("CHARLIE"),
        "{}",
        doc.text
    );
    assert_eq!(doc.shown, Some((2, 2)));
    assert!(doc.notes[0].contains("pages 2-2 of 3"), "{:?}", doc.notes);
}

#[test]
fn a_scanned_pdf_is_named_as_such() {
    let err = read("scanned.pdf", Wanted::default()).unwrap_err();
    assert_eq!(err, Error::NoTextLayer { pages: 1 });
    assert!(err.to_string().contains("scanned PDF without a text layer"));
}

#[test]
fn a_truncated_pdf_is_corrupt() {
    let mut bytes = fixture("report.pdf");
    bytes.truncate(bytes.len() / 3);
    let err = extract(&bytes, Format::Pdf, &Limits::default(), Wanted::default()).unwrap_err();
    assert!(
        matches!(err, Error::Corrupt(_) | Error::Failed(_)),
        "{err:?}"
    );
}

#[test]
fn a_word_document_keeps_headings_paragraphs_and_tables() {
    let doc = read("memo.docx", Wanted::default()).unwrap();
    assert_eq!(doc.format, Format::Docx);
    assert!(doc.text.starts_with("# Board memo\n"), "{}", doc.text);
    assert!(doc.text.contains("Lisbon office. Marker DOCX-BODY-DELTA"));
    assert!(doc.text.contains("Bold claim: margins improve"));
    assert!(
        doc.text
            .contains("Region | Headcount\nLisbon | 42 DOCX-TABLE-ECHO"),
        "{}",
        doc.text
    );
    assert!(doc.text.contains("Grüße aus Köln"));
}

#[test]
fn a_workbook_gives_each_sheet_by_name_with_its_values() {
    let doc = read("budget.xlsx", Wanted::default()).unwrap();
    assert_eq!(doc.parts, Some(2));
    assert!(
        doc.text
            .contains("--- sheet 1 \"Costs\" (3 rows × 2 columns) ---"),
        "{}",
        doc.text
    );
    assert!(doc.text.contains("Rent\t1200\n"), "{}", doc.text);
    assert!(doc.text.contains("Marker XLSX-COSTS-FOXTROT\t3.5"));
    assert!(doc.text.contains("--- sheet 2 \"Revenue\""));
    assert!(doc.text.contains("Q1\t98000") && doc.text.contains("XLSX-REVENUE-GOLF"));
    let second = read(
        "budget.xlsx",
        Wanted {
            from: Some(2),
            to: None,
        },
    )
    .unwrap();
    assert!(!second.text.contains("FOXTROT") && second.text.contains("GOLF"));
}

#[test]
fn an_opendocument_spreadsheet_is_read() {
    let doc = read("budget.ods", Wanted::default()).unwrap();
    assert!(doc.text.contains("--- sheet 1 \"Plan\""), "{}", doc.text);
    assert!(doc.text.contains("March\tODS-HOTEL"), "{}", doc.text);
}

#[test]
fn a_presentation_gives_its_slides_in_order() {
    let doc = read("deck.pptx", Wanted::default()).unwrap();
    assert_eq!(doc.parts, Some(2));
    let one = doc.text.find("PPTX-SLIDE-ONE-INDIA").unwrap();
    let two = doc.text.find("PPTX-SLIDE-TWO-JULIET").unwrap();
    assert!(
        doc.text.starts_with("--- slide 1 ---\nRoadmap\n"),
        "{}",
        doc.text
    );
    assert!(one < doc.text.find("--- slide 2 ---").unwrap() && two > one);
}

#[test]
fn damaged_office_files_are_corrupt_not_panics() {
    for name in ["memo.docx", "deck.pptx", "budget.xlsx"] {
        let mut bytes = fixture(name);
        bytes.truncate(bytes.len() / 2);
        let format = Format::detect(Some(name), None, &bytes).unwrap();
        let err = extract(&bytes, format, &Limits::default(), Wanted::default()).unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)), "{name}: {err:?}");
    }
}

#[test]
fn a_zip_bomb_is_refused_before_it_is_unpacked() {
    // A real DOCX with one more entry declaring 300 MB of zeros (stored compressed).
    use std::io::Write;
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("word/document.xml", opts).unwrap();
        zip.write_all(b"<w:document/>").unwrap();
        zip.start_file("word/media/zeros.bin", opts.large_file(true))
            .unwrap();
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..300 {
            zip.write_all(&chunk).unwrap();
        }
        zip.finish().unwrap();
    }
    let bytes = out.into_inner();
    assert!(bytes.len() < 2 * 1024 * 1024, "{}", bytes.len());
    let err = extract(&bytes, Format::Docx, &Limits::default(), Wanted::default()).unwrap_err();
    assert_eq!(err, Error::TooLarge(200));
}
