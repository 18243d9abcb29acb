//! The writes `cross_shard_writes.rs` generates, each a write whose
//! subquery reads across shards, with its constants written as literals
//! (`sql`, the simple protocol) and, for the extended protocol, the same
//! write with some of them (in the write and inside its subqueries) made
//! parameters (`bound`, `params`).

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;
use tokio_postgres::types::{ToSql, Type};

/// A constant of a generated write.
#[derive(Debug, Clone)]
pub enum Param {
    Int8(i64),
    Int4(i32),
    Text(String),
}

impl Param {
    /// As an SQL literal.
    fn literal(&self) -> String {
        match self {
            Param::Int8(v) => v.to_string(),
            Param::Int4(v) => v.to_string(),
            Param::Text(v) => format!("'{}'", v.replace('\'', "''")),
        }
    }

    /// Its value in the text format.
    pub fn text(&self) -> String {
        match self {
            Param::Int8(v) => v.to_string(),
            Param::Int4(v) => v.to_string(),
            Param::Text(v) => v.clone(),
        }
    }

    /// The type Postgres infers for it where the generator puts it.
    pub fn type_(&self) -> Type {
        match self {
            Param::Int8(_) => Type::INT8,
            Param::Int4(_) => Type::INT4,
            Param::Text(_) => Type::TEXT,
        }
    }

    /// Its value for tokio-postgres (binary format).
    pub fn value(&self) -> &(dyn ToSql + Sync) {
        match self {
            Param::Int8(v) => v,
            Param::Int4(v) => v,
            Param::Text(v) => v,
        }
    }
}

/// A generated write.
#[derive(Debug, Clone)]
pub struct Write {
    /// Every constant a literal.
    pub sql: String,
    /// Some constants `$n`.
    pub bound: String,
    /// The values of `bound`'s `$1`, `$2`...
    pub params: Vec<Param>,
}

/// `template` with `{0}`, `{1}`... standing for `args`: literals in
/// `sql`; in `bound`, each a parameter or a literal as `rng` picks.
fn write(rng: &mut Xoshiro256PlusPlus, template: &str, args: Vec<Param>) -> Write {
    let mut sql = template.to_owned();
    let mut bound = template.to_owned();
    let mut params = Vec::new();
    for (i, arg) in args.into_iter().enumerate() {
        let mark = format!("{{{i}}}");
        sql = sql.replace(&mark, &arg.literal());
        if rng.random_range(0..3) == 0 {
            bound = bound.replace(&mark, &arg.literal());
        } else {
            params.push(arg);
            bound = bound.replace(&mark, &format!("${}", params.len()));
        }
    }
    Write { sql, bound, params }
}

