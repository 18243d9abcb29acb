//! The TPC-H data generator: every table's rows as COPY text, from a seed
//! and a scale factor, following the spec's column domains (clause 4.2.3)
//! so that every validation parameter of the 22 queries has rows to
//! select: dates from 1992-01-01, order dates up to 1998-08-02, ship date
//! = order date + 1..121 days, commit + 30..90, receipt = ship + 1..30,
//! return flag and line status from the spec's current date 1995-06-17,
//! order status from its lines, total price from its lines, sparse order
//! keys (8 of every 32), no orders for customers whose key is a multiple
//! of 3, 4 suppliers per part by the spec's formula, `c_phone`'s prefix
//! the nation key + 10, part names of 5 colours, the spec's types,
//! containers, brands, segments, priorities, ship modes and instructions,
//! comments cut from a text pool of the spec's words (so some hold
//! "special ... requests"), and some suppliers' comments "Customer ...
//! Complaints" / "Customer ... Recommends" (at least one each: the spec's
//! SF * 5 is less than one at small scales).

use std::collections::BTreeSet;

use super::text::{self, comment, days, money, Rng};

/// The spec's dates, as days since 1970-01-01.
const START: i64 = days(1992, 1, 1);
const CURRENT: i64 = days(1995, 6, 17);
const END: i64 = days(1998, 12, 31);

/// Generated rows: each table's COPY text (tab-separated, one row a line).
#[derive(Debug, Clone)]
pub struct Data {
    pub scale: f64,
    pub seed: u64,
    /// (table, COPY text), in the schema's load order.
    pub tables: Vec<(&'static str, String)>,
}

impl Data {
    /// The COPY text of `table` (empty for an unknown name).
    pub fn copy_text(&self, table: &str) -> &str {
        self.tables
            .iter()
            .find(|(name, _)| *name == table)
            .map(|(_, text)| text.as_str())
            .unwrap_or("")
    }

