//! The cluster view's answers and refreshes, one line per case.

use super::*;

fn view(mode: PoolerMode) -> ClusterView {
    let sharding = Arc::new(Sharding::default());
    let pools: ClusterPools = Arc::new(Vec::new());
    let deadline = crate::pool::clusters::freshness::Freshness::default().deadline("c");
    ClusterView::new(
        (pools, 3, deadline),
        mode,
        (sharding, ParserEngine::ZeroCopy),
        100,
    )
}

#[test]
fn the_pooler_mode_answers_one_way() {
    // Mode, then (transaction mode, session mode).
    let cases = [
        (PoolerMode::Transaction, (true, false)),
        (PoolerMode::Session, (false, true)),
    ];
    for (mode, expected) in cases {
        let view = view(mode);
        assert_eq!(
            (view.transaction_mode(), view.session_mode()),
            expected,
            "{mode:?}"
        );
    }
}

#[test]
fn a_reload_is_taken_once_per_generation() {
    let mut view = view(PoolerMode::Transaction);
    // Generation seen, then whether the view is stale.
    let cases = [(3, false), (4, true), (2, true)];
    for (generation, stale) in cases {
        assert_eq!(view.stale(generation), stale, "{generation}");
    }
    let reloaded = Arc::new(Sharding::default());
    view.reloaded(
        4,
        None,
        (Arc::clone(&reloaded), ParserEngine::PgQueryProtobuf),
    );
    assert!(!view.stale(4));
    assert!(Arc::ptr_eq(view.sharding(), &reloaded));
    assert_eq!(view.engine(), ParserEngine::PgQueryProtobuf);
    assert_eq!(
        view.shards(),
        0,
        "no pools in the new config: the old ones stay"
    );
    assert!(!view.has_replicas());
    assert_eq!(view.prepared_limit(), 100);
}

#[test]
fn an_own_catalog_is_routed_by_until_it_is_dropped() {
    let mut view = view(PoolerMode::Transaction);
    let config = Arc::clone(view.sharding());
    view.own_catalog_read(Sharding::default());
    assert!(!Arc::ptr_eq(view.sharding(), &config));
    assert!(!view.stale(3), "an own catalog is no reload");
    view.own_catalog_dropped((Arc::clone(&config), ParserEngine::ZeroCopy));
    assert!(Arc::ptr_eq(view.sharding(), &config));
}
