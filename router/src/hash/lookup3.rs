//! Bob Jenkins' lookup3 hash exactly as Postgres's `src/common/hashfn.c` runs
//! it: `hash_bytes`, `hash_bytes_extended`, `hash_bytes_uint32` and
//! `hash_bytes_uint32_extended`.
//!
//! Why we roll our own: a key must land on the shard whose Postgres partition
//! or Citus shard range would hold it, so these must match Postgres bit for
//! bit, including its own choices (length folded into the initial state,
//! whole blocks while `>= 12` bytes remain, the low byte of `c` kept for the
//! length, the seeded 64-bit variants). No crate reproduces that variant.
//! Written from the algorithm's description and checked against a real server
//! in `integration/tests/hashing.rs`.

/// Every state starts from this plus the key's length.
const GOLDEN: u32 = 0x9e37_79b9_u32.wrapping_add(3_923_095);

/// lookup3's `mix`: stirs the three state words between blocks.
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// lookup3's `final`: the last avalanche before the result is read.
fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(14));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(11));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(25));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(16));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(4));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(14));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(24));
}

/// The initial state for a key of `len` bytes, with the seed mixed in when
/// there is one (seed 0 gives the unseeded state, as in Postgres).
fn start(len: u32, seed: u64) -> (u32, u32, u32) {
    let init = GOLDEN.wrapping_add(len);
    let (mut a, mut b, mut c) = (init, init, init);
    if seed != 0 {
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    (a, b, c)
}

/// A little-endian word from up to four bytes (missing bytes are zero). The
/// hash is defined by the byte order of the server computing it; Postgres on
/// little-endian machines (x86, arm64) reads words this way.
fn word(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .take(4)
        .enumerate()
        .fold(0, |w, (i, &b)| w | (u32::from(b) << (8 * i)))
}

/// The (b, c) state after hashing `key` with `seed` (0 = unseeded).
fn bytes_state(key: &[u8], seed: u64) -> (u32, u32) {
    // Postgres takes the length as an int; truncating matches its cast.
    let (mut a, mut b, mut c) = start(key.len() as u32, seed);
    let mut blocks = key.chunks_exact(12);
    for block in &mut blocks {
        a = a.wrapping_add(word(&block[0..4]));
        b = b.wrapping_add(word(&block[4..8]));
        c = c.wrapping_add(word(&block[8..12]));
        mix(&mut a, &mut b, &mut c);
    }
    // 0 to 11 bytes are left. The low byte of c is reserved for the length:
    // tail bytes 8..11 go into its upper three bytes.
    let tail = blocks.remainder();
    a = a.wrapping_add(word(tail));
    b = b.wrapping_add(word(tail.get(4..).unwrap_or_default()));
    c = c.wrapping_add(word(tail.get(8..).unwrap_or_default()) << 8);
    final_mix(&mut a, &mut b, &mut c);
    (b, c)
}

fn uint32_state(value: u32, seed: u64) -> (u32, u32) {
    let (mut a, mut b, mut c) = start(4, seed);
    a = a.wrapping_add(value);
    final_mix(&mut a, &mut b, &mut c);
    (b, c)
}

/// `hash_bytes`: the 32-bit unseeded hash of a byte string (`hash_any`,
/// behind `hashtext` and `uuid_hash`).
pub fn hash_bytes(key: &[u8]) -> u32 {
    bytes_state(key, 0).1
}

/// `hash_bytes_extended`: the 64-bit seeded hash of a byte string (behind
/// `hashtextextended` and `uuid_hash_extended`).
pub fn hash_bytes_extended(key: &[u8], seed: u64) -> u64 {
    let (b, c) = bytes_state(key, seed);
    (u64::from(b) << 32) | u64::from(c)
}

/// `hash_bytes_uint32`: `hash_bytes` of a 4-byte value (`hash_uint32`,
/// behind `hashint2`, `hashint4` and `hashint8`).
pub fn hash_bytes_uint32(value: u32) -> u32 {
    uint32_state(value, 0).1
}

/// `hash_bytes_uint32_extended`: the 64-bit seeded hash of a 4-byte value
/// (behind `hashint2extended`, `hashint4extended` and `hashint8extended`).
pub fn hash_bytes_uint32_extended(value: u32, seed: u64) -> u64 {
    let (b, c) = uint32_state(value, seed);
    (u64::from(b) << 32) | u64::from(c)
}
