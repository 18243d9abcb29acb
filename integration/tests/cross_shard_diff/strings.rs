//! Query strings of several statements for the differential test: seeded
//! mixes of keyed writes (each on its key's shard), keyless writes, writes
//! to the omnisharded table, the generator's SELECTs and the odd failing
//! statement (a duplicate key, a division by zero), some inside `BEGIN ...
//! COMMIT` or `ROLLBACK`; and the form their replies are compared in
//! ([`shape`]): every message in order, the rows of each result as a
//! multiset, errors by SQLSTATE, the ReadyForQuery's status.

use bytes::Bytes;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};

use super::generator::Generator;

/// The seeded strings.
pub struct Strings {
    rng: Xoshiro256PlusPlus,
    ids: Vec<i64>,
    /// The last order id a string inserted (above the generated ones).
    order: i64,
}

/// What the written tables hold, read the same way on both servers after
/// every string.
pub const TABLES: &[&str] = &[
    "SELECT id, score, active, name FROM users ORDER BY id",
    "SELECT user_id, id, qty FROM orders WHERE id > 1000000 ORDER BY user_id, id",
    "SELECT grp, weight FROM teams ORDER BY grp",
];

impl Strings {
    pub fn new(seed: u64, ids: Vec<i64>) -> Strings {
        Strings {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5354_5249_4e47),
            ids,
            order: 1_000_000,
        }
    }

    /// The next string: 2 to 4 statements, sometimes in a block.
    pub fn next(&mut self, generator: &mut Generator) -> String {
        let n = self.rng.random_range(2..=4);
        let mut statements: Vec<String> = (0..n).map(|_| self.statement(generator)).collect();
        match self.rng.random_range(0..10) {
            0 | 1 => {
                statements.insert(0, "BEGIN".to_owned());
                statements.push("COMMIT".to_owned());
            }
            2 => {
                statements.insert(0, "BEGIN".to_owned());
                statements.push("ROLLBACK".to_owned());
            }
            _ => {}
        }
        statements.join("; ")
    }

    fn statement(&mut self, generator: &mut Generator) -> String {
        let id = self.ids.choose(&mut self.rng).copied().unwrap_or(1);
        let small = self.rng.random_range(1..9);
        let grp = self.rng.random_range(0..6);
        match self.rng.random_range(0..100) {
            0..=21 => {
                format!("UPDATE users SET score = coalesce(score, 0) + {small} WHERE id = {id}")
            }
            22..=41 => {
                self.order += 1;
                format!(
                    "INSERT INTO orders (user_id, id, qty, price, note) VALUES ({id}, {}, {small}, 1.50, 'string')",
                    self.order
                )
            }
            42..=49 => format!("DELETE FROM orders WHERE user_id = {id} AND id > 1000000"),
            50..=57 => {
                format!("UPDATE users SET active = NOT coalesce(active, false) WHERE grp = {grp}")
            }
            58..=63 => {
                format!("UPDATE teams SET weight = coalesce(weight, 0) + 1 WHERE grp = {grp}")
            }
            // Fails: the id exists (nearly always).
            64..=66 => format!("INSERT INTO users (id, name) VALUES ({id}, 'dup')"),
            67..=68 => "SELECT 1/0".to_owned(),
            _ => loop {
                let case = generator.next_case();
                if case.setup.is_none() {
                    break case.sql;
                }
            },
        }
    }
}

/// `replies` as compared: one line per message (ParameterStatus and
/// notices left out), a RowDescription's names and type OIDs, DataRows
/// sorted within their result, an error's SQLSTATE only (constraint names
/// differ: the shards' tables are partitioned), the transaction status.
pub fn shape(replies: &[(u8, Bytes)]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rows: Vec<String> = Vec::new();
    for (tag, body) in replies {
        if *tag != b'D' && !rows.is_empty() {
            rows.sort();
            lines.append(&mut rows);
        }
        let line = match tag {
            b'T' => format!("T {}", columns(body).join(",")),
            b'D' => {
                rows.push(format!(
                    "D {:?}",
                    crate::common::wire::data_rows(&[(b'D', body.clone())])[0]
                ));
                continue;
            }
            b'C' => format!(
                "C {}",
                String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(body))
            ),
            b'E' => format!(
                "E {}",
                crate::common::wire::sqlstate(body).unwrap_or_default()
            ),
            b'Z' => format!("Z {}", char::from(body.first().copied().unwrap_or(b'?'))),
            b'S' | b'N' => continue,
            other => char::from(*other).to_string(),
        };
        lines.push(line);
    }
    rows.sort();
    lines.append(&mut rows);
    lines
}

/// A RowDescription's columns as `name:type_oid`.
fn columns(body: &[u8]) -> Vec<String> {
    let count = u16::from_be_bytes([body[0], body[1]]);
    let mut at = 2;
    let mut columns = Vec::new();
    for _ in 0..count {
        let end = at + body[at..].iter().position(|&b| b == 0).unwrap_or(0);
        let name = String::from_utf8_lossy(&body[at..end]);
        let oid = &body[end + 7..end + 11];
        let oid = u32::from_be_bytes([oid[0], oid[1], oid[2], oid[3]]);
        columns.push(format!("{name}:{oid}"));
        at = end + 1 + 18;
    }
    columns
}

/// pgshard refused the string (0A000 somewhere in its replies).
pub fn refused(shape: &[String]) -> bool {
    shape.iter().any(|line| line == "E 0A000")
}
