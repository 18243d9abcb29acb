//! The generator's domains, one check per rule of the module doc.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::super::text::{self, date, days, money, Rng};
use super::{generate, order_key, supplier_of, Counts};

#[test]
fn same_seed_same_rows_other_seed_other_rows() {
    let (a, b, c) = (generate(0.002, 7), generate(0.002, 7), generate(0.002, 8));
    assert_eq!(a.tables, b.tables);
    assert_ne!(a.copy_text("lineitem"), c.copy_text("lineitem"));
}

#[test]
fn counts_at_scale_one_hundredth() {
    let data = generate(0.01, 1);
    let counts = [
        ("region", 5),
        ("nation", 25),
        ("part", 2_000),
        ("supplier", 100),
        ("partsupp", 8_000),
        ("customer", 1_500),
        ("orders", 15_000),
    ];
    for (table, rows) in counts {
        assert_eq!(data.rows(table), rows, "{table}");
    }
    let lines = data.rows("lineitem");
    assert!((55_000..65_000).contains(&lines), "{lines} lines");
}

#[test]
fn word_lists_are_the_specs() {
    assert_eq!(text::COLORS.len(), 92);
    assert_eq!(text::NATIONS.len(), 25);
    assert_eq!(
        text::TYPE_1.len() * text::TYPE_2.len() * text::TYPE_3.len(),
        150
    );
}

#[test]
fn dates_and_money() {
    for (d, s) in [
        (days(1992, 1, 1), "1992-01-01"),
        (days(1998, 8, 2), "1998-08-02"),
    ] {
        assert_eq!(date(d), s);
    }
    assert_eq!(days(1998, 12, 31) - 151, days(1998, 8, 2));
    assert_eq!(days(1970, 1, 1), 0);
    assert_eq!(date(days(1996, 2, 29) + 1), "1996-03-01");
    assert_eq!(money(-99_999), "-999.99");
    assert_eq!(money(5), "0.05");
    assert_eq!(money(100_000), "1000.00");
}

#[test]
fn sparse_keys_and_four_suppliers_per_part() {
    assert_eq!(
        (1..=9).map(order_key).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6, 7, 32, 33]
    );
    for scale in [0.01, 0.05, 0.1] {
        let counts = Counts::at(scale);
        for part in 1..=counts.parts {
            let mut of: Vec<i64> = (0..4)
                .map(|i| supplier_of(part, i, counts.suppliers))
                .collect();
            of.sort();
            of.dedup();
            assert_eq!(of.len(), 4, "part {part} at {scale}");
            assert!(of.iter().all(|s| (1..=counts.suppliers).contains(s)));
        }
    }
}

fn fields(data: &super::Data, table: &str) -> Vec<Vec<String>> {
    data.copy_text(table)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn rows_follow_the_domains() {
    let data = generate(0.01, 1);
    for row in fields(&data, "lineitem") {
        let (ship, commit, receipt) = (&row[10], &row[11], &row[12]);
        assert!(receipt > ship && ship.as_str() >= "1992-01-02", "{row:?}");
        assert!(commit.as_str() <= "1998-10-31", "{row:?}");
        let flag_ok = match receipt.as_str() <= "1995-06-17" {
            true => row[8] == "R" || row[8] == "A",
            false => row[8] == "N",
        };
        assert!(flag_ok, "{row:?}");
        assert_eq!(row[9] == "O", ship.as_str() > "1995-06-17", "{row:?}");
    }
    for row in fields(&data, "orders") {
        assert!(row[1].parse::<i64>().unwrap() % 3 != 0, "{row:?}");
        assert!(row[4].as_str() <= "1998-08-02" && row[4].as_str() >= "1992-01-01");
    }
    for row in fields(&data, "customer") {
        let nation: i64 = row[3].parse().unwrap();
        assert!(row[4].starts_with(&format!("{}-", nation + 10)), "{row:?}");
    }
    let suppliers = data.copy_text("supplier");
    assert!(suppliers.contains("Customer") && suppliers.contains("Complaints"));
    assert!(data.copy_text("orders").contains("special"));
    assert!(data.copy_text("part").contains("forest"));
    let mut rng = Rng::new(1, 99);
    assert!((0..1000).all(|_| (3..=5).contains(&rng.int(3, 5))));
}
