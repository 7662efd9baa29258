//! The backup's `manifest.json`: what the archive holds (each file's size and SHA-256, the
//! database snapshot's row count per table), which hermes wrote it and when; and the check of
//! an archive's members against it, which a restore passes before it writes anything.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The manifest's member name, first in every archive.
pub const NAME: &str = "manifest.json";
/// The database snapshot's member name (SQLite backend only).
pub const DATABASE: &str = "hermes.db";
/// The configuration's member name (restored as `$HERMES_HOME/config.toml`).
pub const CONFIG: &str = "config.toml";
/// The version of this layout; a restore refuses a newer one.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The hermes that wrote the archive.
    pub hermes_version: String,
    /// When the snapshot was taken (RFC 3339, UTC).
    pub created_at: String,
    /// The home it was taken of (for the reader; a restore goes wherever it is told).
    pub home: String,
    /// `sqlite` (the database is in the archive) or `postgres` (it is not: pg_dump).
    pub backend: String,
    /// Whether the configuration's copy holds its secrets (`--with-secrets`).
    pub secrets_included: bool,
    /// The configuration keys whose values were removed (`llm.api_key`), without the values.
    pub redacted_keys: Vec<String>,
    /// Every member but the manifest, by name.
    pub files: BTreeMap<String, FileEntry>,
    /// The SQLite snapshot's contents; `None` with PostgreSQL.
    pub database: Option<DatabaseEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub size: u64,
    /// Lower-case hex.
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseEntry {
    /// The member holding it.
    pub file: String,
    /// SQLite's `user_version`: the migrations applied.
    pub schema_version: i64,
    /// Rows per table (full-text indexes counted by their shadow tables).
    pub tables: BTreeMap<String, u64>,
}

impl FileEntry {
    /// Size and SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> FileEntry {
        FileEntry {
            size: bytes.len() as u64,
            sha256: hex(&Sha256::digest(bytes)),
        }
    }

    /// Size and SHA-256 of everything `reader` gives.
    pub fn of_reader(reader: impl Read) -> std::io::Result<FileEntry> {
        FileEntry::copy(reader, &mut std::io::sink())
    }

    /// Copy `reader` to `writer`, returning the size and SHA-256 of what went through.
    pub fn copy(mut reader: impl Read, writer: &mut impl Write) -> std::io::Result<FileEntry> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut size = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            writer.write_all(&buf[..n])?;
            size += n as u64;
        }
        Ok(FileEntry {
            size,
            sha256: hex(&hasher.finalize()),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `name` is a member name a restore may write: relative, plain components only (no
/// `..`, no root), not empty.
pub fn is_safe_name(name: &str) -> bool {
    let path = Path::new(name);
    !name.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)))
}

