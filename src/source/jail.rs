//! The tree is a jail: every path the repository names (an Argo CD source path, a
//! write-back target, an override file) is resolved inside the repository root, `..` and
//! symbolic links included, before anything is read or written there.

use std::path::{Path, PathBuf};

/// `rel` (`/`-separated, from the root) inside `root`: its normalised spelling (`.` and
/// `..` resolved, no leading or trailing `/`; `""` for the root) and its path on disk.
/// An error says how it leaves the tree: by `..`, or through a symbolic link.
pub fn resolve(root: &Path, rel: &str) -> Result<(String, PathBuf), String> {
    let normalised = normalise(rel)?;
    let path = root.join(&normalised);
    // The deepest part that exists must still be inside once its links are followed; the
    // rest does not exist yet (a file to create).
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("cannot resolve the repository root: {e}"))?;
    let existing = path.ancestors().find(|p| p.symlink_metadata().is_ok());
    if let Some(existing) = existing {
        let real = existing
            .canonicalize()
            .map_err(|_| format!("{rel} is a broken link"))?;
        if !real.starts_with(&real_root) {
            return Err(format!("{rel} is a link to outside the repository"));
        }
    }
    Ok((normalised, path))
}

/// `rel`'s spelling with `.` and `..` resolved, no leading or trailing `/` (`""` for the
/// root); an error when a `..` leaves the tree. Links are [`resolve`]'s business.
pub fn normalise(rel: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!("{rel} leaves the repository"));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// The error of a file larger than `max` bytes.
pub fn too_large(max: u64) -> String {
    let size = if max >= 1 << 20 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{} KiB", max >> 10)
    };
    format!("larger than {size}: not read")
}

/// A text file, refused whole when it is larger than `max` bytes (counted while reading: a
/// device or a growing file cannot get past it) or not UTF-8. The error says which.
pub fn read_capped(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    // Sized from the file's length (a hint only: the cap is what counts), so that a file is
    // read in one go rather than grown into.
    let hint = file.metadata().map_or(0, |m| m.len().min(max));
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0).saturating_add(1));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(max));
    }
    text(bytes)
}

/// `bytes` as text; the error when they are not UTF-8.
pub fn text(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text: not read".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_tree() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("apps/web")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("apps/out")).unwrap();
        std::os::unix::fs::symlink(r.join("apps/web"), r.join("apps/alias")).unwrap();
        let ok = |rel: &str| resolve(r, rel).map(|(n, _)| n);
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
}
