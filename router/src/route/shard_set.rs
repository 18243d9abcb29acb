//! Sets of database numbers: one machine word (no allocation) for clusters of
//! up to 64 databases, words on the heap beyond that.

/// A set of database numbers below the cluster's database count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShardSet {
    /// Bit `d` is database `d` (clusters of at most 64 databases).
    Small(u64),
    /// Word `d / 64`, bit `d % 64`.
    Large(Vec<u64>),
}

const BITS: usize = u64::BITS as usize;

impl ShardSet {
    /// The empty set, sized for `databases`.
    pub(crate) fn empty(databases: usize) -> ShardSet {
        if databases <= BITS {
            ShardSet::Small(0)
        } else {
            ShardSet::Large(vec![0; databases.div_ceil(BITS)])
        }
    }

    /// `{database}`, sized for `databases`.
    pub(crate) fn single(databases: usize, database: usize) -> ShardSet {
        let mut set = ShardSet::empty(databases);
        set.insert(database);
        set
    }

    /// Every database of the cluster.
    pub(crate) fn full(databases: usize) -> ShardSet {
        let mut set = ShardSet::empty(databases);
        for database in 0..databases {
            set.insert(database);
        }
        set
    }

    fn words(&self) -> &[u64] {
        match self {
            ShardSet::Small(word) => std::slice::from_ref(word),
            ShardSet::Large(words) => words,
        }
    }

    /// Make room for `len` words (only a set built for another database
    /// count can be shorter than its operand).
    fn words_mut(&mut self, len: usize) -> &mut [u64] {
        if len > 1 {
            if let ShardSet::Small(word) = *self {
                let mut words = vec![0; len];
                words[0] = word;
                *self = ShardSet::Large(words);
            }
        }
        match self {
            ShardSet::Small(word) => std::slice::from_mut(word),
            ShardSet::Large(words) => {
                if words.len() < len {
                    words.resize(len, 0);
                }
                words
            }
        }
    }

    pub(crate) fn insert(&mut self, database: usize) {
        let (word, bit) = (database / BITS, database % BITS);
        if let Some(slot) = self.words_mut(word + 1).get_mut(word) {
            *slot |= 1 << bit;
        }
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, database: usize) -> bool {
        self.words()
            .get(database / BITS)
            .is_some_and(|word| word & (1 << (database % BITS)) != 0)
    }

    pub(crate) fn union_with(&mut self, other: &ShardSet) {
        let theirs = other.words();
        for (mine, theirs) in self.words_mut(theirs.len()).iter_mut().zip(theirs) {
            *mine |= theirs;
        }
    }

    pub(crate) fn intersect_with(&mut self, other: &ShardSet) {
        let theirs = other.words();
        for (i, mine) in self.words_mut(1).iter_mut().enumerate() {
            *mine &= theirs.get(i).copied().unwrap_or(0);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.words().iter().all(|&word| word == 0)
    }

    pub(crate) fn len(&self) -> usize {
        self.words()
            .iter()
            .map(|word| word.count_ones() as usize)
            .sum()
    }

    /// The lowest database in the set.
    pub(crate) fn first(&self) -> Option<usize> {
        self.words()
            .iter()
            .enumerate()
            .find(|(_, &word)| word != 0)
            .map(|(i, word)| i * BITS + word.trailing_zeros() as usize)
    }

    /// The databases in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words().iter().enumerate().flat_map(|(i, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(i * BITS + bit)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ShardSet;

    #[test]
    fn small_sets() {
        let mut a = ShardSet::single(4, 1);
        a.insert(3);
        assert_eq!(a.len(), 2);
        assert_eq!(a.first(), Some(1));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 3]);
        let mut b = ShardSet::single(4, 3);
        b.intersect_with(&a);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![3]);
        b.union_with(&ShardSet::single(4, 0));
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![0, 3]);
        b.intersect_with(&ShardSet::single(4, 2));
        assert!(b.is_empty());
        assert_eq!(b.first(), None);
        assert_eq!(ShardSet::full(4).len(), 4);
        assert!(ShardSet::full(64).contains(63));
    }

    #[test]
    fn large_sets() {
        let mut a = ShardSet::single(200, 130);
        a.insert(5);
        assert!(matches!(a, ShardSet::Large(_)));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![5, 130]);
        assert_eq!(a.first(), Some(5));
        let mut b = ShardSet::single(200, 130);
        b.intersect_with(&a);
        assert_eq!(b.len(), 1);
        assert!(b.contains(130) && !b.contains(5));
        assert_eq!(ShardSet::full(200).len(), 200);
        // A small set grows when it meets a large one.
        let mut c = ShardSet::single(4, 1);
        c.union_with(&a);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![1, 5, 130]);
    }
}
