//! The local two-phase commit decision log: an append-only file per
//! process start in `two_phase_commit_wal_dir`, `decisions-<instance>.log`.
//!
//! One record per line: 16 hex digits (the first 8 bytes of the SHA-256 of
//! the rest of the line), a space, then the record:
//! - `commit <txn> <database> <shard>,<shard>,...`: the decider committed;
//!   fsynced before any `COMMIT PREPARED` is sent;
//! - `done <txn>`: every prepared part was committed (not fsynced: losing
//!   it only makes recovery look again).
//!
//! A line whose checksum does not match (a write torn by a crash) is
//! skipped. Recovery reads every file in the directory: a commit without
//! its `done` is committed on its shards without asking the decider; a
//! file of another instance with nothing pending is removed. The shards'
//! decision table stays the source of truth (`two_phase.rs`): the log is
//! what lets this instance finish its own commits after a restart without
//! it, and a record of what it decided.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

/// A commit the log says was decided and not finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub txn: String,
    pub database: String,
    pub shards: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct DecisionLog {
    dir: PathBuf,
    file: Arc<Mutex<Option<(PathBuf, File)>>>,
}

impl DecisionLog {
    /// The log in `dir`; the directory and the file are created on the
    /// first record.
    pub fn open(dir: &Path) -> DecisionLog {
        DecisionLog {
            dir: dir.to_owned(),
            file: Arc::new(Mutex::new(None)),
        }
    }

    /// Append `commit` for `txn` and fsync it (on a blocking thread).
    pub async fn commit(
        &self,
        instance: &str,
        txn: &str,
        database: &str,
        shards: &[usize],
    ) -> std::io::Result<()> {
        let shards: Vec<String> = shards.iter().map(usize::to_string).collect();
        let record = format!("commit {txn} {database} {}", shards.join(","));
        self.append(instance, record, true).await
    }

    /// Append `done` for `txn` (no fsync).
    pub async fn done(&self, instance: &str, txn: &str) -> std::io::Result<()> {
        self.append(instance, format!("done {txn}"), false).await
    }

    async fn append(&self, instance: &str, record: String, sync: bool) -> std::io::Result<()> {
        let line = format!("{} {record}\n", checksum(&record));
        let path = self.dir.join(format!("decisions-{instance}.log"));
        let file = Arc::clone(&self.file);
        let write = move || {
            let mut guard = crate::state::lock(&file);
            if guard.is_none() {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let opened = OpenOptions::new().create(true).append(true).open(&path)?;
                *guard = Some((path, opened));
            }
            let Some((_, file)) = guard.as_mut() else {
                return Err(std::io::Error::other("decision log not open"));
            };
            file.write_all(line.as_bytes())?;
            if sync {
                file.sync_data()?;
            }
            Ok(())
        };
        tokio::task::spawn_blocking(write)
            .await
            .map_err(std::io::Error::other)?
    }

    /// Every commit the directory's logs record without its `done` (in
    /// any of them), with the file it is in.
    pub fn pending(&self) -> Vec<(PathBuf, Pending)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut logs = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let is_log = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("decisions-") && n.ends_with(".log"));
            if let (true, Ok(text)) = (is_log, std::fs::read_to_string(&path)) {
                logs.push((path, text));
            }
        }
        read_pending(&logs)
    }

    /// Remove the logs of other instances that have nothing pending.
    pub fn remove_finished(&self, keep_instance: &str) {
        let pending: Vec<PathBuf> = self.pending().into_iter().map(|(p, _)| p).collect();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let own = format!("decisions-{keep_instance}.log");
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("decisions-") && name != own && !pending.contains(&path) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

fn checksum(record: &str) -> String {
    let digest = Sha256::digest(record.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The commits of the logs' texts that have no `done` in any of them, in
/// log order.
fn read_pending(logs: &[(PathBuf, String)]) -> Vec<(PathBuf, Pending)> {
    let mut open: BTreeMap<String, (usize, PathBuf, Pending)> = BTreeMap::new();
    let mut done = Vec::new();
    let lines = logs
        .iter()
        .flat_map(|(path, text)| text.lines().map(move |line| (path, line)));
    for (at, (path, line)) in lines.enumerate() {
        let Some((sum, record)) = line.split_once(' ') else {
            continue;
        };
        if checksum(record) != sum {
            continue;
        }
        let words: Vec<&str> = record.split(' ').collect();
        match words.as_slice() {
            ["commit", txn, database, shards] => {
                let shards = shards.split(',').filter_map(|s| s.parse().ok()).collect();
                let pending = Pending {
                    txn: (*txn).to_owned(),
                    database: (*database).to_owned(),
                    shards,
                };
                open.insert((*txn).to_owned(), (at, path.clone(), pending));
            }
            ["done", txn] => done.push((*txn).to_owned()),
            _ => {}
        }
    }
    for txn in done {
        open.remove(&txn);
    }
    let mut pending: Vec<_> = open.into_values().collect();
    pending.sort_by_key(|(at, _, _)| *at);
    pending.into_iter().map(|(_, path, p)| (path, p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commits_without_done_are_pending_and_torn_lines_skipped() {
        let dir = std::env::temp_dir().join(format!("pgshard-log-{}", rand::random::<u32>()));
        let log = DecisionLog::open(&dir);
        log.commit("aaaa", "aaaa_1", "db", &[1, 2]).await.unwrap();
        log.commit("aaaa", "aaaa_2", "db", &[0]).await.unwrap();
        log.done("aaaa", "aaaa_1").await.unwrap();
        let path = dir.join("decisions-aaaa.log");
        let pending = log.pending();
        assert_eq!(
            pending,
            vec![(
                path.clone(),
                Pending {
                    txn: "aaaa_2".into(),
                    database: "db".into(),
                    shards: vec![0],
                }
            )]
        );
        // Another instance keeps a log with something pending.
        log.remove_finished("bbbb");
        assert!(path.exists());
        log.done("aaaa", "aaaa_2").await.unwrap();
        // Records a crash tore, or with a wrong checksum, do not count.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"0123456789abcdef commit aaaa_3 db 1\n")
            .unwrap();
        file.write_all(b"deadbeef").unwrap();
        assert_eq!(log.pending(), vec![]);
        log.remove_finished("bbbb");
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(dir);
    }
}
