//! The generator under a clock that jumps back, and the node id's sources.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use router::unique_id::EPOCH_MS;

use super::*;

/// A clock that advances 1 ms every 10 reads, and after 2000 reads jumps
/// back 300 ms once (from then on it also advances with real time, so that
/// the generator's waits end).
#[derive(Debug)]
struct JumpingClock {
    reads: AtomicU64,
    started: std::time::Instant,
}

impl Clock for JumpingClock {
    fn now_ms(&self) -> u64 {
        let reads = self.reads.fetch_add(1, Ordering::Relaxed);
        let base = EPOCH_MS + 10_000 + reads / 10;
        if reads >= 2000 {
            base - 300 + self.started.elapsed().as_millis() as u64
        } else {
            base
        }
    }
}

#[test]
fn ids_never_repeat_when_the_clock_jumps_back() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ids = UniqueIds::new(
        UniqueIdFunction::Compact,
        3,
        0,
        Arc::new(JumpingClock {
            reads: AtomicU64::new(0),
            started: std::time::Instant::now(),
        }),
    );
    let taken = runtime.block_on(ids.take(10_000)).unwrap();
    assert!(taken.windows(2).all(|w| w[0] < w[1]), "not increasing");
    let distinct: BTreeSet<_> = taken.iter().collect();
    assert_eq!(distinct.len(), taken.len());
}

#[test]
fn sessions_share_one_sequence() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let ids = Arc::new(UniqueIds::new(
        UniqueIdFunction::Standard,
        1,
        0,
        Arc::new(SystemClock),
    ));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let ids = Arc::clone(&ids);
            runtime.spawn(async move { ids.take(5_000).await.unwrap() })
        })
        .collect();
    let mut all = BTreeSet::new();
    for task in tasks {
        let taken = runtime.block_on(task).unwrap();
        assert!(taken.windows(2).all(|w| w[0] < w[1]));
        all.extend(taken);
    }
    assert_eq!(all.len(), 40_000);
}

#[test]
fn node_id_from_config_then_environment() {
    let mut general = General::default();
    assert_eq!(node_id(&general, None), Ok(0));
    assert_eq!(node_id(&general, Some("pgdog-7")), Ok(7));
    assert_eq!(node_id(&general, Some("12")), Ok(12));
    assert_eq!(
        node_id(&general, Some("pgdog")),
        Err(NodeIdError::NotANumber("pgdog".into()))
    );
    assert!(matches!(
        node_id(&general, Some("x-1024")),
        Err(NodeIdError::TooLarge(..))
    ));
    general.node_id = Some(5);
    assert_eq!(node_id(&general, Some("pgdog-7")), Ok(5));
}
