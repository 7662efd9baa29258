//! Reading documents (PDF, Office, OpenDocument, CSV, JSON, HTML, text) into text, in a child
//! process of this same binary with resource limits: a parser's panic, stack overflow, runaway
//! loop or memory bomb on somebody's file ends that child, never the daemon. Used for the files
//! people attach (the gateway) and by the `read_document` tool.

mod tool;

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use hermes_documents::{Document, Format, Limits, Wanted};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use tool::ReadDocument;

/// The first argument that makes the binary a document reader instead of the CLI.
const CHILD_ARG: &str = "__read-document";
/// Address space of the reader: generous for a 20 MB PDF, fatal for a bomb.
const CHILD_MEMORY: u64 = 1024 * 1024 * 1024;

/// What the parent asks of the reader (its argument; the file comes on stdin).
#[derive(Serialize, Deserialize)]
struct Request {
    format: Format,
    limits: Limits,
    wanted: Wanted,
}

/// The text of `bytes` read as `format`, or why it could not be read (a sentence for the
/// model or the sender).
pub async fn read(
    bytes: Vec<u8>,
    format: Format,
    limits: Limits,
    wanted: Wanted,
    timeout: Duration,
) -> Result<Document, String> {
    let request = serde_json::to_string(&Request {
        format,
        limits,
        wanted,
    })
    .map_err(|e| e.to_string())?;
    // `/proc/self/exe` rather than the path: it still runs after the binary was upgraded.
    let mut child = tokio::process::Command::new("/proc/self/exe")
        .arg(CHILD_ARG)
        .arg(request)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("the document reader could not start ({e})"))?;
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let work = async {
        let feed = async {
            if let Some(mut pipe) = stdin.take() {
                // A reader that stops early closes the pipe: its answer says why.
                let _ = pipe.write_all(&bytes).await;
            }
        };
        let mut out = Vec::new();
        let collect = async {
            if let Some(pipe) = stdout.as_mut() {
                let cap = (limits.max_chars as u64).saturating_mul(8) + 1024 * 1024;
                let _ = pipe.take(cap).read_to_end(&mut out).await;
            }
        };
        tokio::join!(feed, collect);
        let status = child.wait().await;
        (status, out)
    };
    let (status, out) = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| format!("reading it took longer than {} s", timeout.as_secs()))?;
    let status = status.map_err(|e| format!("the document reader failed ({e})"))?;
    match serde_json::from_slice::<Result<Document, hermes_documents::Error>>(&out) {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) if !status.success() => Err(crashed(status)),
        Err(e) => Err(format!("the document reader gave no answer ({e})")),
    }
}

/// Why a reader that died without an answer died.
fn crashed(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(libc::SIGXCPU) => "reading it used more CPU time than allowed".to_owned(),
        Some(libc::SIGSEGV | libc::SIGABRT | libc::SIGKILL) => {
            "the reader crashed on it (the file is malformed or too complex)".to_owned()
        }
        _ => format!("the reader crashed on it ({status})"),
    }
}

/// If this process was started as a document reader, read stdin as the request says, print the
/// result as JSON and say how to exit; `None` for every other command line.
pub fn child_main() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != CHILD_ARG {
        return None;
    }
    limit_self(CHILD_MEMORY);
    let request: Request = match args
        .next()
        .and_then(|a| serde_json::from_str(a.to_str()?).ok())
    {
        Some(r) => r,
        None => return Some(ExitCode::from(2)),
    };
    let mut bytes = Vec::new();
    if std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).is_err() {
        return Some(ExitCode::from(2));
    }
    let result = if request.format == Format::Html {
        hermes_documents::extract(&bytes, Format::Text, &request.limits, request.wanted).map(
            |mut doc| {
                doc.format = Format::Html;
                doc.text = crate::tools::web_fetch::text::html_to_text(&doc.text);
                doc
            },
        )
    } else {
        hermes_documents::extract(&bytes, request.format, &request.limits, request.wanted)
    };
    let json = serde_json::to_vec(&result).unwrap_or_default();
    let written = std::io::Write::write_all(&mut std::io::stdout(), &json);
    Some(if written.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The reader's limits: memory, CPU seconds, no files written, no core dump.
fn limit_self(memory: u64) {
    let set = |resource, value: u64| {
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: setrlimit reads the struct; lowering our own limits needs no privilege.
        unsafe { libc::setrlimit(resource, &limit) };
    };
    set(libc::RLIMIT_AS, memory);
    set(libc::RLIMIT_CPU, 60);
    set(libc::RLIMIT_FSIZE, 0);
    set(libc::RLIMIT_CORE, 0);
}

/// How a document is introduced to the model: `report.pdf (PDF, 3 pages)`.
pub fn describe(name: &str, doc: &Document) -> String {
    let mut out = format!("\"{name}\" ({}", doc.format.label());
    if let (Some(total), Some(part)) = (doc.parts, doc.format.part_name()) {
        out.push_str(&format!(
            ", {total} {part}{}",
            if total == 1 { "" } else { "s" }
        ));
    }
    out.push(')');
    out
}

/// A document's text as the model reads it: fenced as the file's content, with what was cut.
pub fn render(name: &str, doc: &Document) -> String {
    let mut out = format!(
        "[document {}, its text follows]\n<document name=\"{}\">\n{}",
        describe(name, doc),
        name.replace('"', "'"),
        doc.text.trim_end()
    );
    out.push_str("\n</document>");
    for note in &doc.notes {
        out.push_str(&format!("\n[{note}]"));
    }
    out
}
