#!/usr/bin/env bash
# A local demo cluster: two real Postgres shards (data in .demo/) behind pgshard
# on 127.0.0.1:6432, with a table `orders` sharded by tenant_id (each shard holds
# only its own hash partition). Installs what is missing, builds, prints how to
# connect, a keyed insert/select routed to one shard, how to see which shard got
# the rows (/* pgdog_shard: N */), and pgbench commands (keyed orders on the
# sharded cluster; pgbench's own tables on the unsharded `pgbench` cluster), and
# runs until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --release --locked -p integration --bin pgshard-demo
exec target/release/pgshard-demo
