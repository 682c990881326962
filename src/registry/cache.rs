//! The content-addressed cache of `--cache-dir`: manifests and config blobs by digest,
//! kept between runs.
//!
//! What a digest names never changes, so an entry is valid forever; it is re-hashed on
//! every read, and one that does not hash to its name (a torn disk, a hand edit) is
//! dropped and fetched again. Tags move, so a tag is never answered from here: the cache
//! only remembers which digest a tag had (`tags/`), as a hint that the next run may ask the
//! registry for the tag's digest alone (a HEAD) and read the manifest from disk.
//!
//! Layout under the directory: `v1/blobs/<algorithm>/<hex>` (manifests and configs alike:
//! the bytes as the registry sent them) and `v1/tags/<sha256 of image:tag>` (a digest).
//! Every file is written to a temporary file in its directory and renamed into place, so
//! concurrent runs sharing the directory never see half an entry. The total is bounded
//! ([`DEFAULT_CAP`]): past it, the least recently used entries (by modification time,
//! touched on every hit) are deleted until three quarters are left.

use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use super::manifest::digest_matches;
use imagebump_model::name::is_valid_digest;

/// The cache's size bound: 256 MiB, about 100,000 manifests and configs (a few KiB each).
pub const DEFAULT_CAP: u64 = 256 * 1024 * 1024;

/// The largest entry kept: the client's manifest and config caps.
const ENTRY_LIMIT: u64 = 4 * 1024 * 1024;

/// The layout's version: a new layout gets a new directory, the old one is left alone.
const LAYOUT: &str = "v1";

/// A directory of entries named by their digest.
#[derive(Debug)]
pub struct DiskCache {
    root: PathBuf,
    cap: u64,
    /// Bytes on disk as this run knows them (the scan at open, plus what it wrote).
    used: AtomicU64,
    /// One trim at a time.
    trimming: Mutex<()>,
    /// Entries read back and verified during the run (for the log).
    pub hits: AtomicUsize,
    /// Entries dropped because they did not hash to their name.
    pub corrupt: AtomicUsize,
}

/// The cache directory could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot create {}: {source}", dir.display())]
pub struct OpenError {
    dir: std::path::PathBuf,
    source: std::io::Error,
}

impl OpenError {
    pub fn hint(&self) -> Option<String> {
        Some("give --cache-dir a directory imagebump may create and write to".into())
    }
}

