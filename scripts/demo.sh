#!/usr/bin/env bash
# A local demo cluster: two real Postgres shards (data in .demo/) behind pgshard
# on 127.0.0.1:6432. Installs what is missing, builds, prints the psql command to
# connect, and runs until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --release --locked -p integration --bin pgshard-demo
exec target/release/pgshard-demo
