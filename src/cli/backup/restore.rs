//! `hermes restore <file> [--home DIR] [--force]`: check everything, then write. The archive is
//! staged and checked (checksums, SQLite's structure check, row counts) and the target home
//! checked (no daemon on it, no conversations or changed files to lose without `--force`) before
//! the first byte reaches the home; each file is then written under a temporary name and renamed
//! into place, the database last.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::archive::{self, Staged};
use super::database;
use super::manifest::{self, FileEntry};
use crate::cli::home_lock;

/// Most conflicting files named in a refusal.
const NAMED: usize = 10;

pub(in crate::cli) async fn restore(
    home: PathBuf,
    file: PathBuf,
    force: bool,
) -> crate::cli::Outcome {
    tokio::task::spawn_blocking(move || run(&home, &file, force))
        .await
        .map_err(|e| format!("the restore stopped: {e}"))?
}

fn run(home: &Path, file: &Path, force: bool) -> crate::cli::Outcome {
    refuse_if_running(home)?;
    let staged = archive::stage(file)?;
    staged.manifest.verify(&staged.members)?;
    if let Some(db) = &staged.manifest.database {
        let path = staged.path(&db.file);
        database::check(&path)?;
        let (_, rows) = database::count_rows(&path)?;
        staged.manifest.verify_rows(&rows)?;
    }
    let conflicts = conflicts(&staged, home);
    if !conflicts.is_empty() && !force {
        let more = conflicts.len().saturating_sub(NAMED);
        let mut list = conflicts
            .iter()
            .take(NAMED)
            .map(|c| format!("\n  {c}"))
            .collect::<String>();
        if more > 0 {
            list.push_str(&format!("\n  … and {more} more"));
        }
        return Err(format!(
            "{} is not empty; restoring would replace:{list}\nnothing was written; \
             run again with --force to replace them",
            home.display()
        ));
    }
    // From here on the home is written: hold it so that no daemon starts half-way.
    let _lock = match home_lock::exclusive(home) {
        Ok(lock) => lock,
        Err(home_lock::Refused::Held) => return Err(running(home, "its lock is held")),
        Err(home_lock::Refused::Io(e)) => {
            return Err(format!(
                "cannot lock {}: {e}",
                home_lock::path(home).display()
            ));
        }
    };
    install(&staged, home)?;
    report(&staged, home, file);
    Ok(())
}

fn running(home: &Path, why: &str) -> String {
    format!(
        "a hermes daemon is running on {} ({why}): stop it first (`systemctl stop hermes`, or \
         SIGTERM); nothing was written",
        home.display()
    )
}

/// Refuse while a daemon runs on `home`: it holds the home's lock, or (a daemon older than the
/// lock) its admin endpoint answers at the address it wrote.
fn refuse_if_running(home: &Path) -> crate::cli::Outcome {
    match home_lock::is_held(home) {
        Ok(true) => return Err(running(home, "its lock is held")),
        Ok(false) => {}
        Err(e) => {
            return Err(format!(
                "cannot check {} for a running daemon: {e}",
                home_lock::path(home).display()
            ));
        }
    }
    let file = crate::gateway::admin_addr_file(home);
    let addr = std::fs::read_to_string(&file)
        .ok()
        .and_then(|a| a.trim().parse::<std::net::SocketAddr>().ok());
    if let Some(addr) = addr
        && std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    {
        return Err(running(
            home,
            &format!(
                "its admin endpoint answers at {addr}; if no daemon runs, delete {}",
                file.display()
            ),
        ));
    }
    Ok(())
}

