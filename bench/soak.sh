#!/usr/bin/env bash
# A soak (issue 35 point 5): the mixed workload through one pgshard for a
# long time, with pgshard's memory, descriptors, server connections and
# latency sampled all along. Starts two shard Postgres servers (initdb in
# a temp dir, as the `postgres` user when run as root, free ports) and
# pgshard (release build) over them with two-phase commit on, then, for
# $DURATION seconds at once:
#   - pgbench's TPC-B script, its tables sharded (accounts and history by
#     aid, branches by bid, tellers by tid), -c $CLIENTS at $RATE tps
#     (pgbench -R: a steady load, not a flood);
#   - the messaging bench's pub/sub workload (bench/src/messaging:
#     producers appending ordered offsets per partition, two consumer
#     groups reading them) at $MESSAGES messages per second;
#   - the sampler (bench/src/bin/soak.rs) every $INTERVAL seconds:
#     pgshard's RSS and open fds (/proc), its server connections (SHOW
#     POOLS), clients, and the interval's p50/p99/p99.9 of the servers'
#     answer times (`pool_query_seconds` at /metrics), one JSON line each
#     into $OUT.jsonl, drawn into $OUT.svg at the end.
# Fails when pgbench had a failed transaction, TPC-B's balances differ, a
# prepared transaction is left, the messaging checks find a gap or a lost
# or doubled message, or pgshard's memory grew more than $TOLERANCE
# (fraction) from the second quarter of the run to the last, or any sample
# after the first quarter rose more than $PEAK_TOLERANCE (fraction) above
# the second quarter's mean (a spike that comes and goes).
#
#   bench/soak.sh                            # one hour
#   DURATION=120 INTERVAL=5 bench/soak.sh    # a quick look
#
# Environment: DURATION (3600), INTERVAL (10), CLIENTS (8), RATE (200),
# MESSAGES (500), SCALE (4), TOLERANCE (0.10), PEAK_TOLERANCE (1.0), OUT (target/soak), PGSHARD
# and BENCH_BIN (built binaries' directory), KEEP=1 (leave the temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION=${DURATION:-3600}
INTERVAL=${INTERVAL:-10}
CLIENTS=${CLIENTS:-8}
RATE=${RATE:-200}
MESSAGES=${MESSAGES:-500}
SCALE=${SCALE:-4}
TOLERANCE=${TOLERANCE:-0.10}
PEAK_TOLERANCE=${PEAK_TOLERANCE:-1.0}
OUT=${OUT:-$root/target/soak}
target_dir=${CARGO_TARGET_DIR:-$root/target}

die() { echo "soak.sh: $*" >&2; exit 1; }

find_postgres
if [ -z "${BENCH_BIN:-}" ]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q \
    -p proxy --bin pgshard -p bench --bin messaging --bin soak
  BENCH_BIN=$target_dir/release
fi
PGSHARD=${PGSHARD:-$BENCH_BIN/pgshard}
for bin in "$PGSHARD" "$BENCH_BIN/messaging" "$BENCH_BIN/soak"; do
  [ -x "$bin" ] || die "no binary at $bin"
done
work=$(bench_workdir pgshard-soak)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pg in shard0 shard1; do stop_postgres "$work/$pg"; done
  if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

declare -A PORT
for pg in shard0 shard1; do start_bench_postgres "$pg" prod; done
psql_on() { local pg=$1; shift; psql -X -q -At -h 127.0.0.1 -p "${PORT[$pg]}" -U postgres -d prod "$@"; }

# --- pgshard -------------------------------------------------------------------------
port=$(free_port)
metrics=$(free_port)
cat >"$work/users.toml" <<EOF
[[users]]
name = "app"
database = "prod"
password = "app-pw"
server_user = "postgres"
EOF
cat >"$work/pgdog.toml" <<EOF
[general]
host = "127.0.0.1"
port = $port
openmetrics_port = $metrics
default_pool_size = 20
two_phase_commit = true
two_phase_commit_wal_dir = "$work/2pc"
[admin]
password = "admin"
[[databases]]
name = "prod"
host = "127.0.0.1"
port = ${PORT[shard0]}
database_name = "prod"
shard = 0
[[databases]]
name = "prod"
host = "127.0.0.1"
port = ${PORT[shard1]}
database_name = "prod"
shard = 1
EOF
for t in "pgbench_accounts aid" "pgbench_branches bid" "pgbench_tellers tid" "pgbench_history aid"; do
  set -- $t
  printf '[[sharded_tables]]\ndatabase = "prod"\nname = "%s"\ncolumn = "%s"\ndata_type = "integer"\n' "$1" "$2" \
    >>"$work/pgdog.toml"
