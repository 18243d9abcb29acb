//! Shared support of the property (fuzz) tests (issue 35): the run's case
//! count (short in `cargo test`, `PROPTEST_CASES=n` for a long run) and the
//! mutations thrown at valid input (bit flips, byte writes, truncations,
//! insertions, deletions, splices, hostile 32-bit lengths). Test-only,
//! included by path: router's and proxy's unit tests, router's
//! `tests/fuzz_sql.rs`, integration's `tests/fuzz_clients.rs`.

use proptest::prelude::*;
use proptest::test_runner::Config;

/// The config of one fuzz target: `cases` per `cargo test` run unless
/// `PROPTEST_CASES` says otherwise (the long run: see README's "Fuzzing").
/// Failures are not persisted to files: each defect found is kept as a
/// named regression test instead.
pub fn config(cases: u32) -> Config {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}

/// Lengths that break decoders which trust them: zero, below a header,
/// the largest values a signed or unsigned 16- or 32-bit field holds, and
/// the 1 GiB limits Postgres uses.
pub const HOSTILE_LENGTHS: [u32; 12] = [
    0,
    1,
    3,
    4,
    5,
    0x7fff,
    0xffff,
    0x3fff_ffff,
    0x4000_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

/// One change to a byte string; positions are taken modulo its length.
#[derive(Debug, Clone)]
pub enum Mutation {
    Flip(usize, u8),
    Set(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    /// Copy the bytes at `.1..` (a slice of the input itself) to `.0`.
    Splice(usize, usize, usize),
    /// Overwrite four bytes at `.0` with a hostile length (big-endian).
    Length(usize, u32),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0..8u8).prop_map(|(at, bit)| Mutation::Flip(at, 1 << bit)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Set(at, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        (any::<usize>(), 1..16usize).prop_map(|(at, n)| Mutation::Remove(at, n)),
        (any::<usize>(), any::<usize>(), 1..32usize)
            .prop_map(|(to, from, n)| Mutation::Splice(to, from, n)),
        (any::<usize>(), prop::sample::select(&HOSTILE_LENGTHS[..]))
            .prop_map(|(at, len)| Mutation::Length(at, len)),
    ]
}

/// Apply `mutations` to `bytes`, in order.
pub fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        let len = bytes.len();
        let at = |i: usize| if len == 0 { 0 } else { i % len };
        match mutation {
            Mutation::Flip(i, mask) if len > 0 => bytes[at(*i)] ^= mask,
            Mutation::Set(i, b) if len > 0 => bytes[at(*i)] = *b,
            Mutation::Truncate(i) => bytes.truncate(at(*i)),
            Mutation::Insert(i, new) => {
                let i = at(*i);
                bytes.splice(i..i, new.iter().copied());
            }
            Mutation::Remove(i, n) => {
                let i = at(*i);
                bytes.drain(i..(i + n).min(len));
            }
            Mutation::Splice(to, from, n) if len > 0 => {
                let from = at(*from);
                let piece: Vec<u8> = bytes[from..(from + n).min(len)].to_vec();
                let to = at(*to);
                bytes.splice(to..to, piece);
            }
            Mutation::Length(i, value) if len >= 4 => {
                let i = at(*i).min(len - 4);
                bytes[i..i + 4].copy_from_slice(&value.to_be_bytes());
            }
            _ => {}
        }
    }
    bytes
}

/// Valid input from `seeds`, then up to `most` mutations of it.
pub fn mutated(
    seeds: impl Strategy<Value = Vec<u8>>,
    most: usize,
) -> impl Strategy<Value = Vec<u8>> {
    (seeds, prop::collection::vec(mutation(), 0..=most))
        .prop_map(|(seed, mutations)| apply(seed, &mutations))
}

/// Sizes to cut a byte stream into (each 1 or more), so decoders see
/// every split of a message across reads.
pub fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1..64usize, 1..8)
}

/// `bytes` cut into pieces of the sizes in `sizes`, cycled.
pub fn cut<'a>(bytes: &'a [u8], sizes: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut at = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        if at >= bytes.len() {
            return None;
        }
        let size = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .max(1);
        i += 1;
        let piece = &bytes[at..(at + size).min(bytes.len())];
        at += piece.len();
        Some(piece)
    })
}
