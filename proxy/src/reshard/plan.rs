//! What `MOVE SHARD` asks, checked against the running config before
//! anything runs: the cluster, the placement group, the logical shard,
//! the source and target databases, and the table families and plain
//! sharded tables that move. Layouts whose move is not built yet are
//! refused here, and why a move fails is [`MoveError`].

use router::config::Config;
use router::sharding::{GroupFunction, GroupId, KeySpace, ShardedTable, Sharding};

/// A move, as accepted.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `m` and 8 hex digits: the move's name, and (as `pgshard_move_<id>`)
    /// its publication, slot and subscription's.
    pub id: String,
    pub cluster: String,
    pub group: GroupId,
    pub shard: usize,
    pub source: usize,
    pub target: usize,
    /// The group's families: (schema filter, prefix, key space).
    pub families: Vec<(Option<String>, String, KeySpace)>,
    /// The group's `[[sharded_tables]]` entries: plain tables holding rows
    /// of several logical shards (`reshard/plain.rs`).
    pub tables: Vec<ShardedTable>,
}

impl Plan {
    /// The name of the publication, the slot and the subscription
    /// (lower case ASCII: no quoting needed in replication commands).
    pub fn stream_name(&self) -> String {
        format!("pgshard_move_{}", self.id)
    }
}

/// Why a move is refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    #[error("no such database: {0}")]
    UnknownCluster(String),
    #[error("name the database to move in: MOVE SHARD <s> TO <n> IN <database> (sharded: {0})")]
    WhichCluster(String),
    #[error("database {0} has no sharded tables to move")]
    NoGroup(String),
    #[error("{0} names no sharded table or table family of database {1}")]
    UnknownTable(String, String),
    #[error("database {cluster} has several placement groups ({groups}): name one of its tables with MOVE SHARD <s> TO <n> OF <table>")]
    WhichGroup { cluster: String, groups: String },
    #[error("logical shard {shard} does not exist: group {group} has {count} (0 to {last})", last = count - 1)]
    NoShard {
        shard: usize,
        group: String,
        count: usize,
    },
    #[error("database {target} does not exist: database {cluster} has {databases} (0 to {last})", last = databases - 1)]
    NoDatabase {
        target: usize,
        cluster: String,
        databases: usize,
    },
    #[error("logical shard {shard} of group {group} is on database {target} already")]
    AlreadyThere {
        shard: usize,
        group: String,
        target: usize,
    },
    #[error(
        "group {0} maps listed or ranged values to logical shards: moving those is not built yet"
    )]
    Mapping(String),
    #[error("group {group} shards every table with column {column} ([[sharded_tables]] without name): a move needs the tables named; add an entry with name = \"<table>\" for each of them")]
    Unnamed { group: String, column: String },
    #[error("move {0} of database {1} is under way; one move at a time (SHOW MOVES)")]
    Busy(String, String),
    #[error("no [[users]] entry of database {0} logs in to both databases as a superuser (CREATE SUBSCRIPTION needs one); add one")]
    NoSuperuser(String),
    #[error("database {database}: {what}: {message}")]
    Server {
        database: usize,
        what: String,
        message: String,
    },
    #[error("{0}")]
    Check(String),
    #[error("pg_dump of the moving tables failed: {0}")]
    Dump(String),
    #[error("cancelled by CANCEL MOVE; rolled back, the source database serves the shard")]
    Cancelled,
    #[error("interrupted before its switch (the pgshard running it stopped); rolled back, database {0} serves the shard")]
    Interrupted(usize),
    #[error("REBALANCE: {0}")]
    Rebalance(String),
    #[error("pgshard instance(s) {instances} of database {cluster} did not mark the move within {seconds} s (their reads of pgshard.moves are recent, but none lists it: another config without this table group, or reads failing there); rows were not copied, the source database serves the shard. Stop those instances or fix their config, then MOVE SHARD again")]
    Unmarked {
        instances: String,
        cluster: String,
        seconds: u64,
    },
    #[error("the cutover did not finish within cutover_timeout {attempts} times: {last}")]
    Cutover { attempts: usize, last: String },
}

impl MoveError {
    /// Whether pgshard cannot do this move at all (feature not supported),
    /// rather than not now.
    pub fn unsupported(&self) -> bool {
        matches!(self, MoveError::Mapping(_) | MoveError::Unnamed { .. })
    }
}

/// Where `MOVE SHARD` points: `shard` to database `target`, in `cluster`
/// (optional when one cluster is sharded) and the group of `of` (a table
/// or a family prefix; optional when the cluster has one group).
pub struct Request<'a> {
    pub cluster: Option<&'a str>,
    pub of: Option<&'a str>,
    pub shard: usize,
    pub target: usize,
}

