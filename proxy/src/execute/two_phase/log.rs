//! The local two-phase commit decision log, kept only when
//! `two_phase_commit_wal_dir` is set: append-only files there,
//! `decisions-<instance>-<n>.log`, a new one (`n` + 1) once one holds
//! `two_phase_commit_wal_segment_size` bytes.
//!
//! One record per line: 16 hex digits (the first 8 bytes of the SHA-256 of
//! the rest of the line), a space, then the record:
//! - `commit <txn> <database> <shard>,<shard>,...`: the decider committed;
//!   written while `COMMIT PREPARED` runs on the prepared shards (the
//!   decider's committed row is the durable decision, so the record need
//!   not come first), and fsynced before the client's COMMIT is answered
//!   only with `two_phase_commit_wal_fsync`; else it is in the operating
//!   system's hands when the COMMIT is answered (a crash of pgshard's
//!   process loses nothing written, one of its machine the last records);
//! - `done <txn>`: every prepared part was committed (never fsynced:
//!   losing it only makes recovery look again).
//!
//! Records are written by one thread per process, in batches: whatever
//! sessions append while the thread writes (and fsyncs) the previous batch
//! goes out in the next write, with one fsync for every `commit` in it, so
//! concurrent two-phase commits share their fsyncs (group commit) instead
//! of queueing for one each.
//!
//! A line whose checksum does not match (a write torn by a crash) is
//! skipped. Recovery reads every file in the directory: a commit without
//! its `done` is committed on its shards without asking the decider; a
//! file of another instance with nothing pending is removed, and so is one
//! of this instance's full segments once nothing in it is pending. The
//! shards' decision table stays the source of truth (`two_phase.rs`): the
//! log is what lets this instance finish its own commits after a restart
//! without it, and a record of what it decided.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

/// A commit the log says was decided and not finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub txn: String,
    pub database: String,
    pub shards: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct DecisionLog {
    /// `None`: no log (`two_phase_commit_wal_dir` unset).
    dir: Option<PathBuf>,
    segment_size: u64,
    /// Whether a `commit` record is fsynced before it is answered.
    fsync: bool,
    /// The writing thread's queue, started with the first record.
    writer: Arc<Mutex<Option<mpsc::Sender<Append>>>>,
}

/// A failed write of a batch, told to each record's writer (an
/// `io::Error` cannot be cloned): its kind and its words.
#[derive(Debug, Clone)]
struct WriteFailed(std::io::ErrorKind, String);

/// A record for the writing thread: its line, whether it must be on disk
/// before the reply, and where the outcome goes.
struct Append {
    line: String,
    sync: bool,
    reply: oneshot::Sender<Result<(), WriteFailed>>,
}

impl DecisionLog {
    /// The log in `dir`, in segments of about `segment_size` bytes, its
    /// `commit` records fsynced before they are answered if `fsync`; the
    /// directory and the files are created with the first record.
    pub fn open(dir: &Path, segment_size: u64, fsync: bool) -> DecisionLog {
        DecisionLog {
            dir: Some(dir.to_owned()),
            segment_size: segment_size.max(1),
            fsync,
            writer: Arc::new(Mutex::new(None)),
        }
    }

    /// No log: nothing is written, nothing is pending.
    pub fn off() -> DecisionLog {
        DecisionLog {
            dir: None,
            segment_size: 1,
            fsync: false,
            writer: Arc::new(Mutex::new(None)),
        }
    }

    /// Whether records are kept at all.
    pub fn is_on(&self) -> bool {
        self.dir.is_some()
    }

    /// Append `commit` for `txn`; returns once it is written (and fsynced,
    /// when the log fsyncs).
    pub async fn commit(
        &self,
        instance: &str,
        txn: &str,
        database: &str,
        shards: &[usize],
    ) -> std::io::Result<()> {
        let shards: Vec<String> = shards.iter().map(usize::to_string).collect();
        let record = format!("commit {txn} {database} {}", shards.join(","));
        self.append(instance, record, self.fsync).await
    }

    /// Append `done` for `txn` (written, not fsynced).
    pub async fn done(&self, instance: &str, txn: &str) -> std::io::Result<()> {
        self.append(instance, format!("done {txn}"), false).await
    }

