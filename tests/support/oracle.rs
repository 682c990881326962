//! The render oracle: every leaf of a repository is rendered with the real kustomize
//! (`kubectl kustomize`) before and after `run --write` against a real registry, and
//!
//! - each reported update changes its leaf's render from exactly `from` to exactly `to`,
//!   and nothing else in any render changes;
//! - undoing any one edited line (or a written `images:` entry) changes a render back: no
//!   edit is dead or redundant;
//! - a second run proposes nothing.
//!
//! Included by the tests that use it (`#[path = "support/oracle.rs"] mod oracle;`), next
//! to `mod support;`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;

use crate::support::cli::imagebump;
use crate::support::{self, kustomize_build as render, Registry, RegistryMode};
use serde_json::Value;

pub const IMAGE: &str = "registry.example.com/team/app";

pub fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: {name}\n          image: {image}\n"
    )
}

/// A strategic-merge patch of the Deployment `name`'s container image.
pub fn version_patch(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n        - name: {name}\n          image: {image}\n"
    )
}

/// One update as the JSON report gives it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Update {
    pub file: String,
    pub unit: String,
    pub image: String,
    pub from: String,
    pub to: String,
}

pub struct Oracle {
    _reg: Registry,
    _cfg_dir: tempfile::TempDir,
    pub cfg: String,
    pub repo: tempfile::TempDir,
    pub leaves: Vec<&'static str>,
    /// The leaves a unit that is not itself a leaf renders in (an overlay others build on).
    pub renders_in: BTreeMap<&'static str, &'static str>,
    /// Files (or directories, ending in `/`) whose edits kustomize does not render: an Argo
    /// CD Application's `kustomize.images`, Helm values. Their updates are not looked for
    /// in the renders, and their edits are not checked for being dead; the renders must
    /// still change only as the other updates say.
    pub unrendered: Vec<&'static str>,
}