/// The move `request` asks for, as the running `config` places things.
pub fn plan(config: &Config, request: &Request, id: String) -> Result<Plan, MoveError> {
    let cluster = cluster_name(config, request)?;
    let running = config
        .clusters
        .get(&cluster)
        .ok_or_else(|| MoveError::UnknownCluster(cluster.clone()))?;
    let sharding = &running.sharding;
    let group = group(sharding, &cluster, request.of)?;
    let members = sharding
        .group(group)
        .ok_or_else(|| MoveError::NoGroup(cluster.clone()))?;
    let name = group.to_string();
    if group.function == GroupFunction::Mapping {
        return Err(MoveError::Mapping(name));
    }
    if request.shard >= group.shard_count {
        return Err(MoveError::NoShard {
            shard: request.shard,
            group: name,
            count: group.shard_count,
        });
    }
    if request.target >= sharding.databases {
        return Err(MoveError::NoDatabase {
            target: request.target,
            cluster,
            databases: sharding.databases,
        });
    }
    let source = members.placement.get(request.shard).copied().unwrap_or(0);
    if source == request.target {
        return Err(MoveError::AlreadyThere {
            shard: request.shard,
            group: name,
            target: source,
        });
    }
    let families = members
        .families
        .iter()
        .filter_map(|&i| sharding.families.get(i))
        .map(|f| (f.schema.clone(), f.prefix.clone(), f.keys.clone()))
        .collect();
    let tables = members
        .tables
        .iter()
        .filter_map(|&i| sharding.tables.get(i))
        .cloned()
        .collect::<Vec<_>>();
    if let Some(unnamed) = tables.iter().find(|t| t.name.is_none()) {
        return Err(MoveError::Unnamed {
            group: name,
            column: unnamed.column.clone(),
        });
    }
    Ok(Plan {
        id,
        cluster,
        group,
        shard: request.shard,
        source,
        target: request.target,
        families,
        tables,
    })
}

/// The cluster `request` names, or the only sharded one.
pub fn cluster_name(config: &Config, request: &Request) -> Result<String, MoveError> {
    if let Some(name) = request.cluster {
        return Ok(name.to_owned());
    }
    let sharded: Vec<&String> = config
        .clusters
        .iter()
        .filter(|(_, c)| c.shards.len() > 1)
        .map(|(name, _)| name)
        .collect();
    match sharded.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(MoveError::WhichCluster(join(sharded))),
    }
}

/// The group `of` names, or the cluster's only group.
fn group(sharding: &Sharding, cluster: &str, of: Option<&str>) -> Result<GroupId, MoveError> {
    let groups = sharding.groups();
    match of {
        Some(of) => {
            let table = sharding
                .tables
                .iter()
                .find(|t| t.name.as_deref() == Some(of))
                .map(|t| t.keys.group());
            let family = sharding
                .families
                .iter()
                .find(|f| f.prefix == of || of.strip_prefix(f.prefix.as_str()).is_some_and(digits))
                .map(|f| f.keys.group());
            table
                .or(family)
                .ok_or_else(|| MoveError::UnknownTable(of.to_owned(), cluster.to_owned()))
        }
        None => match groups.as_slice() {
            [] => Err(MoveError::NoGroup(cluster.to_owned())),
            [one] => Ok(one.id),
            many => Err(MoveError::WhichGroup {
                cluster: cluster.to_owned(),
                groups: join(many.iter().map(|g| g.id.to_string()).collect()),
            }),
        },
    }
}

fn digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn join<T: std::fmt::Display>(items: Vec<T>) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sharding: &str) -> Config {
        let databases: String = (0..2)
            .map(|i| {
                format!(
                    "[[databases]]\nname = \"prod\"\nhost = \"h\"\ndatabase_name = \"d{i}\"\nshard = {i}\n"
                )
            })
            .collect();
        let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"p\"\n";
        Config::from_toml(&format!("{databases}{sharding}"), users)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    const FAMILY: &str = "[[sharded_tables]]\ndatabase = \"prod\"\nname_prefix = \"events_p\"\n\
        data_type = \"bigint\"\nshard_count = 8\n";
    const PLAIN: &str = "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"orders\"\n\
        column = \"tenant_id\"\ndata_type = \"bigint\"\nshard_count = 8\n";

    const UNNAMED: &str = "[[sharded_tables]]\ndatabase = \"prod\"\n\
        column = \"tenant_id\"\ndata_type = \"bigint\"\nshard_count = 8\n";

    fn ask(sharding: &str, of: Option<&str>, shard: usize, target: usize) -> Result<Plan, String> {
        let request = Request {
            cluster: None,
            of,
            shard,
            target,
        };
        plan(&config(sharding), &request, "m1".to_owned()).map_err(|e| e.to_string())
    }

    #[test]
    fn plans_and_refusals() {
        let plan = ask(FAMILY, None, 3, 0).unwrap();
        assert_eq!((plan.source, plan.target, plan.shard), (1, 0, 3));
        assert_eq!(plan.families[0].1, "events_p");
        assert_eq!(plan.stream_name(), "pgshard_move_m1");
        // A plain table moves with the families of its group.
        let both = format!("{FAMILY}{PLAIN}");
        let plan = ask(&both, Some("orders"), 3, 0).unwrap();
        assert_eq!(plan.families.len(), 1);
        assert_eq!(plan.tables[0].name.as_deref(), Some("orders"));
        assert_eq!(plan.tables[0].column, "tenant_id");
        let cases: &[(&str, Option<&str>, usize, usize, &str)] = &[
            (FAMILY, None, 3, 1, "logical shard 3 of group postgres/8 is on database 1 already"),
            (FAMILY, None, 8, 1, "logical shard 8 does not exist: group postgres/8 has 8 (0 to 7)"),
            (FAMILY, None, 3, 2, "database 2 does not exist: database prod has 2 (0 to 1)"),
            (FAMILY, Some("nope"), 3, 0, "nope names no sharded table or table family of database prod"),
            (PLAIN, None, 3, 1, "logical shard 3 of group postgres/8 is on database 1 already"),
            (UNNAMED, None, 3, 0, "group postgres/8 shards every table with column tenant_id ([[sharded_tables]] without name): a move needs the tables named; add an entry with name = \"<table>\" for each of them"),
        ];
        for (sharding, of, shard, target, want) in cases {
            assert_eq!(
                ask(sharding, *of, *shard, *target).err().as_deref(),
                Some(*want)
            );
        }
    }
}
