//! The gather planner over TPC-H's queries (Postgres syntax, the spec's
//! validation parameters), in layout A (`lineitem` and `orders` sharded by
//! order key, the rest omnisharded) and B (`customer` sharded too): every
//! query plans, every shard SELECT deparses back to itself, the CREATE and
//! the finish parse, and the finish names as many temp tables as the
//! statement has gathered tables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::{plan, GatherOptions};
use crate::catalog::{Catalog, CatalogRow, Table};
use crate::config::Config;
use crate::sharding::Sharding;

const COLUMNS: &[(&str, &str)] = &[
    ("lineitem", "l_orderkey l_partkey l_suppkey l_linenumber l_quantity l_extendedprice l_discount l_tax l_returnflag l_linestatus l_shipdate l_commitdate l_receiptdate l_shipinstruct l_shipmode l_comment"),
    ("orders", "o_orderkey o_custkey o_orderstatus o_totalprice o_orderdate o_orderpriority o_clerk o_shippriority o_comment"),
    ("customer", "c_custkey c_name c_address c_nationkey c_phone c_acctbal c_mktsegment c_comment"),
    ("part", "p_partkey p_name p_mfgr p_brand p_type p_size p_container p_retailprice p_comment"),
    ("partsupp", "ps_partkey ps_suppkey ps_availqty ps_supplycost ps_comment"),
    ("supplier", "s_suppkey s_name s_address s_nationkey s_phone s_acctbal s_comment"),
    ("nation", "n_nationkey n_name n_regionkey n_comment"),
    ("region", "r_regionkey r_name r_comment"),
];

/// Layout A, or B with `customer` sharded by `c_custkey`.
fn layout(customer_sharded: bool) -> Sharding {
    let mut toml = String::new();
    for shard in 0..2 {
        toml.push_str(&format!(
            "[[databases]]\nname = \"t\"\nhost = \"127.0.0.1\"\ndatabase_name = \"db{shard}\"\nshard = {shard}\n"
        ));
    }
    let mut sharded = vec![("lineitem", "l_orderkey"), ("orders", "o_orderkey")];
    let mut copies = vec!["part", "partsupp", "supplier", "nation", "region"];
    match customer_sharded {
        true => sharded.push(("customer", "c_custkey")),
        false => copies.push("customer"),
    }
    for (name, column) in sharded {
        toml.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"t\"\nname = \"{name}\"\ncolumn = \"{column}\"\ndata_type = \"bigint\"\n"
        ));
    }
    toml.push_str(&format!(
        "[[omnisharded_tables]]\ndatabase = \"t\"\ntables = {copies:?}\n"
    ));
    let users = "[[users]]\nname = \"app\"\ndatabase = \"t\"\npassword = \"pw\"\n";
    let config = Config::from_toml(&toml, users).expect("the TPC-H config loads");
    let mut sharding = Sharding::clone(&config.clusters["t"].sharding);
    let rows = COLUMNS.iter().map(|(name, columns)| {
        CatalogRow::Table(Table {
            schema: "public".into(),
            name: (*name).into(),
            columns: columns.split(' ').map(str::to_owned).collect(),
            primary_key: Vec::new(),
        })
    });
    sharding.catalog = Some(Arc::new(Catalog::from_rows(rows)));
    sharding
}

