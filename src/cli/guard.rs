//! The daemon's own process, closed to what it runs: marked non-dumpable (its `/proc/<pid>/`
//! `environ`, `mem` and `fd/` then refuse other processes of its user), and its credentials wiped
//! out of its environment block after the configuration's copy of the environment was taken, so
//! that even a child allowed to read that block (root keeps that right) finds no token there.

/// Run at start, before the async runtime starts any thread.
pub fn guard_process() {
    crate::config::capture_environment();
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) only changes this process's dumpable flag.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(
            "could not mark the process non-dumpable ({}): its children may read its memory",
            std::io::Error::last_os_error()
        );
    }
    wipe_credentials();
}

/// The start and end of this process's environment block (`/proc/self/stat` fields 50 and 51).
fn environment_block() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (in parentheses, possibly with spaces) start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split(' ').collect();
    let start = fields.get(50 - 3)?.parse().ok()?;
    let end = fields.get(51 - 3)?.parse().ok()?;
    (end > start).then_some((start, end))
}

/// Overwrite with NULs the value of every variable of the environment block whose name says it
/// holds a credential; returns how many.
fn wipe_credentials() -> usize {
    let Some((start, end)) = environment_block() else {
        return 0;
    };
    // SAFETY: [start, end) is this process's environment block on its initial stack: mapped,
    // writable, and read by nothing else now (one thread; the configuration reads the capture).
    // `environ` points into it, so `getenv` then sees these variables empty.
    let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    let mut wiped = 0;
    for entry in block.split_mut(|b| *b == 0) {
        let Some(eq) = entry.iter().position(|b| *b == b'=') else {
            continue;
        };
        if crate::config::names_a_credential(&String::from_utf8_lossy(&entry[..eq])) {
            entry[eq + 1..].fill(0);
            wiped += 1;
        }
    }
    wiped
}
