#!/usr/bin/env bash
# What two-phase commit costs, and pgbench's own workload on a sharded
# cluster (issues 12, 36). Starts two shard Postgres servers and a third one
# for the direct baseline (initdb in a temp dir, as the `postgres` user when
# run as root, free ports), all at Postgres's default durability (`fsync`,
# `full_page_writes` and `synchronous_commit` on, on the disk of /tmp), and
# pgshard instances (release build) over the shards: with
# `two_phase_commit = true` and no local log (the default), with the log
# fsynced on each commit, without two-phase commit, and with BEFORE=<an
# older pgshard binary> that binary too (its default config). Then:
#
# 1. Transfers (pgbench custom scripts, -c $CLIENTS, -T $DURATION, -M
#    $MODE): one transaction moves 1 from one account to another, locking
#    the lower key first. `acct` is sharded by `k` with a range mapping:
#    keys below 1,000,000 on shard 0, the rest on shard 1, so a script
#    chooses whether a transfer stays on one shard or crosses to the
#    other. Targets, run side by side (order rotated per pass):
#      direct        both accounts in one Postgres, no pgshard
#      one-shard     through pgshard (2PC on), both accounts on shard 0
#      cross-2pc     through pgshard, one account per shard: decider
#                    record with PREPARE, decider COMMIT, COMMIT PREPARED
#      cross-2pc-log the same with `two_phase_commit_wal_dir` and
#                    `two_phase_commit_wal_fsync = true` (the log's fsync
#                    on the commit path, as before issue 36)
#      cross-1pc     the same through the pgshard without two-phase commit
#      cross-2pc-before with BEFORE=<binary>: cross-2pc through it
#    Printed: tps, average latency and the shards' WAL flushes
#    (pg_stat_wal.wal_sync) per transaction, per target and pass, and the
#    ratios; and what one flushed 8 kB write takes on the shards' disk (the
#    floor: a 2PC commit waits for three flushes in turn, a one-phase
#    cross-shard commit for two, a one-shard commit for one).
#    Afterwards the sum of balances must be unchanged and no prepared
#    transaction left (the script fails otherwise).
# 2. `pgbench -i -s $SCALE` through the 2PC pgshard, pgbench's tables
#    sharded by their first key (accounts by aid, branches by bid, tellers
#    by tid, history by aid), then its TPC-B-like script with -c $CLIENTS
#    -T $TPCB_DURATION: failed transactions must be 0 and the balances
#    consistent (accounts = branches = tellers = history deltas).
#
#   bench/two_phase.sh
#   BEFORE=/path/to/an/older/pgshard bench/two_phase.sh   # + cross-2pc-before
#   DURATION=5 PASSES=1 SCALE=2 TPCB_DURATION=5 bench/two_phase.sh   # quick
#
# Environment: DURATION (15), PASSES (2), CLIENTS (16), MODE (simple), BEFORE,
# ACCOUNTS per shard (100000), SCALE (10), TPCB_DURATION (30), PGSHARD (a
# built binary), KEEP=1 (leave the temp dir). Nothing here asserts speed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION=${DURATION:-15}
PASSES=${PASSES:-2}
CLIENTS=${CLIENTS:-16}
MODE=${MODE:-simple}
ACCOUNTS=${ACCOUNTS:-100000}
SCALE=${SCALE:-10}
TPCB_DURATION=${TPCB_DURATION:-30}
target_dir=${CARGO_TARGET_DIR:-$root/target}

die() { echo "two_phase.sh: $*" >&2; exit 1; }

find_postgres
if [ -z "${PGSHARD:-}" ]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q -p proxy --bin pgshard
  PGSHARD=$target_dir/release/pgshard
fi
[ -x "$PGSHARD" ] || die "no pgshard binary at $PGSHARD"
work=$(bench_workdir pgshard-2pc-bench)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pg in direct shard0 shard1; do stop_postgres "$work/$pg"; done
  if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

declare -A PORT
for pg in direct shard0 shard1; do start_bench_postgres "$pg" bank; done
psql_on() { local pg=$1; shift; psql -X -q -At -h 127.0.0.1 -p "${PORT[$pg]}" -U postgres -d bank "$@"; }

