//! The tree is a jail: every path the repository names (an Argo CD source path, a
//! write-back target, an override file) is resolved inside the repository root, `..` and
//! symbolic links included, before anything is read or written there.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a path the repository names is refused, or a file of the tree is not read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A `..` climbs above the root.
    #[error("{rel} leaves the repository")]
    Leaves { rel: String },
    /// A symbolic link on the way leads outside the root.
    #[error("{rel} is a link to outside the repository")]
    LinkOutside { rel: String },
    #[error("{rel} is a broken link")]
    BrokenLink { rel: String },
    #[error("cannot resolve the repository root: {0}")]
    Root(Arc<std::io::Error>),
    /// Opening or reading it failed (a missing file, a directory, a link refused).
    #[error("cannot read: {0}")]
    Io(Arc<std::io::Error>),
    #[error("cannot read: not a regular file")]
    NotRegular,
    #[error("larger than {}: not read", size(*max))]
    TooLarge { max: u64 },
    #[error("not UTF-8 text: not read")]
    NotText,
    /// A directory of a walk, or an entry in it, cannot be read (named by its whole path).
    #[error("IO error for operation on {}: {source}", path.display())]
    Walk {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    /// An entry of a directory being listed cannot be read.
    #[error("{0}")]
    Listing(Arc<std::io::Error>),
    /// Reading a clone's objects failed (`git cat-file --batch`).
    #[error("cannot read: git cat-file: {0}")]
    GitObjects(String),
}

impl Error {
    /// What the user can do about it, where there is something to do.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::Leaves { .. } | Error::LinkOutside { .. } | Error::BrokenLink { .. } => Some(
                "imagebump reads and writes only the repository's own files: name a path inside it",
            ),
            Error::TooLarge { .. } => Some("split the file, or leave it out with scan.exclude"),
            Error::NotText => Some("save the file as UTF-8, or leave it out with scan.exclude"),
            Error::Root(_)
            | Error::Io(_)
            | Error::NotRegular
            | Error::Walk { .. }
            | Error::Listing(_)
            | Error::GitObjects(_) => None,
        }
    }

    /// The error of an I/O call that failed.
    pub fn io(e: impl Into<std::io::Error>) -> Error {
        Error::Io(Arc::new(e.into()))
    }
}

/// The message alone, for the callers that word their own errors around it.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

/// `rel` (`/`-separated, from the root) inside `root`: its normalised spelling (`.` and
/// `..` resolved, no leading or trailing `/`; `""` for the root) and its path on disk.
/// An error says how it leaves the tree: by `..`, or through a symbolic link.
pub fn resolve(root: &Path, rel: &str) -> Result<(String, PathBuf), Error> {
    let normalised = normalise(rel)?;
    let path = root.join(&normalised);
    // The deepest part that exists must still be inside once its links are followed; the
    // rest does not exist yet (a file to create).
    let real_root = root.canonicalize().map_err(|e| Error::Root(Arc::new(e)))?;
    let existing = path.ancestors().find(|p| p.symlink_metadata().is_ok());
    if let Some(existing) = existing {
        let real = existing
            .canonicalize()
            .map_err(|_| Error::BrokenLink { rel: rel.into() })?;
        if !real.starts_with(&real_root) {
            return Err(Error::LinkOutside { rel: rel.into() });
        }
    }
    Ok((normalised, path))
}

/// `rel`'s spelling with `.` and `..` resolved, no leading or trailing `/` (`""` for the
/// root); an error when a `..` leaves the tree. Links are [`resolve`]'s business.
pub fn normalise(rel: &str) -> Result<String, Error> {
    let mut parts: Vec<&str> = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Error::Leaves { rel: rel.into() });
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// `max` bytes as [`Error::TooLarge`] says it.
fn size(max: u64) -> String {
    if max >= 1 << 20 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{} KiB", max >> 10)
    }
}

/// A text file, refused whole when it is larger than `max` bytes (counted while reading: a
/// device or a growing file cannot get past it) or not UTF-8. The error says which.
pub fn read_capped(path: &Path, max: u64) -> Result<String, Error> {
    read_open(std::fs::File::open(path), max)
}