    async fn append(&self, instance: &str, record: String, sync: bool) -> std::io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let line = format!("{} {record}\n", checksum(&record));
        let (reply, outcome) = oneshot::channel();
        let append = Append { line, sync, reply };
        let sent = {
            let mut writer = crate::lock::lock(&self.writer);
            let sender = writer.get_or_insert_with(|| {
                let (sender, queue) = mpsc::channel();
                let segments = Segments {
                    dir: dir.clone(),
                    instance: instance.to_owned(),
                    size: self.segment_size,
                    current: None,
                };
                let spawned = std::thread::Builder::new()
                    .name("pgshard-2pc-log".into())
                    .spawn(move || segments.write_all(queue));
                if let Err(err) = spawned {
                    tracing::warn!(%err, "cannot start the two-phase commit log writer");
                }
                sender
            });
            sender.send(append)
        };
        if sent.is_err() {
            // The writer is gone (it could not start): start again next time.
            *crate::lock::lock(&self.writer) = None;
            return Err(std::io::Error::other("the decision log writer stopped"));
        }
        match outcome.await {
            Ok(result) => result.map_err(|WriteFailed(kind, what)| std::io::Error::new(kind, what)),
            Err(_) => Err(std::io::Error::other("the decision log writer stopped")),
        }
    }

    /// Every commit the directory's logs record without its `done` (in
    /// any of them), with the file it is in.
    pub fn pending(&self) -> Vec<(PathBuf, Pending)> {
        match &self.dir {
            Some(dir) => scan(dir, |_| true).pending,
            None => Vec::new(),
        }
    }

    /// Remove the logs of other instances that nothing pending is
    /// recorded in (see [`finished_segments`]).
    pub fn remove_finished(&self, keep_instance: &str) {
        let Some(dir) = &self.dir else {
            return;
        };
        let Scan { files, pending } = scan(dir, |_| true);
        let pending: Vec<PathBuf> = pending.into_iter().map(|(p, _)| p).collect();
        let own = format!("decisions-{keep_instance}-");
        let others: Vec<PathBuf> = files
            .into_iter()
            .filter(|path| !file_name(path).starts_with(&own))
            .collect();
        for path in finished_segments(others, &pending) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// Of some instances' segments, those that can go: per instance, the
/// segments before its first one that records a pending commit. Only a
/// prefix goes, because a later segment's `done` may answer an earlier
/// segment's `commit`: removing a segment of `done`s while an earlier one
/// stays would make its commits look pending again.
fn finished_segments(segments: Vec<PathBuf>, pending: &[PathBuf]) -> Vec<PathBuf> {
    let mut by_instance: BTreeMap<String, Vec<(u64, PathBuf)>> = BTreeMap::new();
    for path in segments {
        let (instance, number) = segment_of(&path);
        by_instance
            .entry(instance)
            .or_default()
            .push((number, path));
    }
    let mut finished = Vec::new();
    for (_, mut files) in by_instance {
        files.sort();
        finished.extend(
            files
                .into_iter()
                .map(|(_, path)| path)
                .take_while(|path| !pending.contains(path)),
        );
    }
    finished
}

/// The writing thread's files: this instance's segments.
struct Segments {
    dir: PathBuf,
    instance: String,
    size: u64,
    /// The segment being written: its number, file and size so far.
    current: Option<(u64, File, u64)>,
}

impl Segments {
    /// Write what comes, a batch at a time, until every sender is gone.
    fn write_all(mut self, queue: mpsc::Receiver<Append>) {
        while let Ok(first) = queue.recv() {
            let mut batch = vec![first];
            batch.extend(queue.try_iter());
            let text: String = batch.iter().map(|a| a.line.as_str()).collect();
            let sync = batch.iter().any(|a| a.sync);
            let result = self
                .write(text.as_bytes(), sync)
                .map_err(|e| WriteFailed(e.kind(), e.to_string()));
            for append in batch {
                let _ = append.reply.send(result.clone());
            }
        }
    }

    fn write(&mut self, bytes: &[u8], sync: bool) -> std::io::Result<()> {
        if self
            .current
            .as_ref()
            .is_none_or(|(_, _, len)| *len >= self.size)
        {
            self.next_segment()?;
        }
        let Some((_, file, len)) = self.current.as_mut() else {
            return Err(std::io::Error::other("no decision log segment"));
        };
        file.write_all(bytes)?;
        *len += bytes.len() as u64;
        if sync {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Start the next segment (after the highest one this instance has
    /// left in the directory), then remove this instance's earlier
    /// segments that nothing pending is recorded in.
    fn next_segment(&mut self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let prefix = format!("decisions-{}-", self.instance);
        let number = match &self.current {
            Some((n, _, _)) => n + 1,
            None => 1,
        };
        let path = self.dir.join(format!("{prefix}{number}.log"));
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let len = file.metadata()?.len();
        self.current = Some((number, file, len));
        let own = scan(&self.dir, |name| name.starts_with(&prefix));
        let pending: Vec<PathBuf> = own.pending.into_iter().map(|(p, _)| p).collect();
        let full: Vec<PathBuf> = own.files.into_iter().filter(|p| *p != path).collect();
        for old in finished_segments(full, &pending) {
            let _ = std::fs::remove_file(&old);
        }
        Ok(())
    }
}

/// What one read of the logs found: every log file (oldest first per
/// instance) and the commits recorded without their `done`.
struct Scan {
    files: Vec<PathBuf>,
    pending: Vec<(PathBuf, Pending)>,
}

/// Read the decision logs in `dir` whose file names `wanted` accepts, a
/// line at a time (a log is up to two segments of 16 MiB by default and
/// recovery reads it every interval: holding the text, or a record of
/// every commit in it, would make pgshard's memory jump each time). Only
/// the commits still open are kept: a `done` removes its commit as it is
/// read; a `done` read before its commit (another instance's commit that
/// this instance finished, in a file read later) is remembered until the
/// end.
fn scan(dir: &Path, wanted: impl Fn(&str) -> bool) -> Scan {
    let files = log_files(dir, wanted);
    let mut open: HashMap<String, (usize, usize, Pending)> = HashMap::new();
    let mut early: HashSet<String> = HashSet::new();
    let mut at = 0;
    let mut line = String::new();
    for (index, path) in files.iter().enumerate() {
        let Ok(file) = File::open(path) else {
            continue;
        };
        let mut reader = BufReader::new(file);
        line.clear();
        while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            at += 1;
            match parse(line.trim_end_matches('\n')) {
                Some(Record::Commit(pending)) => {
                    let done_already = early.remove(&pending.txn);
                    if !done_already {
                        open.insert(pending.txn.clone(), (at, index, pending));
                    }
                }
                Some(Record::Done(txn)) => {
                    let closed = open.remove(txn).is_some();
                    if !closed {
                        early.insert(txn.to_owned());
                    }
                }
                None => {}
            }
            line.clear();
        }
    }
    let mut pending: Vec<_> = open.into_values().collect();
    pending.sort_by_key(|(at, _, _)| *at);
    let pending = pending
        .into_iter()
        .filter_map(|(_, index, p)| Some((files.get(index)?.clone(), p)))
        .collect();
    Scan { files, pending }
}

/// The log files in `dir` whose names `wanted` accepts, ordered by
/// instance and then by segment number (as numbers: segment 10 after 9).
fn log_files(dir: &Path, wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, u64, PathBuf)> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = file_name(path);
            name.starts_with("decisions-") && name.ends_with(".log") && wanted(name)
        })
        .map(|path| {
            let (instance, number) = segment_of(&path);
            (instance, number, path)
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, _, path)| path).collect()
}

