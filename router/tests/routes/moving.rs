//! Routes while a logical shard moves (rule 17): which touch the moving
//! shard, and the refusals of schema changes and keyless statements.
//!
//! `postgres/4` over 2 databases (placement `s % 2`), logical shard 2 (on
//! database 0) moving. bigint keys by logical shard (mod 4, see the table
//! in `routes.rs`): 0: 1, 12; 1: 3, 5, 100; 2 (moving): 2, 13, 42; 3: 4.

use router::sharding::{GroupFunction, GroupId, Hasher};

use super::*;

const MOVING: &str = r#"
[[databases]]
name = "mv"
host = "127.0.0.1"
database_name = "db0"
shard = 0

[[databases]]
name = "mv"
host = "127.0.0.1"
database_name = "db1"
shard = 1

[[sharded_tables]]
database = "mv"
name = "orders"
column = "tenant_id"
shard_count = 4

[[sharded_tables]]
database = "mv"
name = "order_items"
column = "tenant_id"
shard_count = 4

[[sharded_tables]]
database = "mv"
name = "users"
column = "id"

[[sharded_tables]]
database = "mv"
name_prefix = "events_p"
shard_count = 4

[[omnisharded_tables]]
database = "mv"
tables = ["countries"]
"#;

/// `held`: the move's marker holds keyless statements (table families,
/// or plain tables before the copy). `refusing`: it refuses them.
fn moving(refuse_keyless: bool) -> &'static Sharding {
    static CLUSTERS: OnceLock<[Sharding; 2]> = OnceLock::new();
    let clusters = CLUSTERS.get_or_init(|| {
        let users = "[[users]]\nname = \"app\"\ndatabase = \"mv\"\npassword = \"pw\"\n";
        let config = Config::from_toml(MOVING, users).expect("fixture config loads");
        let sharding = &config.clusters["mv"].sharding;
        let group = GroupId {
            function: GroupFunction::Hash(Hasher::Postgres),
            shard_count: 4,
        };
        [false, true].map(|refuse| sharding.with_moving(group, &[2], refuse))
    });
    &clusters[usize::from(refuse_keyless)]
}

fn cases(refuse_keyless: bool) -> Cases {
    Cases {
        sharding: moving(refuse_keyless),
        overrides: Overrides::default(),
        failures: RefCell::default(),
    }
}

fn held() -> Cases {
    cases(false)
}

fn refusing() -> Cases {
    cases(true)
}

#[test]
#[rustfmt::skip]
fn keys_in_the_moving_shard_touch_it() {
    held().check("SELECT * FROM orders WHERE tenant_id = 2", &[], "0 m");
    held().check("SELECT * FROM orders WHERE tenant_id = 1", &[], "0");
    held().check("SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    held().check("SELECT * FROM orders WHERE tenant_id = $1", &[T("42")], "0 m");
    held().check("SELECT * FROM orders WHERE tenant_id = $1", &[T("12")], "0");
    held().check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(13)], "0 m");
    held().check("SELECT * FROM orders WHERE tenant_id = $1", &[N], "all m");
    held().check("SELECT * FROM orders WHERE tenant_id IN (1, 3)", &[], "all");
    held().check("SELECT * FROM orders WHERE tenant_id IN (1, 2)", &[], "0 m");
    held().check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[arr8(&[Some(4), Some(42)])], "all m");
    held().check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[arr8(&[Some(4), Some(3)])], "1");
    held().check("UPDATE orders SET x = 1 WHERE tenant_id = 13", &[], "w 0 m");
    held().check("DELETE FROM orders WHERE tenant_id = 12", &[], "w 0");
    held().check("INSERT INTO orders (tenant_id, x) VALUES (2, 1)", &[], "w 0 m");
    held().check("INSERT INTO orders (tenant_id, x) VALUES ($1, 1)", &[T("5")], "w 1");
    held().check("SELECT * FROM orders o JOIN order_items i ON o.tenant_id = i.tenant_id WHERE o.tenant_id = 42", &[], "0 m");
    held().check("SELECT * FROM orders WHERE tenant_id = 1 AND EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = orders.tenant_id)", &[], "0");
    held().check("SELECT * FROM countries c WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = 2)", &[], "0 m");
    held().check("WITH x AS (SELECT * FROM orders WHERE tenant_id = 2) SELECT * FROM x", &[], "0 m");
    held().check("SELECT * FROM orders WHERE tenant_id = 1; SELECT * FROM orders WHERE tenant_id = 12", &[], "0");
    held().check("SELECT * FROM orders WHERE tenant_id = 1; SELECT * FROM order_items WHERE tenant_id = 2", &[], "0 m");
    held().check("SELECT * FROM events_p2", &[], "0 m");
    held().check("SELECT * FROM events_p1", &[], "0");
    held().check("INSERT INTO events_p3 VALUES (1)", &[], "w 1");
}

