//! The archive itself: a tar (gzip'd when the file name ends in `.gz` or `.tgz`), the manifest
//! first, written under a temporary name with mode 0600 and renamed into place once complete;
//! and read back into a private staging folder, each member hashed on the way, refusing links,
//! unsafe names and damage before anything reaches a home.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::manifest::{self, FileEntry, Manifest};

/// Largest manifest read (it lists files, it does not hold them).
const MANIFEST_LIMIT: u64 = 16 << 20;

/// One member to write: its name in the archive and where its bytes are.
pub struct Member {
    pub name: String,
    pub bytes: Source,
    /// Permission bits stored in the header.
    pub mode: u32,
}

pub enum Source {
    Memory(Vec<u8>),
    File(PathBuf),
}

/// Whether `path` names a gzip'd archive.
pub fn gzipped(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".gz") || name.ends_with(".tgz")
}

/// Write `manifest` and then `members` to `path`, replacing it only once the archive is whole.
pub fn write(path: &Path, manifest: &Manifest, members: &[Member]) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: give a file name for the archive", path.display()))?;
    let partial = path.with_file_name(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .map_err(failed)?;
    let result = write_members(file, gzipped(path), manifest, members)
        .and_then(|()| std::fs::rename(&partial, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(failed(e));
    }
    Ok(())
}

fn write_members(
    file: File,
    gzip: bool,
    manifest: &Manifest,
    members: &[Member],
) -> std::io::Result<()> {
    let out: Box<dyn Write> = if gzip {
        Box::new(flate2::write::GzEncoder::new(
            BufWriter::new(file.try_clone()?),
            flate2::Compression::default(),
        ))
    } else {
        Box::new(BufWriter::new(file.try_clone()?))
    };
    let mut tar = tar::Builder::new(out);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let text = serde_json::to_vec_pretty(manifest).map_err(std::io::Error::other)?;
    append(
        &mut tar,
        manifest::NAME,
        &text[..],
        text.len() as u64,
        0o600,
        now,
    )?;
    for member in members {
        match &member.bytes {
            Source::Memory(bytes) => append(
                &mut tar,
                &member.name,
                &bytes[..],
                bytes.len() as u64,
                member.mode,
                now,
            )?,
            Source::File(path) => {
                let mut f = File::open(path)?;
                let size = f.seek(std::io::SeekFrom::End(0))?;
                f.rewind()?;
                append(&mut tar, &member.name, f, size, member.mode, now)?;
            }
        }
    }
    let mut out = tar.into_inner()?;
    out.flush()?;
    drop(out);
    file.sync_all()
}

fn append(
    tar: &mut tar::Builder<Box<dyn Write>>,
    name: &str,
    data: impl Read,
    size: u64,
    mode: u32,
    mtime: u64,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(mtime);
    tar.append_data(&mut header, name, data)
}

/// An archive read into a private folder (removed when dropped), not yet checked against its
/// manifest.
pub struct Staged {
    pub dir: tempfile::TempDir,
    pub manifest: Manifest,
    /// What each member held, as read.
    pub members: BTreeMap<String, FileEntry>,
    /// Each member's permission bits, from its header.
    pub modes: BTreeMap<String, u32>,
}

impl Staged {
    /// Where member `name` was staged.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Read the archive at `path` into a private temporary folder.
pub fn stage(path: &Path) -> Result<Staged, String> {
    let damaged = |e: &dyn std::fmt::Display| {
        format!(
            "{}: the archive is damaged or truncated ({e}); nothing was restored",
            path.display()
        )
    };
    let mut file = BufReader::new(
        File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
    );
    let mut magic = [0u8; 2];
    let gzip = match file.read_exact(&mut magic) {
        Ok(()) => magic == [0x1f, 0x8b],
        Err(e) => return Err(damaged(&e)),
    };
    file.rewind().map_err(|e| damaged(&e))?;
    let input: Box<dyn Read> = if gzip {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let dir = tempfile::Builder::new()
        .prefix("hermes-restore-")
        .tempdir()
        .map_err(|e| format!("cannot make a staging folder: {e}"))?;
    let mut tar = tar::Archive::new(input);
    let mut manifest_bytes = None;
    let mut members = BTreeMap::new();
    let mut modes = BTreeMap::new();
    for entry in tar.entries().map_err(|e| damaged(&e))? {
        let mut entry = entry.map_err(|e| damaged(&e))?;
        let name = entry
            .path()
            .map_err(|e| damaged(&e))?
            .to_string_lossy()
            .trim_end_matches('/')
            .to_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(format!(
                "{}: member {name} is not a plain file ({kind:?}); not a hermes backup",
                path.display()
            ));
        }
        if !manifest::is_safe_name(&name) {
            return Err(format!(
                "{}: member {name:?} would be written outside the home; not a hermes backup",
                path.display()
            ));
        }
        let size = entry.header().size().map_err(|e| damaged(&e))?;
        if name == manifest::NAME {
            let mut bytes = Vec::new();
            (&mut entry)
                .take(MANIFEST_LIMIT)
                .read_to_end(&mut bytes)
                .map_err(|e| damaged(&e))?;
            if bytes.len() as u64 != size {
                return Err(damaged(&format!("{name} is cut short")));
            }
            manifest_bytes = Some(bytes);
            continue;
        }
        if members.contains_key(&name) {
            return Err(format!(
                "{}: member {name} appears twice; not a hermes backup",
                path.display()
            ));
        }
        let mode = entry.header().mode().unwrap_or(0o600);
        let read = stage_member(&mut entry, &dir.path().join(&name)).map_err(|e| damaged(&e))?;
        if read.size != size {
            return Err(damaged(&format!(
                "{name} is cut short: {} of {size} bytes",
                read.size
            )));
        }
        members.insert(name.clone(), read);
        modes.insert(name, mode);
    }
    let manifest = manifest_bytes.ok_or_else(|| {
        format!(
            "{}: no {} in the archive; not a hermes backup (or cut short)",
            path.display(),
            manifest::NAME
        )
    })?;
    Ok(Staged {
        manifest: Manifest::parse(&manifest)?,
        dir,
        members,
        modes,
    })
}

/// Write one member under `to`, returning what it held.
fn stage_member(entry: &mut impl Read, to: &Path) -> std::io::Result<FileEntry> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = to.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)?;
    let read = FileEntry::copy(entry, &mut out)?;
    out.flush()?;
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(files: &[(&str, &[u8])]) -> (Manifest, Vec<Member>) {
        let manifest = Manifest {
            format: manifest::FORMAT,
            hermes_version: "test".into(),
            created_at: "now".into(),
            home: "/h".into(),
            backend: "sqlite".into(),
            secrets_included: false,
            redacted_keys: vec![],
            files: files
                .iter()
                .map(|(n, b)| (n.to_string(), FileEntry::of(b)))
                .collect(),
            database: None,
        };
        let members = files
            .iter()
            .map(|(n, b)| Member {
                name: n.to_string(),
                bytes: Source::Memory(b.to_vec()),
                mode: 0o600,
            })
            .collect();
        (manifest, members)
    }

    #[test]
    fn an_archive_reads_back_as_written_plain_and_gzipped() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let files: &[(&str, &[u8])] = &[
            ("config.toml", b"[llm]\n"),
            ("memory/telegram:111/MEMORY.md", b"likes tea"),
        ];
        let (manifest, members) = sample(files);
        for name in ["b.tar", "b.tar.gz"] {
            let path = dir.path().join(name);
            write(&path, &manifest, &members).unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
            let staged = stage(&path).unwrap();
            assert_eq!(staged.manifest, manifest);
            staged.manifest.verify(&staged.members).unwrap();
            let memory = std::fs::read(staged.path("memory/telegram:111/MEMORY.md")).unwrap();
            assert_eq!(memory, b"likes tea");
        }
        let gz = std::fs::read(dir.path().join("b.tar.gz")).unwrap();
        assert_eq!(gz[..2], [0x1f, 0x8b]);
    }

    #[test]
    fn a_cut_archive_is_refused_wherever_it_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        // Bytes gzip cannot shrink, so a cut of the compressed file cuts the member too.
        let mut state = 0x2545_f491_u32;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 16) as u8
            })
            .collect();
        let (manifest, members) = sample(&[("config.toml", b"x = 1\n"), ("hermes.db", &noise)]);
        // What follows the last member's data (padding, the end blocks, gzip's trailer) carries
        // nothing a cut there could lose.
        for (name, tail) in [("c.tar", 1024 + 512), ("c.tgz", 200)] {
            let path = dir.path().join(name);
            write(&path, &manifest, &members).unwrap();
            let whole = std::fs::read(&path).unwrap();
            for cut in (0..whole.len() - tail).step_by(97) {
                let cut_path = dir.path().join(format!("cut-{cut}-{name}"));
                std::fs::write(&cut_path, &whole[..cut]).unwrap();
                let outcome = stage(&cut_path).and_then(|s| s.manifest.verify(&s.members));
                assert!(
                    outcome.is_err(),
                    "{name} cut at {cut} of {} passed",
                    whole.len()
                );
            }
        }
    }

    #[test]
    fn a_member_named_outside_the_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evil.tar");
        let mut tar = tar::Builder::new(File::create(&path).unwrap());
        let mut header = tar::Header::new_gnu();
        header.set_size(1);
        header.set_mode(0o600);
        // `append_data` refuses `..` itself: write the name into the header directly.
        header.as_old_mut().name[..7].copy_from_slice(b"../evil");
        header.set_cksum();
        tar.append(&header, &b"x"[..]).unwrap();
        tar.finish().unwrap();
        let err = stage(&path).err().unwrap();
        assert!(err.contains("outside the home"), "{err}");
    }
}
