//! Protocol-level prepared statements under pooling: every named client
//! Parse is mapped to one pgshard statement (`__pgshard_<id>`), shared by all
//! clients that prepare the same text with the same parameter types, so a
//! server connection prepares each statement once whoever asked for it, and
//! client names never collide. The unnamed statement is not shared on
//! servers: the session parses it afresh (as Postgres does), and keeps the
//! registry entry only for the text's routing.
//!
//! Sharing must not outlive the schema a statement was analysed against
//! (Postgres fixes a statement's parameter and result types at Parse): a
//! DDL command seen through pgshard retires every shared statement, and a
//! Bind that fails because its server copy is stale retires that one, so a
//! later Parse of the same text makes a new server statement.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::{Bytes, BytesMut};

use router::cache::AstCache as Cache;
use router::merge::MergePlan;
use router::sharding::ParserEngine;
use router::split::{InsertRows, SplitError};

use crate::conn::server::prepared_set;
use crate::conn::settings::ParamChange;
use crate::errors::ClientError;
use crate::lock::lock;
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::session::session_effects;

use crate::session::sql_prepared::SqlStatement;

pub mod split_parts;

use split_parts::PartStatements;

/// One statement as pgshard prepares it on servers.
#[derive(Debug)]
pub struct Statement {
    pub id: u64,
    /// `__pgshard_<id>`
    pub name: Bytes,
    /// The whole Parse message under `name`, ready to send.
    pub parse: Bytes,
    pub query: Bytes,
    pub param_types: Vec<u32>,
    /// Running it leaves session state on the server that pgshard does not
    /// track (temp tables, LISTEN, a SET it cannot read...): the server
    /// needs a reset before another client gets it.
    pub leaves_state: bool,
    /// The settings it changes (SET / RESET), tracked as the client's when
    /// it runs without error, as for a simple query.
    pub settings: Option<Vec<ParamChange>>,
    /// The AST cache's lookup of the text, made at the first Bind or
    /// Describe on a sharded cluster and kept, so later ones cost no lookup
    /// (`None`: it does not parse; Postgres will say why).
    pub route: OnceLock<Option<router::cache::Lookup>>,
    /// What running it on several shards needs (see `session/merge.rs`),
    /// planned at its first multi-shard Bind and kept.
    pub merge: OnceLock<StatementMerge>,
    /// A multi-row INSERT's rows, read at its first Bind whose rows go to
    /// several shards and kept (see `session/split_bind.rs`).
    pub insert_rows: OnceLock<InsertRowsRead>,
    /// Its split parts' statements by shape (`session/statements/split_parts.rs`).
    pub split_parts: Mutex<PartStatements>,
    /// The registry no longer hands it out (its server copies may be
    /// stale): caches that hold it drop it.
    pub retired: AtomicBool,
    /// An INSERT that names no columns: the table's columns it was last
    /// bound with, and the statement with them written in.
    pub with_columns: Mutex<Option<WithColumns>>,
    /// The SQL-prepared statement its text EXECUTEs by pgshard's name
    /// (`session/sql_extended.rs`): it runs only where that one is
    /// prepared, which a server that lacks it does first.
    pub executes: OnceLock<Arc<SqlStatement>>,
    /// It returns no rows (`router::rowless`), read once it is routed.
    pub rowless: OnceLock<bool>,
    /// Its text is a client's whose `pgdog.unique_id()` calls became
    /// parameters after the client's (`session/unique_id.rs`).
    pub unique_ids: OnceLock<IdParams>,
}

/// A statement whose `pgdog.unique_id()` calls are parameters: each Bind
/// gets `ids` fresh ids after the client's `client_params` values.
#[derive(Debug)]
pub struct IdParams {
    pub client_params: usize,
    pub ids: usize,
    /// The client's text with the calls replaced by a literal id, which a
    /// Describe of the statement describes (the client's parameters only).
    pub describe: Arc<Statement>,
}

impl Statement {
    /// Whether it returns no rows, so that a row limit on its Execute
    /// changes nothing: known once its route was looked up (`false` before).
    pub fn returns_no_rows(&self) -> bool {
        let Some(Some(lookup)) = self.route.get() else {
            return false;
        };
        *self.rowless.get_or_init(|| {
            let sql = String::from_utf8_lossy(&self.query);
            router::rowless::returns_no_rows(&lookup.entry.summary, &sql)
        })
    }
}

/// The table's columns an INSERT that names none was bound with, and the
/// statement with them written in.
pub type WithColumns = (Arc<Vec<String>>, Arc<Statement>);

