//! Spreadsheets (XLSX, XLSM, XLSB, XLS, ODS) through calamine: each sheet's used range as
//! tab-separated rows, the cells' values (a formula's last computed value).

use std::io::Cursor;

use calamine::{Data, Reader};

use crate::{Document, Error, Format, Limits, Wanted, ooxml, parts_note};

pub(crate) fn extract(bytes: &[u8], limits: &Limits, wanted: Wanted) -> Result<Document, Error> {
    if bytes.starts_with(b"PK") {
        // XLSX and ODS are zips: refuse a bomb before calamine unpacks it.
        ooxml::check_unzipped_size(bytes, limits.max_unzipped)?;
    }
    let mut book = calamine::open_workbook_auto_from_rs(Cursor::new(bytes)).map_err(|e| {
        let why = e.to_string();
        if why.to_ascii_lowercase().contains("password") || why.contains("encrypt") {
            Error::Encrypted
        } else {
            Error::Corrupt(format!(
                "spreadsheet ({})",
                why.chars().take(120).collect::<String>()
            ))
        }
    })?;
    let names = book.sheet_names();
    let total = names.len();
    let range = wanted.range(total, limits.max_parts);
    if range.is_empty() {
        return Err(Error::Failed(format!("it has {total} sheets")));
    }
    let mut text = String::new();
    let mut notes = Vec::new();
    for n in range.clone() {
        let name = &names[n - 1];
        let cells = match book.worksheet_range(name) {
            Ok(cells) => cells,
            Err(e) => {
                text.push_str(&format!(
                    "--- sheet {n} \"{name}\" ---\n(unreadable: {e})\n"
                ));
                continue;
            }
        };
        let (rows, cols) = cells.get_size();
        text.push_str(&format!(
            "--- sheet {n} \"{name}\" ({rows} rows × {cols} columns) ---\n"
        ));
        for row in cells.rows().take(limits.max_rows) {
            let line: Vec<String> = row.iter().map(cell).collect();
            let line = line.join("\t");
            text.push_str(line.trim_end_matches('\t'));
            text.push('\n');
        }
        if rows > limits.max_rows {
            notes.push(format!(
                "Sheet \"{name}\": showing the first {} of its {rows} rows.",
                limits.max_rows
            ));
        }
    }
    let shown = (*range.start(), *range.end());
    notes.extend(parts_note("sheet", shown, total));
    Ok(Document {
        format: Format::Spreadsheet,
        text,
        parts: Some(total),
        shown: Some(shown),
        notes,
    })
}

/// A cell as the sheet shows it, without tabs or line breaks that would break the row.
fn cell(value: &Data) -> String {
    let shown = match value {
        Data::Empty => String::new(),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        other => other.to_string(),
    };
    shown.replace(['\t', '\n', '\r'], " ")
}