impl DiskCache {
    /// Open (and create) the cache in `dir`, bounded to `cap` bytes; trims it first when a
    /// smaller bound than before left it over.
    pub fn open(dir: &Path, cap: u64) -> Result<DiskCache, OpenError> {
        let root = dir.join(LAYOUT);
        for sub in ["blobs/sha256", "blobs/sha512", "tags"] {
            fs::create_dir_all(root.join(sub)).map_err(|source| OpenError {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let cache = DiskCache {
            root,
            cap,
            used: AtomicU64::new(0),
            trimming: Mutex::new(()),
            hits: AtomicUsize::new(0),
            corrupt: AtomicUsize::new(0),
        };
        let used = cache.entries().iter().map(|e| e.size).sum();
        cache.used.store(used, Ordering::Relaxed);
        if used > cap {
            cache.trim();
        }
        Ok(cache)
    }

    /// The bytes named `digest`, verified; `None` when absent, or corrupt (then deleted).
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.blob_path(digest)?;
        let bytes = read_capped(&path)?;
        if digest_matches(digest, &bytes) != Some(true) {
            tracing::warn!(
                "cache: {} does not hash to its digest; dropped, fetched again",
                path.display()
            );
            self.corrupt.fetch_add(1, Ordering::Relaxed);
            self.remove(&path);
            return None;
        }
        touch(&path);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(bytes)
    }

    /// Keep `bytes` under `digest`, if they hash to it (anything else is not kept).
    pub fn put(&self, digest: &str, bytes: &[u8]) {
        let Some(path) = self.blob_path(digest) else {
            return;
        };
        if bytes.len() as u64 > ENTRY_LIMIT || digest_matches(digest, bytes) != Some(true) {
            return;
        }
        if path.exists() {
            return;
        }
        self.write(&path, bytes);
    }

    /// Entries read back from disk so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Drop the entry named `digest` (its bytes hashed right but did not parse).
    pub fn forget(&self, digest: &str) {
        if let Some(path) = self.blob_path(digest) {
            self.remove(&path);
        }
    }

    /// The digest `tag` of `image` had when last fetched, if the cache remembers one.
    pub fn tag_hint(&self, image: &str, tag: &str) -> Option<String> {
        let bytes = read_capped(&self.tag_path(image, tag))?;
        let digest = String::from_utf8(bytes).ok()?;
        imagebump_model::name::is_sha256_digest(&digest).then_some(digest)
    }

    /// Remember that `tag` of `image` had `digest` (only a hint: tags move).
    pub fn set_tag_hint(&self, image: &str, tag: &str, digest: &str) {
        if imagebump_model::name::is_sha256_digest(digest)
            && self.tag_hint(image, tag).as_deref() != Some(digest)
        {
            self.write(&self.tag_path(image, tag), digest.as_bytes());
        }
    }

    /// `v1/blobs/<algorithm>/<hex>`; `None` for a digest imagebump cannot verify (the
    /// digest grammar keeps `/` and `..` out of the name).
    fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        if !is_valid_digest(digest) {
            return None;
        }
        let (algorithm, hex) = digest.split_once(':')?;
        matches!(algorithm, "sha256" | "sha512")
            .then(|| self.root.join("blobs").join(algorithm).join(hex))
    }

    fn tag_path(&self, image: &str, tag: &str) -> PathBuf {
        use sha2::Digest as _;
        let key = sha2::Sha256::digest(format!("{image}:{tag}").as_bytes());
        self.root.join("tags").join(format!("{key:x}"))
    }

    /// Write through a temporary file in the same directory and rename it into place: a
    /// reader (this run or another) sees the whole entry or none. Failures are only logged:
    /// the cache saves requests, it is never needed.
    fn write(&self, path: &Path, bytes: &[u8]) {
        let Some(dir) = path.parent() else {
            return;
        };
        let written = tempfile::NamedTempFile::new_in(dir).and_then(|mut tmp| {
            tmp.write_all(bytes)?;
            // Readable by others (tempfile makes 0600): the Actions cache saves the
            // directory as the runner's user after the action's container wrote it as root.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                tmp.as_file()
                    .set_permissions(fs::Permissions::from_mode(0o644))?;
            }
            tmp.persist(path).map_err(|e| e.error)?;
            Ok(())
        });
        match written {
            Ok(()) => {
                let used = self
                    .used
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed)
                    .saturating_add(bytes.len() as u64);
                if used > self.cap {
                    self.trim();
                }
            }
            Err(e) => tracing::debug!("cache: cannot write {}: {e}", path.display()),
        }
    }

    fn remove(&self, path: &Path) {
        if let Ok(meta) = fs::metadata(path) {
            if fs::remove_file(path).is_ok() {
                self.sub_used(meta.len());
            }
        }
    }

    fn sub_used(&self, n: u64) {
        // Another run may have deleted what this one counted: never below zero.
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(n))
            });
    }

    /// Every file under the layout, with its size and last use.
    fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        for sub in ["blobs/sha256", "blobs/sha512", "tags"] {
            let Ok(dir) = fs::read_dir(self.root.join(sub)) else {
                continue;
            };
            for entry in dir.flatten() {
                let Ok(meta) = entry.metadata() else { continue };
                if meta.is_file() {
                    out.push(Entry {
                        path: entry.path(),
                        size: meta.len(),
                        used: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    });
                }
            }
        }
        out
    }

    /// Delete the least recently used entries until three quarters of the cap are left.
    fn trim(&self) {
        let Ok(_one) = self.trimming.try_lock() else {
            return; // Another task is trimming already.
        };
        let mut entries = self.entries();
        let mut total: u64 = entries.iter().map(|e| e.size).sum();
        let goal = (self.cap / 4).saturating_mul(3);
        entries.sort_by_key(|e| e.used);
        let mut removed = 0usize;
        for e in &entries {
            if total <= goal {
                break;
            }
            // Gone already (another run trimmed too): counted as removed all the same.
            let _ = fs::remove_file(&e.path);
            total = total.saturating_sub(e.size);
            removed = removed.saturating_add(1);
        }
        self.used.store(total, Ordering::Relaxed);
        tracing::debug!("cache: {removed} least recently used entries removed");
    }
}

struct Entry {
    path: PathBuf,
    size: u64,
    used: SystemTime,
}

