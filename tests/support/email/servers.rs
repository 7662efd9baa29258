//! The mail servers `.ci/mail-servers` starts on 127.0.0.1 (Dovecot for IMAP and LMTP, an SMTP
//! front that authenticates senders like a receiving server): their settings, a tiny SMTP client
//! (with AUTH), a Maildir reader, and the headers and text of a raw mail.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

/// Where `.ci/mail-servers` writes its settings.
pub const ENV_FILE: &str = "/tmp/hermes-mail/env";

/// The running mail servers.
#[derive(Debug, Clone)]
pub struct MailServers {
    pub imap_port: u16,
    pub smtp_port: u16,
    pub data: PathBuf,
    /// The authserv-id the SMTP front writes in the `Authentication-Results` it prepends:
    /// `dmarc=pass` when the session logged in as the From address's owner, else `fail`.
    pub authserv_id: String,
}

impl MailServers {
    /// Read the servers' settings; panics with instructions when they are not running.
    pub fn get() -> MailServers {
        let path = std::env::var("EMAIL_TEST_ENV").unwrap_or_else(|_| ENV_FILE.to_owned());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "mail servers not running ({path}: {e}): start them with `.ci/mail-servers` (needs root; .ci/run does it)"
            )
        });
        let vars: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        let s = MailServers {
            imap_port: vars["EMAIL_TEST_IMAP_PORT"].parse().expect("imap port"),
            smtp_port: vars["EMAIL_TEST_SMTP_PORT"].parse().expect("smtp port"),
            data: PathBuf::from(vars["EMAIL_TEST_DATA"]),
            authserv_id: vars
                .get("EMAIL_TEST_AUTHSERV_ID")
                .unwrap_or_else(|| {
                    panic!(
                        "{path} has no EMAIL_TEST_AUTHSERV_ID: these mail servers come from an older \
                         .ci/mail-servers whose SMTP front does not authenticate senders; run it again"
                    )
                })
                .to_string(),
        };
        assert!(
            TcpStream::connect(("127.0.0.1", s.imap_port)).is_ok()
                && TcpStream::connect(("127.0.0.1", s.smtp_port)).is_ok(),
            "mail servers are not answering on 127.0.0.1:{} / {}: run `.ci/mail-servers`",
            s.imap_port,
            s.smtp_port
        );
        s
    }

    /// The `new` directory of a user's Maildir INBOX.
    pub fn maildir_new(&self, user: &str) -> PathBuf {
        self.data
            .join("mail")
            .join(user)
            .join("Maildir")
            .join("new")
    }

    /// Every mail delivered to `user`'s INBOX, oldest first.
    pub fn mails(&self, user: &str) -> Vec<Vec<u8>> {
        self.mails_in_order(user)
            .into_iter()
            .map(|(_, m)| m)
            .collect()
    }

    /// Every mail delivered to `user`'s INBOX with its delivery time (seconds, microseconds,
    /// from its Maildir name), oldest first: mails of several users can be merged in order.
    pub fn mails_in_order(&self, user: &str) -> Vec<((u64, u64), Vec<u8>)> {
        let mut files: Vec<((u64, u64), PathBuf)> = ["new", "cur"]
            .iter()
            .flat_map(|d| {
                std::fs::read_dir(self.data.join("mail").join(user).join("Maildir").join(d))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
            })
            .map(|p| (delivered_at(&p), p))
            .collect();
        files.sort();
        files
            .into_iter()
            .filter_map(|(at, p)| std::fs::read(p).ok().map(|m| (at, m)))
            .collect()
    }

    /// Send `raw` from `from` (the envelope sender) to `to` through the SMTP front, logged in as
    /// `login` (`None`: no AUTH); returns once it is delivered.
    pub fn smtp_send(&self, login: Option<&str>, from: &str, to: &str, raw: &[u8]) {
        let stream = TcpStream::connect(("127.0.0.1", self.smtp_port)).expect("smtp connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut w = stream.try_clone().expect("clone");
        let mut r = BufReader::new(stream);
        let mut expect = |code: &str| {
            loop {
                let mut line = String::new();
                r.read_line(&mut line).expect("smtp read");
                assert!(
                    line.starts_with(code),
                    "SMTP: expected {code}, got {line:?}"
                );
                if line.as_bytes().get(3) != Some(&b'-') {
                    break;
                }
            }
        };
        expect("220");
        w.write_all(b"EHLO test\r\n").unwrap();
        expect("250");
        if let Some(login) = login {
            let plain = base64(format!("\0{login}\0secret").as_bytes());
            w.write_all(format!("AUTH PLAIN {plain}\r\n").as_bytes())
                .unwrap();
            expect("235");
        }
        w.write_all(format!("MAIL FROM:<{from}>\r\n").as_bytes())
            .unwrap();
        expect("250");
        w.write_all(format!("RCPT TO:<{to}>\r\n").as_bytes())
            .unwrap();
        expect("250");
        w.write_all(b"DATA\r\n").unwrap();
        expect("354");
        let mut body = Vec::with_capacity(raw.len() + 16);
        for line in raw.split_inclusive(|b| *b == b'\n') {
            if line.first() == Some(&b'.') {
                body.push(b'.');
            }
            body.extend_from_slice(line);
        }
        if !body.ends_with(b"\r\n") {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b".\r\n");
        w.write_all(&body).unwrap();
        expect("250");
        w.write_all(b"QUIT\r\n").unwrap();
    }
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// When a Maildir file was delivered: its name starts `<seconds>.M<microseconds>P<pid>`.
fn delivered_at(path: &std::path::Path) -> (u64, u64) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut parts = name.split('.');
    let secs = parts
        .next()
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(0);
    let micros = parts
        .next()
        .and_then(|m| m.strip_prefix('M'))
        .map(|m| {
            m.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|m| m.parse::<u64>().ok())
        .unwrap_or(0);
    (secs, micros)
}

/// A header of a raw mail (first occurrence, unfolded).
pub fn header(raw: &[u8], name: &str) -> Option<String> {
    // Dovecot stores Maildir files with bare LF line ends.
    let text = String::from_utf8_lossy(raw).replace("\r\n", "\n");
    let head = text.split("\n\n").next().unwrap_or("");
    let unfolded = head.replace("\n ", " ").replace("\n\t", " ");
    unfolded.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

/// The decoded text/plain body of a raw mail.
pub fn body_text(raw: &[u8]) -> String {
    mail_parser::MessageParser::default()
        .parse(raw)
        .and_then(|m| m.body_text(0).map(|t| t.into_owned()))
        .unwrap_or_default()
}
