//! Edits proven without their file's text, for a run whose output is the report.
//!
//! Discovery gives up the text of a file the one-pass reader read, without aliases or merge
//! keys, whose every slot holds the whole value of its line (`discover::SourceTexts`,
//! `Slot::alone`): what the proof of an edit in its line reads of the text was read then.
//! What is left of the proof depends on the new values alone, and is made here
//! (`imagebump_yaml::proven_in_their_lines`). Where it cannot decide (a new value that
//! does not read alone, a value to create), the plan reads the text again.

use super::{edits_at, edits_rendered, FileWork, SlotEditError};
use crate::discover::ImageRef;
use imagebump_yaml::{self as yaml, Edit};

/// What [`super::change_file`] would say of `work` on the text discovery gave up, without
/// it: `Some(Ok)` when it would make the new text, `Some(Err)` with the refusal it would
/// give, `None` when only the text can tell.
pub(super) fn proven(work: &FileWork) -> Option<Result<(), (usize, usize, String)>> {
    if !work.creations.is_empty() {
        return None;
    }
    let mut edits = Vec::new();
    for (r, tag, digest) in work.slots() {
        match edits_alone(r, tag, digest)? {
            Ok(e) => edits.extend(e),
            Err(e) => {
                let (line, column) = r.at();
                return Some(Err((line, column, e.to_string())));
            }
        }
    }
    if edits.is_empty() {
        return Some(Ok(()));
    }
    let (line, column) = edits_at(work);
    match yaml::proven_in_their_lines(&edits) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err((line, column, e.to_string()))),
    }
}

/// [`super::edits_for`] without the text: `None` when a slot's edit needs it (a slot not
/// [`alone`](crate::discover::Slot::alone), a new value whose spelling depends on the old
/// one's).
fn edits_alone(
    r: &ImageRef,
    tag: &str,
    digest: Option<&str>,
) -> Option<Result<Vec<Edit>, SlotEditError>> {
    edits_rendered(r, (tag, digest), |slot, value| {
        slot.alone
            .then(|| yaml::render_alone(slot.style, value))
            .flatten()
            .map(Ok)
    })
}

#[cfg(test)]
mod tests {
    use crate::chunked::Chunked;
    use crate::discover::{discover_with, Discovery, SourceTexts};
    use crate::plan::tests::{all_updated, rows_of};
    use crate::plan::{plan_giving_up_texts, plan_with, Keep, Plan};
    use crate::resolve::Outcome;
    use crate::source::tree::Tree;
    use imagebump_model::config::{Config, GroupBy};

    fn discovered(dir: &std::path::Path, texts: SourceTexts) -> Discovery {
        discover_with(&Tree::disk(dir), &Config::default(), None, texts)
    }

    /// What the report says of two plans (each with the discovery it was made from) is the
    /// same: its rows, problems and change sets.
    fn same_report(
        (a, a_found): (&Plan, &Discovery),
        (b, b_found): (&Plan, &Discovery),
        outcomes: &Chunked<Outcome>,
    ) {
        assert_eq!(rows_of(a, a_found, outcomes), rows_of(b, b_found, outcomes));
        assert_eq!(a.update_count(), b.update_count());
        assert_eq!(a.problems, b.problems);
        assert_eq!(a.refused, b.refused);
        assert_eq!(a.files_changed, b.files_changed);
        let sets = |p: &Plan| -> Vec<(String, Vec<String>, Vec<usize>)> {
            (p.change_sets.iter())
                .map(|c| {
                    let files = c.files.iter().map(|f| f.to_string()).collect();
                    (c.group.to_string(), files, c.updates.clone())
                })
                .collect()
        };
        assert_eq!(sets(a), sets(b));
    }

