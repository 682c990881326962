//! Each file's fingerprint of its values, kept from discovery to the plan's verification.

use arcstr::ArcStr;

/// Each file's fingerprint, by the file's name (shared with its references): a list, sorted
/// once discovery is done and then found by binary search. A hash map of them was half a
/// megabyte at 10,000 apps (16,384 places for 10,000 files), held from discovery to the
/// plan's end.
#[derive(Debug, Default, Clone)]
pub struct Fingerprints {
    list: Vec<(ArcStr, imagebump_yaml::Fingerprint)>,
    /// Whether `list` is in the names' order (bytewise), each name once.
    sorted: bool,
}

impl Fingerprints {
    /// The fingerprint of `file`, in place of any it had.
    pub fn insert(&mut self, file: ArcStr, print: imagebump_yaml::Fingerprint) {
        let in_order = self.list.last().is_none_or(|(last, _)| *last < file);
        self.sorted = (self.sorted || self.list.is_empty()) && in_order;
        self.list.push((file, print));
    }

    /// Sorted by name, the last one given for a name kept, at its exact length.
    pub(super) fn sort(&mut self) {
        if !self.sorted {
            // Stable: of one name's fingerprints, the last one given comes last, and takes
            // the place of those before it.
            self.list.sort_by(|a, b| a.0.cmp(&b.0));
            self.list.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(later, kept);
                }
                same
            });
            self.sorted = true;
        }
        self.list.shrink_to_fit();
    }

    pub fn get(&self, file: &str) -> Option<&imagebump_yaml::Fingerprint> {
        if self.sorted {
            let at = self.list.binary_search_by(|(f, _)| (**f).cmp(file)).ok()?;
            self.list.get(at).map(|(_, print)| print)
        } else {
            self.list
                .iter()
                .rev()
                .find(|(f, _)| **f == *file)
                .map(|(_, p)| p)
        }
    }

    pub fn contains_key(&self, file: &str) -> bool {
        self.get(file).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Only the files `keep` keeps (the order is kept).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.list.retain(|(f, _)| keep(f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fingerprints are found by name whether they came in order or not, the last one
    /// given for a name wins (as a map's insert), and what is kept stays found.
    #[test]
    fn fingerprints_are_found_by_name_in_any_order() {
        let print = |text: &str| imagebump_yaml::parse_located_fingerprinted(text).unwrap().1;
        let (a, b, c) = (print("a: 1\n"), print("b: 2\n"), print("c: 3\n"));
        assert!(a != b && b != c && a != c);
        for names in [
            ["x/a", "x/b", "y"],
            ["y", "x/b", "x/a"],
            ["x/b", "y", "x/a"],
        ] {
            let mut f = Fingerprints::default();
            for (name, p) in names.iter().zip([a, b, c]) {
                f.insert(ArcStr::from(*name), p);
            }
            // The same name again: its new fingerprint holds.
            f.insert(ArcStr::from(names[0]), c);
            for sorted in [false, true] {
                if sorted {
                    f.sort();
                    assert_eq!(f.list.len(), 3, "one entry per name");
                }
                assert_eq!(f.get(names[0]), Some(&c), "{names:?} {sorted}");
                assert_eq!(f.get(names[1]), Some(&b), "{names:?} {sorted}");
                assert_eq!(f.get(names[2]), Some(&c), "{names:?} {sorted}");
                assert_eq!(f.get("x"), None);
                assert!(!f.contains_key("z"));
            }
            f.retain(|name| name != "x/b");
            assert_eq!((f.get("x/b"), f.get("x/a").is_some()), (None, true));
            assert!(f.get("y").is_some());
        }
        assert!(Fingerprints::default().is_empty());
    }
}