#[test]
#[rustfmt::skip]
fn statements_without_the_group_never_touch_it() {
    held().check("SELECT * FROM orders", &[], "all m");
    held().check("UPDATE orders SET x = 1", &[], "w all m");
    held().check("SELECT * FROM users WHERE id = 2", &[], "0");
    held().check("SELECT * FROM users", &[], "all");
    held().check("SELECT * FROM countries", &[], "any");
    held().check("UPDATE countries SET name = 'x'", &[], "w all");
    held().check("SELECT 1", &[], "any");
    held().check("BEGIN", &[], "any");
    held().check("ALTER TABLE users ADD COLUMN y int", &[], "w all");
}

#[test]
#[rustfmt::skip]
fn overrides_touch_the_database_they_pick() {
    held().shard(0).check("SELECT * FROM orders", &[], "0 m");
    held().shard(1).check("SELECT * FROM orders", &[], "1");
    held().shard(1).check("SELECT * FROM orders WHERE tenant_id = 2", &[], "1");
    held().shard(0).check("SELECT * FROM users", &[], "0");
    held().key("42").check("SELECT * FROM orders", &[], "0 m");
    held().key("12").check("SELECT * FROM orders", &[], "0");
    held().shard(0).check("ALTER TABLE orders ADD COLUMN y int", &[], "w 0 m");
}

#[test]
#[rustfmt::skip]
fn schema_changes_on_the_group_are_refused() {
    let refused = "err: schema change on orders refused while logical shard(s) 2 of its placement group postgres/4 move to another database";
    held().check("ALTER TABLE orders ADD COLUMN y int", &[], refused);
    refusing().check("ALTER TABLE orders ADD COLUMN y int", &[], refused);
    held().check("CREATE INDEX ON order_items (x)", &[], "err: schema change on order_items refused");
    held().check("ALTER TABLE events_p7 ADD COLUMN y int", &[], "err: schema change on events_p7 refused");
    // DROP names its tables without RangeVars (the summary has none): not
    // refused, it goes everywhere as always.
    held().check("DROP TABLE IF EXISTS orders", &[], "w all");
    // TRUNCATE is a schema change to the summary (and would empty the
    // rows the move copies).
    held().check("TRUNCATE orders", &[], "err: schema change on orders refused");
}

#[test]
#[rustfmt::skip]
fn keyless_statements_are_refused_when_the_marker_says_so() {
    let refused = "err: this statement reads or writes orders without its sharding key tenant_id while logical shard(s) 2 of its placement group postgres/4 move to another database";
    refusing().check("SELECT * FROM orders", &[], refused);
    refusing().check("DELETE FROM orders WHERE x = 1", &[], refused);
    refusing().check("SELECT * FROM orders WHERE tenant_id = $1", &[N], refused);
    refusing().check("SELECT * FROM orders WHERE tenant_id = 2", &[], "0 m");
    refusing().check("SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    refusing().check("SELECT * FROM orders WHERE tenant_id IN (1, 3)", &[], "all");
    refusing().check("SELECT * FROM users", &[], "all");
    refusing().shard(0).check("SELECT * FROM orders", &[], "0 m");
}

/// The proxy's reads of the move records missed: its marker (no shard
/// named) refuses keyless statements with its reason, and the key that
/// bounds them.
fn unread() -> Cases {
    static CLUSTER: OnceLock<Sharding> = OnceLock::new();
    let sharding = CLUSTER.get_or_init(|| {
        let group = GroupId {
            function: GroupFunction::Hash(Hasher::Postgres),
            shard_count: 4,
        };
        let why = "its reads of database 1 fail: cannot connect: Connection refused (os error 111)";
        let plain = moving(false).with_moving(group, &[], false);
        plain.with_unread(group, why)
    });
    Cases {
        sharding,
        overrides: Overrides::default(),
        failures: RefCell::default(),
    }
}

#[test]
#[rustfmt::skip]
fn keyless_statements_are_refused_with_the_reason_when_the_moves_are_unread() {
    let refused = "err: this statement reads or writes orders without its sharding key tenant_id, and pgshard has not read lately which moves of logical shards are under way (its reads of database 1 fail: cannot connect: Connection refused (os error 111)): during a move";
    unread().check("SELECT * FROM orders", &[], refused);
    unread().check("UPDATE orders SET x = 1", &[], refused);
    unread().check("SELECT count(*) FROM order_items", &[], "err: larger resharding_freshness_timeout");
    // Keyed statements are served; nothing names a moving shard.
    unread().check("SELECT * FROM orders WHERE tenant_id = 2", &[], "0");
    unread().check("SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    unread().check("SELECT * FROM users", &[], "all");
}
