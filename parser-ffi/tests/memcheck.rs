//! The corpus and hostile inputs through every entry point under valgrind:
//! no leaks (definite or indirect) and no invalid reads or writes.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn corpus_under_valgrind_has_no_leaks_or_invalid_accesses() {
    let valgrind = Command::new("valgrind").arg("--version").output();
    assert!(
        valgrind.is_ok_and(|o| o.status.success()),
        "valgrind not found: install it with `apt-get install -y valgrind` (scripts/setup.sh does)"
    );
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let output = Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect",
            "--errors-for-leak-kinds=definite,indirect",
            "--error-exitcode=99",
        ])
        .arg(env!("CARGO_BIN_EXE_parser-memcheck"))
        .arg(corpus)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "valgrind found problems:\n{report}\n{stdout}"
    );
    assert!(report.contains("ERROR SUMMARY: 0 errors"), "{report}");
    assert!(stdout.contains("exercised"), "{stdout}");
}