/// Above this many distinct statements the registry starts over; statements
/// already handed out stay valid (ids are never reused), new Parses of the
/// same text just get a new id.
const REGISTRY_LIMIT: usize = 100_000;

/// The process-wide statement registry.
#[derive(Debug, Default)]
pub struct Registry {
    inner: Mutex<RegistryInner>,
    /// Statements created so far (SHOW LISTS: `registered_statements`).
    registered: AtomicU64,
}

#[derive(Debug, Default)]
struct RegistryInner {
    /// By text, then by parameter types (almost always one entry): a hit
    /// needs no allocation, which matters for clients that Parse an unnamed
    /// statement before every query.
    by_text: HashMap<Bytes, Vec<Arc<Statement>>>,
    /// Statements prepared with SQL PREPARE, by type list and text
    /// ([`SqlStatement::key`]).
    sql: HashMap<String, Arc<SqlStatement>>,
    next_id: u64,
}

impl Registry {
    /// The statement for this text and parameter types, created on first use.
    /// Its session effects are read from the statement's summary in
    /// `cache` (the AST cache, with the cluster's parser `engine`).
    pub fn get_or_insert(
        &self,
        query: &Bytes,
        param_types: &[u32],
        cache: &Cache,
        engine: ParserEngine,
    ) -> Arc<Statement> {
        let mut inner = lock(&self.inner);
        let known = inner
            .by_text
            .get(query)
            .and_then(|s| s.iter().find(|s| s.param_types == param_types));
        if let Some(statement) = known {
            return Arc::clone(statement);
        }
        if inner.by_text.len() >= REGISTRY_LIMIT {
            inner.by_text.clear();
        }
        inner.next_id += 1;
        let id = inner.next_id;
        self.registered.fetch_add(1, Ordering::Relaxed);
        let name = Bytes::from(prepared_set::server_name(id));
        let (leaves_state, settings) = state_effects(query, cache, engine);
        let mut parse = BytesMut::with_capacity(query.len() + 32);
        messages::parse(&mut parse, &name, query, param_types);
        let statement = Arc::new(Statement {
            id,
            name,
            parse: parse.freeze(),
            query: query.clone(),
            param_types: param_types.to_vec(),
            leaves_state,
            settings,
            route: OnceLock::new(),
            merge: OnceLock::new(),
            insert_rows: OnceLock::new(),
            split_parts: Mutex::new(PartStatements::default()),
            retired: AtomicBool::new(false),
            with_columns: Mutex::new(None),
            executes: OnceLock::new(),
            rowless: OnceLock::new(),
            unique_ids: OnceLock::new(),
        });
        inner
            .by_text
            .entry(query.clone())
            .or_default()
            .push(Arc::clone(&statement));
        statement
    }

    /// The statement SQL `PREPARE name <types> AS <body>` prepares on
    /// servers (`declared`: the types as casts name them), created on
    /// first use; its id is drawn with the protocol-level statements'.
    pub fn sql(&self, types: &str, body: &str, declared: &[Option<String>]) -> Arc<SqlStatement> {
        let key = SqlStatement::key(types, body);
        let mut inner = lock(&self.inner);
        if let Some(statement) = inner.sql.get(&key) {
            return Arc::clone(statement);
        }
        if inner.sql.len() >= REGISTRY_LIMIT {
            inner.sql.clear();
        }
        inner.next_id += 1;
        let statement = Arc::new(SqlStatement::new(
            inner.next_id,
            types,
            body,
            declared.to_vec(),
        ));
        inner.sql.insert(key, Arc::clone(&statement));
        statement
    }

    /// New Parses of statement `id`'s text get a new statement (its server
    /// copies are stale). Clients that hold `id` keep it, as on Postgres.
    pub fn retire(&self, id: u64) {
        let mut inner = lock(&self.inner);
        let emptied = inner.by_text.iter_mut().find_map(|(text, statements)| {
            let at = statements.iter().position(|s| s.id == id)?;
            statements
                .swap_remove(at)
                .retired
                .store(true, Ordering::Release);
            Some(text.clone()).filter(|_| statements.is_empty())
        });
        if let Some(text) = emptied {
            inner.by_text.remove(&text);
        }
    }

    /// Every statement is retired (the schema changed).
    pub fn retire_all(&self) {
        let mut inner = lock(&self.inner);
        for statement in inner.by_text.values().flatten() {
            statement.retired.store(true, Ordering::Release);
        }
        inner.by_text.clear();
        inner.sql.clear();
    }

