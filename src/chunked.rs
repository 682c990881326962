//! A list kept in chunks of a few kilobytes instead of one block.
//!
//! The run's long lists (45,000 references and their outcomes, 30,000 planned updates at
//! 10,000 apps) are made while a great deal is being freed: parsed documents,
//! kustomizations, texts. Freed memory stays with the allocator in pages that still hold a
//! few live values, and it can only be given to allocations that fit those pages. A list
//! in one block of several megabytes fits none of them: it takes new pages from the
//! system, and the resident size grows by all of it; grown as it is filled, it is also
//! copied into ever larger blocks, each old one left to the allocator. The same list in
//! chunks of [`CHUNK_BYTES`] is made in the room already resident, and never copied
//! (docs/performance.md, "Long lists in chunks").

/// The size of a chunk: small enough for the allocator's small-object pages (mimalloc's
/// are 64 KiB and hold blocks up to 16 KiB), large enough that the list of chunks stays
/// short (dozens of updates to a chunk).
pub const CHUNK_BYTES: usize = 8 << 10;

/// A list of `T` in chunks; every chunk is full but the last.
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Chunked<T> {
    /// How many values a chunk holds.
    const PER_CHUNK: usize = {
        let size = std::mem::size_of::<T>();
        if size == 0 || size >= CHUNK_BYTES {
            1
        } else {
            CHUNK_BYTES / size
        }
    };

    pub const fn new() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, value: T) {
        let full = self
            .chunks
            .last()
            .is_none_or(|c| c.len() >= Self::PER_CHUNK);
        if full {
            self.chunks.push(Vec::with_capacity(Self::PER_CHUNK));
        }
        if let Some(last) = self.chunks.last_mut() {
            last.push(value);
            self.len = self.len.saturating_add(1);
        }
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        let (chunk, at) = Self::place(i)?;
        self.chunks.get(chunk)?.get(at)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let (chunk, at) = Self::place(i)?;
        self.chunks.get_mut(chunk)?.get_mut(at)
    }

    /// The chunk of the `i`th value, and its place in it.
    fn place(i: usize) -> Option<(usize, usize)> {
        Some((
            i.checked_div(Self::PER_CHUNK)?,
            i.checked_rem(Self::PER_CHUNK)?,
        ))
    }

    /// The values in order.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            chunks: self.chunks.iter().flatten(),
            left: self.len,
        }
    }

    pub fn iter_mut(&mut self) -> std::iter::Flatten<std::slice::IterMut<'_, Vec<T>>> {
        self.chunks.iter_mut().flatten()
    }

    /// The values from the `from`th on (none past the end), found without a walk from the
    /// first (`iter().skip(from)` steps through every chunk before).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> {
        let (chunk, skip) = Self::start(from);
        (self.chunks.iter().skip(chunk).enumerate()).flat_map(move |(k, c)| c.iter().skip(skip(k)))
    }

    /// As [`Chunked::iter_from`], to change them.
    pub fn iter_mut_from(&mut self, from: usize) -> impl Iterator<Item = &mut T> {
        let (chunk, skip) = Self::start(from);
        (self.chunks.iter_mut().skip(chunk).enumerate())
            .flat_map(move |(k, c)| c.iter_mut().skip(skip(k)))
    }

    /// Where iteration from the `from`th value starts: the chunks to pass over, and how
    /// many values to pass over in the `k`th chunk after them (only the first is entered
    /// past its start).
    fn start(from: usize) -> (usize, impl Fn(usize) -> usize + Copy) {
        let (chunk, at) = Self::place(from).unwrap_or((usize::MAX, 0));
        (chunk, move |k: usize| if k == 0 { at } else { 0 })
    }

    pub fn last_mut(&mut self) -> Option<&mut T> {
        self.chunks.last_mut().and_then(|c| c.last_mut())
    }

    /// Keeps the values `keep` says, in order, where they are (as `Vec::retain`: each kept
    /// value moves down over the ones given up, the rest go from the end).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut kept = 0usize;
        for i in 0..self.len {
            if !self.get(i).is_some_and(&mut keep) {
                continue;
            }
            if kept != i {
                self.swap_down(kept, i);
            }
            kept = kept.saturating_add(1);
        }
        while self.len > kept && self.pop().is_some() {}
    }

    /// Swaps the `low`th value with the `high`th (`low` < `high`).
    fn swap_down(&mut self, low: usize, high: usize) {
        let (Some((lc, li)), Some((hc, hi))) = (Self::place(low), Self::place(high)) else {
            return;
        };
        let Some((below, from)) = self.chunks.split_at_mut_checked(hc) else {
            return;
        };
        let Some(h) = from.first_mut() else {
            return;
        };
        if lc == hc {
            if li < h.len() && hi < h.len() {
                h.swap(li, hi);
            }
        } else if let (Some(l), Some(h)) =
            (below.get_mut(lc).and_then(|c| c.get_mut(li)), h.get_mut(hi))
        {
            std::mem::swap(l, h);
        }
    }

    /// The last value, taken out.
    fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let value = last.pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        if value.is_some() {
            self.len = self.len.saturating_sub(1);
        }
        value
    }

    /// Each value whose index `with` names is replaced by the values it holds there (none,
    /// one or several), the others kept in order: one pass, whatever the number of
    /// replacements. An index past the end names nothing and is ignored.
    pub fn replace(&mut self, mut with: std::collections::BTreeMap<usize, Vec<T>>) {
        if with.is_empty() {
            return;
        }
        let old = std::mem::take(self);
        for (i, value) in old.into_iter().enumerate() {
            match with.remove(&i) {
                Some(values) => self.extend(values),
                None => self.push(value),
            }
        }
    }
}