    /// Rows of `table`.
    pub fn rows(&self, table: &str) -> usize {
        self.copy_text(table).lines().count()
    }
}

/// Row counts at a scale factor.
#[derive(Debug, Clone, Copy)]
struct Counts {
    parts: i64,
    suppliers: i64,
    customers: i64,
    orders: i64,
    clerks: i64,
}

impl Counts {
    fn at(scale: f64) -> Counts {
        let n = |base: f64| ((base * scale).round() as i64).max(1);
        Counts {
            parts: n(200_000.0),
            suppliers: n(10_000.0),
            customers: n(150_000.0),
            orders: n(1_500_000.0),
            clerks: n(1_000.0),
        }
    }
}

/// Every table at `scale` (1.0 is the spec's SF 1: 6 million lines) from
/// `seed`: the same rows for the same two numbers.
pub fn generate(scale: f64, seed: u64) -> Data {
    let counts = Counts::at(scale);
    let pool = text::text_pool(&mut Rng::new(seed, 0), 1 << 20);
    let (orders, lineitem) = orders_and_lines(seed, counts, &pool);
    let tables = vec![
        ("region", region(seed, &pool)),
        ("nation", nation(seed, &pool)),
        ("part", part(seed, counts, &pool)),
        ("supplier", supplier(seed, counts, &pool)),
        ("partsupp", partsupp(seed, counts, &pool)),
        ("customer", customer(seed, counts, &pool)),
        ("orders", orders),
        ("lineitem", lineitem),
    ];
    Data {
        scale,
        seed,
        tables,
    }
}

fn line(out: &mut String, fields: &[&str]) {
    out.push_str(&fields.join("\t"));
    out.push('\n');
}

fn region(seed: u64, pool: &str) -> String {
    let mut rng = Rng::new(seed, 1);
    let mut out = String::new();
    for (key, name) in text::REGIONS.iter().enumerate() {
        let note = comment(&mut rng, pool, 31, 115);
        line(&mut out, &[&key.to_string(), name, &note]);
    }
    out
}

fn nation(seed: u64, pool: &str) -> String {
    let mut rng = Rng::new(seed, 2);
    let mut out = String::new();
    for (key, name, region) in text::NATIONS {
        let note = comment(&mut rng, pool, 31, 114);
        line(
            &mut out,
            &[&key.to_string(), name, &region.to_string(), &note],
        );
    }
    out
}

/// The spec's retail price of a part, in cents.
fn retail_cents(partkey: i64) -> i64 {
    90_000 + (partkey / 10) % 20_001 + 100 * (partkey % 1_000)
}

/// Supplier `i` (0..4) of a part, by the spec's formula.
fn supplier_of(partkey: i64, i: i64, suppliers: i64) -> i64 {
    (partkey + i * (suppliers / 4 + (partkey - 1) / suppliers)) % suppliers + 1
}

fn part(seed: u64, counts: Counts, pool: &str) -> String {
    let mut rng = Rng::new(seed, 3);
    let mut out = String::new();
    for key in 1..=counts.parts {
        let mut words: Vec<&str> = Vec::with_capacity(5);
        while words.len() < 5 {
            let word = rng.pick(text::COLORS);
            if !words.contains(&word) {
                words.push(word);
            }
        }
        let mfgr = rng.int(1, 5);
        let brand = format!("Brand#{mfgr}{}", rng.int(1, 5));
        let kind = format!(
            "{} {} {}",
            rng.pick(text::TYPE_1),
            rng.pick(text::TYPE_2),
            rng.pick(text::TYPE_3)
        );
        let size = rng.int(1, 50);
        let container = format!(
            "{} {}",
            rng.pick(text::CONTAINER_1),
            rng.pick(text::CONTAINER_2)
        );
        let note = comment(&mut rng, pool, 5, 22);
        line(
            &mut out,
            &[
                &key.to_string(),
                &words.join(" "),
                &format!("Manufacturer#{mfgr}"),
                &brand,
                &kind,
                &size.to_string(),
                &container,
                &money(retail_cents(key)),
                &note,
            ],
        );
    }
    out
}

/// Suppliers whose comment gets "Customer ... Complaints" and those that
/// get "Customer ... Recommends": SF * 5 of each, at least one, disjoint.
fn marked_suppliers(rng: &mut Rng, suppliers: i64) -> (BTreeSet<i64>, BTreeSet<i64>) {
    let each = ((suppliers + 1_999) / 2_000).max(1).min(suppliers / 2);
    let (mut complaints, mut recommends) = (BTreeSet::new(), BTreeSet::new());
    while (complaints.len() as i64) < each {
        complaints.insert(rng.int(1, suppliers));
    }
    while (recommends.len() as i64) < each {
        let key = rng.int(1, suppliers);
        if !complaints.contains(&key) {
            recommends.insert(key);
        }
    }
    (complaints, recommends)
}

fn supplier(seed: u64, counts: Counts, pool: &str) -> String {
    let mut rng = Rng::new(seed, 4);
    let (complaints, recommends) = marked_suppliers(&mut rng, counts.suppliers);
    let mut out = String::new();
    for key in 1..=counts.suppliers {
        let address = rng.vstring(10, 40);
        let nation = rng.int(0, 24);
        let phone = rng.phone(nation);
        let balance = money(rng.int(-99_999, 999_999));
        let mut note = comment(&mut rng, pool, 25, 100);
        let marker = match (complaints.contains(&key), recommends.contains(&key)) {
            (true, _) => Some("Complaints"),
            (_, true) => Some("Recommends"),
            _ => None,
        };
        if let Some(marker) = marker {
            let before = comment(&mut rng, pool, 10, 30);
            let between = comment(&mut rng, pool, 5, 20);
            note = format!("{before} Customer {between} {marker}");
        }
        line(
            &mut out,
            &[
                &key.to_string(),
                &format!("Supplier#{key:09}"),
                &address,
                &nation.to_string(),
                &phone,
                &balance,
                &note,
            ],
        );
    }
    out
}

fn partsupp(seed: u64, counts: Counts, pool: &str) -> String {
    let mut rng = Rng::new(seed, 5);
    let mut out = String::new();
    for part in 1..=counts.parts {
        for i in 0..4 {
            let supplier = supplier_of(part, i, counts.suppliers);
            let available = rng.int(1, 9_999);
            let cost = money(rng.int(100, 100_000));
            let note = comment(&mut rng, pool, 49, 198);
            line(
                &mut out,
                &[
                    &part.to_string(),
                    &supplier.to_string(),
                    &available.to_string(),
                    &cost,
                    &note,
                ],
            );
        }
    }
    out
}

fn customer(seed: u64, counts: Counts, pool: &str) -> String {
    let mut rng = Rng::new(seed, 6);
    let mut out = String::new();
    for key in 1..=counts.customers {
        let address = rng.vstring(10, 40);
        let nation = rng.int(0, 24);
        let phone = rng.phone(nation);
        let balance = money(rng.int(-99_999, 999_999));
        let segment = rng.pick(text::SEGMENTS);
        let note = comment(&mut rng, pool, 29, 116);
        line(
            &mut out,
            &[
                &key.to_string(),
                &format!("Customer#{key:09}"),
                &address,
                &nation.to_string(),
                &phone,
                &balance,
                segment,
                &note,
            ],
        );
    }
    out
}

/// The spec's sparse order keys: the first 8 of every 32.
fn order_key(index: i64) -> i64 {
    ((index >> 3) << 5) | (index & 7)
}

fn orders_and_lines(seed: u64, counts: Counts, pool: &str) -> (String, String) {
    let mut rng = Rng::new(seed, 7);
    let (mut orders, mut lines) = (String::new(), String::new());
    for index in 1..=counts.orders {
        let key = order_key(index);
        let mut customer = rng.int(1, counts.customers);
        while customer % 3 == 0 {
            customer = rng.int(1, counts.customers);
        }
        let ordered = rng.int(START, END - 151);
        let (total, status) = order_lines(&mut rng, counts, pool, (key, ordered), &mut lines);
        let priority = rng.pick(text::PRIORITIES);
        let clerk = format!("Clerk#{:09}", rng.int(1, counts.clerks));
        let note = comment(&mut rng, pool, 19, 78);
        line(
            &mut orders,
            &[
                &key.to_string(),
                &customer.to_string(),
                status,
                &money(total),
                &text::date(ordered),
                priority,
                &clerk,
                "0",
                &note,
            ],
        );
    }
    (orders, lines)
}

/// An order's 1..7 lines into `out`; its total price in cents (the spec's
/// sum of extended price x (1 + tax) x (1 - discount), in whole cents per
/// line) and its status (F: every line shipped, O: none, else P).
fn order_lines(
    rng: &mut Rng,
    counts: Counts,
    pool: &str,
    (key, ordered): (i64, i64),
    out: &mut String,
) -> (i64, &'static str) {
    let (mut total, mut shipped, mut open) = (0i64, 0, 0);
    let lines = rng.int(1, 7);
    for number in 1..=lines {
        let part = rng.int(1, counts.parts);
        let supplier = supplier_of(part, rng.int(0, 3), counts.suppliers);
        let quantity = rng.int(1, 50);
        let extended = quantity * retail_cents(part);
        let (discount, tax) = (rng.int(0, 10), rng.int(0, 8));
        let ship = ordered + rng.int(1, 121);
        let commit = ordered + rng.int(30, 90);
        let receipt = ship + rng.int(1, 30);
        let flag = match receipt <= CURRENT {
            true if rng.int(0, 1) == 0 => "R",
            true => "A",
            false => "N",
        };
        let status = if ship > CURRENT { "O" } else { "F" };
        match status {
            "O" => open += 1,
            _ => shipped += 1,
        }
        total += extended * (100 - discount) / 100 * (100 + tax) / 100;
        let instruct = rng.pick(text::INSTRUCTIONS);
        let mode = rng.pick(text::MODES);
        let note = comment(rng, pool, 10, 43);
        line(
            out,
            &[
                &key.to_string(),
                &part.to_string(),
                &supplier.to_string(),
                &number.to_string(),
                &quantity.to_string(),
                &money(extended),
                &money(discount),
                &money(tax),
                flag,
                status,
                &text::date(ship),
                &text::date(commit),
                &text::date(receipt),
                instruct,
                mode,
                &note,
            ],
        );
    }
    let status = match (shipped, open) {
        (_, 0) => "F",
        (0, _) => "O",
        _ => "P",
    };
    (total, status)
}

#[cfg(test)]
mod tests;
