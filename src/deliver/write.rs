//! `--write`: replace files atomically (temporary file in the same directory + rename).

use std::io::Write as _;
use std::path::Path;

use crate::plan::FileChange;
use imagebump_model::Problem;

/// Write every changed file. Each file is replaced atomically; a file that changed on disk
/// since it was read is left alone and reported.
pub fn write_all(root: &Path, files: &[FileChange]) -> Vec<Problem> {
    files
        .iter()
        .filter_map(|f| {
            write_one(root, f)
                .err()
                .map(|e| Problem::at_file(&f.file, 0, 0, e.to_string()))
        })
        .collect()
}

const TMP_PREFIX: &str = ".imagebump-";

/// Temporary files an earlier run left in `dir` when it was killed between writing and
/// renaming, older than a few minutes (a run at work now renames within seconds).
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(TMP_PREFIX) && name.ends_with(".tmp")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(300));
        if old && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Why a changed file was not written.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Refused(#[from] crate::source::jail::Error),
    #[error("created on disk during the run; not written")]
    CreatedMeanwhile,
    #[error("changed on disk during the run; not written")]
    ChangedMeanwhile,
    /// `step`: what could not be done (`read`, `write`, `create a temporary file`...).
    #[error("cannot {step}: {error}")]
    Io {
        step: &'static str,
        error: std::io::Error,
    },
}

/// A [`WriteError::Io`] of `step`, for `map_err`.
fn io(step: &'static str) -> impl FnOnce(std::io::Error) -> WriteError {
    move |error| WriteError::Io { step, error }
}

fn write_one(root: &Path, f: &FileChange) -> Result<(), WriteError> {
    // Never outside the tree, whatever the file's name or the links on its way.
    let (_, path) = crate::source::jail::resolve(root, &f.file)?;
    if f.created {
        if path.exists() {
            return Err(WriteError::CreatedMeanwhile);
        }
    } else {
        let current = std::fs::read_to_string(&path).map_err(io("read"))?;
        if *current != *f.before {
            return Err(WriteError::ChangedMeanwhile);
        }
    }
    let dir = path.parent().unwrap_or(root);
    remove_stale(dir);
    // Named so that a run killed before the rename leaves a file anyone recognises, and
    // the next run writing here removes.
    let mut tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io("create a temporary file"))?;
    tmp.write_all(f.after.as_bytes()).map_err(io("write"))?;
    // Keep the file's mode (a new file gets its directory's usual 0644, not the
    // temporary file's 0600).
    let mode = std::fs::metadata(&path).map(|m| m.permissions());
    let mode = mode.or_else(|_| {
        use std::os::unix::fs::PermissionsExt;
        Ok::<_, std::io::Error>(std::fs::Permissions::from_mode(0o644))
    });
    if let Ok(mode) = mode {
        let _ = std::fs::set_permissions(tmp.path(), mode);
    }
    tmp.as_file().sync_all().map_err(io("sync"))?;
    tmp.persist(&path).map_err(|e| io("replace")(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_or_created_meanwhile_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("values.yaml"), "tag: 2\n").unwrap();
        let change = |created| FileChange {
            file: "values.yaml".into(),
            before: "tag: 1\n".into(),
            after: "tag: 3\n".into(),
            created,
        };
        let e = write_one(dir.path(), &change(false)).unwrap_err();
        assert_eq!(e.to_string(), "changed on disk during the run; not written");
        let e = write_one(dir.path(), &change(true)).unwrap_err();
        assert_eq!(e.to_string(), "created on disk during the run; not written");
        let text = std::fs::read_to_string(dir.path().join("values.yaml")).unwrap();
        assert_eq!(text, "tag: 2\n");
    }

    #[test]
    fn a_killed_runs_temporary_files_are_removed_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(".imagebump-abc123.tmp");
        let fresh = dir.path().join(".imagebump-def456.tmp");
        let other = dir.path().join(".tmp-not-ours");
        for f in [&stale, &fresh, &other] {
            std::fs::write(f, "x").unwrap();
        }
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        std::fs::write(dir.path().join("values.yaml"), "tag: 1\n").unwrap();
        let change = FileChange {
            file: "values.yaml".into(),
            before: "tag: 1\n".into(),
            after: "tag: 2\n".into(),
            created: false,
        };
        assert!(write_all(dir.path(), &[change]).is_empty());
        assert!(!stale.exists() && fresh.exists() && other.exists());
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".tmp") && n != ".imagebump-def456.tmp")
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("values.yaml")).unwrap(),
            "tag: 2\n"
        );
    }
}