done
"$BENCH_BIN/messaging" --print-sharding --dbname prod >>"$work/pgdog.toml"
RUST_LOG=warn "$PGSHARD" --config "$work/pgdog.toml" --users "$work/users.toml" >"$work/pgshard.log" 2>&1 &
pgshard_pid=$!
pids+=("$pgshard_pid")
export PGPASSWORD=app-pw
through=(-h 127.0.0.1 -p "$port" -U app)
for _ in $(seq 100); do
  psql -X -q "${through[@]}" -d prod -c "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.1
done
psql -X -q "${through[@]}" -d prod -c "SELECT 1" >/dev/null 2>&1 || { cat "$work/pgshard.log" >&2; die "pgshard did not start"; }
pgbench -i -q -s "$SCALE" "${through[@]}" prod >"$work/init.log" 2>&1 \
  || { cat "$work/init.log" >&2; die "pgbench -i through pgshard failed"; }

# --- the run -----------------------------------------------------------------------------
echo "soak: ${DURATION}s, pgbench TPC-B -c $CLIENTS -R $RATE (scale $SCALE, 2PC) + pub/sub at $MESSAGES msg/s, sampled every ${INTERVAL}s"
pgbench "${through[@]}" -c "$CLIENTS" -j 2 -T "$DURATION" -R "$RATE" -P 60 prod >"$work/pgbench.log" 2>&1 &
pgbench_pid=$!
pids+=("$pgbench_pid")
"$BENCH_BIN/messaging" --target "127.0.0.1:$port" --user app --password app-pw --dbname prod \
  --workload pubsub --duration "$DURATION" --throttle "$MESSAGES" --progress 60 \
  --json "$OUT-messaging.json" --svg "$OUT-messaging.svg" >"$work/messaging.log" 2>&1 &
messaging_pid=$!
pids+=("$messaging_pid")
sampled=0
"$BENCH_BIN/soak" --pid "$pgshard_pid" --port "$port" --admin-password admin \
  --metrics-port "$metrics" --interval "$INTERVAL" --duration "$DURATION" \
  --tolerance "$TOLERANCE" --peak-tolerance "$PEAK_TOLERANCE" --out "$OUT" || sampled=$?
pgbench_ok=0; wait "$pgbench_pid" || pgbench_ok=$?
messaging_ok=0; wait "$messaging_pid" || messaging_ok=$?

# --- the checks ---------------------------------------------------------------------------
grep -E "^(number of (transactions actually processed|failed)|latency average|tps)" "$work/pgbench.log" || true
[ "$pgbench_ok" = 0 ] || { tail -20 "$work/pgbench.log" >&2; die "pgbench failed"; }
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.log")
[ "${failed:-0}" = 0 ] || die "$failed failed TPC-B transactions"
sum_of() { # table column
  echo $(( $(psql_on shard0 -c "SELECT coalesce(sum($2), 0) FROM $1") + $(psql_on shard1 -c "SELECT coalesce(sum($2), 0) FROM $1") ))
}
a=$(sum_of pgbench_accounts abalance); b=$(sum_of pgbench_branches bbalance)
t=$(sum_of pgbench_tellers tbalance); h=$(sum_of pgbench_history delta)
echo "balances: accounts $a, branches $b, tellers $t, history deltas $h"
[ "$a" = "$b" ] && [ "$b" = "$t" ] && [ "$t" = "$h" ] || die "TPC-B balances differ"
for pg in shard0 shard1; do
  left=$(psql_on "$pg" -c "SELECT count(*) FROM pg_prepared_xacts")
  [ "$left" = 0 ] || die "$left prepared transactions left on $pg"
done
tail -15 "$work/messaging.log"
[ "$messaging_ok" = 0 ] || die "the messaging workload's checks failed (see above)"
[ "$sampled" = 0 ] || die "pgshard's memory did not stay flat (see the sampler's last lines)"
echo "soak passed: samples in $OUT.jsonl, chart in $OUT.svg"