/// The values of a [`Chunked`] in order; it knows how many are left.
pub struct Iter<'a, T> {
    chunks: std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>,
    left: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        let next = self.chunks.next();
        if next.is_some() {
            self.left = self.left.saturating_sub(1);
        }
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }

    fn count(self) -> usize {
        self.left
    }

    fn last(mut self) -> Option<&'a T> {
        self.next_back()
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let next = self.chunks.next_back();
        if next.is_some() {
            self.left = self.left.saturating_sub(1);
        }
        next
    }
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked::new()
    }
}

impl<T: Clone> Clone for Chunked<T> {
    fn clone(&self) -> Self {
        self.iter().cloned().collect()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Chunked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: PartialEq> PartialEq for Chunked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<T: Eq> Eq for Chunked<T> {}

impl<T> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut list = Chunked::new();
        list.extend(iter);
        list
    }
}

impl<T> Extend<T> for Chunked<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for value in iter {
            self.push(value);
        }
    }
}

impl<T> From<Vec<T>> for Chunked<T> {
    fn from(values: Vec<T>) -> Self {
        values.into_iter().collect()
    }
}

impl<'a, T> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Chunked<T> {
    type Item = &'a mut T;
    type IntoIter = std::iter::Flatten<std::slice::IterMut<'a, Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T> IntoIterator for Chunked<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl<T: serde::Serialize> serde::Serialize for Chunked<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of 1 KiB: eight to a chunk, so that a few dozen span several chunks.
    #[derive(Debug, Clone, PartialEq)]
    struct Big(u32, [u8; 1020]);

    fn big(i: u32) -> Big {
        Big(i, [0; 1020])
    }

    #[test]
    fn a_chunked_list_keeps_order_and_finds_every_index_across_chunks() {
        assert_eq!(Chunked::<Big>::PER_CHUNK, 8);
        let list: Chunked<Big> = (0..21).map(big).collect();
        assert_eq!(list.len(), 21);
        assert_eq!(list.chunks.len(), 3, "8 + 8 + 5");
        assert!(list.chunks.iter().all(|c| c.capacity() == 8));
        let seen: Vec<u32> = list.iter().map(|b| b.0).collect();
        assert_eq!(seen, (0..21).collect::<Vec<_>>());
        for i in 0..21 {
            assert_eq!(list.get(i).map(|b| b.0), Some(i as u32));
        }
        assert_eq!(list.get(21), None);
        let back: Vec<u32> = list.iter().rev().map(|b| b.0).collect();
        assert_eq!(back, (0..21).rev().collect::<Vec<_>>());
        let mut it = list.iter();
        assert_eq!(it.len(), 21);
        it.next();
        it.next_back();
        assert_eq!(it.len(), 19);
    }

    #[test]
    fn a_chunked_list_changes_in_place_and_compares_by_its_values() {
        let mut list: Chunked<Big> = Chunked::from((0..10).map(big).collect::<Vec<_>>());
        if let Some(b) = list.get_mut(9) {
            b.0 = 90;
        }
        for b in list.iter_mut().take(2) {
            b.0 += 100;
        }
        let values: Vec<u32> = list.clone().into_iter().map(|b| b.0).collect();
        assert_eq!(values, [100, 101, 2, 3, 4, 5, 6, 7, 8, 90]);
        assert_eq!(list, list.clone());
        let mut shorter = list.clone();
        shorter.chunks.last_mut().map(Vec::pop);
        shorter.len -= 1;
        assert_ne!(list, shorter);
        assert!(Chunked::<Big>::new().is_empty());
    }

    #[test]
    fn a_chunked_list_keeps_what_it_is_told_and_replaces_values_by_index() {
        let mut list: Chunked<Big> = (0..30).map(big).collect();
        // Asked once for each value, in order, as `Vec::retain` asks.
        let mut asked = Vec::new();
        list.retain(|b| {
            asked.push(b.0);
            b.0 % 3 != 0
        });
        assert_eq!(asked, (0..30).collect::<Vec<_>>());
        let values = |l: &Chunked<Big>| l.iter().map(|b| b.0).collect::<Vec<_>>();
        let kept: Vec<u32> = (0..30).filter(|i| i % 3 != 0).collect();
        assert_eq!(values(&list), kept);
        assert_eq!(list.len(), 20);
        assert!(list.chunks.iter().rev().skip(1).all(|c| c.len() == 8));
        // Index 0 (value 1) becomes two values, index 5 (value 8) none, index 19 (29) one.
        let with = [
            (0, vec![big(100), big(101)]),
            (5, vec![]),
            (19, vec![big(129)]),
        ];
        list.replace(with.into_iter().collect());
        let mut want = vec![100, 101];
        want.extend(kept.iter().skip(1).filter(|&&v| v != 8 && v != 29));
        want.push(129);
        assert_eq!(values(&list), want);
        assert_eq!(list.len(), want.len());
        let full = |l: &Chunked<Big>| l.chunks.iter().rev().skip(1).all(|c| c.len() == 8);
        assert!(full(&list));
        for (i, v) in want.iter().enumerate() {
            assert_eq!(list.get(i).map(|b| b.0), Some(*v));
        }
        assert_eq!(list.iter().count(), want.len());
        assert_eq!(list.iter().last().map(|b| b.0), want.last().copied());
        let from: Vec<u32> = list.iter_mut_from(7).map(|b| b.0).collect();
        assert_eq!(from, want[7..]);
        let from: Vec<u32> = list.iter_from(9).map(|b| b.0).collect();
        assert_eq!(from, want[9..]);
        assert_eq!(list.iter_from(want.len()).count(), 0);
        assert_eq!(list.iter_mut_from(want.len()).count(), 0);
        assert_eq!(list.iter_mut_from(usize::MAX).count(), 0);
        if let Some(last) = list.last_mut() {
            last.0 = 7;
        }
        assert_eq!(list.iter().next_back().map(|b| b.0), Some(7));
        let before = values(&list);
        list.replace(Default::default());
        assert_eq!(values(&list), before);
        // An index past the end names nothing.
        list.replace([(1000, vec![big(1)])].into_iter().collect());
        assert_eq!(values(&list), before);
        assert!(full(&list));
    }

    /// What a test does to a list and to a vector alike.
    #[derive(Debug, Clone)]
    enum Op {
        Push(u16),
        Retain(u16),
        Replace(Vec<(usize, Vec<u16>)>),
        Set(usize, u16),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => any::<u16>().prop_map(Op::Push),
            1 => (1u16..5).prop_map(Op::Retain),
            1 => proptest::collection::vec(
                (0usize..80, proptest::collection::vec(any::<u16>(), 0..4)),
                0..4
            )
            .prop_map(Op::Replace),
            1 => (0usize..80, any::<u16>()).prop_map(|(i, v)| Op::Set(i, v)),
        ]
    }

    proptest::proptest! {
        /// Any sequence of changes leaves the list holding what a vector would, findable at
        /// every index and from every index, every chunk full but the last.
        #[test]
        fn a_chunked_list_behaves_as_a_vector(ops in proptest::collection::vec(op(), 0..60)) {
            // Values of 1 KiB: eight to a chunk.
            let mut list: Chunked<Big> = Chunked::new();
            let mut vec: Vec<u32> = Vec::new();
            for op in ops {
                match op {
                    Op::Push(v) => {
                        list.push(big(u32::from(v)));
                        vec.push(u32::from(v));
                    }
                    Op::Retain(m) => {
                        let keep = |v: u32| v % u32::from(m) != 0;
                        list.retain(|b| keep(b.0));
                        vec.retain(|&v| keep(v));
                    }
                    Op::Replace(with) => {
                        let with: std::collections::BTreeMap<usize, Vec<u16>> =
                            with.into_iter().collect();
                        let mut want = Vec::new();
                        for (i, v) in vec.iter().enumerate() {
                            match with.get(&i) {
                                Some(new) => want.extend(new.iter().map(|&n| u32::from(n))),
                                None => want.push(*v),
                            }
                        }
                        vec = want;
                        let with = with
                            .into_iter()
                            .map(|(i, new)| (i, new.into_iter().map(|n| big(u32::from(n))).collect()))
                            .collect();
                        list.replace(with);
                    }
                    Op::Set(i, v) => {
                        if let Some(b) = list.get_mut(i) {
                            b.0 = u32::from(v);
                        }
                        if let Some(x) = vec.get_mut(i) {
                            *x = u32::from(v);
                        }
                    }
                }
                proptest::prop_assert_eq!(list.len(), vec.len());
                let seen: Vec<u32> = list.iter().map(|b| b.0).collect();
                proptest::prop_assert_eq!(&seen, &vec);
                proptest::prop_assert!(list.chunks.iter().rev().skip(1).all(|c| c.len() == 8));
                proptest::prop_assert!(list.chunks.last().is_none_or(|c| !c.is_empty()));
                for i in 0..=vec.len() {
                    proptest::prop_assert_eq!(list.get(i).map(|b| b.0), vec.get(i).copied());
                    let from: Vec<u32> = list.iter_from(i).map(|b| b.0).collect();
                    proptest::prop_assert_eq!(&from[..], &vec[i..]);
                }
                let back: Vec<u32> = list.iter().rev().map(|b| b.0).collect();
                proptest::prop_assert!(back.iter().eq(vec.iter().rev()));
            }
        }
    }

    #[test]
    fn a_chunked_list_serializes_as_the_list_of_its_values() {
        let list: Chunked<u32> = (0..3000).collect();
        assert!(list.chunks.len() > 1);
        let v: Vec<u32> = (0..3000).collect();
        assert_eq!(
            serde_json::to_string(&list).ok(),
            serde_json::to_string(&v).ok()
        );
        assert_eq!(format!("{list:?}"), format!("{v:?}"));
    }
}
