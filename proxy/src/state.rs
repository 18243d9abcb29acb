//! The top layer's state: what sessions share (`session::Shared`, which
//! this dereferences to) plus what only the listener and the admin console
//! use: the client registry (cancel keys, SHOW CLIENTS, KILL), the config
//! files RELOAD reads, SCRAM secrets derived from configured passwords, and
//! the shutdown that wakes every session.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use router::config::Config;

use crate::auth::scram::ScramSecret;
use crate::lock::lock;
use crate::session::{ClientInfo, Shared};

/// Shared by all sessions, the listener and the admin console.
#[derive(Debug)]
pub struct State {
    shared: Arc<Shared>,
    clients: Mutex<HashMap<u32, Arc<ClientInfo>>>,
    pub started: Instant,
    /// The files RELOAD reads (none when the config came from memory).
    pub config_paths: Option<(PathBuf, PathBuf)>,
    /// The shard moves (`MOVE SHARD`, `SHOW MOVES`) and the mover's queue.
    pub moves: Arc<crate::reshard::Moves>,
    /// SCRAM secrets derived from configured passwords (4096 HMAC rounds
    /// each: derived once, not per login), by password.
    scram_secrets: Mutex<HashMap<String, Arc<ScramSecret>>>,
    mock_key: [u8; 32],
}

impl Deref for State {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl State {
    /// State for `config`; must run inside a tokio runtime (pools spawn
    /// their maintenance tasks).
    pub fn new(config: Arc<Config>, config_paths: Option<(PathBuf, PathBuf)>) -> Arc<State> {
        let config_file = config_paths.as_ref().map(|(pgdog, _)| pgdog.clone());
        Arc::new(State {
            shared: Arc::new(Shared::new(config)),
            clients: Mutex::new(HashMap::new()),
            started: Instant::now(),
            config_paths,
            moves: Arc::new(crate::reshard::Moves::new(config_file)),
            scram_secrets: Mutex::new(HashMap::new()),
            mock_key: rand::random(),
        })
    }

    /// What sessions share, for a new session.
    pub fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.shared)
    }

    /// A SCRAM secret for a user that does not exist: its salt is the same
    /// on every attempt (derived from the name and a per-process key, as
    /// Postgres does) so that salts do not reveal which users exist; the
    /// keys are random, so no proof ever matches.
    pub fn mock_scram_secret(&self, user: &str) -> ScramSecret {
        use sha2::Digest;
        let digest = sha2::Sha256::new()
            .chain_update(self.mock_key)
            .chain_update(user.as_bytes())
            .finalize();
        ScramSecret {
            iterations: crate::auth::scram::DEFAULT_ITERATIONS,
            salt: digest[..16].to_vec(),
            stored_key: rand::random(),
            server_key: rand::random(),
        }
    }

    /// The SCRAM secret for a configured password.
    pub fn scram_secret(&self, password: &str) -> Arc<ScramSecret> {
        if let Some(secret) = lock(&self.scram_secrets).get(password) {
            return Arc::clone(secret);
        }
        let secret = Arc::new(ScramSecret::generate(password));
        lock(&self.scram_secrets).insert(password.to_owned(), Arc::clone(&secret));
        secret
    }

    /// Register a client under a fresh cancel key.
    pub fn register_client(&self, mut info: ClientInfo) -> Arc<ClientInfo> {
        let mut clients = lock(&self.clients);
        loop {
            let process_id = rand::random::<u32>() & 0x7fff_ffff;
            if process_id != 0 && !clients.contains_key(&process_id) {
                info.process_id = process_id;
                info.secret = rand::random::<u32>();
                let info = Arc::new(info);
                clients.insert(process_id, Arc::clone(&info));
                return info;
            }
        }
    }

    pub fn unregister_client(&self, process_id: u32) {
        lock(&self.clients).remove(&process_id);
    }

    pub fn client(&self, process_id: u32) -> Option<Arc<ClientInfo>> {
        lock(&self.clients).get(&process_id).cloned()
    }

    pub fn clients(&self) -> Vec<Arc<ClientInfo>> {
        let mut all: Vec<_> = lock(&self.clients).values().cloned().collect();
        all.sort_by_key(|c| c.connected_at);
        all
    }

    pub fn client_count(&self) -> usize {
        lock(&self.clients).len()
    }

    /// Start shutting down: no new clients, and sessions without a server
    /// end (each is woken to see it).
    pub fn shut_down(&self) {
        self.gate.shutdown.send_replace(true);
        for client in self.clients() {
            client.interrupt.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(tables: &str) -> Arc<Config> {
        let pgdog = format!(
            "[[databases]]\nname = \"db\"\nhost = \"127.0.0.1\"\nshard = 0\n\
             [[databases]]\nname = \"db\"\nhost = \"127.0.0.1\"\nshard = 1\n{tables}"
        );
        let users = "[[users]]\nname = \"u\"\ndatabase = \"db\"\npassword = \"p\"\n";
        match Config::from_toml(&pgdog, users) {
            Ok(config) => Arc::new(config),
            Err(err) => panic!("test config: {err}"),
        }
    }

    fn sharding(state: &State) -> Arc<router::sharding::Sharding> {
        match state.config().clusters.get("db") {
            Some(cluster) => Arc::clone(&cluster.sharding),
            None => panic!("no cluster db"),
        }
    }

    #[tokio::test]
    async fn reloads_keep_unchanged_sharding_and_clear_the_cache_on_changes() {
        let keyed = "[[sharded_tables]]\ndatabase = \"db\"\nname = \"t\"\ncolumn = \"id\"\n";
        let state = State::new(config(keyed), None);
        let before = sharding(&state);
        assert!(state
            .cache
            .lookup(
                "SELECT * FROM t WHERE id = $1",
                router::sharding::ParserEngine::ZeroCopy,
            )
            .is_ok());
        // The same model in a new config: the same Arc, the cache kept.
        state.apply_config(config(keyed));
        assert!(Arc::ptr_eq(&before, &sharding(&state)));
        assert_eq!(state.cache.stats().entries, 1);
        // Another model: entries would route with plans for the old one.
        state.apply_config(config(&keyed.replace("\"id\"", "\"other\"")));
        assert!(!Arc::ptr_eq(&before, &sharding(&state)));
        assert_eq!(state.cache.stats().entries, 0);
    }
}
