//! Seeded writes that read across shards, for the differential test: each
//! carries one of the generator's SELECTs as a subquery (a scalar count of
//! its rows, an EXISTS, a RETURNING list beside it) into an UPDATE, DELETE
//! or INSERT ... VALUES that is keyed (one shard), keyless (every shard) or
//! on the omnisharded table, so that the subquery is run first across
//! shards (streamed or finished on the coordinator) and its result carried
//! into the write (issue 34). The write's own values are marked as the
//! generator marks its literals, so the prepared forms make them
//! parameters too.

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};

use super::generator::{mark, Case};

/// The orders a write inserts have ids above this (the generated ones are
/// below), so that `strings::TABLES` reads every row the writes touch.
const FIRST_ORDER: i64 = 2_000_000;

pub struct Writes {
    rng: Xoshiro256PlusPlus,
    ids: Vec<i64>,
    order: i64,
}

impl Writes {
    pub fn new(seed: u64, ids: Vec<i64>) -> Writes {
        Writes {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5752_4954_4553),
            ids,
            order: FIRST_ORDER,
        }
    }

    /// A write carrying `select` (the generator's, its literals still
    /// marked) as a subquery; never ordered (RETURNING rows compare as a
    /// multiset).
    pub fn next(&mut self, select: &Case) -> Case {
        let q = select.marked();
        let id = mark(self.ids.choose(&mut self.rng).copied().unwrap_or(1));
        let grp = mark(self.rng.random_range(0..6));
        let count = format!("(SELECT count(*) FROM ({q}) AS carried)");
        let sql = match self.rng.random_range(0..100) {
            // Keyed: one shard's row, the count from every shard.
            0..=19 => format!(
                "UPDATE users SET score = coalesce(score, 0) + {count} % 5 WHERE id = {id}"
            ),
            20..=29 => format!(
                "UPDATE users SET score = {count} WHERE id = {id} RETURNING id, score, name"
            ),
            // Keyless: every shard's rows of a group.
            30..=44 => format!(
                "UPDATE users SET active = NOT coalesce(active, false) WHERE grp = {grp} AND EXISTS ({q})"
            ),
            45..=54 => format!(
                "UPDATE users SET score = coalesce(score, 0) - 1 WHERE grp = {grp} AND score < {count} RETURNING id, score"
            ),
            // An insert whose value is the count, and deletes of them.
            55..=69 => {
                self.order += 1;
                format!(
                    "INSERT INTO orders (user_id, id, qty, price, note) VALUES ({id}, {}, {count}, 1.50, 'carried') RETURNING id, qty",
                    mark(self.order)
                )
            }
            70..=79 => format!(
                "DELETE FROM orders WHERE id > {FIRST_ORDER} AND qty >= {count} % 4 AND NOT EXISTS ({q})"
            ),
            // The omnisharded table: every copy gets the same value.
            _ => format!(
                "UPDATE teams SET weight = coalesce(weight, 0) + {count} % 3 WHERE grp = {grp}"
            ),
        };
        Case::new(select.category, sql, false)
    }
}