/// A generated write whose subquery reads across shards.
pub fn statement(rng: &mut Xoshiro256PlusPlus, ids: &[i64], fresh: i64) -> Write {
    let id = Param::Int8(ids[rng.random_range(0..ids.len())]);
    let other = Param::Int8(ids[rng.random_range(0..ids.len())]);
    let n = rng.random_range(0..=100);
    let score = Param::Int4(n);
    let q = Param::Int4(rng.random_range(1..=10));
    let g = Param::Int4(rng.random_range(0..8));
    let note = ["gift", "rush", "", "fragile", "none"][rng.random_range(0..5)];
    let note = Param::Text(note.to_owned());
    let (template, args) = match rng.random_range(0..23) {
        0 => ("UPDATE users SET active = NOT coalesce(active, false) WHERE id = {0} AND score > (SELECT avg(score) FROM users)".to_owned(), vec![id]),
        1 => ("UPDATE users SET score = (SELECT max(qty) FROM orders WHERE note = {0}) WHERE id = {1}".to_owned(), vec![note, id]),
        2 => ("DELETE FROM orders WHERE qty NOT IN (SELECT grp FROM users WHERE score < {0})".to_owned(), vec![score]),
        3 => ("DELETE FROM orders WHERE qty NOT IN (SELECT grp FROM users WHERE score < {0} AND grp IS NOT NULL)".to_owned(), vec![score]),
        4 => ("UPDATE orders SET note = {0} WHERE user_id = {1} AND qty > ALL (SELECT grp FROM users WHERE score > {2})".to_owned(), vec![Param::Text(format!("n{n}")), id, score]),
        5 => (format!("DELETE FROM users WHERE id = {{0}} AND EXISTS (SELECT 1 FROM orders WHERE price > {n}0 AND note = {{1}})"), vec![id, note]),
        6 => ("UPDATE users SET amount = (SELECT sum(price) FROM orders WHERE qty = {0}) WHERE grp = {1}".to_owned(), vec![q, g]),
        7 => ("UPDATE users SET grp = grp + 1 WHERE score IN (SELECT qty * 10 FROM orders WHERE note = {0})".to_owned(), vec![note]),
        8 => ("DELETE FROM orders WHERE price < (SELECT min(amount) FROM users WHERE grp = {0}) AND qty = {1}".to_owned(), vec![g, q]),
        9 => ("UPDATE users SET name = (SELECT name FROM users WHERE id = {0}) WHERE id = {1}".to_owned(), vec![other, id]),
        10 => ("UPDATE users SET score = (SELECT count(*) FROM orders WHERE qty > {0})::int WHERE id = {1} RETURNING id, score".to_owned(), vec![q, id]),
        11 => ("INSERT INTO users (id, grp, score) VALUES ({0}, {1}, (SELECT count(*) FROM orders WHERE qty = {2})::int)".to_owned(), vec![Param::Int8(fresh), g, q]),
        12 => ("DELETE FROM orders WHERE user_id = {0} AND NOT EXISTS (SELECT 1 FROM users WHERE grp = {1} AND score > {2})".to_owned(), vec![id, g, score]),
        13 => ("UPDATE orders SET qty = qty + 1 WHERE qty = ANY (SELECT grp FROM users WHERE name = 'bob' OR score = {0})".to_owned(), vec![score]),
        // Rows carried: FROM/USING subqueries, WITH queries, row-valued
        // subqueries (empty ones too: a score above 100, no such note).
        14 => ("UPDATE users SET score = s.m FROM (SELECT qty AS g, count(*)::int AS m FROM orders WHERE qty > {0} GROUP BY qty) AS s WHERE users.grp = s.g".to_owned(), vec![q]),
        15 => ("DELETE FROM orders USING (SELECT grp FROM users WHERE score > {0} ORDER BY score DESC, id LIMIT 5) AS top WHERE orders.qty = top.grp".to_owned(), vec![score]),
        16 => ("WITH s AS (SELECT avg(score) AS a FROM users WHERE grp = {0}) UPDATE users SET active = (score > s.a) FROM s WHERE users.id = {1} RETURNING id, active".to_owned(), vec![g, id]),
        17 => ("UPDATE users SET (grp, score) = (SELECT min(qty), max(qty) FROM orders WHERE note = {0}) WHERE id = {1} RETURNING grp, score".to_owned(), vec![note, id]),
        18 => ("DELETE FROM orders WHERE (qty, note) IN (SELECT grp, name FROM users WHERE score < {0})".to_owned(), vec![score]),
        19 => ("UPDATE orders SET note = {0} WHERE (user_id, qty) = (SELECT id, grp FROM users WHERE id = {1})".to_owned(), vec![note, id]),
        20 => ("WITH big AS (SELECT id FROM users WHERE score > {0} ORDER BY score DESC, id LIMIT 4) UPDATE orders SET qty = qty + 1 WHERE user_id IN (SELECT id FROM big)".to_owned(), vec![score]),
        // Joined on the key, which the router places, but limited across
        // shards: carried all the same.
        21 => ("UPDATE users SET grp = {0} FROM (SELECT id FROM users WHERE score > {1} ORDER BY score DESC, id LIMIT 3) AS s WHERE users.id = s.id".to_owned(), vec![g, score]),
        _ => ("UPDATE users SET score = u2.score FROM (SELECT id, score FROM users WHERE grp = {0} ORDER BY id LIMIT 1) AS u2 WHERE users.id = {1} RETURNING users.id, u2.id, users.score".to_owned(), vec![g, id]),
    };
    write(rng, &template, args)
}