# --- pgshard, with and without two-phase commit ------------------------------------
cat >"$work/users.toml" <<EOF
[[users]]
name = "postgres"
database = "bank"
auth_type = "trust"
EOF
start_pgshard() { # name binary [general]'s two-phase lines
  local name=$1 binary=$2 port
  port=$(free_port)
  PORT[$name]=$port
  cat >"$work/$name.toml" <<EOF
[general]
host = "127.0.0.1"
port = $port
default_pool_size = $CLIENTS
$3
[admin]
password = "admin"
[[databases]]
name = "bank"
host = "127.0.0.1"
port = ${PORT[shard0]}
database_name = "bank"
shard = 0
[[databases]]
name = "bank"
host = "127.0.0.1"
port = ${PORT[shard1]}
database_name = "bank"
shard = 1
[[sharded_tables]]
database = "bank"
name = "acct"
column = "k"
data_type = "bigint"
[[sharded_tables.mapping]]
kind = "range"
end = 1000000
shard = 0
[[sharded_tables.mapping]]
kind = "range"
start = 1000000
shard = 1
EOF
  for t in "pgbench_accounts aid" "pgbench_branches bid" "pgbench_tellers tid" "pgbench_history aid"; do
    set -- $t
    printf '[[sharded_tables]]\ndatabase = "bank"\nname = "%s"\ncolumn = "%s"\ndata_type = "integer"\n' "$1" "$2" \
      >>"$work/$name.toml"
  done
  RUST_LOG=warn "$binary" --config "$work/$name.toml" --users "$work/users.toml" \
    >"$work/$name.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 100); do
    psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d bank -c "SELECT 1" >/dev/null 2>&1 && return
    sleep 0.1
  done
  cat "$work/$name.log" >&2
  die "$name did not start"
}
start_pgshard pgshard2pc "$PGSHARD" "two_phase_commit = true"
start_pgshard pgshardlog "$PGSHARD" "two_phase_commit = true
two_phase_commit_wal_dir = \"$work/log-2pc\"
two_phase_commit_wal_fsync = true"
start_pgshard pgshard1pc "$PGSHARD" "two_phase_commit = false"
if [ -n "${BEFORE:-}" ]; then
  [ -x "$BEFORE" ] || die "no pgshard binary at BEFORE=$BEFORE"
  start_pgshard pgshardbefore "$BEFORE" "two_phase_commit = true
two_phase_commit_wal_dir = \"$work/before-2pc\""
fi

# --- accounts ----------------------------------------------------------------------
ddl="CREATE TABLE acct (k bigint PRIMARY KEY, balance bigint NOT NULL)"
psql_on direct -c "$ddl"
psql -X -q -h 127.0.0.1 -p "${PORT[pgshard2pc]}" -U postgres -d bank -c "$ddl"
high=$((1000000 + ACCOUNTS))
load() { # server first last
  psql_on "$1" -c "INSERT INTO acct SELECT k, 1000 FROM generate_series($2, $3) k" -c "VACUUM ANALYZE acct"
}
load direct 1 "$ACCOUNTS"; load direct 1000001 "$high"
load shard0 1 "$ACCOUNTS"; load shard1 1000001 "$high"
total() { # servers...
  local sum=0 pg
  for pg in "$@"; do sum=$((sum + $(psql_on "$pg" -c "SELECT sum(balance) FROM acct"))); done
  echo "$sum"
}
before=$(total shard0 shard1)

transfer() { # file lo-range hi-range
  cat >"$work/$1.sql" <<EOF
\\set a random($2)
\\set b random($3)
\\set lo least(:a, :b)
\\set hi greatest(:a, :b)
BEGIN;
UPDATE acct SET balance = balance - 1 WHERE k = :lo;
UPDATE acct SET balance = balance + 1 WHERE k = :hi;
END;
EOF
}
transfer one "1, $ACCOUNTS" "1, $ACCOUNTS"
transfer cross "1, $ACCOUNTS" "1000001, $high"

declare -A TPS LAT SYNCS
wal_syncs() { # servers... -> WAL flushes so far
  local sum=0 pg
  for pg in "$@"; do sum=$((sum + $(psql_on "$pg" -c "SELECT wal_sync FROM pg_stat_wal"))); done
  echo "$sum"
}
run() { # target port script pass
  local out tps lat failed syncs n servers=(shard0 shard1)
  [ "$1" != direct ] || servers=(direct)
  syncs=$(wal_syncs "${servers[@]}")
  out=$(pgbench -n -h 127.0.0.1 -p "$2" -U postgres -c "$CLIENTS" -j 2 -T "$DURATION" \
    -M "$MODE" -f "$work/$3.sql" bank 2>&1) || { echo "$out" >&2; die "pgbench on $1 failed"; }
  tps=$(sed -n 's/^tps = \([0-9]*\)[.0-9]* .*/\1/p' <<<"$out")
  lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
  [ "${failed:-0}" = 0 ] || die "$1: $failed failed transactions"
  n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
  syncs=$(awk -v a="$syncs" -v b="$(wal_syncs "${servers[@]}")" -v n="$n" 'BEGIN{printf "%.2f", (b-a)/n}')
  TPS[$1,$4]=$tps; LAT[$1,$4]=$lat; SYNCS[$1,$4]=$syncs
  printf '  pass %d  %-16s %9s tps  %7s ms  %5s WAL flushes/txn\n' "$4" "$1" "$tps" "$lat" "$syncs"
}
targets=(direct one-shard cross-2pc cross-2pc-log cross-1pc)
declare -A TARGET_PORT=([direct]=${PORT[direct]} [one-shard]=${PORT[pgshard2pc]} \
  [cross-2pc]=${PORT[pgshard2pc]} [cross-2pc-log]=${PORT[pgshardlog]} [cross-1pc]=${PORT[pgshard1pc]})