/// As [`read_capped`], the file `name` in the directory `dir` is open on, not following a
/// link (a walk read it as a file: a link put in its place since is not read through).
pub fn read_capped_in(
    dir: rustix::fd::BorrowedFd<'_>,
    name: &std::ffi::CStr,
    max: u64,
) -> Result<String, Error> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NOFOLLOW;
    let file = rustix::fs::openat(dir, name, flags, Mode::empty());
    read_open(
        file.map(std::fs::File::from).map_err(std::io::Error::from),
        max,
    )
}

/// As [`read_capped`], the file `rel` (a normalised path) under `root`, following no
/// link on the way nor at the end, and only a regular file: each directory is opened
/// from its parent with `O_NOFOLLOW`, the file with `O_NONBLOCK` too (a pipe put in its
/// place does not block the read), and refused unless it is a regular file. For a file
/// read a second time, whatever replaced it since the walk listed it.
pub fn read_beneath(root: &Path, rel: &str, max: u64) -> Result<String, Error> {
    use rustix::fs::{Mode, OFlags};
    let failed = Error::io;
    let dir_flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::DIRECTORY;
    let mut dir = rustix::fs::open(root, dir_flags, Mode::empty()).map_err(failed)?;
    let rel = normalise(rel)?;
    let (dirs, name) = rel.rsplit_once('/').unwrap_or(("", &rel));
    for part in dirs.split('/').filter(|p| !p.is_empty()) {
        dir = rustix::fs::openat(&dir, part, dir_flags | OFlags::NOFOLLOW, Mode::empty())
            .map_err(failed)?;
    }
    let flags =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let file = rustix::fs::openat(&dir, name, flags, Mode::empty()).map_err(failed)?;
    let stat = rustix::fs::fstat(&file).map_err(failed)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(Error::NotRegular);
    }
    read_open(Ok(std::fs::File::from(file)), max)
}

