//! The files of the manifest tree, behind one door: a directory on disk, or a commit read
//! from git's objects. A clone is made without a work tree (writing every file was most
//! of a pull-request run's time on a disk: docs/performance.md); discovery walks the
//! commit's listing and reads each file it wants from the objects. A commit holding a
//! symbolic link or a submodule is checked out instead, so that the jail's rules for links
//! (`jail::resolve`) are the ones that apply.

use std::io::{BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::{Mutex, PoisonError};

use super::git::{self, Git};
use super::jail;

/// The largest file [`Tree::at_commit`] writes out (a configuration file is a few KiB).
const MAX_WRITTEN_OUT: u64 = 16 << 20;

/// What a walk meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// One entry of a walk.
pub struct Entry<'a> {
    /// Relative to the root, `/`-separated; lossy when the name is not UTF-8.
    pub rel: &'a str,
    pub kind: Kind,
    /// False when the name is not UTF-8 (`rel` then has replacement characters).
    pub utf8: bool,
    /// The file's text (or why it cannot be read, as [`Tree::read`] says it), when the walk
    /// read it as it met it ([`Reading`]); `None`: not read.
    pub text: Option<Result<String, jail::Error>>,
}

/// The files a walk reads as it meets them (on disk: from their directory's open
/// descriptor, so that a file's open looks up one name, not every directory above it
/// again, docs/performance.md): those `wanted` says, each capped at `max` bytes as
/// [`Tree::read`] caps it, until `budget` bytes of text have been read in all.
pub struct Reading<'a> {
    pub wanted: &'a (dyn Fn(&str) -> bool + Sync),
    pub max: u64,
    pub budget: usize,
}

/// The tree a run reads.
pub struct Tree {
    inner: Inner,
}

enum Inner {
    Disk(Disk),
    Objects(Objects),
}

/// A tree on disk: its root, and the root's directory kept open, so that a directory below
/// it is opened by its path from there.
struct Disk {
    root: PathBuf,
    /// Or why the root cannot be opened: what a walk then says.
    fd: Result<rustix::fd::OwnedFd, rustix::io::Errno>,
}

impl Disk {
    fn new(root: &Path) -> Disk {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Disk {
            root: root.to_path_buf(),
            fd: rustix::fs::open(root, flags, Mode::empty()),
        }
    }
}

/// Write the file `name` of `objects` into the clone `dir`, as the commit holds it. A
/// directory of that name is made a directory, so that whoever looks for the file finds
/// something that is not one and stops, as on a disk (a configuration file must be a
/// regular file: docs/security.md).
fn write_out_one(objects: &Objects, dir: &Path, name: &str) -> Result<(), git::Error> {
    let failed = |e: String| git::Error::Failed {
        command: "cat-file".into(),
        stderr: format!("{name}: {e}"),
    };
    let path = dir.join(name);
    match objects.node(name).map(|n| (n, n.kind)) {
        Some((node, Kind::File)) => {
            let bytes = (objects.blob(node, MAX_WRITTEN_OUT)).map_err(|e| failed(e.into()))?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(git::Error::Temp)?;
            }
            std::fs::write(&path, bytes)
                .map_err(|e| failed(format!("cannot write it into the clone: {e}")))
        }
        Some((_, Kind::Dir)) => std::fs::create_dir_all(&path).map_err(git::Error::Temp),
        _ => Ok(()),
    }
}

impl Tree {
    /// The files under `root`, on disk.
    pub fn disk(root: &Path) -> Tree {
        Tree {
            inner: Inner::Disk(Disk::new(root)),
        }
    }

    /// `commit`'s tree in the repository `dir`, read from its objects; checked out instead
    /// (and read from the disk) when it holds a symbolic link or a submodule. `write_out`
    /// names files that are written to the work tree all the same, when the commit has
    /// them as plain files (the repository's configuration, read by path).
    pub fn at_commit(
        git: &Git,
        dir: &Path,
        commit: &str,
        write_out: &[&str],
    ) -> Result<Tree, git::Error> {
        let listing = git.list_tree(dir, commit)?;
        let Some(objects) = Objects::parse(dir, &listing) else {
            tracing::info!("the tree holds a symbolic link or a submodule: checked out");
            git.checkout(dir, commit)?;
            return Ok(Tree::disk(dir));
        };
        for name in write_out {
            write_out_one(&objects, dir, name)?;
        }
        Ok(Tree {
            inner: Inner::Objects(objects),
        })
    }

    /// True when the files are read from git's objects (no work tree).
    pub fn from_objects(&self) -> bool {
        matches!(self.inner, Inner::Objects(_))
    }

    /// The text of the file `rel` (a normalised path from the root), refused whole when it
    /// is larger than `max` bytes or not UTF-8; the error says which, or why it cannot be
    /// read, as [`jail::read_capped`] says it.
    pub fn read(&self, rel: &str, max: u64) -> Result<String, jail::Error> {
        match &self.inner {
            Inner::Disk(d) => jail::read_capped(&d.root.join(rel), max),
            Inner::Objects(o) => jail::text(o.blob(o.file(rel, max)?, max)?),
        }
    }