declare -A SCRIPT=([direct]=cross [one-shard]=one [cross-2pc]=cross [cross-2pc-log]=cross
  [cross-1pc]=cross [cross-2pc-before]=cross)
if [ -n "${BEFORE:-}" ]; then
  targets+=(cross-2pc-before)
  TARGET_PORT[cross-2pc-before]=${PORT[pgshardbefore]}
fi
# The floor: one 8 kB write with O_DSYNC (a WAL flush) on the shards' disk.
start=$(date +%s%N)
dd if=/dev/zero of="$work/fsync.test" bs=8k count=300 oflag=dsync 2>/dev/null
fsync_us=$(( ($(date +%s%N) - start) / 300000 ))
rm -f "$work/fsync.test"
echo "one 8 kB write + flush on $work's disk (dd oflag=dsync, 300 writes): $fsync_us us"
echo "transfers: -c $CLIENTS -j 2 -T $DURATION -M $MODE, $ACCOUNTS accounts per shard, load $(cut -d' ' -f1-3 /proc/loadavg)"
for pass in $(seq "$PASSES"); do
  n=${#targets[@]}
  for i in $(seq 0 $((n - 1))); do
    t=${targets[$(( (i + pass - 1) % n ))]}
    run "$t" "${TARGET_PORT[$t]}" "${SCRIPT[$t]}" "$pass"
  done
done
after=$(total shard0 shard1)
[ "$before" = "$after" ] || die "the total balance moved: $before -> $after"
for pg in shard0 shard1; do
  left=$(psql_on "$pg" -c "SELECT count(*) FROM pg_prepared_xacts")
  [ "$left" = 0 ] || die "$left prepared transactions left on $pg"
done

echo
echo "| target | what | tps | latency ms | WAL flushes/txn | tps vs direct | tps vs one-shard | tps vs cross-1pc |"
echo "|---|---|---|---|---|---|---|---|"
declare -A WHAT=([direct]="both accounts in one Postgres" [one-shard]="pgshard, both on shard 0"
  [cross-2pc]="pgshard, one per shard, two-phase commit (no local log)"
  [cross-2pc-log]="as cross-2pc, the local log fsynced on each commit"
  [cross-1pc]="pgshard, one per shard, one COMMIT per shard"
  [cross-2pc-before]="as cross-2pc, through BEFORE (its default config)")
range() { # values... -> "min-max" (or the value)
  printf '%s\n' "$@" | sort -n | awk 'NR==1{lo=$1} {hi=$1} END{if (lo==hi) print lo; else print lo "-" hi}'
}
for t in "${targets[@]}"; do
  tps=(); lat=(); sy=(); vd=(); vo=(); v1=()
  for pass in $(seq "$PASSES"); do
    tps+=("${TPS[$t,$pass]}"); lat+=("${LAT[$t,$pass]}"); sy+=("${SYNCS[$t,$pass]}")
    vd+=("$(awk -v a="${TPS[$t,$pass]}" -v b="${TPS[direct,$pass]}" 'BEGIN{printf "%.2f", a/b}')")
    vo+=("$(awk -v a="${TPS[$t,$pass]}" -v b="${TPS[one-shard,$pass]}" 'BEGIN{printf "%.2f", a/b}')")
    v1+=("$(awk -v a="${TPS[$t,$pass]}" -v b="${TPS[cross-1pc,$pass]}" 'BEGIN{printf "%.2f", a/b}')")
  done
  echo "| $t | ${WHAT[$t]} | $(range "${tps[@]}") | $(range "${lat[@]}") | $(range "${sy[@]}") | $(range "${vd[@]}")x | $(range "${vo[@]}")x | $(range "${v1[@]}")x |"
done
echo "(total balance unchanged: $after; no prepared transaction left)"

# --- pgbench's own workload through the sharded cluster ------------------------------------
echo
pg2pc=(-h 127.0.0.1 -p "${PORT[pgshard2pc]}" -U postgres)
start=$(date +%s.%N)
pgbench -i -q -s "$SCALE" "${pg2pc[@]}" bank >"$work/init.log" 2>&1 \
  || { cat "$work/init.log" >&2; die "pgbench -i through pgshard failed"; }
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
rows=$(( $(psql_on shard0 -c "SELECT count(*) FROM pgbench_accounts") + $(psql_on shard1 -c "SELECT count(*) FROM pgbench_accounts") ))
echo "pgbench -i -s $SCALE through pgshard (2 shards): ${took} s, $rows accounts ($(psql_on shard0 -c "SELECT count(*) FROM pgbench_accounts") on shard 0)"
out=$(pgbench "${pg2pc[@]}" -c "$CLIENTS" -j 2 -T "$TPCB_DURATION" -M "$MODE" bank 2>&1) \
  || { echo "$out" >&2; die "pgbench TPC-B through pgshard failed"; }
grep -E "^(number of (transactions actually processed|failed)|latency average|tps)" <<<"$out"
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
[ "$failed" = 0 ] || die "$failed failed TPC-B transactions"
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
echo "consistent; no prepared transaction left"
