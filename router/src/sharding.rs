//! The resolved sharding model of one cluster: which tables are sharded, by
//! which column, type and function, which are table families or omnisharded.
//! Built by `config` at load time (validated there); read by [`crate::route`].

/// The SQL type of a sharding key (`data_type` in `[[sharded_tables]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    #[default]
    BigInt,
    Integer,
    SmallInt,
    Text,
    Varchar,
    Uuid,
}

/// How a key becomes a logical shard (`hasher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hasher {
    /// Postgres's `PARTITION BY HASH` (PgDog's and PgCat's function).
    #[default]
    Postgres,
    /// Citus: 32-bit `hashint8`/`hashtext`, int32 space cut in equal ranges.
    Citus,
}

/// A typed key value, ready to hash or to compare with a mapping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// smallint, integer and bigint keys (range-checked for the type).
    Int(i64),
    /// text and varchar keys (UTF-8).
    Text(String),
    Uuid([u8; 16]),
}

/// How keys of one table map to logical shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardFunction {
    /// Hash into `shard_count` logical shards.
    Hash { hasher: Hasher, shard_count: usize },
    /// `[[sharded_tables.mapping]]` with `kind = "list"`: explicit values.
    List(Vec<(Key, usize)>),
    /// `kind = "range"`: `start` inclusive, `end` exclusive; either may be
    /// open (`None`).
    Range(Vec<(Option<Key>, Option<Key>, usize)>),
}

/// How the logical shards of a table sit on the cluster's databases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace {
    pub data_type: DataType,
    pub function: ShardFunction,
    /// `placement[s]` is the database (shard number in `[[databases]]`) that
    /// holds logical shard `s`. Default: `s % databases`.
    pub placement: Vec<usize>,
    /// A move of some of the group's logical shards is under way (set on
    /// every key space of the group at once, through the proxy's
    /// `replace_sharding`, which also clears the AST cache: plans made
    /// before or after it never mix). `None` almost always.
    pub moving: Option<std::sync::Arc<Moving>>,
}

/// Logical shards of a placement group that are moving to another
/// database: routes report whether they touch them
/// ([`crate::route::Routed::touches_moving`]), so that the proxy can hold
/// those statements while the move switches the placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moving {
    /// The moving logical shards (sorted).
    pub shards: Vec<usize>,
    /// Statements on this key space's tables without the key (that would
    /// read or write every logical shard) are refused: the moving rows
    /// sit on two databases for a while (plain tables and partitioned
    /// parents). Table families are held instead (`false`).
    pub refuse_keyless: bool,
    /// The proxy has not read lately which moves are under way (any
    /// shard may be moving): keyless statements are refused with a
    /// refusal that says so and gives this reason, which databases' reads
    /// missed and how (`shards` may then be empty). `None` almost always.
    pub unread: Option<String>,
}

impl Moving {
    /// Whether logical shard `shard` is moving.
    pub fn holds(&self, shard: usize) -> bool {
        self.shards.binary_search(&shard).is_ok()
    }

    /// `3` or `3, 5`, for messages.
    pub fn shard_list(&self) -> String {
        let shards: Vec<String> = self.shards.iter().map(|s| s.to_string()).collect();
        shards.join(", ")
    }
}

impl KeySpace {
    /// The placement group this key space belongs to.
    pub fn group(&self) -> GroupId {
        match &self.function {
            ShardFunction::Hash {
                hasher,
                shard_count,
            } => GroupId {
                function: GroupFunction::Hash(*hasher),
                shard_count: *shard_count,
            },
            // Config loading gives a mapped entry one placement entry per
            // logical shard.
            ShardFunction::List(_) | ShardFunction::Range(_) => GroupId {
                function: GroupFunction::Mapping,
                shard_count: self.placement.len(),
            },
        }
    }
}

/// A *placement group*: key spaces of one cluster with the same function
/// over the same number of logical shards. Equal keys of its tables are in
/// the same logical shard, so the group shares one placement (a load rule:
/// `config/sharded_tables.rs`), and moving logical shard `s` to another
/// database moves `s` of every table of the group, which keeps them
/// co-located. Shown as `postgres/12`, `citus/32`, `mapping/4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupId {
    pub function: GroupFunction,
    pub shard_count: usize,
}

/// How a group's keys become logical shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupFunction {
    /// Hashed (`hasher`).
    Hash(Hasher),
    /// Listed or ranged values (`[[sharded_tables.mapping]]`), each naming
    /// its logical shard: the same number means the same logical shard in
    /// every mapped table of the cluster.
    Mapping,
}