/// A cache file's bytes, at most [`ENTRY_LIMIT`]; `None` when absent, unreadable or larger.
fn read_capped(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|f| {
            f.take(ENTRY_LIMIT.saturating_add(1))
                .read_to_end(&mut bytes)
        })
        .ok()?;
    (bytes.len() as u64 <= ENTRY_LIMIT).then_some(bytes)
}

/// Mark an entry used now (its modification time orders eviction).
fn touch(path: &Path) {
    if let Ok(f) = fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::manifest::sha256_digest;

    #[test]
    fn an_entry_comes_back_verified_and_a_corrupt_one_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(dir.path(), DEFAULT_CAP).unwrap();
        let body = br#"{"schemaVersion":2}"#;
        let digest = sha256_digest(body);
        assert_eq!(cache.get(&digest), None);
        cache.put(&digest, body);
        assert_eq!(cache.get(&digest).as_deref(), Some(&body[..]));
        // Bytes that do not hash to the name are not kept...
        let other = sha256_digest(b"other");
        cache.put(&other, b"not other");
        assert_eq!(cache.get(&other), None);
        // ...and an entry corrupted on disk is dropped when read.
        let path = cache.blob_path(&digest).unwrap();
        fs::write(&path, b"{\"schemaVersion\":3}").unwrap();
        assert_eq!(cache.get(&digest), None);
        assert!(!path.exists());
        assert_eq!(cache.corrupt.load(Ordering::Relaxed), 1);
        // A fresh copy is kept again.
        cache.put(&digest, body);
        assert_eq!(cache.get(&digest).as_deref(), Some(&body[..]));
    }

    #[test]
    fn digests_that_cannot_be_verified_or_name_other_paths_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(dir.path(), DEFAULT_CAP).unwrap();
        for digest in [
            "md5:0123456789abcdef0123456789abcdef",
            "sha256:../../../../etc/passwd",
            "sha256",
        ] {
            assert_eq!(cache.blob_path(digest), None, "{digest}");
            cache.put(digest, b"x");
            assert_eq!(cache.get(digest), None);
        }
    }

    #[test]
    fn tag_hints_are_remembered_per_image_and_tag() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(dir.path(), DEFAULT_CAP).unwrap();
        let d = sha256_digest(b"a");
        assert_eq!(cache.tag_hint("r.io/a", "1"), None);
        cache.set_tag_hint("r.io/a", "1", &d);
        assert_eq!(cache.tag_hint("r.io/a", "1"), Some(d.clone()));
        assert_eq!(cache.tag_hint("r.io/a", "2"), None);
        assert_eq!(cache.tag_hint("r.io/b", "1"), None);
        cache.set_tag_hint("r.io/a", "1", "not a digest");
        assert_eq!(cache.tag_hint("r.io/a", "1"), Some(d));
    }

    #[test]
    fn past_the_cap_the_least_recently_used_entries_go() {
        let dir = tempfile::tempdir().unwrap();
        // Ten entries of 100 bytes under a 1,000-byte cap, the oldest first.
        let cache = DiskCache::open(dir.path(), 1000).unwrap();
        let bodies: Vec<Vec<u8>> = (0..10u8).map(|i| vec![b'a' + i; 100]).collect();
        let t0 = SystemTime::now() - std::time::Duration::from_secs(1000);
        for (i, b) in bodies.iter().enumerate() {
            let d = sha256_digest(b);
            cache.put(&d, b);
            let f = fs::File::options()
                .append(true)
                .open(cache.blob_path(&d).unwrap())
                .unwrap();
            f.set_modified(t0 + std::time::Duration::from_secs(i as u64))
                .unwrap();
        }
        // The first entry was read last: it is the most recently used now.
        assert!(cache.get(&sha256_digest(&bodies[0])).is_some());
        let eleventh = vec![b'z'; 100];
        cache.put(&sha256_digest(&eleventh), &eleventh);
        let kept: Vec<bool> = bodies
            .iter()
            .map(|b| cache.blob_path(&sha256_digest(b)).unwrap().exists())
            .collect();
        // 1,100 bytes > 1,000: down to 750, so the four oldest unused ones went.
        assert_eq!(
            kept,
            [true, false, false, false, false, true, true, true, true, true]
        );
        assert!(cache.get(&sha256_digest(&eleventh)).is_some());
        assert!(cache.used.load(Ordering::Relaxed) <= 750);
        // Reopened with a smaller cap, it trims at once.
        drop(cache);
        let small = DiskCache::open(dir.path(), 300).unwrap();
        assert_eq!(small.entries().len(), 2);
    }
}
