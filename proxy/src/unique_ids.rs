//! The instance's `pgdog.unique_id()` generator: `router::unique_id`'s state
//! machine behind a lock, read with a clock that tests replace, waiting when
//! the generator is too far ahead of the clock. Built once at start (its
//! node id and layout are not reloaded: a change would need a restart to be
//! safe).

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use router::config::General;
use router::unique_id::{Generator, Next, UniqueIdError, UniqueIdFunction};

use crate::lock::lock;

/// Milliseconds since 1970; tests give a clock that goes backwards.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64)
    }
}

/// Why the node id could not be decided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeIdError {
    #[error("NODE_ID={0:?} does not end with a number (PgDog's form: name-<number>)")]
    NotANumber(String),
    #[error(
        "NODE_ID={0:?} gives node id {1}, above {2}, the largest of unique_id_function = \"{3}\""
    )]
    TooLarge(String, u64, u64, &'static str),
}

/// The node id: `general.node_id`, else the number ending `NODE_ID` (the
/// environment variable's value, PgDog's convention), else 0.
pub fn node_id(general: &General, env: Option<&str>) -> Result<u64, NodeIdError> {
    if let Some(node) = general.node_id {
        return Ok(node);
    }
    let Some(env) = env else { return Ok(0) };
    let digits = env.rsplit('-').next().unwrap_or(env);
    let node: u64 = digits
        .parse()
        .map_err(|_| NodeIdError::NotANumber(env.to_owned()))?;
    let function = general.unique_id_function;
    if node > function.max_node() {
        return Err(NodeIdError::TooLarge(
            env.to_owned(),
            node,
            function.max_node(),
            function.as_str(),
        ));
    }
    Ok(node)
}

/// The generator every session of the instance takes ids from.
#[derive(Debug)]
pub struct UniqueIds {
    generator: Mutex<Generator>,
    clock: Arc<dyn Clock>,
    node: u64,
    function: UniqueIdFunction,
    /// Why ids are refused: another instance holds this node id
    /// (`node_lock.rs`).
    conflict: OnceLock<String>,
}

impl UniqueIds {
    pub fn new(function: UniqueIdFunction, node: u64, min: u64, clock: Arc<dyn Clock>) -> Self {
        UniqueIds {
            generator: Mutex::new(Generator::new(function, node, min)),
            clock,
            node,
            function,
            conflict: OnceLock::new(),
        }
    }

    /// Refuse ids from now on, for `why`.
    pub fn set_conflict(&self, why: String) {
        let _ = self.conflict.set(why);
    }

    /// Why ids are refused, if they are.
    pub fn conflict(&self) -> Option<&str> {
        self.conflict.get().map(String::as_str)
    }

    pub fn node(&self) -> u64 {
        self.node
    }

    pub fn function(&self) -> UniqueIdFunction {
        self.function
    }

    /// The next id, waiting while the generator is too far ahead of the
    /// clock (it went backwards, or a millisecond's ids ran out).
    pub async fn next(&self) -> Result<i64, UniqueIdError> {
        loop {
            let next = lock(&self.generator).next(self.clock.now_ms())?;
            match next {
                Next::Id(id) => return Ok(id),
                Next::Wait(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            }
        }
    }

    /// `count` ids, increasing.
    pub async fn take(&self, count: usize) -> Result<Vec<i64>, UniqueIdError> {
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            ids.push(self.next().await?);
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests;