impl std::fmt::Display for GroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let function = match self.function {
            GroupFunction::Hash(Hasher::Postgres) => "postgres",
            GroupFunction::Hash(Hasher::Citus) => "citus",
            GroupFunction::Mapping => "mapping",
        };
        write!(f, "{function}/{}", self.shard_count)
    }
}

/// The members of one placement group of a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group<'a> {
    pub id: GroupId,
    /// The database of each logical shard, as every member has it.
    pub placement: &'a [usize],
    /// Indexes into [`Sharding::tables`].
    pub tables: Vec<usize>,
    /// Indexes into [`Sharding::families`].
    pub families: Vec<usize>,
}

/// One `[[sharded_tables]]` entry with a column key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedTable {
    /// `None`: every table with this column is sharded by it.
    pub name: Option<String>,
    pub schema: Option<String>,
    pub column: String,
    pub keys: KeySpace,
}

/// Tables named `<prefix><N>` where `N` (an integer) is the key, e.g. one
/// table per topic partition (`events_p7`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFamily {
    pub prefix: String,
    pub schema: Option<String>,
    pub keys: KeySpace,
}

/// Which parser turns statement text into summaries (`query_parser_engine`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ParserEngine {
    /// parser-ffi's zero-copy view of the C tree.
    #[default]
    #[serde(alias = "pg_query_raw")]
    ZeroCopy,
    /// pg_query's protobuf structs (the baseline).
    PgQueryProtobuf,
}

/// The sharding model of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sharding {
    /// Number of databases (`[[databases]]` shards) in the cluster.
    pub databases: usize,
    pub tables: Vec<ShardedTable>,
    pub families: Vec<TableFamily>,
    /// `[[omnisharded_tables]]`: (schema, name) of tables copied on every
    /// database.
    pub omnisharded: Vec<(Option<String>, String)>,
    /// Refuse statements that would go to more than one database.
    pub cross_shard_disabled: bool,
    /// Tables no entry names are omnisharded (`unlisted_tables`, when the
    /// cluster has no column-only `[[sharded_tables]]` entry); else they
    /// are sharded by a key pgshard does not know.
    pub unlisted_omnisharded: bool,
    /// The cluster has column-only entries and `unlisted_tables` is
    /// omnisharded: an unlisted table is omnisharded when the shards'
    /// catalog shows it has none of their columns ([`Sharding::keyless`],
    /// read by the proxy), else sharded by them.
    pub unlisted_by_columns: bool,
    /// The unlisted tables the catalog showed to have no column-only key
    /// column, when it was read (`None` before: such tables are then
    /// sharded by a key pgshard does not know).
    pub keyless: Option<std::sync::Arc<KeylessTables>>,
    /// What stands behind names in the cluster's databases (views,
    /// functions, triggers, sequences), as a database's catalog showed it
    /// when the proxy last read it; `None` before it is read.
    pub catalog: Option<std::sync::Arc<crate::catalog::Catalog>>,
    /// `[[sharded_functions]]`: functions a statement may call on one
    /// database, the one of a key argument's value.
    pub functions: Vec<ShardedFunction>,
}

/// A `[[sharded_functions]]` entry, resolved: calls of `schema.name` run
/// on the database of argument `argument` (0-based), read as a key of
/// `[[sharded_tables]]` entry `entry` (its type and key space).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedFunction {
    pub schema: Option<String>,
    pub name: String,
    pub argument: usize,
    pub entry: usize,
}

/// Tables that have none of a cluster's column-only key columns, as a
/// shard's catalog listed them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeylessTables {
    /// (schema, name) of each such table.
    pub tables: std::collections::BTreeSet<(String, String)>,
    /// Names some table with a key column has, in any schema: an
    /// unqualified name that one of them has is not known to be keyless
    /// (the client's `search_path` decides which it means).
    pub keyed_names: std::collections::BTreeSet<String>,
}

impl KeylessTables {
    /// Whether `schema.name` (any schema when `None`) is keyless.
    pub fn contains(&self, schema: Option<&str>, name: &str) -> bool {
        match schema {
            Some(schema) => self.tables.contains(&(schema.to_owned(), name.to_owned())),
            None => !self.keyed_names.contains(name) && self.tables.iter().any(|(_, n)| n == name),
        }
    }
}

