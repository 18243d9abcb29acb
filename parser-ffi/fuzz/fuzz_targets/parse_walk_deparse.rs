//! Fuzz target: any UTF-8 input through parse, the zero-copy walk, the protobuf
//! conversion and deparse. Errors are fine; crashes, hangs and sanitizer
//! reports are not. Run: `cd parser-ffi/fuzz && cargo +nightly fuzz run parse_walk_deparse`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use parser_ffi::{deparse, to_protobuf, view, ParseTree};

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else { return };
    let Ok(tree) = ParseTree::parse(sql) else { return };
    let mut nodes = 0usize;
    for stmt in tree.statements() {
        if let Some(root) = stmt.stmt() {
            view::walk(root, |kind| {
                nodes += 1;
                if let view::NodeRef::AConst(c) = kind {
                    let _ = c.val();
                }
                view::Walk::Continue
            });
        }
    }
    if let Ok(protobuf) = to_protobuf(&tree) {
        // The protobuf structs go back to C nodes and through the deparser too.
        let _ = parser_ffi::deparse_protobuf(&protobuf);
    }
    // Deparsed SQL need not parse again: libpg_query's deparser writes some
    // trees it accepts as text that does not (`$0` comes back as `?`).
    if let Ok(sql) = deparse(&tree) {
        let _ = ParseTree::parse(&sql);
    }
    let _ = nodes;
});