/// A log file's instance and segment number (0 when the name has none).
fn segment_of(path: &Path) -> (String, u64) {
    let name = file_name(path).trim_end_matches(".log");
    match name.rsplit_once('-') {
        Some((instance, n)) if n.bytes().all(|b| b.is_ascii_digit()) => {
            (instance.to_owned(), n.parse().unwrap_or(0))
        }
        _ => (name.to_owned(), 0),
    }
}

/// One record of a log.
enum Record<'a> {
    Commit(Pending),
    Done(&'a str),
}

/// A line's record; `None` for a line whose checksum does not match (torn
/// by a crash) or that says nothing known.
fn parse(line: &str) -> Option<Record<'_>> {
    let (sum, record) = line.split_once(' ')?;
    if !checksum_matches(record, sum) {
        return None;
    }
    let mut words = record.split(' ');
    match (words.next()?, words.next()?, words.next(), words.next()) {
        ("commit", txn, Some(database), Some(shards)) if words.next().is_none() => {
            Some(Record::Commit(Pending {
                txn: txn.to_owned(),
                database: database.to_owned(),
                shards: shards.split(',').filter_map(|s| s.parse().ok()).collect(),
            }))
        }
        ("done", txn, None, None) => Some(Record::Done(txn)),
        _ => None,
    }
}

