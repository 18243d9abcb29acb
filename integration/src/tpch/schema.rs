//! The TPC-H schema (the spec's 8 tables: keys `integer`, money
//! `numeric(15,2)`, primary keys as the spec names them) and the two
//! sharded layouts the tests and the bench run: A (`lineitem` and
//! `orders` sharded by order key, co-located; the rest omnisharded) and B
//! (`customer` sharded by customer key too, a second key space, so its
//! joins with `orders` are not co-located).

/// A table: its name and its `CREATE TABLE` statement.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub name: &'static str,
    pub create: &'static str,
}

/// The tables in load order (parents first).
pub const TABLES: &[Table] = &[
    Table {
        name: "region",
        create: "CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL, \
                 r_comment varchar(152), PRIMARY KEY (r_regionkey))",
    },
    Table {
        name: "nation",
        create: "CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL, \
                 n_regionkey integer NOT NULL, n_comment varchar(152), PRIMARY KEY (n_nationkey))",
    },
    Table {
        name: "part",
        create: "CREATE TABLE part (p_partkey integer NOT NULL, p_name varchar(55) NOT NULL, \
                 p_mfgr char(25) NOT NULL, p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, \
                 p_size integer NOT NULL, p_container char(10) NOT NULL, \
                 p_retailprice numeric(15,2) NOT NULL, p_comment varchar(23) NOT NULL, \
                 PRIMARY KEY (p_partkey))",
    },
    Table {
        name: "supplier",
        create: "CREATE TABLE supplier (s_suppkey integer NOT NULL, s_name char(25) NOT NULL, \
                 s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, \
                 s_phone char(15) NOT NULL, s_acctbal numeric(15,2) NOT NULL, \
                 s_comment varchar(101) NOT NULL, PRIMARY KEY (s_suppkey))",
    },
    Table {
        name: "partsupp",
        create: "CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, \
                 ps_availqty integer NOT NULL, ps_supplycost numeric(15,2) NOT NULL, \
                 ps_comment varchar(199) NOT NULL, PRIMARY KEY (ps_partkey, ps_suppkey))",
    },
    Table {
        name: "customer",
        create: "CREATE TABLE customer (c_custkey integer NOT NULL, c_name varchar(25) NOT NULL, \
                 c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, \
                 c_phone char(15) NOT NULL, c_acctbal numeric(15,2) NOT NULL, \
                 c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL, \
                 PRIMARY KEY (c_custkey))",
    },
    Table {
        name: "orders",
        create: "CREATE TABLE orders (o_orderkey integer NOT NULL, o_custkey integer NOT NULL, \
                 o_orderstatus char(1) NOT NULL, o_totalprice numeric(15,2) NOT NULL, \
                 o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL, \
                 o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, \
                 o_comment varchar(79) NOT NULL, PRIMARY KEY (o_orderkey))",
    },
    Table {
        name: "lineitem",
        create: "CREATE TABLE lineitem (l_orderkey integer NOT NULL, l_partkey integer NOT NULL, \
                 l_suppkey integer NOT NULL, l_linenumber integer NOT NULL, \
                 l_quantity numeric(15,2) NOT NULL, l_extendedprice numeric(15,2) NOT NULL, \
                 l_discount numeric(15,2) NOT NULL, l_tax numeric(15,2) NOT NULL, \
                 l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, \
                 l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL, \
                 l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, \
                 l_comment varchar(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber))",
    },
];

/// How the tables are spread over the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// `lineitem` (l_orderkey) and `orders` (o_orderkey) sharded and
    /// co-located; the other six omnisharded.
    A,
    /// As A, and `customer` sharded by `c_custkey` too.
    B,
}

impl Layout {
    /// The sharded tables and their sharding columns.
    pub fn sharded(self) -> Vec<(&'static str, &'static str)> {
        let mut sharded = vec![("lineitem", "l_orderkey"), ("orders", "o_orderkey")];
        if self == Layout::B {
            sharded.push(("customer", "c_custkey"));
        }
        sharded
    }

    /// The omnisharded tables (a copy on every shard).
    pub fn omnisharded(self) -> Vec<&'static str> {
        let sharded = self.sharded();
        TABLES
            .iter()
            .map(|t| t.name)
            .filter(|name| !sharded.iter().any(|(s, _)| s == name))
            .collect()
    }

    /// The `[[sharded_tables]]` and `[[omnisharded_tables]]` sections for
    /// cluster `database` (bigint keys, Postgres's hash: the key columns
    /// are `integer`, whose values hash as the same bigint values).
    pub fn sharding_toml(self, database: &str) -> String {
        let mut toml = String::new();
        for (name, column) in self.sharded() {
            toml.push_str(&format!(
                "[[sharded_tables]]\ndatabase = \"{database}\"\nname = \"{name}\"\n\
                 column = \"{column}\"\ndata_type = \"bigint\"\nhasher = \"postgres\"\n\n"
            ));
        }
        toml.push_str(&format!(
            "[[omnisharded_tables]]\ndatabase = \"{database}\"\ntables = {:?}\n",
            self.omnisharded()
        ));
        toml
    }
}

/// Every table's `CREATE TABLE`, `;`-separated (for psql).
pub fn create_all() -> String {
    TABLES
        .iter()
        .map(|t| t.create)
        .collect::<Vec<_>>()
        .join(";\n")
}