const QUERIES: &[(u32, &str)] = &[
    (1, "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus"),
    (3, "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority from customer, orders, lineitem where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15' group by l_orderkey, o_orderdate, o_shippriority order by revenue desc, o_orderdate limit 10"),
    (4, "select o_orderpriority, count(*) as order_count from orders where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-07-01' + interval '3' month and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate) group by o_orderpriority order by o_orderpriority"),
    (6, "select sum(l_extendedprice * l_discount) as revenue from lineitem where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24"),
    (8, "select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share from (select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation from part, supplier, lineitem, orders, customer, nation n1, nation n2, region where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey and o_custkey = c_custkey and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey and r_name = 'AMERICA' and s_nationkey = n2.n_nationkey and o_orderdate between date '1995-01-01' and date '1996-12-31' and p_type = 'ECONOMY ANODIZED STEEL') as all_nations group by o_year order by o_year"),
    (10, "select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name, c_address, c_phone, c_comment from customer, orders, lineitem, nation where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01' and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R' and c_nationkey = n_nationkey group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment order by revenue desc limit 20"),
    (12, "select l_shipmode, sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count, sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count from orders, lineitem where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01' and l_receiptdate < date '1994-01-01' + interval '1' year group by l_shipmode order by l_shipmode"),
    (13, "select c_count, count(*) as custdist from (select c_custkey, count(o_orderkey) from customer left outer join orders on c_custkey = o_custkey and o_comment not like '%special%requests%' group by c_custkey) as c_orders (c_custkey, c_count) group by c_count order by custdist desc, c_count desc"),
    (14, "select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue from lineitem, part where l_partkey = p_partkey and l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-09-01' + interval '1' month"),
    (15, "with revenue0 (supplier_no, total_revenue) as (select l_suppkey, sum(l_extendedprice * (1 - l_discount)) from lineitem where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-01-01' + interval '3' month group by l_suppkey) select s_suppkey, s_name, s_address, s_phone, total_revenue from supplier, revenue0 where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue0) order by s_suppkey"),
    (17, "select sum(l_extendedprice) / 7.0 as avg_yearly from lineitem, part where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX' and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)"),
    (18, "select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) from customer, orders, lineitem where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300) and c_custkey = o_custkey and o_orderkey = l_orderkey group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice order by o_totalprice desc, o_orderdate limit 100"),
    (20, "select s_name, s_address from supplier, nation where s_suppkey in (select ps_suppkey from partsupp where ps_partkey in (select p_partkey from part where p_name like 'forest%') and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem where l_partkey = ps_partkey and l_suppkey = ps_suppkey and l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year)) and s_nationkey = n_nationkey and n_name = 'CANADA' order by s_name"),
    (21, "select s_name, count(*) as numwait from supplier, lineitem l1, orders, nation where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F' and l1.l_receiptdate > l1.l_commitdate and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey) and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate) and s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA' group by s_name order by numwait desc, s_name limit 100"),
    (22, "select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal from (select substring(c_phone from 1 for 2) as cntrycode, c_acctbal from customer where substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17') and c_acctbal > (select avg(c_acctbal) from customer where c_acctbal > 0.00 and substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17')) and not exists (select * from orders where o_custkey = c_custkey)) as custsale group by cntrycode order by cntrycode"),
];

/// How many times `sql` names a gathered table in layout A / B.
fn gathered_names(number: u32, customer_sharded: bool) -> usize {
    let sql = QUERIES.iter().find(|(n, _)| *n == number).unwrap().1;
    let tables = ["lineitem", "orders"]
        .into_iter()
        .chain(customer_sharded.then_some("customer"));
    tables
        .map(|t| {
            sql.matches(&format!("from {t}"))
                .chain(sql.matches(&format!(", {t}")))
                .chain(sql.matches(&format!("join {t}")))
                .count()
        })
        .sum()
}

#[test]
fn every_query_plans_and_round_trips() {
    for customer_sharded in [false, true] {
        let sharding = layout(customer_sharded);
        for (number, sql) in QUERIES {
            let plan = plan(sql, &sharding, &GatherOptions::default())
                .unwrap_or_else(|e| panic!("Q{number}: {e}"));
            for gather in &plan.gathers {
                let tree = parser_ffi::parse_protobuf(&gather.shard_sql).unwrap();
                let again = parser_ffi::deparse_protobuf(&tree).unwrap();
                assert_eq!(
                    again, gather.shard_sql,
                    "Q{number}: the shard SELECT round trips"
                );
                parser_ffi::parse_protobuf(&gather.create_sql).unwrap();
            }
            parser_ffi::parse_protobuf(&plan.finish_sql)
                .unwrap_or_else(|e| panic!("Q{number}: the finish parses: {e}"));
            assert_eq!(
                plan.finish_sql.matches("pg_temp.pgshard_g").count(),
                gathered_names(*number, customer_sharded),
                "Q{number} (customer sharded: {customer_sharded}): {}",
                plan.finish_sql
            );
        }
    }
}

#[test]
#[rustfmt::skip]
fn what_some_queries_gather() {
    let a = layout(false);
    let gathers = |number: u32| -> Vec<String> {
        let sql = QUERIES.iter().find(|(n, _)| *n == number).unwrap().1;
        plan(sql, &a, &GatherOptions::default()).unwrap().gathers.into_iter().map(|g| g.shard_sql).collect()
    };
    // Q17: both levels' lineitem bring the same columns: one gather.
    assert_eq!(gathers(17), ["SELECT l_partkey, l_quantity, l_extendedprice FROM lineitem"]);
    // Q13: the LEFT JOIN's ON filters its nullable side, orders, first.
    assert_eq!(gathers(13), ["SELECT o_orderkey, o_custkey, o_comment FROM orders WHERE o_comment NOT LIKE '%special%requests%'"]);
    // Q6: every condition is lineitem's and pushed.
    assert_eq!(gathers(6), ["SELECT l_quantity, l_extendedprice, l_discount, l_shipdate FROM lineitem WHERE l_shipdate >= '1994-01-01'::date AND l_shipdate < '1994-01-01'::date + '1'::interval year AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24"]);
}