/// The text of a file just opened (or the error opening it), as [`read_capped`] reads it.
fn read_open(file: std::io::Result<std::fs::File>, max: u64) -> Result<String, Error> {
    use std::io::Read as _;
    let failed = Error::io;
    let mut file = file.map_err(failed)?.take(max.saturating_add(1));
    // A manifest is a few hundred bytes: read into the thread's buffer until the end, and
    // kept at its exact size. Not asking the file's size first saves a system call per file
    // (15,000 at 10,000 apps, docs/performance.md); a larger file is grown into past it.
    let bytes = FIRST.with_borrow_mut(|first| {
        let mut n = 0;
        while let Some(rest) = first.get_mut(n..).filter(|r| !r.is_empty()) {
            match file.read(rest) {
                Ok(0) => break,
                Ok(read) => n = n.saturating_add(read),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let mut bytes = first.get(..n).unwrap_or_default().to_vec();
        if n == first.len() {
            file.read_to_end(&mut bytes)?;
        }
        Ok(bytes)
    });
    let bytes = bytes.map_err(failed)?;
    if bytes.len() as u64 > max {
        return Err(Error::TooLarge { max });
    }
    text(bytes)
}

thread_local! {
    /// Where [`read_capped`] reads a file's first 16 KiB: zeroed once per thread, not once
    /// per file (a buffer on the stack is zeroed on every call).
    static FIRST: std::cell::RefCell<Box<[u8]>> =
        std::cell::RefCell::new(vec![0u8; 16 * 1024].into_boxed_slice());
}

/// `bytes` as text; the error when they are not UTF-8.
pub fn text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|_| Error::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file read a second time is read only as a regular file reached through no link:
    /// a link to the same text, a link on the way, a pipe (which would block a plain open)
    /// and a directory are each refused, at once.
    #[test]
    fn a_file_read_beneath_the_root_follows_no_link() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("apps/web")).unwrap();
        std::fs::write(r.join("apps/web/values.yaml"), "x: 1\n").unwrap();
        assert_eq!(
            read_beneath(r, "apps/web/values.yaml", 100).unwrap(),
            "x: 1\n"
        );
        assert_eq!(
            read_beneath(r, "./apps//web/values.yaml", 100).unwrap(),
            "x: 1\n"
        );
        assert_eq!(
            read_beneath(r, "apps/web/values.yaml", 2)
                .unwrap_err()
                .to_string(),
            "larger than 0 KiB: not read"
        );
        std::os::unix::fs::symlink(r.join("apps/web/values.yaml"), r.join("apps/link.yaml"))
            .unwrap();
        std::os::unix::fs::symlink(r.join("apps/web"), r.join("apps/alias")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            r.join("apps/pipe.yaml"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for refused in [
            "apps/link.yaml",
            "apps/alias/values.yaml",
            "apps/pipe.yaml",
            "apps/web",
        ] {
            let e = read_beneath(r, refused, 100).unwrap_err().to_string();
            assert!(e.starts_with("cannot read: "), "{refused}: {e}");
        }
        assert!(read_beneath(r, "../outside.yaml", 100).is_err());
    }

    #[test]
    fn paths_stay_inside_the_tree() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("apps/web")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("apps/out")).unwrap();
        std::os::unix::fs::symlink(r.join("apps/web"), r.join("apps/alias")).unwrap();
        let ok = |rel: &str| resolve(r, rel).map(|(n, _)| n).map_err(String::from);
        assert_eq!(ok("./apps/web/../web/"), Ok("apps/web".into()));
        assert_eq!(
            ok("apps/web/new/values.yaml"),
            Ok("apps/web/new/values.yaml".into())
        );
        assert_eq!(
            ok("apps/alias/values.yaml"),
            Ok("apps/alias/values.yaml".into())
        );
        assert_eq!(ok("."), Ok(String::new()));
        assert!(ok("../outside")
            .unwrap_err()
            .contains("leaves the repository"));
        assert!(ok("apps/../../x").is_err());
        let linked = ok("apps/out/values.yaml").unwrap_err();
        assert!(linked.contains("link to outside"), "{linked}");
    }

    #[test]
    fn a_file_is_read_whole_up_to_the_cap_and_no_further() {
        let read_capped = |path: &Path, max| super::read_capped(path, max).map_err(String::from);
        let too_large = |max| Error::TooLarge { max }.to_string();
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, len: usize| {
            let path = dir.path().join(name);
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            std::fs::write(&path, &text).unwrap();
            (path, text)
        };
        // Empty, small, exactly the first buffer, and past it.
        for len in [0, 300, 16 * 1024, 16 * 1024 + 1, 100_000] {
            let (path, text) = write("f.yaml", len);
            assert_eq!(read_capped(&path, 1 << 20), Ok(text), "{len} bytes");
            // At the cap exactly it is read; one byte over, refused.
            let max = len as u64;
            assert!(read_capped(&path, max).is_ok(), "{len} bytes, cap {max}");
            if len > 0 {
                let under = max - 1;
                assert_eq!(read_capped(&path, under), Err(too_large(under)), "{len}");
            }
        }
        let (path, _) = write("big.yaml", 40_000);
        assert_eq!(read_capped(&path, 20_000), Err(too_large(20_000)));
        std::fs::write(dir.path().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
        assert!(read_capped(&dir.path().join("bin"), 1024).is_err());
    }

    #[test]
    fn errors_say_what_they_said_as_text_and_hint_where_a_user_can_act() {
        let leaves = normalise("../x").unwrap_err();
        assert_eq!(leaves.to_string(), "../x leaves the repository");
        assert!(leaves.hint().is_some_and(|h| h.contains("inside")));
        assert_eq!(
            Error::TooLarge { max: 32 << 20 }.to_string(),
            "larger than 32 MiB: not read"
        );
        assert_eq!(
            Error::TooLarge { max: 4096 }.to_string(),
            "larger than 4 KiB: not read"
        );
        assert_eq!(
            text(vec![0xff]).unwrap_err().to_string(),
            "not UTF-8 text: not read"
        );
        assert!(Error::NotText.hint().is_some());
        let missing = Error::io(std::io::Error::from_raw_os_error(2));
        assert!(
            missing.to_string().starts_with("cannot read: "),
            "{missing}"
        );
        assert_eq!(missing.hint(), None);
        assert_eq!(
            String::from(Error::NotRegular),
            "cannot read: not a regular file"
        );
    }
}
