//! [`Allocator`]: the global allocator of the `pgshard` binary and the
//! benches, mimalloc called through its plain entry points wherever the
//! alignment allows (here because it is C bound through FFI, and parser-ffi
//! is the one crate allowed `unsafe`).
//!
//! Why not `mimalloc::MiMalloc`: it sends every allocation to
//! `mi_malloc_aligned`, and mimalloc 3 serves an aligned request from its
//! plain size classes only when the block size is a power of two (or the
//! request is small and the free block happens to be aligned): anything else
//! takes an over-allocating slow path, which costs several times a plain
//! `mi_malloc` and wastes the padding. A parse tree converted to pg_query's
//! structs is such allocations: a `Vec<pb::Node>` of two or more elements is
//! over a kilobyte (a `pb::Node` is 608 bytes) and rarely a power of two.
//!
//! The rule is the one Rust's own `System` allocator applies to `malloc`: an
//! alignment of at most 16 (`MI_MAX_ALIGN_SIZE`, what `mi_malloc` guarantees
//! for blocks of 16 bytes or more) that is no larger than the size (a block
//! smaller than 16 bytes is aligned to its size class, a multiple of 8) is
//! met by `mi_malloc`; any other layout goes to the aligned entry points.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The largest alignment every `mi_malloc` block of at least that size has.
const PLAIN_ALIGN: usize = 16;

/// mimalloc as a global allocator, plain entry points where alignment allows.
pub struct Allocator;

#[inline(always)]
fn plain(align: usize, size: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free`
// frees blocks of both the plain and the aligned entry points). Blocks meet
// the layout's alignment: the aligned entry points by contract, the plain
// ones under `plain()` (see the module documentation). A null return means
// out of memory, as GlobalAlloc requires.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: a plain allocation; nothing else is required.
            unsafe { mi::mi_malloc(layout.size()) }.cast()
        } else {
            // SAFETY: the alignment is a power of two (Layout guarantees it).
            unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()) }.cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: a plain allocation; nothing else is required.
            unsafe { mi::mi_zalloc(layout.size()) }.cast()
        } else {
            // SAFETY: the alignment is a power of two (Layout guarantees it).
            unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()) }.cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (GlobalAlloc's
        // contract), so by mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain(layout.align(), new_size) {
            // SAFETY: `ptr` came from this allocator; the new block needs only
            // the plain alignment (see `plain`), which `mi_realloc` gives.
            unsafe { mi::mi_realloc(ptr.cast::<c_void>(), new_size) }.cast()
        } else {
            // SAFETY: `ptr` came from this allocator; the alignment is a power
            // of two.
            unsafe { mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()) }.cast()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_meet_their_layouts_alignment() {
        let allocator = Allocator;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 12, 16, 24, 40, 48, 608, 1216, 1824, 3040, 70_000] {
                let Ok(layout) = Layout::from_size_align(size, align) else {
                    continue;
                };
                // SAFETY: a non-zero size; the block is freed below.
                let block = unsafe { allocator.alloc(layout) };
                assert!(!block.is_null());
                assert_eq!(block as usize % align, 0, "size {size} align {align}");
                // SAFETY: a block of `layout`, grown and then freed once.
                unsafe {
                    block.write_bytes(0xA5, size);
                    let grown = allocator.realloc(block, layout, size * 3 + 5);
                    assert!(!grown.is_null());
                    assert_eq!(
                        grown as usize % align,
                        0,
                        "realloc size {size} align {align}"
                    );
                    assert_eq!(grown.read(), 0xA5);
                    allocator.dealloc(grown, layout);
                }
                // SAFETY: as above.
                let zeroed = unsafe { allocator.alloc_zeroed(layout) };
                assert_eq!(zeroed as usize % align, 0);
                // SAFETY: `size` bytes of a block of `layout`, freed once.
                unsafe {
                    assert!(std::slice::from_raw_parts(zeroed, size)
                        .iter()
                        .all(|b| *b == 0));
                    allocator.dealloc(zeroed, layout);
                }
            }
        }
    }
}