impl Sharding {
    /// One database and nothing configured: routing has nothing to decide.
    pub fn is_trivial(&self) -> bool {
        self.databases <= 1
    }

    /// The placement groups of the cluster's sharded tables and table
    /// families, in the order their first member is configured (tables
    /// before families).
    pub fn groups(&self) -> Vec<Group<'_>> {
        let mut groups: Vec<Group<'_>> = Vec::new();
        let members = self
            .tables
            .iter()
            .enumerate()
            .map(|(i, t)| (false, i, &t.keys))
            .chain(
                self.families
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (true, i, &f.keys)),
            );
        for (family, index, keys) in members {
            let id = keys.group();
            let position = match groups.iter().position(|g| g.id == id) {
                Some(position) => position,
                None => {
                    groups.push(Group {
                        id,
                        placement: &keys.placement,
                        tables: Vec::new(),
                        families: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            if let Some(group) = groups.get_mut(position) {
                if family {
                    group.families.push(index);
                } else {
                    group.tables.push(index);
                }
            }
        }
        groups
    }

    /// The placement group `id`, if the cluster has one.
    pub fn group(&self, id: GroupId) -> Option<Group<'_>> {
        self.groups().into_iter().find(|g| g.id == id)
    }

    /// Whether any key space of the cluster has a move under way.
    pub fn moving(&self) -> bool {
        self.tables.iter().any(|t| t.keys.moving.is_some())
            || self.families.iter().any(|f| f.keys.moving.is_some())
    }

    /// This model with logical shards `shards` of group `group` marked as
    /// moving (`shards` empty: the group's marker cleared). Keyless
    /// statements on the group's `[[sharded_tables]]` are refused when
    /// `refuse_keyless`; its families are always held instead.
    pub fn with_moving(&self, group: GroupId, shards: &[usize], refuse_keyless: bool) -> Sharding {
        let mut shards = shards.to_vec();
        shards.sort_unstable();
        shards.dedup();
        let marker = |refuse_keyless: bool| {
            (!shards.is_empty()).then(|| {
                std::sync::Arc::new(Moving {
                    shards: shards.clone(),
                    refuse_keyless,
                    unread: None,
                })
            })
        };
        let (tables, families) = (marker(refuse_keyless), marker(false));
        let mut next = self.clone();
        for table in next.tables.iter_mut().filter(|t| t.keys.group() == group) {
            table.keys.moving = tables.clone();
        }
        for family in next.families.iter_mut().filter(|f| f.keys.group() == group) {
            family.keys.moving = families.clone();
        }
        next
    }

    /// The same model with `group`'s tables marked [`Moving::unread`]
    /// for reason `why`: keyless statements on them refused, keyed ones
    /// routed as before (touching only the shards a marker already names).
    pub fn with_unread(&self, group: GroupId, why: &str) -> Sharding {
        let mut next = self.clone();
        for table in next.tables.iter_mut().filter(|t| t.keys.group() == group) {
            let mut unread = table.keys.moving.as_deref().cloned().unwrap_or(Moving {
                shards: Vec::new(),
                refuse_keyless: true,
                unread: None,
            });
            unread.refuse_keyless = true;
            unread.unread = Some(why.to_owned());
            table.keys.moving = Some(std::sync::Arc::new(unread));
        }
        next
    }

    /// The same model with every moving logical shard placed on a
    /// database of its own, number `databases` (one past the last): a
    /// route through it names that database exactly when it touches a
    /// moving shard. `None` when nothing moves.
    pub fn shadow(&self) -> Option<Sharding> {
        if !self.moving() {
            return None;
        }
        let phantom = self.databases;
        let mut shadow = self.clone();
        shadow.databases += 1;
        let keys = shadow
            .tables
            .iter_mut()
            .map(|t| &mut t.keys)
            .chain(shadow.families.iter_mut().map(|f| &mut f.keys));
        for keys in keys {
            if let Some(moving) = keys.moving.take() {
                for &shard in &moving.shards {
                    if let Some(database) = keys.placement.get_mut(shard) {
                        *database = phantom;
                    }
                }
            }
        }
        Some(shadow)
    }

    /// The columns of the column-only `[[sharded_tables]]` entries.
    pub fn key_columns(&self) -> Vec<&str> {
        let mut columns: Vec<&str> = self
            .tables
            .iter()
            .filter(|t| t.name.is_none())
            .map(|t| t.column.as_str())
            .collect();
        columns.sort_unstable();
        columns.dedup();
        columns
    }
}

#[cfg(test)]
mod tests;
