//! Spare I/O buffers, kept per thread: an idle client gives its buffers
//! back here and the next busy one on the thread takes them, so idle
//! clients hold no buffers (as PgBouncer's shared packet buffers) and a
//! busy one allocates none.
//!
//! Hand-rolled rather than a pool crate: a thread-local list of at most
//! [`KEEP`] buffers is all it takes, and each worker thread runs its own
//! clients (`conn/worker.rs`), so the list needs no lock.

use std::cell::RefCell;

use bytes::BytesMut;

/// The size of a buffer taken when there is no spare one.
pub const SIZE: usize = 8 * 1024;

/// The most spare buffers a thread keeps (1 MiB at [`SIZE`]).
const KEEP: usize = 128;

/// Buffers larger than this go back to the allocator, not the list (one
/// large result must not leave many large buffers behind).
const KEEP_UP_TO: usize = 64 * 1024;

thread_local! {
    static SPARE: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for at least [`SIZE`] / 2 bytes: a spare
/// one, or a new one of [`SIZE`].
pub fn take() -> BytesMut {
    SPARE
        .with(|spare| spare.borrow_mut().pop())
        .unwrap_or_else(|| BytesMut::with_capacity(SIZE))
}

/// Give `buf` back (its contents are dropped): kept for the next
/// [`take`] when it is a reasonable size and the list is not full.
pub fn give(mut buf: BytesMut) {
    if buf.capacity() < SIZE / 2 || buf.capacity() > KEEP_UP_TO {
        return;
    }
    buf.clear();
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < KEEP {
            spare.push(buf);
        }
    });
}

/// Give back `buf`'s allocation if it holds nothing, leaving an empty
/// buffer without one in its place.
pub fn give_if_empty(buf: &mut BytesMut) {
    if buf.is_empty() && buf.capacity() > 0 {
        give(std::mem::take(buf));
    }
}

/// `buf`, with an allocation again if it was given back.
pub fn ensure(buf: &mut BytesMut) -> &mut BytesMut {
    if buf.capacity() == 0 {
        *buf = take();
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_without_its_contents() {
        let mut buf = take();
        buf.extend_from_slice(b"left over");
        let at = buf.as_ptr();
        give(buf);
        let again = take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), at);
        assert!(again.capacity() >= SIZE / 2);
    }

    #[test]
    fn tiny_and_huge_buffers_are_not_kept() {
        give(BytesMut::with_capacity(16));
        give(BytesMut::with_capacity(KEEP_UP_TO * 2));
        let taken = take();
        assert_eq!(taken.capacity(), SIZE);
    }

    #[test]
    fn give_if_empty_keeps_contents_and_ensure_restores_room() {
        let mut full = BytesMut::from(&b"pending"[..]);
        give_if_empty(&mut full);
        assert_eq!(&full[..], b"pending");
        let mut empty = BytesMut::with_capacity(SIZE);
        give_if_empty(&mut empty);
        assert_eq!(empty.capacity(), 0);
        assert!(ensure(&mut empty).capacity() >= SIZE / 2);
    }
}
