//! Scratch: N cache misses of one statement (parse + summary + route), for callgrind.
#[global_allocator]
static ALLOCATOR: parser_ffi::Allocator = parser_ffi::Allocator;
use router::config::Config;
use router::route::{self, Overrides, ParamValue};
const CONFIG: &str = r#"
[[databases]]
name = "prod"
host = "127.0.0.1"
shard = 0
[[databases]]
name = "prod"
host = "127.0.0.1"
shard = 1
[[sharded_tables]]
database = "prod"
name = "pgbench_accounts"
column = "aid"
data_type = "integer"
[[sharded_tables]]
database = "prod"
column = "tenant_id"
[[sharded_tables]]
database = "prod"
column = "partition_id"
[[sharded_tables]]
database = "prod"
name_prefix = "events_p"
"#;
const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";
fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let sql = args.next().unwrap_or_else(|| "SELECT abalance FROM pgbench_accounts WHERE aid = $1".into());
    let config = Config::from_toml(CONFIG, USERS).unwrap();
    let sharding = config.clusters.get("prod").unwrap().sharding.clone();
    let params = [ParamValue::Text(b"4242"), ParamValue::Text(b"7")];
    let mut ok = 0;
    for _ in 0..n {
        let tree = parser_ffi::ParseTree::parse(&sql).unwrap();
        if mode == "parse" { ok += 1; continue; }
        let summary = router::extract::summarize(&tree).unwrap();
        if mode == "summary" { ok += summary.statements.len(); continue; }
        ok += route::route_all(&summary, &params, &Overrides::default(), &sharding).is_ok() as usize;
    }
    println!("{ok}");
}
