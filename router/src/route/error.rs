//! Why a statement cannot be routed: one variant per refusal, each message
//! saying what pgshard would get wrong and what to do instead.

use crate::hash::KeyError;

/// Why a statement cannot be routed; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error(
        "shard {shard} does not exist: this cluster has {databases} database(s), numbered from 0"
    )]
    NoSuchShard { shard: usize, databases: usize },
    #[error("invalid value for sharding key {column} ({data_type}): {reason}")]
    BadKey {
        column: String,
        data_type: &'static str,
        reason: KeyError,
    },
    #[error(
        "no shard for key {key} of {of}: its [[sharded_tables]] mapping has no entry for that value; add one"
    )]
    NoShardForKey { key: String, of: String },
    #[error(
        "statement reads keys on different shards ({first} and {second}); a statement must stay on one shard: split it into one statement per shard"
    )]
    KeysOnDifferentShards { first: usize, second: usize },
    #[error(
        "multi-row INSERT across shards is not supported yet; split it by key (rows of {table} go to shards {shards})"
    )]
    MultiRowInsert { table: String, shards: String },
    #[error(
        "INSERT INTO {table} gives no value for its sharding key {column}: add {column} to the column list with a literal or parameter value (or pick a shard with /* pgdog_shard: N */)"
    )]
    InsertWithoutKey { table: String, column: String },
    #[error(
        "MERGE INTO {table} must match exactly one value of its sharding key {column} (ON ... {column} = value) so that inserted rows land on the right shard; split it by key"
    )]
    MergeWithoutKey { table: String, column: String },
    #[error(
        "{statement} into {table}: the table is not in the sharding config and the rows carry no sharding key, so pgshard cannot tell which database they belong on; list it in [[sharded_tables]] or [[omnisharded_tables]], or pick a shard with /* pgdog_shard: N */"
    )]
    UnknownTableWrite {
        statement: &'static str,
        table: String,
    },
    #[error(
        "COPY ... FROM into sharded table {table} is not supported yet (its rows would have to be split by key); use INSERT with the key, or load one shard at a time with /* pgdog_shard: N */"
    )]
    CopyIntoSharded { table: String },
    #[error(
        "cross-shard queries are disabled (cross_shard_disabled) and this statement would run on {count} databases; add the sharding key to it (WHERE key = value) or pick a shard with /* pgdog_shard: N */"
    )]
    CrossShardDisabled { count: usize },
    #[error(
        "the statements of this query string go to different shards ({first}, then {second}); send them separately"
    )]
    StatementsOnDifferentShards { first: String, second: String },
    #[error(
        "pgdog.sharding_key is set, but this cluster has no sharded tables to type and hash it with"
    )]
    NoKeySpace,
    #[error(
        "this statement sets {column}, the sharding key of {table}: changing a sharding key would move the row to another shard, which is refused unless [rewrite] has enabled = true and shard_key = \"rewrite\" (then one row moves); or delete the row and insert it again with the new key"
    )]
    ShardingKeyChange { table: String, column: String },
    #[error(
        "this statement writes omnisharded table {table} from {read}, which {what}: each database would write from its own rows only and the copies of {table} would diverge, which is not supported; read the rows first and write {table} with their values (or list {read} in [[omnisharded_tables]] if every database holds all of it)"
    )]
    OmnishardedFromSharded {
        table: String,
        read: String,
        what: &'static str,
    },
    #[error(
        "a subquery reads {table}, which {what}, without its sharding key: each database would run it over its own rows only, and pgshard cannot combine query levels across shards; restrict the subquery to one shard with its sharding key (key = value, the shard of the outer query's rows), correlate it with the outer query on the sharding key of a co-located table (inner.key = outer.key), or run the subquery first and send its result"
    )]
    SubqueryWithoutKey { table: String, what: &'static str },
    #[error(
        "a subquery reads {table}, which {what}, on {subquery}, but the rest of the statement runs on {rest}: pgshard cannot combine query levels routed to different shards; give the subquery and the outer query the same sharding key value (or correlate the subquery with the outer query on the sharding key: inner.key = outer.key), or run the subquery first and send its result"
    )]
    SubqueryOnOtherShards {
        table: String,
        what: &'static str,
        subquery: String,
        rest: String,
    },
    #[error(
        "this statement joins {first}, which {first_what}, with {second}, which {second_what}, but not on their sharding keys: each database would join only the rows it holds, and pairs whose rows live on different shards would be missed; join them with an equality between their co-located sharding keys (in WHERE, in an inner join's ON, or in the ON of an outer join between its two sides), or restrict both to the same shard with their sharding keys (key = value for each)"
    )]
    JoinWithoutKey {
        first: String,
        first_what: &'static str,
        second: String,
        second_what: &'static str,
    },
    #[error(
        "this statement reads or writes {table} without its sharding key {column} while logical shard(s) {shards} of its placement group {group} move to another database: until the move finishes, those rows are on two databases and a statement over every shard would see or change them twice, so pgshard refuses it; add the key (WHERE {column} = value) or retry once the move has finished"
    )]
    KeylessDuringMove {
        table: String,
        column: String,
        group: String,
        shards: String,
    },
    #[error(
        "this statement reads or writes {table} without its sharding key {column}, and pgshard has not read lately which moves of logical shards are under way ({why}): during a move some rows are on two databases and a statement over every shard could see or change them twice, so pgshard refuses it until a read succeeds; add the key (WHERE {column} = value) or retry in a few seconds (reads that are only late, on a loaded host, need a larger resharding_freshness_timeout)"
    )]
    KeylessUnread {
        table: String,
        column: String,
        /// Which databases' reads missed, and how (the read's error, or
        /// how long ago the last read succeeded).
        why: String,
    },
    #[error(
        "schema change on {table} refused while logical shard(s) {shards} of its placement group {group} move to another database: the move copied the table's definition when it started, and a change now would leave the two databases with different tables; retry it once the move has finished"
    )]
    SchemaChangeDuringMove {
        table: String,
        group: String,
        shards: String,
    },
    #[error("{what} cannot be routed exactly: {why}")]
    BehindName { what: String, why: String },
    #[error(
        "this statement outer-joins {table}, which {what}, to rows that every database holds (omnisharded or catalog tables, functions, VALUES) and keeps those rows when they find no partner: each database would return them again, matched against its own rows of {table} only; run it on one shard (restrict {table} to one shard with its sharding key in WHERE, or pick a shard with /* pgdog_shard: N */), or make it an inner join"
    )]
    OuterJoinEverywhere { table: String, what: &'static str },
    #[error(
        "this statement writes omnisharded table {table} in a data-modifying WITH query and reads {read}, which {what}: it runs where the rows of {read} it needs are, not on every copy of {table}, and the copies of {table} would diverge; write {table} in a statement of its own (read the rows first and write them with their values)"
    )]
    OmnishardedWithSharded {
        table: String,
        read: String,
        what: &'static str,
    },
    #[error(
        "a data-modifying WITH query writes {table}, which is sharded, but its rows' sharding key does not put them on one shard, so they would be written on every shard the statement runs on; give its rows the sharding key of one shard (INSERT ... VALUES with the key, a WHERE on the key), or send it as a statement of its own"
    )]
    WriteInCteWithoutKey { table: String },
    #[error(
        "a data-modifying WITH query writes {table} on {needs}, but the rest of the statement must run on {rest}: pgshard runs a statement on one set of shards, and its parts would miss rows or write them where they do not belong; send the data-modifying query as a statement of its own, or give both parts the same sharding key"
    )]
    CteWriteElsewhere {
        table: String,
        needs: String,
        rest: String,
    },
    #[error(
        "renaming {table} to {to} is refused: {table} {what}, but {to} {to_what}, so pgshard would look for the table's rows elsewhere than where they are (reads would miss or repeat rows, writes would go to the wrong shards); give {to} the placement {table} has in the config first (a [[sharded_tables]] entry with the same column and key space, or an [[omnisharded_tables]] entry), RELOAD, then rename"
    )]
    RenameMovesRows {
        table: String,
        what: String,
        to: String,
        to_what: String,
    },
    #[error(
        "{how} of {table} is refused: {column} is the sharding key column that places {table}'s rows (a [[sharded_tables]] entry shards {table} by it, or a column-only entry would once it has it), and the rows would stay where the old key put them; change the [[sharded_tables]] entries first, RELOAD, then alter the table (or create a new table and copy the rows into it through pgshard)"
    )]
    KeyColumnChange {
        table: String,
        how: String,
        column: String,
    },
    #[error(
        "{how} is refused: {table} has no {column} column, so it is omnisharded (every shard holds a copy of all its rows); with a {column} column the column-only [[sharded_tables]] entry would shard it by {column} while every shard still held every row, so reads would return each row once per shard and writes by key would change one copy only; to keep {table} omnisharded with the column, list it in [[omnisharded_tables]] and RELOAD first; to shard it by {column}, create a new table with the column and copy the rows into it through pgshard"
    )]
    KeyColumnToCopies {
        table: String,
        how: String,
        column: String,
    },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view) reads {read}, which {read_what}, but {table} {what}: each shard would fill its copy of {table} from its own rows of {read}, and the copies would differ; add a [[sharded_tables]] entry for {table} sharded by a key column the query keeps (co-located with {read}'s key), RELOAD, then create it"
    )]
    CreateAsCopies {
        table: String,
        what: String,
        read: String,
        read_what: &'static str,
    },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view) reads no sharded table, but {table} {what}: every shard would fill it with the same rows, and reads would return each row once per shard; list {table} in [[omnisharded_tables]] (or leave it out of [[sharded_tables]]), RELOAD, then create it, or fill it with INSERT through pgshard"
    )]
    CreateAsFromCopies { table: String, what: String },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view) reads {read}, which {read_what}, but no [[sharded_tables]] entry shards {table}: each shard would fill it from its own rows, placed by a key pgshard does not know; add a [[sharded_tables]] entry for {table} sharded by a key column the query keeps (co-located with {read}'s key), RELOAD, then create it"
    )]
    CreateAsWithoutKey {
        table: String,
        read: String,
        read_what: &'static str,
    },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view): a subquery reads {read}, which {what}, without being correlated with the query's rows on a co-located sharding key, so each shard would fill its part of {table} from its own rows of {read} only; correlate the subquery on the sharding key (inner.key = outer.key), or run it first and use its result"
    )]
    CreateAsSubquery {
        table: String,
        read: String,
        what: &'static str,
    },
}
