//! `[documents]`: the files people send (PDF, Office, OpenDocument, CSV, JSON, HTML, text) read
//! into the turn's message, and the limits of that reading; `read_document` uses the same.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DocumentsConfig {
    /// Off: documents reach the agent as attachments it cannot open.
    pub enabled: bool,
    /// Larger files are not downloaded; the sender is told.
    pub max_file_mb: u64,
    /// Characters of one document's text the model reads.
    pub max_chars_per_file: usize,
    /// Characters of all documents of one message together.
    pub max_chars_per_message: usize,
    /// Pages, slides or sheets of one document.
    pub max_pages: usize,
    /// Rows per sheet, lines of a CSV/TSV.
    pub max_rows: usize,
    /// Documents of one message read.
    pub max_per_message: usize,
    /// Longest the reading of one document may take.
    pub timeout_secs: u64,
}

impl Default for DocumentsConfig {
    fn default() -> Self {
        DocumentsConfig {
            enabled: true,
            max_file_mb: 20,
            max_chars_per_file: 60_000,
            max_chars_per_message: 150_000,
            max_pages: 50,
            max_rows: 500,
            max_per_message: 5,
            timeout_secs: 30,
        }
    }
}

impl DocumentsConfig {
    pub fn max_bytes(&self) -> u64 {
        self.max_file_mb.saturating_mul(1024 * 1024)
    }

    /// The reader's limits for one document.
    pub fn limits(&self) -> hermes_documents::Limits {
        hermes_documents::Limits {
            max_chars: self.max_chars_per_file.max(1),
            max_parts: self.max_pages.max(1),
            max_rows: self.max_rows.max(1),
            ..hermes_documents::Limits::default()
        }
    }
}