    /// As [`Tree::read`], for a file read a second time: from a disk, following no link and
    /// only a regular file ([`jail::read_beneath`]), whatever was put in its place since
    /// the walk listed it; from git's objects, as the first time (a commit does not move).
    pub fn read_again(&self, rel: &str, max: u64) -> Result<String, jail::Error> {
        match &self.inner {
            Inner::Disk(d) => jail::read_beneath(&d.root, rel, max),
            Inner::Objects(_) => self.read(rel, max),
        }
    }

    /// Every file of `rels` (normalised paths) handed to `each` with its index, as
    /// [`Tree::read`] reads it. From git's objects, in one stream: every blob is asked for
    /// at once (a round trip per file costs several times the read itself,
    /// docs/performance.md), each answer handed over as it
    /// comes. From a disk, one file after the other (read them on every core instead).
    pub fn read_each(
        &self,
        rels: &[&str],
        max: u64,
        mut each: impl FnMut(usize, Result<String, jail::Error>),
    ) {
        match &self.inner {
            Inner::Disk(_) => {
                for (i, rel) in rels.iter().enumerate() {
                    each(i, self.read(rel, max));
                }
            }
            Inner::Objects(o) => o.stream(rels, max, |i, read| {
                each(i, read.and_then(jail::text));
            }),
        }
    }

    /// `rel`'s normalised spelling, inside the tree: an error says how it leaves it (by
    /// `..`, or through a symbolic link).
    pub fn resolve(&self, rel: &str) -> Result<String, jail::Error> {
        match &self.inner {
            Inner::Disk(d) => jail::resolve(&d.root, rel).map(|(normalised, _)| normalised),
            Inner::Objects(_) => jail::normalise(rel),
        }
    }

    /// Is `rel` a file (following links inside the tree, on disk)?
    pub fn is_file(&self, rel: &str) -> bool {
        self.kind(rel) == Some(Kind::File)
    }

    /// Is `rel` a directory (`""` is the root)?
    pub fn is_dir(&self, rel: &str) -> bool {
        self.kind(rel) == Some(Kind::Dir)
    }

    /// Is there anything at `rel`?
    pub fn exists(&self, rel: &str) -> bool {
        self.kind(rel).is_some()
    }

    fn kind(&self, rel: &str) -> Option<Kind> {
        match &self.inner {
            Inner::Disk(d) => {
                let meta = d.root.join(rel).metadata().ok()?;
                Some(if meta.is_dir() {
                    Kind::Dir
                } else if meta.is_file() {
                    Kind::File
                } else {
                    Kind::Other
                })
            }
            Inner::Objects(o) => {
                let rel = jail::normalise(rel).ok()?;
                if rel.is_empty() {
                    return Some(Kind::Dir);
                }
                o.node(&rel).map(|n| n.kind)
            }
        }
    }