    /// Statements created so far.
    pub fn registered(&self) -> u64 {
        self.registered.load(Ordering::Relaxed)
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).by_text.values().map(Vec::len).sum()
    }

    /// Every statement handed out to new Parses, by id (SHOW
    /// PREPARED_STATEMENTS).
    pub fn statements(&self) -> Vec<Arc<Statement>> {
        let mut all: Vec<_> = lock(&self.inner)
            .by_text
            .values()
            .flatten()
            .cloned()
            .collect();
        all.sort_by_key(|s| s.id);
        all
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What running `query` does to the session: whether it leaves untracked
/// state, and the setting changes to track (from its summary in `cache`).
fn state_effects(
    query: &Bytes,
    cache: &Cache,
    engine: ParserEngine,
) -> (bool, Option<Vec<ParamChange>>) {
    let sql = String::from_utf8_lossy(query);
    let keywords = session_effects::classify(sql.as_bytes());
    if !keywords.tracked {
        return (keywords.leaves_state, None);
    }
    match cache.lookup(&sql, engine) {
        Ok(lookup) => {
            let changes =
                session_effects::session_changes(&lookup.entry.summary, &lookup.entry.text);
            let settings = Some(changes.settings).filter(|s| !s.is_empty());
            let leaves = changes.untracked || changes.discard_all || keywords.leaves_state;
            (leaves, settings)
        }
        Err(_) => (true, None),
    }
}

/// One client's statement names.
#[derive(Debug, Default)]
pub struct ClientStatements {
    by_name: HashMap<Bytes, Arc<Statement>>,
    /// The name found last, with its statement: a driver binds the same
    /// few statements over and over, and comparing the name skips hashing
    /// it (SipHash: the names are the client's). Forgotten on any change.
    /// Weak, so that SHOW PREPARED_STATEMENTS's `used_by` (strong
    /// references) still counts clients.
    last: Option<(Bytes, Weak<Statement>)>,
}

impl ClientStatements {
    pub fn get(&mut self, name: &[u8]) -> Option<Arc<Statement>> {
        if let Some((last, statement)) = &self.last {
            if last[..] == *name {
                // Alive: the map holds it while it is remembered.
                return statement.upgrade();
            }
        }
        let (key, statement) = self.by_name.get_key_value(name)?;
        self.last = Some((key.clone(), Arc::downgrade(statement)));
        Some(Arc::clone(statement))
    }

    /// [`get`](Self::get) without remembering the name.
    pub fn find(&self, name: &[u8]) -> Option<&Arc<Statement>> {
        self.by_name.get(name)
    }

    /// Bind `name` to `statement`. A named statement that already exists is
    /// an error in Postgres (42P05); the unnamed one is replaced.
    pub fn insert(&mut self, name: Bytes, statement: Arc<Statement>) -> Result<(), ClientError> {
        if !name.is_empty() && self.by_name.contains_key(&name) {
            return Err(ClientError::new(
                sqlstate::DUPLICATE_PREPARED_STATEMENT,
                format!(
                    "prepared statement \"{}\" already exists",
                    String::from_utf8_lossy(&name)
                ),
            ));
        }
        self.last = None;
        self.by_name.insert(name, statement);
        Ok(())
    }

    pub fn remove(&mut self, name: &[u8]) -> Option<Arc<Statement>> {
        self.last = None;
        self.by_name.remove(name)
    }

    /// Forget `name` if it still means statement `id` (its Parse failed).
    pub fn remove_if_id(&mut self, name: &[u8], id: u64) {
        if self.by_name.get(name).is_some_and(|s| s.id == id) {
            self.remove(name);
        }
    }

    pub fn clear(&mut self) {
        self.last = None;
        self.by_name.clear();
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// What a prepared statement's rows need on several shards, planned once.
#[derive(Debug, Clone)]
pub enum StatementMerge {
    Concatenated,
    /// Merged by `plan`; the shards run `shard_statement` when the plan
    /// rewrites the statement.
    Merged {
        plan: Arc<MergePlan>,
        shard_statement: Option<Arc<Statement>>,
    },
    Refused(ClientError),
}

/// A statement's VALUES rows as read for splitting, or why they cannot be.
pub type InsertRowsRead = Result<Arc<InsertRows>, SplitError>;

#[cfg(test)]
mod tests {
    use super::*;

    fn get(registry: &Registry, query: &Bytes, types: &[u32]) -> Arc<Statement> {
        let cache = Cache::new(100, 1 << 20);
        registry.get_or_insert(query, types, &cache, ParserEngine::default())
    }

    #[test]
    fn session_effects_come_from_the_summary() {
        let registry = Registry::default();
        let set = get(&registry, &Bytes::from_static(b"SET work_mem = '1MB'"), &[]);
        assert!(!set.leaves_state);
        assert_eq!(
            set.settings,
            Some(vec![ParamChange::Set {
                name: "work_mem".into(),
                sql: "SET work_mem = '1MB'".into()
            }])
        );
        let local = get(
            &registry,
            &Bytes::from_static(b"SET LOCAL work_mem = '1MB'"),
            &[],
        );
        assert_eq!(
            (local.leaves_state, local.settings.is_none()),
            (false, true)
        );
        let untracked = b"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY";
        let untracked = get(&registry, &Bytes::from_static(untracked), &[]);
        assert!(untracked.leaves_state);
        let listen = get(&registry, &Bytes::from_static(b"LISTEN jobs"), &[]);
        assert!(listen.leaves_state);
    }

    #[test]
    fn same_text_same_statement() {
        let registry = Registry::default();
        let q = Bytes::from_static(b"SELECT $1");
        let a = get(&registry, &q, &[]);
        let b = get(&registry, &q, &[]);
        let c = get(&registry, &q, &[23]);
        assert_eq!(a.id, b.id);
        assert_ne!(a.id, c.id);
        assert_eq!(&a.name[..], format!("__pgshard_{}", a.id).as_bytes());
        assert_eq!(a.parse[0], b'P');
    }

    #[test]
    fn retired_statements_are_not_handed_out_again() {
        let registry = Registry::default();
        let q = Bytes::from_static(b"SELECT x FROM t WHERE $1::int = 1");
        let other = Bytes::from_static(b"SELECT 2");
        let a = get(&registry, &q, &[]);
        let b = get(&registry, &other, &[]);
        registry.retire(a.id);
        let c = get(&registry, &q, &[]);
        assert_ne!(a.id, c.id);
        assert_eq!(get(&registry, &other, &[]).id, b.id);
        registry.retire(9_999);
        registry.retire_all();
        assert!(registry.is_empty());
        assert_ne!(get(&registry, &other, &[]).id, b.id);
    }

    #[test]
    fn named_statements_cannot_be_redefined() {
        let registry = Registry::default();
        let s = get(&registry, &Bytes::from_static(b"SELECT 1"), &[]);
        let mut client = ClientStatements::default();
        client
            .insert(Bytes::from_static(b"s1"), Arc::clone(&s))
            .unwrap();
        assert!(client
            .insert(Bytes::from_static(b"s1"), Arc::clone(&s))
            .is_err());
        client.insert(Bytes::new(), Arc::clone(&s)).unwrap();
        client.insert(Bytes::new(), s).unwrap();
        assert_eq!(client.len(), 2);
    }

    #[test]
    fn the_name_found_last_never_outlives_a_change() {
        let registry = Registry::default();
        let one = get(&registry, &Bytes::from_static(b"SELECT 1"), &[]);
        let two = get(&registry, &Bytes::from_static(b"SELECT 2"), &[]);
        let mut client = ClientStatements::default();
        let name = Bytes::from_static(b"s1");
        client.insert(name.clone(), Arc::clone(&one)).unwrap();
        client.insert(Bytes::new(), Arc::clone(&one)).unwrap();
        let id_of = |client: &mut ClientStatements, name: &[u8]| client.get(name).map(|s| s.id);
        // Found, then found again by the memo, which holds no strong
        // reference (SHOW PREPARED_STATEMENTS counts clients by them).
        let held = Arc::strong_count(&one);
        assert_eq!(id_of(&mut client, b"s1"), Some(one.id));
        assert_eq!(id_of(&mut client, b"s1"), Some(one.id));
        assert_eq!(Arc::strong_count(&one), held);
        assert_eq!(id_of(&mut client, b"s"), None);
        assert_eq!(id_of(&mut client, b"s1x"), None);
        // The unnamed statement replaced while remembered.
        assert_eq!(id_of(&mut client, b""), Some(one.id));
        client.insert(Bytes::new(), Arc::clone(&two)).unwrap();
        assert_eq!(id_of(&mut client, b""), Some(two.id));
        // Closed, failed, DISCARD ALL: gone at once.
        assert_eq!(id_of(&mut client, b"s1"), Some(one.id));
        client.remove(b"s1");
        assert_eq!(id_of(&mut client, b"s1"), None);
        client.insert(name.clone(), Arc::clone(&two)).unwrap();
        assert_eq!(id_of(&mut client, b"s1"), Some(two.id));
        client.remove_if_id(b"s1", two.id);
        assert_eq!(id_of(&mut client, b"s1"), None);
        client.insert(name, Arc::clone(&one)).unwrap();
        assert_eq!(id_of(&mut client, b"s1"), Some(one.id));
        client.clear();
        assert_eq!(id_of(&mut client, b"s1"), None);
        assert!(client.is_empty());
    }
}
