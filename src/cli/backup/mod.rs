//! `hermes backup <file>` and `hermes restore <file>`: one archive of a home, taken while the
//! daemon runs, that a restore checks completely before it writes a byte.
//!
//! The archive holds a consistent snapshot of the SQLite store (`VACUUM INTO`, see
//! [`database`]), the memory files and skills of `$HERMES_HOME`, and the configuration file with
//! its secrets removed (unless `--with-secrets`), under a `manifest.json` giving each file's
//! size and SHA-256 and the snapshot's rows per table. With PostgreSQL the database is the
//! operator's `pg_dump`; the archive keeps the rest. A restore reads the archive into a private
//! staging folder, checks every checksum, SQLite's structure check and every table's row count,
//! refuses a home whose daemon runs or whose store holds conversations (unless `--force`), and
//! only then moves each file into place (a temporary name, then a rename).

mod archive;
mod database;
mod manifest;
mod redact;
mod restore;

use std::path::{Path, PathBuf};

use crate::config::{Config, StoreBackend};
use archive::{Member, Source};
use manifest::{DatabaseEntry, FileEntry, Manifest};
pub(super) use restore::restore;

/// The folders of `$HERMES_HOME` a backup keeps besides the database and the configuration.
const FOLDERS: [&str; 2] = ["memory", "skills"];

pub(super) async fn backup(config: Config, file: PathBuf, with_secrets: bool) -> super::Outcome {
    tokio::task::spawn_blocking(move || take(&config, &file, with_secrets))
        .await
        .map_err(|e| format!("the backup stopped: {e}"))?
}

/// Take the backup of `config`'s home into `file`.
fn take(config: &Config, file: &Path, with_secrets: bool) -> super::Outcome {
    let staging = tempfile::Builder::new()
        .prefix("hermes-backup-")
        .tempdir()
        .map_err(|e| format!("cannot make a staging folder: {e}"))?;
    let mut members = Vec::new();
    let mut files = std::collections::BTreeMap::new();
    let database = match config.store.backend {
        StoreBackend::Sqlite => {
            let (db, member, entry) = snapshot(config, staging.path())?;
            files.insert(member.name.clone(), entry);
            members.push(member);
            Some(db)
        }
        StoreBackend::Postgres => None,
    };
    let mut redacted_keys = Vec::new();
    if let Some(source) = config.source.as_deref().filter(|p| p.exists()) {
        let text = std::fs::read_to_string(source)
            .map_err(|e| format!("cannot read {}: {e}", source.display()))?;
        let text = if with_secrets {
            text
        } else {
            let redacted = redact::redact(&text, &config.secrets())
                .map_err(|e| format!("{}: {e}", source.display()))?;
            redacted_keys = redacted.keys;
            redacted.text
        };
        let bytes = text.into_bytes();
        files.insert(manifest::CONFIG.to_owned(), FileEntry::of(&bytes));
        members.push(Member {
            name: manifest::CONFIG.to_owned(),
            bytes: Source::Memory(bytes),
            mode: 0o600,
        });
    }
    for folder in FOLDERS {
        for member in collect(&config.home, folder)? {
            if let Source::Memory(bytes) = &member.bytes {
                files.insert(member.name.clone(), FileEntry::of(bytes));
            }
            members.push(member);
        }
    }
    let manifest = Manifest {
        format: manifest::FORMAT,
        hermes_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: jiff::Timestamp::now().to_string(),
        home: config.home.display().to_string(),
        backend: backend_name(config).to_owned(),
        secrets_included: with_secrets,
        redacted_keys,
        files,
        database,
    };
    archive::write(file, &manifest, &members)?;
    report(config, file, &manifest);
    Ok(())
}

fn backend_name(config: &Config) -> &'static str {
    match config.store.backend {
        StoreBackend::Sqlite => "sqlite",
        StoreBackend::Postgres => "postgres",
    }
}

/// Snapshot the SQLite store into `staging`: what the manifest says of it, and its member.
fn snapshot(config: &Config, staging: &Path) -> Result<(DatabaseEntry, Member, FileEntry), String> {
    let live = config.database_path();
    if !live.exists() {
        return Err(format!(
            "there is no database at {}: is HERMES_HOME (or --config) the daemon's?",
            live.display()
        ));
    }
    let copy = staging.join(manifest::DATABASE);
    database::snapshot(&live, &copy)?;
    let (schema_version, tables) = database::count_rows(&copy)?;
    let entry = std::fs::File::open(&copy)
        .and_then(FileEntry::of_reader)
        .map_err(|e| format!("cannot read the snapshot {}: {e}", copy.display()))?;
    let db = DatabaseEntry {
        file: manifest::DATABASE.to_owned(),
        schema_version,
        tables,
    };
    let member = Member {
        name: manifest::DATABASE.to_owned(),
        bytes: Source::File(copy),
        mode: 0o600,
    };
    Ok((db, member, entry))
}

/// Every plain file under `home/folder`, read now (so its checksum and its bytes in the
/// archive are the same read). Links are skipped: what they point to is not the home's.
fn collect(home: &Path, folder: &str) -> Result<Vec<Member>, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut pending = vec![home.join(folder)];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
        };
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if kind.is_dir() {
                pending.push(path);
                continue;
            }
            if !kind.is_file() {
                tracing::warn!("{} is not a plain file; not in the backup", path.display());
                continue;
            }
            let Ok(relative) = path.strip_prefix(home) else {
                continue;
            };
            let Some(name) = relative.to_str().filter(|n| manifest::is_safe_name(n)) else {
                tracing::warn!(
                    "{}: a name the archive cannot keep; skipped",
                    path.display()
                );
                continue;
            };
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mode = entry.metadata().map_or(0o600, |m| m.permissions().mode()) & 0o700 | 0o600;
            out.push(Member {
                name: name.to_owned(),
                bytes: Source::Memory(bytes),
                mode,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// What the backup holds, for the operator.
fn report(config: &Config, file: &Path, manifest: &Manifest) {
    let bytes: u64 = manifest.files.values().map(|f| f.size).sum();
    println!(
        "backup written to {} ({} files, {bytes} bytes before compression)",
        file.display(),
        manifest.files.len()
    );
    if let Some(db) = &manifest.database {
        let rows = |t: &str| db.tables.get(t).copied().unwrap_or(0);
        println!(
            "  database: {} sessions, {} messages, {} replies in the outbox (schema {})",
            rows("sessions"),
            rows("messages"),
            rows("outbox"),
            db.schema_version
        );
    } else {
        println!("{}", pg_dump_note(config));
    }
    if manifest.secrets_included {
        println!("  the configuration's secrets are IN this archive: keep it as safe as they are");
    } else if !manifest.redacted_keys.is_empty() {
        println!(
            "  secrets removed from the configuration's copy: {}",
            manifest.redacted_keys.join(", ")
        );
    }
}

/// With PostgreSQL: how to back the database up (the archive does not hold it).
fn pg_dump_note(config: &Config) -> String {
    let url = config.store.url.expose();
    let mut shown = url.to_owned();
    for secret in config.secrets() {
        if secret.len() >= 4 && secret != url {
            shown = shown.replace(secret, "***");
        }
    }
    format!(
        "  the database is PostgreSQL and is NOT in this archive: back it up with pg_dump, e.g.\n    \
         pg_dump --format=custom --file=hermes.pgdump '{shown}'\n  \
         (restore it with pg_restore --clean --dbname=<url> hermes.pgdump)"
    )
}