    /// Every entry below the root, depth first, each directory's entries in name order
    /// (bytewise), links not followed; a directory for which `prune` (given its path) is
    /// true is left out with all it holds. A directory that cannot be read is an `Err`
    /// saying so, and the walk goes on.
    pub fn walk(
        &self,
        prune: impl Fn(&str) -> bool + Sync,
        visit: impl FnMut(Result<Entry<'_>, jail::Error>),
    ) {
        self.walk_reading(prune, None, visit);
    }

    /// As [`Tree::walk`], reading the files `reading` wants on the way (from a disk; from
    /// git's objects, none: [`Tree::read_each`] streams them).
    pub fn walk_reading(
        &self,
        prune: impl Fn(&str) -> bool + Sync,
        reading: Option<&Reading>,
        mut visit: impl FnMut(Result<Entry<'_>, jail::Error>),
    ) {
        match &self.inner {
            Inner::Disk(d) => walk_disk(d, prune, reading, visit),
            Inner::Objects(o) => {
                let mut pruned: Option<&str> = None;
                for &i in &o.walk_order {
                    let Some(node) = o.nodes.get(i as usize) else {
                        continue;
                    };
                    let inside = |p: &str| {
                        node.path
                            .strip_prefix(p)
                            .is_some_and(|rest| rest.starts_with('/'))
                    };
                    if pruned.is_some_and(inside) {
                        continue;
                    }
                    if node.kind == Kind::Dir && prune(&node.path) {
                        pruned = Some(&node.path);
                        continue;
                    }
                    visit(Ok(Entry {
                        rel: &node.path,
                        kind: node.kind,
                        utf8: node.utf8,
                        text: None,
                    }));
                }
            }
        }
    }
}

/// The error reading a missing file (2) or a directory (21) gives on disk.
fn not_read(errno: i32) -> jail::Error {
    jail::Error::io(std::io::Error::from_raw_os_error(errno))
}

/// The disk's walk, one level of directories at a time, each level's directories read on
/// every core (a tree of 10,000 apps has as many directories: one `open`, two `getdents64`
/// and a `close` each), with the files `reading` wants, then visited in the order of a
/// depth-first walk. Each directory's entries are kept once, as read, until they are
/// visited: a level's directories are in the order a depth-first walk meets them, so the
/// walk takes the next listing of the next level at each subdirectory. Directories are
/// opened from the root's descriptor and files from their directory's, neither through a
/// link.
fn walk_disk(
    disk: &Disk,
    prune: impl Fn(&str) -> bool + Sync,
    reading: Option<&Reading>,
    mut visit: impl FnMut(Result<Entry<'_>, jail::Error>),
) {
    use rustix::fd::AsFd as _;
    let base = match &disk.fd {
        Ok(fd) => fd.as_fd(),
        Err(e) => return visit(Err(failed_at(&disk.root, (*e).into()))),
    };
    let top = Dir {
        path: PathBuf::new(),
        rel: String::new(),
        utf8: true,
    };
    let spent = std::sync::atomic::AtomicUsize::new(0);
    let lister = Lister {
        base,
        root: &disk.root,
        prune: &prune,
        reading: reading.map(|r| (r, &spent)),
    };
    let levels = lister.levels(top);
    visit_in_order(levels, visit);
}

/// Each level's listings, in the order a depth-first walk meets them, handed to `visit`
/// depth first: a directory's own entries right after its entry.
fn visit_in_order(
    mut levels: Vec<std::vec::IntoIter<Vec<Part>>>,
    mut visit: impl FnMut(Result<Entry<'_>, jail::Error>),
) {
    let mut open: Vec<(usize, std::vec::IntoIter<Part>)> = Vec::new();
    if let Some(first) = levels.first_mut().and_then(Iterator::next) {
        open.push((0, first.into_iter()));
    }
    while let Some((depth, parts)) = open.last_mut() {
        let depth = *depth;
        match parts.next() {
            None => {
                open.pop();
            }
            Some(Part::Entry {
                rel,
                kind,
                utf8,
                text,
            }) => visit(Ok(Entry {
                rel: &rel,
                kind,
                utf8,
                text,
            })),
            Some(Part::Error(e)) => visit(Err(e)),
            Some(Part::Sub) => {
                let below = depth.saturating_add(1);
                if let Some(listing) = levels.get_mut(below).and_then(Iterator::next) {
                    open.push((below, listing.into_iter()));
                }
            }
        }
    }
}

/// The error of a directory or an entry that cannot be read, named by its whole path, as
/// the `walkdir` crate words it.
fn failed_at(path: &Path, e: std::io::Error) -> jail::Error {
    jail::Error::Walk {
        path: path.to_path_buf(),
        source: std::sync::Arc::new(e),
    }
}

/// A directory's entries as they are read: entries, errors, and where each subdirectory's
/// own entries go (right after its entry).
enum Part {
    Entry {
        rel: String,
        kind: Kind,
        utf8: bool,
        text: Option<Result<String, jail::Error>>,
    },
    Error(jail::Error),
    Sub,
}

/// A directory still to read: its path from the root as it is on disk (`""`: the root),
/// and as its entry gave it (its entries' paths are made from it, not from the whole path
/// again).
struct Dir {
    path: PathBuf,
    rel: String,
    utf8: bool,
}

/// What every directory of a disk walk is read with: the root's descriptor and path (for
/// errors), the directories left out, and the files read with the bytes read so far.
struct Lister<'a, P> {
    base: rustix::fd::BorrowedFd<'a>,
    root: &'a Path,
    prune: &'a P,
    reading: Option<(&'a Reading<'a>, &'a std::sync::atomic::AtomicUsize)>,
}

/// The relative path of the entry named `bytes` in `dir`, as the whole relative path
/// would read: `\` as `/` in a path that is UTF-8 all through, a lossy rendering,
/// untouched, in one that is not; and whether it is UTF-8 all through.
fn entry_rel(dir: &Dir, bytes: &[u8]) -> (String, bool) {
    let (shown, utf8) = match std::str::from_utf8(bytes) {
        Ok(n) if dir.utf8 => (n.replace('\\', "/"), true),
        Ok(n) => (n.to_string(), false),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
    };
    if dir.rel.is_empty() {
        return (shown, utf8);
    }
    let mut rel =
        String::with_capacity(dir.rel.len().saturating_add(shown.len()).saturating_add(1));
    rel.push_str(&dir.rel);
    rel.push('/');
    rel.push_str(&shown);
    (rel, utf8)
}

impl<P: Fn(&str) -> bool> Lister<'_, P> {
    /// The tree below `top`, one level of directories at a time, each level's directories
    /// read on every core: each level's listings, in the order of their directories.
    fn levels(&self, top: Dir) -> Vec<std::vec::IntoIter<Vec<Part>>>
    where
        P: Sync,
    {
        let mut levels = Vec::new();
        let mut to_read = vec![top];
        while !to_read.is_empty() {
            let listed = crate::parallel::map(&to_read, |dir| self.list(dir));
            let mut next = Vec::new();
            let level = (listed.into_iter())
                .map(|(parts, dirs)| {
                    next.extend(dirs);
                    parts
                })
                .collect::<Vec<_>>();
            levels.push(level.into_iter());
            to_read = next;
        }
        levels
    }

    /// One directory's entries in name order (bytewise), each directory among them
    /// followed by the place of its own entries, and those directories to read next, in
    /// the same order; the error reading it, if it cannot be read.
    fn list(&self, dir: &Dir) -> (Vec<Part>, Vec<Dir>) {
        let mut parts = Vec::new();
        let mut dirs = Vec::new();
        let Some((listing, entries)) = self.entries(dir, &mut parts) else {
            return (parts, dirs);
        };
        let fd = match listing.fd() {
            Ok(fd) => fd,
            Err(e) => {
                parts.push(Part::Error(failed_at(&self.whole(&dir.path), e.into())));
                return (parts, dirs);
            }
        };
        for entry in &entries {
            self.entry(fd, dir, entry, (&mut parts, &mut dirs));
        }
        (parts, dirs)
    }

    /// `path` (from the root) as a whole path, for errors.
    fn whole(&self, path: &Path) -> PathBuf {
        if path.as_os_str().is_empty() {
            self.root.to_path_buf()
        } else {
            self.root.join(path)
        }
    }

    /// The directory `dir` opened (through no link) and its entries sorted by name, but `.`
    /// and `..`; an entry that cannot be read is an error in `parts`, and so is the
    /// directory itself when it cannot be opened (`None`).
    fn entries(
        &self,
        dir: &Dir,
        parts: &mut Vec<Part>,
    ) -> Option<(rustix::fs::Dir, Vec<rustix::fs::DirEntry>)> {
        use rustix::fs::{Mode, OFlags};
        let at = if dir.path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &dir.path
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let opened = rustix::fs::openat(self.base, at, flags, Mode::empty());
        let mut listing = match opened.and_then(rustix::fs::Dir::new) {
            Ok(listing) => listing,
            Err(e) => {
                parts.push(Part::Error(failed_at(&self.whole(&dir.path), e.into())));
                return None;
            }
        };
        let mut entries = Vec::new();
        for entry in listing.by_ref() {
            match entry {
                Ok(e) if matches!(e.file_name().to_bytes(), b"." | b"..") => {}
                Ok(entry) => entries.push(entry),
                Err(e) => parts.push(Part::Error(jail::Error::Listing(std::sync::Arc::new(
                    e.into(),
                )))),
            }
        }
        entries.sort_unstable_by(|a, b| a.file_name().cmp(b.file_name()));
        Some((listing, entries))
    }

    /// One entry of the directory `dir`, open on `fd`: its part, read when it is a wanted
    /// file; a directory's followed by the place of its own entries, and added to those to
    /// read next (unless pruned); or the error telling what it is.
    fn entry(
        &self,
        fd: rustix::fd::BorrowedFd<'_>,
        dir: &Dir,
        entry: &rustix::fs::DirEntry,
        (parts, dirs): (&mut Vec<Part>, &mut Vec<Dir>),
    ) {
        use rustix::fs::{AtFlags, FileType};
        use std::os::unix::ffi::OsStrExt as _;
        let name = entry.file_name();
        let bytes = name.to_bytes();
        let t = match entry.file_type() {
            // The file system does not say in its listing: ask it.
            FileType::Unknown => match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(e) => {
                    let path = self.whole(&dir.path.join(std::ffi::OsStr::from_bytes(bytes)));
                    parts.push(Part::Error(failed_at(&path, e.into())));
                    return;
                }
            },
            t => t,
        };
        let (rel, utf8) = entry_rel(dir, bytes);
        let kind = match t {
            FileType::Symlink => Kind::Link,
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File,
            _ => Kind::Other,
        };
        if kind == Kind::Dir && (self.prune)(&rel) {
            return;
        }
        // A name shown otherwise than it is (a `\` shown as `/`) is read by the path it
        // is shown as, later, as every reader of the tree reads it.
        let text = (kind == Kind::File && utf8 && !bytes.contains(&b'\\'))
            .then(|| self.read(fd, name, &rel))
            .flatten();
        if kind == Kind::Dir {
            dirs.push(Dir {
                path: dir.path.join(std::ffi::OsStr::from_bytes(bytes)),
                rel: rel.clone(),
                utf8,
            });
        }
        parts.push(Part::Entry {
            rel,
            kind,
            utf8,
            text,
        });
        if kind == Kind::Dir {
            parts.push(Part::Sub);
        }
    }

    /// The file `name` of the directory open on `dir`, when it is wanted and the budget is
    /// not spent; a text that takes the bytes read past the budget is not kept.
    fn read(
        &self,
        dir: rustix::fd::BorrowedFd<'_>,
        name: &std::ffi::CStr,
        rel: &str,
    ) -> Option<Result<String, jail::Error>> {
        use std::sync::atomic::Ordering;
        let (reading, spent) = self.reading?;
        if !(reading.wanted)(rel) || spent.load(Ordering::Relaxed) >= reading.budget {
            return None;
        }
        let read = jail::read_capped_in(dir, name, reading.max);
        let len = read.as_ref().map_or(0, String::len);
        let before = spent.fetch_add(len, Ordering::Relaxed);
        (before.saturating_add(len) <= reading.budget).then_some(read)
    }
}

/// A commit's tree as its listing gives it, and the readers of its blobs.
struct Objects {
    dir: PathBuf,
    /// Sorted by path (bytewise), for lookups.
    nodes: Vec<Node>,
    /// Indexes into `nodes` in the order a walk visits them (component by component).
    walk_order: Vec<u32>,
    /// Idle `git cat-file --batch` processes: one per thread reading at once, at most.
    readers: Mutex<Vec<Reader>>,
    git: Git,
}

struct Node {
    path: String,
    kind: Kind,
    /// The blob's object id (hex), for files.
    oid: String,
    size: u64,
    utf8: bool,
}

impl Objects {
    /// `None` when the listing holds a symbolic link or a submodule.
    fn parse(dir: &Path, listing: &[u8]) -> Option<Objects> {
        let mut nodes = Vec::new();
        for record in listing.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let mut halves = record.splitn(2, |b| *b == b'\t');
            let (meta, path) = (halves.next()?, halves.next()?);
            // A name git would refuse to check out (`..`, `.git`: a crafted tree) is left
            // to the checkout, which refuses it as it always did.
            let odd = |c: &[u8]| {
                c.is_empty() || c == b"." || c == b".." || c.eq_ignore_ascii_case(b".git")
            };
            if path.split(|b| *b == b'/').any(odd) {
                return None;
            }
            let meta = String::from_utf8_lossy(meta);
            let mut fields = meta.split_ascii_whitespace();
            let (mode, oid, size) = (fields.next()?, fields.nth(1)?, fields.next()?);
            let kind = match mode {
                "040000" => Kind::Dir,
                "100644" | "100755" | "100664" => Kind::File,
                _ => return None,
            };
            let (path, utf8) = match std::str::from_utf8(path) {
                Ok(p) => (p.to_string(), true),
                Err(_) => (String::from_utf8_lossy(path).into_owned(), false),
            };
            nodes.push(Node {
                path,
                kind,
                oid: oid.to_string(),
                size: size.parse().unwrap_or(0),
                utf8,
            });
        }
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        let mut walk_order: Vec<u32> = (0..u32::try_from(nodes.len()).ok()?).collect();
        let path = |i: u32| nodes.get(i as usize).map_or("", |n| n.path.as_str());
        walk_order.sort_by(|&a, &b| path(a).split('/').cmp(path(b).split('/')));
        Some(Objects {
            dir: dir.to_path_buf(),
            nodes,
            walk_order,
            readers: Mutex::new(Vec::new()),
            git: Git::new(None),
        })
    }

    /// The file `rel` of at most `max` bytes; else why it cannot be read, as on disk.
    fn file(&self, rel: &str, max: u64) -> Result<&Node, jail::Error> {
        match self.node(rel) {
            Some(n) if n.kind == Kind::File && n.size <= max => Ok(n),
            Some(n) if n.kind == Kind::File => Err(jail::Error::TooLarge { max }),
            Some(n) if n.kind == Kind::Dir => Err(not_read(21)),
            _ => Err(not_read(2)),
        }
    }

    fn node(&self, rel: &str) -> Option<&Node> {
        let i = self
            .nodes
            .binary_search_by(|n| n.path.as_str().cmp(rel))
            .ok()?;
        self.nodes.get(i)
    }

    /// The blobs of `rels`, each handed to `each` with its index: what is not a file
    /// within `max` bytes at once, the others as one reader answers them, all asked for
    /// from another thread meanwhile.
    fn stream(
        &self,
        rels: &[&str],
        max: u64,
        mut each: impl FnMut(usize, Result<Vec<u8>, jail::Error>),
    ) {
        let mut asked: Vec<(usize, &Node)> = Vec::new();
        for (i, rel) in rels.iter().enumerate() {
            match self.file(rel, max) {
                Ok(n) => asked.push((i, n)),
                Err(e) => each(i, Err(e)),
            }
        }
        if asked.is_empty() {
            return;
        }
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut reader = match idle.map_or_else(|| Reader::spawn(&self.git, &self.dir), Ok) {
            Ok(r) => r,
            Err(e) => {
                for (i, _) in asked {
                    each(i, Err(e.clone()));
                }
                return;
            }
        };
        let Reader {
            child,
            stdin,
            stdout,
        } = &mut reader;
        let broken = std::thread::scope(|s| {
            s.spawn(|| {
                // A write error means git is gone; the answers say so.
                let mut out = std::io::BufWriter::new(&mut *stdin);
                for (_, n) in &asked {
                    if ask(&mut out, &n.oid).is_err() {
                        break;
                    }
                }
                let _ = out.flush();
            });
            let mut broken: Option<jail::Error> = None;
            for &(i, n) in &asked {
                match &broken {
                    Some(e) => each(i, Err(e.clone())),
                    None => match answer(&mut *stdout, n.size) {
                        Ok(bytes) => each(i, Ok(bytes)),
                        Err(e) => {
                            // Out of step: the rest cannot be read from this reader, and
                            // git must end so that the asking thread is not left blocked.
                            let _ = child.kill();
                            each(i, Err(e.clone()));
                            broken = Some(e);
                        }
                    },
                }
            }
            broken
        });
        if broken.is_none() {
            self.readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(reader);
        }
    }

    /// The blob of `node`, refused when larger than `max` bytes.
    fn blob(&self, node: &Node, max: u64) -> Result<Vec<u8>, jail::Error> {
        if node.size > max {
            return Err(jail::Error::TooLarge { max });
        }
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut reader = match idle {
            Some(r) => r,
            None => Reader::spawn(&self.git, &self.dir)?,
        };
        let bytes = reader.read(&node.oid, max)?;
        // A reader that failed is dropped (and its process ended) above, by `?`.
        self.readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reader);
        Ok(bytes)
    }
}

