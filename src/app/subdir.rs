//! A run on a subdirectory of a git repository: an include that leaves the tree
//! (`../../base`) but stays in the repository is not read, and the note about it says where
//! to run instead. Paths are shown relative, as the user gave the source (`apps/x`, `.`,
//! `../..`), never as the machine's absolute paths.

use std::path::{Component, Path, PathBuf};

use crate::discover::OUTSIDE_TREE;
use imagebump_model::Problem;

/// The tree as given and the repository's root, both as the user would type them, and the
/// tree's place below that root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subdir {
    tree: String,
    root: String,
    /// The tree's directories below the repository's root (`["apps", "x"]`).
    below: Vec<String>,
}

impl Subdir {
    /// For the local source `given` opened at `tree` (the directory the run reads): where
    /// it is in its git work tree, when that is not its top. `None` for a remote or the top.
    pub fn of(given: &str, tree: &Path) -> Option<Subdir> {
        let top = crate::source::git_top_level(tree)?;
        let tree = tree.canonicalize().ok()?;
        let below: Vec<String> = normal_parts(tree.strip_prefix(&top).ok()?);
        if below.is_empty() {
            return None;
        }
        // A tree rooted above the given directory (at its configuration file) is that many
        // levels up from it.
        let given_canon = Path::new(given).canonicalize().ok()?;
        let up = normal_parts(given_canon.strip_prefix(&tree).ok()?).len();
        Some(Subdir {
            tree: up_from(given, up),
            root: up_from(given, up.saturating_add(below.len())),
            below,
        })
    }

    /// The notes about includes outside the tree that are inside the repository, saying
    /// where to run to read them.
    pub fn explain(&self, problems: &mut [Problem]) {
        for p in problems {
            let Some(head) = p.message.strip_suffix(OUTSIDE_TREE) else {
                continue;
            };
            let head = head.trim_end();
            let include = head.rsplit(' ').next().unwrap_or(head);
            let file = p.location.split(':').next().unwrap_or_default();
            let dir = Path::new(file).parent().unwrap_or(Path::new(""));
            if !self.inside_repository(dir, include) {
                continue;
            }
            p.message = format!(
                "{head} is outside the tree {}: not read; run at the repository root {} to read it",
                self.tree, self.root
            );
        }
    }

    /// Does `include`, written in the tree's directory `dir`, stay inside the repository?
    fn inside_repository(&self, dir: &Path, include: &str) -> bool {
        let mut at: Vec<String> = self.below.clone();
        at.extend(normal_parts(dir));
        for c in Path::new(include).components() {
            match c {
                Component::Normal(n) => at.push(n.to_string_lossy().into_owned()),
                Component::ParentDir => {
                    if at.pop().is_none() {
                        return false;
                    }
                }
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return false,
            }
        }
        true
    }
}

/// The directory names of a relative path, `.` dropped.
fn normal_parts(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// `given` with `levels` directories taken off its end, lexically: `apps/x` up 2 is `.`,
/// `.` up 2 is `../..`, `/srv/repo/apps` up 1 is `/srv/repo`.
fn up_from(given: &str, levels: usize) -> String {
    let mut path: PathBuf = Path::new(given)
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    for _ in 0..levels {
        let last_is_name = matches!(path.components().next_back(), Some(Component::Normal(_)));
        if last_is_name {
            path.pop();
        } else {
            path.push("..");
        }
    }
    let shown = path.to_string_lossy().into_owned();
    if shown.is_empty() {
        ".".into()
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_as_the_user_would_type_it() {
        assert_eq!(up_from("apps/x", 2), ".");
        assert_eq!(up_from(".", 2), "../..");
        assert_eq!(up_from(".", 0), ".");
        assert_eq!(up_from("./apps/x/", 1), "apps");
        assert_eq!(up_from("../x", 2), "../..");
        assert_eq!(up_from("/srv/repo/apps", 1), "/srv/repo");
    }

    #[test]
    fn only_includes_inside_the_repository_are_explained() {
        let sub = Subdir {
            tree: "apps/x".into(),
            root: ".".into(),
            below: vec!["apps".into(), "x".into()],
        };
        let note = |file: &str, include: &str| Problem {
            location: format!("{file}:1:0"),
            message: format!("{include} {OUTSIDE_TREE}"),
            hint: None,
        };
        let mut notes = vec![
            note("kustomization.yaml", "../../base"),
            note("kustomization.yaml", "../../../elsewhere"),
            note("overlay/kustomization.yaml", "../../../base"),
        ];
        sub.explain(&mut notes);
        let said: Vec<&str> = notes.iter().map(|n| n.message.as_str()).collect();
        assert_eq!(
            said,
            [
                "../../base is outside the tree apps/x: not read; run at the repository root . to read it",
                "../../../elsewhere is outside the repository: not read",
                "../../../base is outside the tree apps/x: not read; run at the repository root . to read it",
            ]
        );
    }
}