impl Manifest {
    /// Parse `manifest.json`, refusing a layout newer than this hermes knows.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let manifest: Manifest = serde_json::from_slice(bytes)
            .map_err(|e| format!("{NAME} cannot be read ({e}): not a hermes backup, or damaged"))?;
        if manifest.format > FORMAT {
            return Err(format!(
                "the archive's format is {} (written by hermes {}); this hermes reads format {FORMAT}: \
                 restore it with that hermes or a newer one",
                manifest.format, manifest.hermes_version
            ));
        }
        Ok(manifest)
    }

    /// Check the archive's members (name → what was read) against the manifest: every listed
    /// file present with its size and checksum, nothing unlisted, every name safe to write.
    /// Every problem is named, not only the first.
    pub fn verify(&self, members: &BTreeMap<String, FileEntry>) -> Result<(), String> {
        let mut problems = Vec::new();
        for (name, want) in &self.files {
            if !is_safe_name(name) {
                problems.push(format!("{name}: a name a restore must not write"));
                continue;
            }
            match members.get(name) {
                None => problems.push(format!("{name}: missing from the archive")),
                Some(got) if got.size != want.size => problems.push(format!(
                    "{name}: {} bytes, the manifest says {}",
                    got.size, want.size
                )),
                Some(got) if got.sha256 != want.sha256 => {
                    problems.push(format!("{name}: its SHA-256 differs from the manifest's"))
                }
                Some(_) => {}
            }
        }
        for name in members.keys() {
            if !self.files.contains_key(name) {
                problems.push(format!("{name}: in the archive but not in the manifest"));
            }
        }
        if let Some(db) = &self.database
            && !self.files.contains_key(&db.file)
        {
            problems.push(format!("{}: the database is not listed", db.file));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the archive does not match its manifest (damaged or altered):\n  {}",
                problems.join("\n  ")
            ))
        }
    }

    /// Compare the row counts of the restored database with the manifest's.
    pub fn verify_rows(&self, counted: &BTreeMap<String, u64>) -> Result<(), String> {
        let Some(db) = &self.database else {
            return Ok(());
        };
        if &db.tables == counted {
            return Ok(());
        }
        let mut problems = Vec::new();
        for (table, want) in &db.tables {
            match counted.get(table) {
                None => problems.push(format!("table {table}: missing")),
                Some(got) if got != want => problems.push(format!(
                    "table {table}: {got} rows, the manifest says {want}"
                )),
                Some(_) => {}
            }
        }
        for table in counted.keys().filter(|t| !db.tables.contains_key(*t)) {
            problems.push(format!("table {table}: not in the manifest"));
        }
        Err(format!(
            "the database snapshot does not match the manifest:\n  {}",
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: &[(&str, &[u8])]) -> Manifest {
        Manifest {
            format: FORMAT,
            hermes_version: "0.1.0".into(),
            created_at: "2025-01-01T00:00:00Z".into(),
            home: "/home/h/.hermes".into(),
            backend: "sqlite".into(),
            secrets_included: false,
            redacted_keys: vec!["llm.api_key".into()],
            files: files
                .iter()
                .map(|(n, b)| (n.to_string(), FileEntry::of(b)))
                .collect(),
            database: Some(DatabaseEntry {
                file: DATABASE.into(),
                schema_version: 8,
                tables: [("sessions".to_string(), 3), ("messages".to_string(), 12)].into(),
            }),
        }
    }

    fn members(files: &[(&str, &[u8])]) -> BTreeMap<String, FileEntry> {
        files
            .iter()
            .map(|(n, b)| (n.to_string(), FileEntry::of(b)))
            .collect()
    }

    #[test]
    fn the_sha256_of_known_bytes() {
        assert_eq!(
            FileEntry::of(b"abc").sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let streamed = FileEntry::of_reader(&b"abc"[..]).unwrap();
        assert_eq!(streamed, FileEntry::of(b"abc"));
        assert_eq!(streamed.size, 3);
    }

    #[test]
    fn a_manifest_survives_json() {
        let m = manifest(&[(DATABASE, b"db"), ("memory/u/MEMORY.md", b"notes")]);
        let text = serde_json::to_vec_pretty(&m).unwrap();
        assert_eq!(Manifest::parse(&text).unwrap(), m);
    }

    #[test]
    fn matching_members_pass() {
        let files: &[(&str, &[u8])] = &[(DATABASE, b"db"), ("skills/x/SKILL.md", b"skill")];
        manifest(files).verify(&members(files)).unwrap();
    }

    #[test]
    fn a_flipped_byte_a_missing_and_an_extra_member_are_each_named() {
        let m = manifest(&[(DATABASE, b"db"), ("config.toml", b"a = 1"), ("gone", b"x")]);
        let got = members(&[
            (DATABASE, b"dc"),
            ("config.toml", b"a = 1"),
            ("extra", b"y"),
        ]);
        let err = m.verify(&got).unwrap_err();
        assert!(err.contains("hermes.db: its SHA-256 differs"), "{err}");
        assert!(err.contains("gone: missing"), "{err}");
        assert!(
            err.contains("extra: in the archive but not in the manifest"),
            "{err}"
        );
        assert!(!err.contains("config.toml"), "{err}");
    }

    #[test]
    fn a_truncated_member_is_named_by_its_size() {
        let m = manifest(&[(DATABASE, b"database")]);
        let err = m.verify(&members(&[(DATABASE, b"data")])).unwrap_err();
        assert!(err.contains("4 bytes, the manifest says 8"), "{err}");
    }

    #[test]
    fn names_that_climb_out_of_the_home_are_refused() {
        for bad in ["../etc/passwd", "/etc/passwd", "memory/../../x", ""] {
            assert!(!is_safe_name(bad), "{bad}");
        }
        assert!(is_safe_name("memory/telegram:1/MEMORY.md"));
        let m = manifest(&[("../evil", b"x")]);
        let err = m.verify(&members(&[("../evil", b"x")])).unwrap_err();
        assert!(err.contains("must not write"), "{err}");
    }

    #[test]
    fn row_counts_must_match_table_by_table() {
        let m = manifest(&[(DATABASE, b"db")]);
        let same: BTreeMap<String, u64> =
            [("sessions".to_string(), 3), ("messages".to_string(), 12)].into();
        m.verify_rows(&same).unwrap();
        let fewer: BTreeMap<String, u64> =
            [("sessions".to_string(), 3), ("messages".to_string(), 11)].into();
        let err = m.verify_rows(&fewer).unwrap_err();
        assert!(
            err.contains("table messages: 11 rows, the manifest says 12"),
            "{err}"
        );
    }

    #[test]
    fn a_newer_format_or_garbage_is_refused_clearly() {
        let mut m = manifest(&[]);
        m.format = FORMAT + 1;
        let err = Manifest::parse(&serde_json::to_vec(&m).unwrap()).unwrap_err();
        assert!(err.contains("this hermes reads format 1"), "{err}");
        let err = Manifest::parse(b"{not json").unwrap_err();
        assert!(err.contains("not a hermes backup"), "{err}");
    }
}