/// One `git cat-file --batch`: an object id in, its header and content out.
struct Reader {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Reader {
    fn spawn(git: &Git, dir: &Path) -> Result<Reader, jail::Error> {
        let mut child = git.cat_file_batch(dir).map_err(|e| failed(&e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(&"no pipes"));
        };
        Ok(Reader {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    fn read(&mut self, oid: &str, max: u64) -> Result<Vec<u8>, jail::Error> {
        ask(&mut self.stdin, oid).and_then(|()| self.stdin.flush().map_err(|e| failed(&e)))?;
        answer(&mut self.stdout, max)
    }
}

fn failed(e: &dyn std::fmt::Display) -> jail::Error {
    jail::Error::GitObjects(e.to_string())
}

/// Asks `git cat-file --batch` for the object `oid`.
fn ask(stdin: &mut impl std::io::Write, oid: &str) -> Result<(), jail::Error> {
    writeln!(stdin, "{oid}").map_err(|e| failed(&e))
}

/// The next blob `git cat-file --batch` answers with, refused when larger than `max`.
fn answer(stdout: &mut impl std::io::BufRead, max: u64) -> Result<Vec<u8>, jail::Error> {
    match git::read_batch_answer(stdout, max) {
        Ok(Some(git::BatchAnswer::Object {
            kind,
            content: Some(bytes),
            ..
        })) if kind == "blob" => Ok(bytes),
        Ok(Some(git::BatchAnswer::Object { content: None, .. })) => {
            Err(jail::Error::TooLarge { max })
        }
        Ok(_) => Err(failed(&"not a blob")),
        Err(e) => Err(failed(&e)),
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read as what it says: its text, or its error's message.
    fn said(read: Result<String, jail::Error>) -> Result<String, String> {
        read.map_err(String::from)
    }

    /// On disk, each entry's path is its directory's and its name: `/`-separated, a
    /// backslash read as `/` in a path that is UTF-8 all through, and a name that is not
    /// UTF-8 marks its path and everything below it, rendered lossily and untouched.
    #[test]
    fn disk_entries_are_named_from_their_directories() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"o\xffd");
        std::fs::create_dir_all(dir.path().join("apps/web")).unwrap();
        std::fs::write(dir.path().join("apps/web/a\\b.yaml"), "").unwrap();
        std::fs::create_dir_all(dir.path().join(odd).join("sub")).unwrap();
        std::fs::write(dir.path().join(odd).join("sub/c\\d.yaml"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("skipped/deep")).unwrap();
        let mut seen = Vec::new();
        Tree::disk(dir.path()).walk(
            |rel| rel == "skipped",
            |e| {
                let e = e.unwrap();
                seen.push((e.rel.to_string(), e.utf8));
            },
        );
        let odd = "o\u{fffd}d";
        let want = [
            ("apps".to_string(), true),
            ("apps/web".into(), true),
            ("apps/web/a/b.yaml".into(), true),
            (odd.into(), false),
            (format!("{odd}/sub"), false),
            (format!("{odd}/sub/c\\d.yaml"), false),
        ];
        assert_eq!(seen, want);
    }

    /// `git args` in `dir`, isolated from the user's configuration; its output.
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A repository with `files` committed.
    fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        git(dir.path(), &["init", "-q", "-b", "main"]);
        commit_all(dir.path());
        dir
    }

    /// Commits everything in the work tree `dir`.
    fn commit_all(dir: &Path) {
        git(dir, &["add", "-A"]);
        let who = ["-c", "user.name=t", "-c", "user.email=t@t"];
        git(dir, &[&who[..], &["commit", "-qm", "t"]].concat());
    }

    fn walked(tree: &Tree, prune: impl Fn(&str) -> bool + Sync) -> Vec<(String, Kind)> {
        let mut seen = Vec::new();
        tree.walk(prune, |e| {
            let e = e.unwrap();
            seen.push((e.rel.to_string(), e.kind));
        });
        seen
    }

    #[test]
    fn a_large_tree_is_walked_in_order_across_threads() {
        // Enough directories per level for the walk to read them on two threads.
        let dir = tempfile::tempdir().unwrap();
        for a in 0..40 {
            for b in 0..5 {
                let d = dir.path().join(format!("apps/t{a}/app-{b}"));
                std::fs::create_dir_all(d.join("node_modules")).unwrap();
                std::fs::write(d.join("k.yaml"), "k: 1\n").unwrap();
                std::fs::write(d.join("node_modules/m.yaml"), "m: 1\n").unwrap();
            }
            std::fs::write(dir.path().join(format!("apps/t{a}.yaml")), "t: 1\n").unwrap();
        }
        std::os::unix::fs::symlink("t1", dir.path().join("apps/t1-link")).unwrap();
        // The order of a depth-first walk, each directory's names sorted bytewise.
        fn expected(root: &Path, dir: &Path, out: &mut Vec<(String, Kind)>) {
            let mut names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            for name in names {
                let path = dir.join(&name);
                let t = std::fs::symlink_metadata(&path).unwrap().file_type();
                if name == "node_modules" {
                    continue;
                }
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string();
                let kind = match () {
                    _ if t.is_symlink() => Kind::Link,
                    _ if t.is_dir() => Kind::Dir,
                    _ => Kind::File,
                };
                out.push((rel, kind));
                if kind == Kind::Dir {
                    expected(root, &path, out);
                }
            }
        }
        let mut want = Vec::new();
        expected(dir.path(), dir.path(), &mut want);
        assert_eq!(want.len(), 1 + 40 * (1 + 1 + 5 * 2) + 1);
        let prune = |p: &str| p.ends_with("node_modules");
        assert_eq!(walked(&Tree::disk(dir.path()), prune), want);
    }

    /// The walk reads the files it is asked for, as they are, and no more text in all
    /// than its budget; never a link, a pipe, a file it was not asked for, or a name it
    /// shows otherwise than it is (read by the path it is shown as, later).
    #[test]
    fn a_walk_reads_the_files_wanted_within_its_budget_and_nothing_else() {
        let dir = repo(&[
            ("a/one.yaml", "1234\n"),
            ("a/two.yaml", "5678\n"),
            ("b/three.yaml", "abcd\n"),
            ("b/skip.txt", "x\n"),
            ("c\\d.yaml", "shown as c/d.yaml\n"),
        ]);
        std::os::unix::fs::symlink("one.yaml", dir.path().join("a/link.yaml")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(dir.path().join("a/pipe.yaml"))
            .status()
            .unwrap();
        assert!(fifo.success());
        let read = |budget: usize| {
            let wanted = |rel: &str| rel.ends_with(".yaml");
            let reading = Reading {
                wanted: &wanted,
                max: 1 << 20,
                budget,
            };
            let mut texts = Vec::new();
            Tree::disk(dir.path()).walk_reading(
                |rel| rel == ".git",
                Some(&reading),
                |e| {
                    let e = e.unwrap();
                    if let Some(text) = e.text {
                        texts.push((e.rel.to_string(), text.unwrap()));
                    }
                },
            );
            texts
        };
        let all = read(1 << 20);
        let owned = |files: &[(&str, &str)]| -> Vec<(String, String)> {
            (files.iter().map(|(f, t)| (f.to_string(), t.to_string()))).collect()
        };
        assert_eq!(
            all,
            owned(&[
                ("a/one.yaml", "1234\n"),
                ("a/two.yaml", "5678\n"),
                ("b/three.yaml", "abcd\n"),
            ])
        );
        // Two texts of five bytes do not fit in seven: one is kept, the other left for later.
        let some = read(7);
        assert_eq!(some.len(), 1, "{some:?}");
        assert!(all.contains(&some[0]));
        assert!(read(4).is_empty());
    }

    /// A committed repository read from its objects and from the disk.
    fn objects_and_disk() -> (tempfile::TempDir, Tree, Tree) {
        let files = [
            ("a-b/x.yaml", "x: 1\n"),
            ("a/c.yaml", "c: 1\n"),
            ("a/b/d.yaml", "d: 1\n"),
            ("node_modules/m.yaml", "m: 1\n"),
            ("big.yaml", "0123456789\n"),
            ("latin1.yaml", "caf\u{e9}\n"),
        ];
        let dir = repo(&files);
        std::fs::write(dir.path().join("latin1.yaml"), b"caf\xe9\n").unwrap();
        commit_all(dir.path());
        let objects = Tree::at_commit(&Git::new(None), dir.path(), "HEAD", &[]).unwrap();
        assert!(objects.from_objects());
        let disk = Tree::disk(dir.path());
        (dir, objects, disk)
    }

    #[test]
    fn the_objects_read_as_the_disk_does() {
        let (_dir, objects, disk) = objects_and_disk();
        let prune = |p: &str| p == ".git" || p.ends_with("node_modules");
        assert_eq!(walked(&objects, prune), walked(&disk, prune));
        assert_eq!(
            walked(&objects, prune)
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>(),
            [
                "a",
                "a/b",
                "a/b/d.yaml",
                "a/c.yaml",
                "a-b",
                "a-b/x.yaml",
                "big.yaml",
                "latin1.yaml"
            ]
        );
        for rel in ["a/c.yaml", "big.yaml", "latin1.yaml", "a", "none.yaml"] {
            assert_eq!(
                said(objects.read(rel, 1 << 20)),
                said(disk.read(rel, 1 << 20)),
                "{rel}"
            );
        }
        assert_eq!(
            said(objects.read("big.yaml", 4)),
            said(disk.read("big.yaml", 4))
        );
    }

    #[test]
    fn the_objects_read_at_once_and_resolve_as_the_disk_does() {
        let (_dir, objects, disk) = objects_and_disk();
        let rels = [
            "a/c.yaml",
            "none.yaml",
            "a",
            "big.yaml",
            "latin1.yaml",
            "a/b/d.yaml",
        ];
        let each = |tree: &Tree, max: u64| {
            let mut got = vec![None; rels.len()];
            tree.read_each(&rels, max, |i, read| got[i] = Some(said(read)));
            got
        };
        for max in [4, 1 << 20] {
            let one_by_one: Vec<_> = rels.iter().map(|r| Some(said(disk.read(r, max)))).collect();
            assert_eq!(each(&objects, max), one_by_one, "{max}");
            assert_eq!(each(&disk, max), one_by_one, "{max}");
        }
        assert_eq!(
            objects.read("big.yaml", 4).map_err(String::from),
            Err(jail::Error::TooLarge { max: 4 }.to_string())
        );
        for rel in [
            "",
            "a",
            "a/b/",
            "./a/c.yaml",
            "a/../big.yaml",
            "none",
            "a/b/d.yaml",
        ] {
            assert_eq!(objects.is_dir(rel), disk.is_dir(rel), "{rel}");
            assert_eq!(objects.is_file(rel), disk.is_file(rel), "{rel}");
        }
        assert_eq!(
            said(objects.resolve("a/../../x")),
            said(disk.resolve("a/../../x"))
        );
        assert_eq!(objects.resolve("./a/b/../c.yaml").unwrap(), "a/c.yaml");
    }

    #[test]
    fn readers_serve_threads_at_once_and_end_with_the_tree() {
        let files: Vec<(String, String)> = (0..40)
            .map(|i| (format!("f{i:02}.yaml"), format!("n: {i}\n")))
            .collect();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let dir = repo(&borrowed);
        let tree = Tree::at_commit(&Git::new(None), dir.path(), "HEAD", &[]).unwrap();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (tree, files) = (&tree, &files);
                s.spawn(move || {
                    for (path, text) in files.iter().skip(t) {
                        assert_eq!(&tree.read(path, 1 << 20).unwrap(), text);
                    }
                });
            }
        });
        let Inner::Objects(o) = &tree.inner else {
            unreachable!()
        };
        let idle = o.readers.lock().unwrap().len();
        assert!((1..=4).contains(&idle), "{idle} readers");
    }