fn checksum(record: &str) -> String {
    let digest = Sha256::digest(record.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `sum` is [`checksum`] of `record`, compared without making it.
fn checksum_matches(record: &str, sum: &str) -> bool {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(record.as_bytes());
    let sum = sum.as_bytes();
    sum.len() == 16
        && digest[..8].iter().enumerate().all(|(i, b)| {
            sum[2 * i] == HEX[usize::from(b >> 4)] && sum[2 * i + 1] == HEX[usize::from(b & 15)]
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commits_without_done_are_pending_and_torn_lines_skipped() {
        let dir = std::env::temp_dir().join(format!("pgshard-log-{}", rand::random::<u32>()));
        let log = DecisionLog::open(&dir, 16 * 1024 * 1024, true);
        log.commit("aaaa", "aaaa_1", "db", &[1, 2]).await.unwrap();
        log.commit("aaaa", "aaaa_2", "db", &[0]).await.unwrap();
        log.done("aaaa", "aaaa_1").await.unwrap();
        let path = dir.join("decisions-aaaa-1.log");
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

    /// Without `two_phase_commit_wal_fsync` a record is still written
    /// before it is answered (a crash of the process loses nothing); with
    /// no log nothing is written and nothing is pending.
    #[tokio::test]
    async fn unsynced_records_are_written_and_no_log_keeps_nothing() {
        let dir = std::env::temp_dir().join(format!("pgshard-log-{}", rand::random::<u32>()));
        let log = DecisionLog::open(&dir, 1 << 20, false);
        assert!(log.is_on());
        log.commit("dddd", "dddd_1", "db", &[1]).await.unwrap();
        let text = std::fs::read_to_string(dir.join("decisions-dddd-1.log")).unwrap();
        assert!(text.ends_with(" commit dddd_1 db 1\n"), "{text}");
        let pending: Vec<String> = log.pending().into_iter().map(|(_, p)| p.txn).collect();
        assert_eq!(pending, ["dddd_1"]);
        log.done("dddd", "dddd_1").await.unwrap();
        assert!(log.pending().is_empty());
        let off = DecisionLog::off();
        assert!(!off.is_on());
        off.commit("eeee", "eeee_1", "db", &[1]).await.unwrap();
        assert!(off.pending().is_empty());
        off.remove_finished("eeee");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Segments are read in number order (10 after 9), a `done` read
    /// before its commit (in another instance's file read later) still
    /// closes it, and a record with extra words is not a record.
    #[test]
    fn segments_read_in_number_order_and_early_dones_close_later_commits() {
        let dir = std::env::temp_dir().join(format!("pgshard-log-{}", rand::random::<u32>()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |record: &str| format!("{} {record}\n", checksum(record));
        let write = |name: &str, records: &[&str]| {
            let text: String = records.iter().map(|r| line(r)).collect();
            std::fs::write(dir.join(name), text).unwrap();
        };
        write("decisions-aaaa-9.log", &["commit aaaa_1 db 0,1"]);
        write(
            "decisions-aaaa-10.log",
            &["done aaaa_1", "commit aaaa_2 db 1"],
        );
        // bbbb's file sorts after aaaa's: aaaa finished bbbb_1.
        write(
            "decisions-aaaa-11.log",
            &["done bbbb_1", "commit aaaa_3 db 0 x"],
        );
        write(
            "decisions-bbbb-1.log",
            &["commit bbbb_1 db 0", "commit bbbb_2 db 0"],
        );
        let names: Vec<String> = log_files(&dir, |_| true)
            .iter()
            .map(|p| file_name(p).to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "decisions-aaaa-9.log",
                "decisions-aaaa-10.log",
                "decisions-aaaa-11.log",
                "decisions-bbbb-1.log"
            ]
        );
        let pending: Vec<(String, String)> = scan(&dir, |_| true)
            .pending
            .into_iter()
            .map(|(path, p)| (file_name(&path).to_owned(), p.txn))
            .collect();
        assert_eq!(
            pending,
            [
                ("decisions-aaaa-10.log".to_owned(), "aaaa_2".to_owned()),
                ("decisions-bbbb-1.log".to_owned(), "bbbb_2".to_owned())
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Many commits at once share fsyncs and all land; full segments go
    /// once nothing in them is pending, and what is pending survives the
    /// rotation.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_commits_all_land_and_full_segments_go() {
        let dir = std::env::temp_dir().join(format!("pgshard-log-{}", rand::random::<u32>()));
        let log = DecisionLog::open(&dir, 4096, true);
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move {
                    let txn = format!("cccc_{i}");
                    log.commit("cccc", &txn, "db", &[0, 1]).await.unwrap();
                    if i % 50 != 7 {
                        log.done("cccc", &txn).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let pending: Vec<String> = log.pending().into_iter().map(|(_, p)| p.txn).collect();
        let expected: Vec<String> = (0..200)
            .filter(|i| i % 50 == 7)
            .map(|i| format!("cccc_{i}"))
            .collect();
        let mut sorted = pending.clone();
        sorted.sort();
        let mut expected_sorted = expected.clone();
        expected_sorted.sort();
        assert_eq!(sorted, expected_sorted);
        // ~90 bytes a record: several segments were started.
        let files = log_files(&dir, |_| true);
        assert!(files.len() > 1, "{} segment(s)", files.len());
        // Finish the pending ones: the next rotation removes every full
        // segment, keeping the one being written.
        for txn in &expected {
            log.done("cccc", txn).await.unwrap();
        }
        for i in 0..100 {
            let txn = format!("cccc_x{i}");
            log.commit("cccc", &txn, "db", &[0]).await.unwrap();
            log.done("cccc", &txn).await.unwrap();
        }
        assert!(log.pending().is_empty());
        assert!(log_files(&dir, |_| true).len() <= 2);
        let _ = std::fs::remove_dir_all(dir);
    }
}