impl Oracle {
    /// `files` as a repository; `team/app` at 1.0 … 4.0 and `team/web` at 1.0, 2.0.
    pub fn new(files: &[(&str, String)], leaves: &[&'static str]) -> Oracle {
        let reg = Registry::start(RegistryMode::Plain);
        reg.push_tags("team/app", &["1.0", "2.0", "3.0", "4.0"]);
        reg.push_tags("team/web", &["1.0", "2.0"]);
        Oracle::over(reg, support::tree(files), leaves)
    }

    /// `repo` with every registry the fixtures name served by `reg`.
    pub fn over(reg: Registry, repo: tempfile::TempDir, leaves: &[&'static str]) -> Oracle {
        let prefixes = ["registry.example.com", "ghcr.io", "docker.io"];
        Oracle::serving(reg, repo, leaves, &prefixes)
    }

    /// `repo` with the registries `prefixes` served by `reg` (and charts not looked up).
    pub fn serving(
        reg: Registry,
        repo: tempfile::TempDir,
        leaves: &[&'static str],
        prefixes: &[&str],
    ) -> Oracle {
        let cfg_dir = tempfile::tempdir().unwrap();
        let cfg = cfg_dir.path().join("imagebump.yaml");
        let mut text = String::from("helm:\n  charts: false\nregistries:\n");
        for prefix in prefixes {
            text.push_str(&format!(
                "  - prefix: {prefix}\n    url: {}\n",
                reg.base_url()
            ));
        }
        fs::write(&cfg, text).unwrap();
        Oracle {
            _reg: reg,
            _cfg_dir: cfg_dir,
            cfg: cfg.to_string_lossy().to_string(),
            repo,
            leaves: leaves.to_vec(),
            renders_in: BTreeMap::new(),
            unrendered: Vec::new(),
        }
    }

    pub fn dir(&self) -> &str {
        self.repo.path().to_str().unwrap()
    }

    pub fn renders(&self) -> BTreeMap<&'static str, String> {
        (self.leaves.iter())
            .map(|leaf| (*leaf, render(&self.repo.path().join(leaf))))
            .collect()
    }

    /// The updates a run reports (`--write` writes them).
    pub fn run(&self, mode: &str) -> (Vec<Update>, Value) {
        let out = imagebump()
            .args([
                "run",
                self.dir(),
                "--config",
                &self.cfg,
                mode,
                "--output",
                "json",
            ])
            .run();
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let text = |u: &Value, k: &str| u[k].as_str().unwrap_or_default().to_string();
        let mut updates: Vec<Update> = (report["updates"].as_array().unwrap().iter())
            .map(|u| Update {
                file: Some(text(u, "writtenTo"))
                    .filter(|w| !w.is_empty())
                    .unwrap_or_else(|| text(u, "file")),
                // The change set's group: the kustomization directory the value renders in.
                // The unit is the group; a major update's change set adds " (major)".
                unit: text(u, "group")
                    .strip_suffix(" (major)")
                    .map_or_else(|| text(u, "group"), str::to_string),
                // As written: what the render shows.
                image: text(u, "name"),
                from: text(u, "from"),
                to: text(u, "to"),
            })
            .collect();
        updates.sort();
        // Two references of one name that one written entry moves are one move.
        updates.dedup();
        (updates, report)
    }

    /// Runs `--write` and checks every rule of the oracle; returns the updates.
    pub fn check(&self) -> Vec<Update> {
        let files_before = support::texts(self.repo.path());
        let before = self.renders();
        let (updates, report) = self.run("--write");
        // Edits kustomize does not render are set aside while the renders are compared.
        let aside = self.set_aside(&files_before);
        let after = self.renders();
        let updates: Vec<Update> = updates
            .into_iter()
            .filter(|u| !self.is_unrendered(&u.file))
            .collect();
        let leaf_of = |u: &Update| -> String {
            let unit = u.unit.as_str();
            self.renders_in
                .get(unit)
                .copied()
                .unwrap_or(unit)
                .to_string()
        };
        for u in &updates {
            assert!(
                self.leaves.contains(&leaf_of(u).as_str()),
                "{u:?} moves no leaf"
            );
        }
        // Each leaf's render is its old render with exactly the reported moves.
        for leaf in &self.leaves {
            let mut expected = before[leaf].clone();
            for u in updates.iter().filter(|u| leaf_of(u) == *leaf) {
                let old = format!("image: {}:{}\n", u.image, u.from);
                assert!(
                    expected.contains(&old),
                    "{leaf} does not render {old:?} that {u:?} moves\n{}\n{report:#}",
                    before[leaf]
                );
                expected = expected.replace(&old, &format!("image: {}:{}\n", u.image, u.to));
            }
            assert_eq!(after[leaf], expected, "{leaf}: {updates:?}");
        }
        self.no_dead_edit(&files_before, &after);
        for (path, text) in aside {
            fs::write(path, text).unwrap();
        }
        let (again, _) = self.run("--dry-run");
        assert_eq!(again, [], "a second run has nothing to do");
        updates
    }

    /// Puts the unrendered files edited since `before` back as they were; returns their
    /// edited texts.
    fn set_aside(&self, before: &BTreeMap<String, String>) -> Vec<(std::path::PathBuf, String)> {
        let now = support::texts(self.repo.path());
        let edited = (now.into_iter())
            .filter(|(file, text)| self.is_unrendered(file) && before.get(file) != Some(text));
        let mut aside = Vec::new();
        for (file, text) in edited {
            let path = self.repo.path().join(&file);
            match before.get(&file) {
                Some(old) => fs::write(&path, old).unwrap(),
                None => fs::remove_file(&path).unwrap(),
            }
            aside.push((path, text));
        }
        aside
    }

    fn is_unrendered(&self, file: &str) -> bool {
        (self.unrendered.iter()).any(|u| file == *u || (u.ends_with('/') && file.starts_with(u)))
    }

    /// Undoing any single edited line (a whole file, where lines were added) changes a
    /// render back.
    fn no_dead_edit(&self, before: &BTreeMap<String, String>, after: &BTreeMap<&str, String>) {
        let now = support::texts(self.repo.path());
        for (file, text) in &now {
            let old = before.get(file).cloned().unwrap_or_default();
            if *text == old || self.is_unrendered(file) {
                continue;
            }
            let (new_lines, old_lines): (Vec<&str>, Vec<&str>) = (
                text.split_inclusive('\n').collect(),
                old.split_inclusive('\n').collect(),
            );
            let undos: Vec<String> = if new_lines.len() == old_lines.len() {
                (0..new_lines.len())
                    .filter(|&i| new_lines[i] != old_lines[i])
                    .map(|i| {
                        let mut lines = new_lines.clone();
                        lines[i] = old_lines[i];
                        lines.concat()
                    })
                    .collect()
            } else {
                vec![old.clone()]
            };
            let path = self.repo.path().join(file);
            for undo in undos {
                fs::write(&path, &undo).unwrap();
                assert_ne!(&self.renders(), after, "a dead edit in {file}:\n{text}");
            }
            fs::write(&path, text).unwrap();
        }
    }
}

pub fn update(file: &str, unit: &str, from: &str, to: &str) -> Update {
    Update {
        file: file.into(),
        unit: unit.into(),
        image: IMAGE.into(),
        from: from.into(),
        to: to.into(),
    }
}