    #[test]
    fn a_link_or_a_submodule_is_checked_out() {
        let dir = repo(&[
            ("apps/web/values.yaml", "image: web:1\n"),
            ("imagebump.yaml", "{}\n"),
        ]);
        std::os::unix::fs::symlink("web", dir.path().join("apps/alias")).unwrap();
        commit_all(dir.path());
        let clone = tempfile::tempdir().unwrap();
        let dest = clone.path().join("c");
        let url = format!("file://{}", dir.path().display());
        Git::new(None).clone_shallow(&url, None, &dest).unwrap();
        assert!(!dest.join("apps").exists(), "no work tree after the clone");
        let tree = Tree::at_commit(&Git::new(None), &dest, "HEAD", &[]).unwrap();
        assert!(!tree.from_objects());
        assert!(dest.join("apps/web/values.yaml").is_file());
        assert_eq!(
            tree.resolve("apps/alias/values.yaml").unwrap(),
            "apps/alias/values.yaml"
        );

        // A submodule: a commit in the tree, which a checkout leaves an empty directory.
        let dir = repo(&[("apps/web/values.yaml", "image: web:1\n")]);
        let head = git(dir.path(), &["rev-parse", "HEAD"]);
        let gitlink = format!("160000,{head},vendor/lib");
        git(
            dir.path(),
            &["update-index", "--add", "--cacheinfo", &gitlink],
        );
        git(
            dir.path(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "s",
            ],
        );
        let tree = Tree::at_commit(&Git::new(None), dir.path(), "HEAD", &[]).unwrap();
        assert!(!tree.from_objects());
        assert!(tree.is_dir("vendor/lib") && tree.is_file("apps/web/values.yaml"));
    }