    /// A report-only run holds only the texts its proofs need, and reports what a run that
    /// holds them all does.
    #[test]
    fn texts_proven_without_are_given_up_and_the_report_is_the_same() {
        let dir = crate::discover::tests::tree(&[
            (
                "apps/a/kustomization.yaml",
                "images:\n- name: r.io/x\n  newTag: 1.0.0 # pinned by hand\n",
            ),
            ("apps/b/values.yaml", "x:\n  image: r.io/y:1.0.0\n"),
            // An alias, and a value in a flow mapping: their texts are kept.
            (
                "apps/c/values.yaml",
                "base: &b r.io/z:1.0.0\nx:\n  image: *b\n",
            ),
            ("apps/d/values.yaml", "x: {image: r.io/w:1.0.0}\n"),
        ]);
        let kept = discovered(dir.path(), SourceTexts::All);
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        let files = |d: &Discovery| d.sources.keys().map(|f| f.to_string()).collect::<Vec<_>>();
        assert_eq!(files(&kept).len(), 4, "{:?}", files(&kept));
        assert_eq!(
            files(&given_up),
            ["apps/c/values.yaml", "apps/d/values.yaml"]
        );
        let alone: Vec<(&str, bool)> = (given_up.refs.iter())
            .flat_map(|r| r.slots.iter().map(|s| (&*r.file, s.alone)))
            .collect();
        assert!(
            alone.contains(&("apps/a/kustomization.yaml", true)),
            "{alone:?}"
        );
        assert!(alone.contains(&("apps/b/values.yaml", true)), "{alone:?}");
        assert!(alone
            .iter()
            .all(|(f, a)| *a == (f.starts_with("apps/a") || f.starts_with("apps/b"))));
        for (tag, group_by) in [
            ("2.0.0", GroupBy::App),
            ("2.0.0", GroupBy::Image),
            ("a: b", GroupBy::App),
        ] {
            let outcomes = all_updated(&kept, tag);
            let full = plan_with(&kept, &outcomes, group_by, Keep::Files);
            let mut again = discovered(dir.path(), SourceTexts::NeededOnly);
            let lean =
                plan_giving_up_texts(&mut again, &outcomes, group_by, &Tree::disk(dir.path()));
            same_report((&lean, &again), (&full, &kept), &outcomes);
            assert_eq!(full.files_changed, 4, "{:?}", full.problems);
            assert!(lean.files.is_empty());
        }
        let outcomes = all_updated(&kept, "2.0.0");
        let lean = plan_giving_up_texts(
            &mut given_up,
            &outcomes,
            GroupBy::App,
            &Tree::disk(dir.path()),
        );
        assert!(given_up.sources.is_empty() && given_up.fingerprints.is_empty());
        assert_eq!(lean.update_count(), 4);
    }

    /// The plan refused its one file: it could not be read again.
    fn not_read_again(made: &Plan) {
        assert_eq!(made.refused.len(), 1, "{:?}", made.problems);
        let why = &made.problems[0].message;
        let want = "edit refused, file left unchanged: cannot read the file again: ";
        assert!(why.starts_with(want), "{:?}", made.problems);
    }

    /// A new value whose spelling depends on the old one's (a number where a number was)
    /// is written from the text read again; a text that changed since discovery read it is
    /// refused, and so is one that is gone.
    #[test]
    fn a_text_given_up_is_read_again_where_a_new_value_needs_it() {
        let values = "x:\n  image:\n    repository: r.io/x\n    tag: 10\n";
        let dir = crate::discover::tests::tree(&[("apps/a/values.yaml", values)]);
        let tree = Tree::disk(dir.path());
        let kept = discovered(dir.path(), SourceTexts::All);
        assert_eq!(kept.refs.len(), 1);
        let outcomes = all_updated(&kept, "20");
        let full = plan_with(&kept, &outcomes, GroupBy::App, Keep::Files);
        assert_eq!(full.files[0].after, values.replace("10", "20"));
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        assert!(given_up.sources.is_empty());
        let lean = plan_giving_up_texts(&mut given_up, &outcomes, GroupBy::App, &tree);
        same_report((&lean, &given_up), (&full, &kept), &outcomes);
        // Changed after discovery read it: refused, left alone.
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        let path = dir.path().join("apps/a/values.yaml");
        std::fs::write(&path, values.replace("x:", "z:")).unwrap();
        let lean = plan_giving_up_texts(&mut given_up, &outcomes, GroupBy::App, &tree);
        assert_eq!(lean.update_count(), 0);
        assert_eq!(lean.refused.len(), 1);
        assert_eq!(
            lean.problems[0].to_string(),
            "apps/a/values.yaml:4:10: edit refused, file left unchanged: the file changed while imagebump ran"
        );
        // A link put in its place, to the same text outside the tree: not read through.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("values.yaml"), values).unwrap();
        std::fs::write(&path, values).unwrap();
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(outside.path().join("values.yaml"), &path).unwrap();
        let lean = plan_giving_up_texts(&mut given_up, &outcomes, GroupBy::App, &tree);
        not_read_again(&lean);
        // Gone.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, values).unwrap();
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        assert!(given_up.sources.is_empty());
        std::fs::remove_file(&path).unwrap();
        let lean = plan_giving_up_texts(&mut given_up, &outcomes, GroupBy::App, &tree);
        not_read_again(&lean);
    }

