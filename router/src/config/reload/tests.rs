//! RELOAD's placement rule, one case a line: the running and the next
//! config differ in their number of databases and sharding entries.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::config::Config;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";

/// Cluster `prod` with `n` databases and these `[[sharded_tables]]` keys,
/// one entry per item.
fn config(n: usize, entries: &[&str]) -> Config {
    let mut toml = String::new();
    for shard in 0..n {
        toml.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"h{shard}\"\nshard = {shard}\n"
        ));
    }
    for keys in entries {
        toml.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"prod\"\n{keys}\n"
        ));
    }
    Config::from_toml(&toml, USERS).unwrap_or_else(|err| panic!("{err}\n{toml}"))
}

/// A cluster's number of databases and its `[[sharded_tables]]` entries.
type Layout<'a> = (usize, &'a [&'a str]);

/// `Ok` or the error's path and the `shard_count`/`placement` it suggests.
#[track_caller]
fn reload(was: Layout, now: Layout) -> Result<(), String> {
    let running = config(was.0, was.1);
    let next = config(now.0, now.1);
    running.check_reload(&next).map_err(|err| {
        let text = err.to_string();
        let path = text.split(": ").nth(1).unwrap_or_default().to_owned();
        let layout = text.split("entry to keep them where they are: ").nth(1);
        let layout = layout
            .and_then(|rest| rest.split(". ").next())
            .unwrap_or_default();
        format!("{path}: {layout}")
    })
}

const T: &str = "name = \"t\"\ncolumn = \"k\"";
const T12: &str = "name = \"t\"\ncolumn = \"k\"\nshard_count = 12";
const T1: &str = "name = \"t\"\ncolumn = \"k\"\nshard_count = 1";
const F: &str = "name_prefix = \"f_\"\nshard_count = 4";
const T12_PLACED: &str =
    "name = \"t\"\ncolumn = \"k\"\nshard_count = 12\nplacement = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]";
const T12_MOVED: &str =
    "name = \"t\"\ncolumn = \"k\"\nshard_count = 12\nplacement = [0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 0, 1]";

#[test]
fn database_count_changes_with_the_default_placement() {
    let refused = |path: &str, layout: &str| Err(format!("{path}: {layout}"));
    let cases: &[(Layout, Layout, Result<(), String>)] = &[
        // Nothing placed by default changes.
        ((2, &[T]), (2, &[T]), Ok(())),
        ((2, &[T1]), (3, &[T1]), Ok(())),
        // The default shard_count and placement follow the databases.
        (
            (2, &[T]),
            (3, &[T]),
            refused(
                "sharded_tables[0].placement",
                "`shard_count = 2` and `placement = [0, 1]`",
            ),
        ),
        (
            (2, &[T12]),
            (3, &[T12]),
            refused(
                "sharded_tables[0].placement",
                "`shard_count = 12` and `placement = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]`",
            ),
        ),
        // Fewer databases too.
        (
            (3, &[T12]),
            (2, &[T12]),
            refused(
                "sharded_tables[0].placement",
                "`shard_count = 12` and `placement = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]`",
            ),
        ),
        // A table family; the path is the entry's own.
        (
            (2, &[T12_PLACED, F]),
            (3, &[T12_PLACED, F]),
            refused(
                "sharded_tables[1].placement",
                "`shard_count = 4` and `placement = [0, 1, 0, 1]`",
            ),
        ),
        // The layout written into the file, as the error says: accepted.
        ((2, &[T12]), (3, &[T12_PLACED]), Ok(())),
        // A placement written by hand (rows moved by the operator): theirs.
        ((2, &[T12_PLACED]), (3, &[T12_MOVED]), Ok(())),
        // An entry new in this reload placed no rows yet.
        ((2, &[T12_PLACED]), (3, &[T12_PLACED, F]), Ok(())),
    ];
    for (was, now, expected) in cases {
        assert_eq!(reload(*was, *now), *expected, "{was:?} -> {now:?}");
    }
}

#[test]
fn the_refusal_says_what_and_why() {
    let err = config(2, &[T]).check_reload(&config(3, &[T])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pgdog.toml: sharded_tables[0].placement: cluster \"prod\" goes from 2 to 3 \
         databases, and this entry gives no `placement`: its logical shards would move to \
         other databases (shard s to s % 3, with shard_count 3) without their rows. Write \
         the running layout into the entry to keep them where they are: `shard_count = 2` \
         and `placement = [0, 1]`. The running configuration is kept"
    );
}