/// What the restore would replace in `home`: a store holding conversations, files that differ
/// from the archive's.
fn conflicts(staged: &Staged, home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let db_member = staged.manifest.database.as_ref().map(|d| d.file.as_str());
    if db_member.is_some() {
        let store = home.join(manifest::DATABASE);
        if database::holds_data(&store) {
            out.push(format!(
                "{} (a store with conversations or queued messages)",
                store.display()
            ));
        }
    }
    for (name, want) in &staged.members {
        if Some(name.as_str()) == db_member {
            continue;
        }
        let dest = home.join(name);
        match std::fs::File::open(&dest).and_then(FileEntry::of_reader) {
            Ok(have) if &have == want => {}
            Ok(_) => out.push(format!("{} (differs from the archive's)", dest.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => out.push(format!("{} (cannot be read: {e})", dest.display())),
        }
    }
    out
}

/// Move every staged member into `home`, the database last (after its old WAL, which SQLite
/// would otherwise replay onto the restored file, is gone).
fn install(staged: &Staged, home: &Path) -> crate::cli::Outcome {
    let db_member = staged.manifest.database.as_ref().map(|d| d.file.clone());
    for name in staged.members.keys() {
        if Some(name) == db_member.as_ref() {
            continue;
        }
        let mode = if name == manifest::CONFIG {
            keep_aside(&home.join(name), staged.members.get(name))?;
            0o600
        } else {
            staged.modes.get(name).copied().unwrap_or(0o600) & 0o700 | 0o600
        };
        place(&staged.path(name), &home.join(name), mode)?;
    }
    if let Some(name) = db_member {
        let dest = home.join(manifest::DATABASE);
        for suffix in ["-wal", "-shm", "-journal"] {
            let side = PathBuf::from(format!("{}{suffix}", dest.display()));
            match std::fs::remove_file(&side) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot remove {}: {e}", side.display())),
            }
        }
        place(&staged.path(&name), &dest, 0o600)?;
    }
    Ok(())
}

/// A configuration file the archive's copy replaces (with `--force`) is kept beside it as
/// `config.toml.before-restore`: it may hold the secrets the archive's copy was written without.
fn keep_aside(path: &Path, incoming: Option<&FileEntry>) -> crate::cli::Outcome {
    let have = match std::fs::File::open(path).and_then(FileEntry::of_reader) {
        Ok(have) => have,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if Some(&have) == incoming {
        return Ok(());
    }
    let aside = PathBuf::from(format!("{}.before-restore", path.display()));
    std::fs::rename(path, &aside)
        .map_err(|e| format!("cannot keep {} aside: {e}", path.display()))?;
    println!(
        "  your previous configuration is kept as {}",
        aside.display()
    );
    Ok(())
}

/// Write `from`'s bytes to `to` atomically: a temporary name beside it, synced, then renamed.
fn place(from: &Path, to: &Path, mode: u32) -> crate::cli::Outcome {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let failed = |e: std::io::Error| format!("cannot write {}: {e}", to.display());
    let parent = to.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .map_err(failed)?;
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    let temp = parent.join(format!(".{name}.restore-{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        std::io::copy(&mut std::fs::File::open(from)?, &mut out)?;
        out.set_permissions(std::fs::Permissions::from_mode(mode))?;
        out.sync_all()?;
        std::fs::rename(&temp, to)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(failed(e));
    }
    Ok(())
}

fn report(staged: &Staged, home: &Path, file: &Path) {
    let m = &staged.manifest;
    println!(
        "restored {} files from {} (hermes {}, taken {}) into {}",
        staged.members.len(),
        file.display(),
        m.hermes_version,
        m.created_at,
        home.display()
    );
    match &m.database {
        Some(db) => {
            let rows = |t: &str| db.tables.get(t).copied().unwrap_or(0);
            println!(
                "  database: {} sessions, {} messages (checked: checksums, structure, rows of {} tables)",
                rows("sessions"),
                rows("messages"),
                db.tables.len()
            );
        }
        None => println!(
            "  the database ({}) is not in this archive: restore it with pg_restore from your pg_dump",
            m.backend
        ),
    }
    if !m.secrets_included && !m.redacted_keys.is_empty() {
        println!(
            "  the configuration came without its secrets: set {} again (in {} or the environment) \
             before starting the daemon",
            m.redacted_keys.join(", "),
            home.join(manifest::CONFIG).display()
        );
    }
}
