//! The terminal's fence: a Landlock ruleset each command is put under just before it starts, so
//! it cannot open the daemon's private files (its state directory but the workspace and the
//! skills, its config and env files) and cannot ptrace or signal the daemon, which also closes
//! `/proc/<daemon>/environ`, `mem` and `fd/` to it, even when everything runs as root.
//!
//! Landlock only grants, so "everything but these paths" is spelled as grants: full access
//! beneath every entry of every directory on the way down to a private path, except that way
//! itself; listing (names only) beneath those directories; then the workspace and the skills
//! inside the state directory again. A kernel without Landlock runs commands unfenced, and the
//! daemon says so at start and in `hermes doctor`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope,
};

/// The Landlock ABI the rules are written for; older kernels get what they support.
const ABI_USED: ABI = ABI::V6;

/// What the fence keeps out, and what inside that it lets in again.
#[derive(Debug, Clone, Default)]
pub struct FenceSettings {
    /// Never opened by a command (directories or files).
    pub private: Vec<PathBuf>,
    /// Inside a private path, read and run only (the skills).
    pub shared: Vec<PathBuf>,
    /// Inside a private path, full access (the workspace).
    pub writable: Vec<PathBuf>,
}

/// The Landlock ABI version this kernel offers; 0 without Landlock.
pub fn kernel_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query reads no memory (null attr, size 0).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v.max(0)
}

/// Whether commands run fenced (the kernel has Landlock).
pub fn active() -> bool {
    kernel_abi() > 0
}

/// One line for the start-up log and `hermes doctor`.
pub fn describe(settings: &FenceSettings) -> String {
    let private: Vec<String> = settings
        .private
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    match kernel_abi() {
        0 => format!(
            "terminal: NOT fenced: this kernel has no Landlock, so commands can read {} and the \
             daemon's /proc entries are closed only by its non-dumpable flag",
            private.join(", ")
        ),
        abi => format!(
            "terminal: fenced with Landlock (ABI {abi}): commands cannot open {} (the workspace \
             and skills excepted) nor reach the daemon's process",
            private.join(", ")
        ),
    }
}

/// The ruleset for one command (`None` when the kernel has no Landlock); apply it in the child
/// with [`RulesetCreated::restrict_self`].
pub(super) fn ruleset(settings: &FenceSettings) -> Result<Option<RulesetCreated>, String> {
    let existing: Vec<PathBuf> = settings
        .private
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    // A path inside another private path is kept out with it (and must not put its parent on
    // the way down, where the parent's other entries would be granted).
    let private: Vec<PathBuf> = existing
        .iter()
        .filter(|p| !existing.iter().any(|q| q != *p && p.starts_with(q)))
        .cloned()
        .collect();
    if private.is_empty() || kernel_abi() == 0 {
        // Nothing to keep out (not configured, or nothing there yet), or no Landlock.
        return Ok(None);
    }
    let way = ancestors(&private);
    let all = AccessFs::from_all(ABI_USED);
    let err = |e: landlock::RulesetError| format!("landlock: {e}");
    let mut rules = Ruleset::default()
        .handle_access(all)
        .map_err(err)?
        .scope(Scope::Signal)
        .map_err(err)?
        .create()
        .map_err(err)?;
    for dir in &way {
        rules = grant(rules, dir, AccessFs::ReadDir.into())?;
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !way.contains(&path) && !private.contains(&path) {
                rules = grant(rules, &path, all)?;
            }
        }
    }
    for shared in &settings.shared {
        rules = grant(rules, shared, AccessFs::from_read(ABI_USED))?;
    }
    for writable in &settings.writable {
        // Granting a directory that holds a private path would open that path again: such a
        // workspace already has everything but the private paths from the walk above. A
        // private path that is itself the workspace (an operator's, at the workspace root) is
        // let in again.
        let canonical = writable.canonicalize().unwrap_or_else(|_| writable.clone());
        if !private
            .iter()
            .any(|p| *p != canonical && p.starts_with(&canonical))
        {
            rules = grant(rules, writable, all)?;
        }
    }
    Ok(Some(rules))
}

/// Every directory above a private path (not the paths themselves).
fn ancestors(private: &[PathBuf]) -> BTreeSet<PathBuf> {
    private
        .iter()
        .flat_map(|p| p.ancestors().skip(1).map(Path::to_path_buf))
        .collect()
}

/// `rules` with `access` beneath `path` (file rights only for a file); a path that vanished or
/// cannot be opened (a dangling link) is skipped: nothing is granted there.
fn grant(
    rules: RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(rules);
    };
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI_USED)
    };
    rules
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("landlock: {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_way_down_is_every_directory_above_a_private_path() {
        let way = ancestors(&[
            PathBuf::from("/var/lib/hermes"),
            PathBuf::from("/etc/hermes/x"),
        ]);
        let way: Vec<_> = way.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(way, ["/", "/etc", "/etc/hermes", "/var", "/var/lib"]);
    }
}