    /// A crafted tree naming `..` is not read from the objects: the checkout refuses it, as
    /// it refused it when every clone was checked out.
    #[test]
    fn a_tree_git_would_not_check_out_is_refused() {
        let dir = repo(&[("ok/x.yaml", "x: 1\n")]);
        let mktree = |input: String| {
            let mut child = std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .arg("mktree")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let blob = git(dir.path(), &["rev-parse", "HEAD:ok/x.yaml"]);
        let inner = mktree(format!("100644 blob {blob}\tx.yaml\n"));
        let top = mktree(format!(
            "040000 tree {inner}\t..\n040000 tree {inner}\tok\n"
        ));
        let who = ["-c", "user.name=t", "-c", "user.email=t@t"];
        let commit = git(
            dir.path(),
            &[&who[..], &["commit-tree", &top, "-m", "evil"]].concat(),
        );
        assert!(Tree::at_commit(&Git::new(None), dir.path(), &commit, &[]).is_err());
    }

    #[test]
    fn files_named_to_write_out_are_written() {
        let dir = repo(&[
            ("imagebump.yaml", "defaults: {}\n"),
            (".github/imagebump.yaml", "{}\n"),
            ("a.yaml", "a: 1\n"),
        ]);
        let clone = tempfile::tempdir().unwrap();
        let dest = clone.path().join("c");
        let url = format!("file://{}", dir.path().display());
        Git::new(None).clone_shallow(&url, None, &dest).unwrap();
        let names = [
            "imagebump.yaml",
            ".imagebump.yaml",
            ".github/imagebump.yaml",
        ];
        let tree = Tree::at_commit(&Git::new(None), &dest, "HEAD", &names).unwrap();
        assert!(tree.from_objects());
        assert_eq!(
            std::fs::read_to_string(dest.join("imagebump.yaml")).unwrap(),
            "defaults: {}\n"
        );
        assert!(!dest.join(".imagebump.yaml").exists());
        let huge = "#".repeat(usize::try_from(MAX_WRITTEN_OUT).unwrap() + 1);
        let dir = repo(&[("imagebump.yaml", huge.as_str())]);
        let err = Tree::at_commit(&Git::new(None), dir.path(), "HEAD", &names)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("imagebump.yaml: larger than 16 MiB"),
            "{err}"
        );
        assert!(dest.join(".github/imagebump.yaml").is_file());
        assert!(!dest.join("a.yaml").exists());
    }
}
