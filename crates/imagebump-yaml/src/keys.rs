//! The keys of one mapping seen so far, so that a duplicate is found in time linear in the
//! mapping's keys: a comparison with every earlier key would make a mapping of n keys cost
//! n² comparisons, and a values file of a few megabytes minutes (docs/security.md, "Bad
//! input costs little").

/// Up to this many keys are compared one by one, on the stack (most mappings: nothing to
/// allocate or hash); past it, a set seeded at random takes over.
const FEW: usize = 16;

/// The names of a mapping's keys read so far.
pub(crate) struct Seen<'t> {
    few: [&'t str; FEW],
    count: usize,
    many: Option<foldhash::HashSet<&'t str>>,
}

impl<'t> Seen<'t> {
    pub(crate) fn new() -> Self {
        Seen {
            few: [""; FEW],
            count: 0,
            many: None,
        }
    }

    /// Records `name`: `false` when the mapping has it already.
    pub(crate) fn insert(&mut self, name: &'t str) -> bool {
        if let Some(set) = &mut self.many {
            return set.insert(name);
        }
        let seen = self.few.get(..self.count).unwrap_or_default();
        if seen.contains(&name) {
            return false;
        }
        if let Some(slot) = self.few.get_mut(self.count) {
            *slot = name;
            self.count = self.count.saturating_add(1);
        } else {
            let mut set = foldhash::HashSet::default();
            set.extend(self.few.iter().copied());
            set.insert(name);
            self.many = Some(set);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicate_is_found_among_few_keys_and_among_many() {
        let names: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        let mut seen = Seen::new();
        for (i, n) in names.iter().enumerate() {
            assert!(seen.insert(n), "k{i} is new");
            // Every earlier key is still known, before and after the set takes over.
            let earlier = names.get(i / 2).map(String::as_str).unwrap_or("k0");
            assert!(!seen.insert(earlier), "k{} after k{i}", i / 2);
        }
        assert!(seen.insert("k100"));
        assert!(!seen.insert("k3"));
        assert!(!seen.insert("k99"));
    }

    #[test]
    fn the_empty_key_is_a_key_like_any_other() {
        let mut seen = Seen::new();
        assert!(seen.insert(""));
        assert!(!seen.insert(""));
        assert!(seen.insert("a"));
    }
}
