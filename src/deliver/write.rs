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
                .map(|e| Problem::at_file(&f.file, 0, 0, e))
        })
        .collect()
}

fn write_one(root: &Path, f: &FileChange) -> Result<(), String> {
    // Never outside the tree, whatever the file's name or the links on its way.
    let (_, path) = crate::source::jail::resolve(root, &f.file)?;
    if f.created {
        if path.exists() {
            return Err("created on disk during the run; not written".into());
        }
    } else {
        let current = std::fs::read_to_string(&path).map_err(|e| format!("cannot read: {e}"))?;
        if current != f.before {
            return Err("changed on disk during the run; not written".into());
        }
    }
    let dir = path.parent().unwrap_or(root);
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("cannot create a temporary file: {e}"))?;
    tmp.write_all(f.after.as_bytes())
        .map_err(|e| format!("cannot write: {e}"))?;
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
    tmp.as_file()
        .sync_all()
        .map_err(|e| format!("cannot sync: {e}"))?;
    tmp.persist(&path)
        .map_err(|e| format!("cannot replace: {}", e.error))?;
    Ok(())
}