    /// Files held in memory, by path: a plan reads given-up texts only through [`Files`].
    struct InMemory(std::collections::BTreeMap<&'static str, String>);

    impl crate::plan::Files for InMemory {
        fn read_again(&self, file: &str) -> Result<String, crate::source::jail::Error> {
            let missing = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
            self.0
                .get(file)
                .cloned()
                .ok_or_else(|| crate::source::jail::Error::Io(missing().into()))
        }
    }

    /// A plan giving up texts reads them again from the files it is handed, not from the
    /// disk discovery read: the same text is planned, a changed one and a missing one are
    /// refused.
    #[test]
    fn a_text_given_up_is_read_again_from_the_files_the_plan_is_handed() {
        let file = "apps/a/values.yaml";
        let values = "x:\n  image:\n    repository: r.io/x\n    tag: 10\n";
        let dir = crate::discover::tests::tree(&[(file, values)]);
        let kept = discovered(dir.path(), SourceTexts::All);
        let outcomes = all_updated(&kept, "20");
        let full = plan_with(&kept, &outcomes, GroupBy::App, Keep::Files);
        let mut given_up: Vec<Discovery> = (0..3)
            .map(|_| discovered(dir.path(), SourceTexts::NeededOnly))
            .collect();
        assert!(given_up.iter().all(|found| found.sources.is_empty()));
        // Gone from the disk: only the files handed over are read.
        std::fs::remove_file(dir.path().join(file)).unwrap();
        let mut plan_from = |files: &[(&'static str, String)]| {
            let mut found = given_up.pop().unwrap();
            let files = InMemory(files.iter().cloned().collect());
            let made = plan_giving_up_texts(&mut found, &outcomes, GroupBy::App, &files);
            (made, found)
        };
        let (same, found) = plan_from(&[(file, values.to_string())]);
        same_report((&same, &found), (&full, &kept), &outcomes);
        assert_eq!(same.update_count(), 1);
        let (changed, _) = plan_from(&[(file, values.replace("x:", "z:"))]);
        assert_eq!(
            changed.problems[0].to_string(),
            "apps/a/values.yaml:4:10: edit refused, file left unchanged: the file changed while imagebump ran"
        );
        let (missing, _) = plan_from(&[]);
        assert_eq!(
            missing.problems[0].to_string(),
            "apps/a/values.yaml:4:10: edit refused, file left unchanged: cannot read the file again: cannot read: no such file"
        );
        assert_eq!((changed.update_count(), missing.update_count()), (0, 0));
    }

    /// A base shared by two overlays: its image moves in each overlay, by an `images:` entry
    /// created there. Discovery did not hold the overlays' texts: the plan reads them again.
    #[test]
    fn kustomizations_given_up_are_read_again_for_the_entries_created_in_them() {
        let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: r.io/web:1.0.0\n";
        let dir = crate::discover::tests::tree(&[
            ("base/kustomization.yaml", "resources: [deploy.yaml]\n"),
            ("base/deploy.yaml", deploy),
            (
                "overlays/dev/kustomization.yaml",
                "resources:\n- ../../base\n",
            ),
            (
                "overlays/prod/kustomization.yaml",
                "resources:\n- ../../base\n",
            ),
        ]);
        let kept = discovered(dir.path(), SourceTexts::All);
        assert_eq!(kept.refs.iter().filter(|r| r.is_managed()).count(), 2);
        let outcomes = all_updated(&kept, "2.0.0");
        let full = plan_with(&kept, &outcomes, GroupBy::App, Keep::Files);
        assert_eq!(full.files_changed, 2, "{:?}", full.problems);
        assert!(
            full.files[0].after.contains("newTag: 2.0.0"),
            "{}",
            full.files[0].after
        );
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        assert!(given_up.sources.is_empty());
        for overlay in ["overlays/dev", "overlays/prod"] {
            let file = format!("{overlay}/kustomization.yaml");
            assert!(given_up.fingerprints.contains_key(file.as_str()), "{file}");
        }
        let tree = Tree::disk(dir.path());
        let lean = plan_giving_up_texts(&mut given_up, &outcomes, GroupBy::App, &tree);
        same_report((&lean, &given_up), (&full, &kept), &outcomes);
    }

    /// A reference pinned by digest whose new digest is unknown is refused alike, with or
    /// without its text.
    #[test]
    fn an_unknown_digest_is_refused_without_the_text_as_with_it() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let values = format!("x:\n  image: r.io/x:1.0.0@{digest}\n");
        let dir = crate::discover::tests::tree(&[("apps/a/values.yaml", &values)]);
        let kept = discovered(dir.path(), SourceTexts::All);
        assert!(kept.refs.iter().any(|r| r.digest.is_some()));
        let outcomes = all_updated(&kept, "2.0.0");
        let full = plan_with(&kept, &outcomes, GroupBy::App, Keep::Files);
        assert_eq!(full.refused.len(), 1, "{:?}", full.problems);
        assert!(full.problems[0]
            .message
            .ends_with("the new digest is unknown"));
        let mut given_up = discovered(dir.path(), SourceTexts::NeededOnly);
        assert!(given_up.sources.is_empty());
        let tree = Tree::disk(dir.path());
        let lean = plan_giving_up_texts(&mut given_up, &outcomes, GroupBy::App, &tree);
        same_report((&lean, &given_up), (&full, &kept), &outcomes);
    }
}
