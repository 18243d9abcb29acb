#!/usr/bin/env bash
# Growing a cluster from 2 to 3 databases under load (issue 33): starts
# three Postgres servers (initdb in a temp dir, as the `postgres` user when
# run as root, free ports, `wal_level = logical`) and pgshard over the first
# two, with two-phase commit on and pgbench's tables sharded over
# `shard_count = 12` logical shards placed explicitly (accounts and
# history by aid, branches by bid, tellers by tid: as
# integration/tests/shard_moves_pgbench.rs shards them). Then:
#   1. `pgbench -i -s $SCALE` through pgshard; pgbench's empty tables made
#      on the third server (`pgbench -i -I dtp`: a plain table's move needs
#      it there);
#   2. pgbench's TPC-B script through pgshard, -c $CLIENTS, for $DURATION
#      seconds, with a log of every transaction (-l);
#   3. after $BEFORE seconds: the third `[[databases]]` entry added to
#      pgdog.toml, RELOAD, REBALANCE (4 moves, all to the new database, one
#      after the other); SHOW MOVES polled until all 4 are done (each is
#      `done` 60 s after its switch, when the source's rows are deleted).
# Printed: throughput before, during (REBALANCE to the last switch) and
# after the moves; for each move's cutover, how long pgshard held
# statements (SHOW MOVES' max_wait_ms) and the p99 and max latency of the
# pgbench transactions in flight during it (a transaction is 7 statements:
# its latency bounds each statement's, so this is the longest write pause
# a client saw). Fails when pgbench had a failed (or aborted) transaction,
# a move failed, the balances of accounts, branches, tellers and history
# differ, a row is on a database the new placement does not name, or a
# slot, publication, subscription or prepared transaction is left.
#
#   bench/rebalance.sh
#   DURATION=150 BEFORE=15 SCALE=5 bench/rebalance.sh     # quicker
#
# Environment: DURATION (180), BEFORE (20), CLIENTS (8), SCALE (10),
# PGSHARD (a built binary; default: a release build), KEEP=1 (leave the
# temp dir). Nothing here asserts speed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION=${DURATION:-180}
BEFORE=${BEFORE:-20}
CLIENTS=${CLIENTS:-8}
SCALE=${SCALE:-10}
target_dir=${CARGO_TARGET_DIR:-$root/target}

die() { echo "rebalance.sh: $*" >&2; exit 1; }

find_postgres
command -v python3 >/dev/null || die "no python3 (it reads pgbench's and pgshard's logs)"
if [ -z "${PGSHARD:-}" ]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q -p proxy --bin pgshard
  PGSHARD=$target_dir/release/pgshard
fi
[ -x "$PGSHARD" ] || die "no pgshard binary at $PGSHARD"
work=$(bench_workdir pgshard-rebalance)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pg in 0 1 2; do stop_postgres "$work/$pg"; done
  if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

declare -A PORT
for pg in 0 1 2; do
  start_bench_postgres "$pg" bank "fsync = off" "full_page_writes = off" "wal_level = logical" \
    "max_replication_slots = 10" "max_wal_senders = 10" "max_logical_replication_workers = 4" \
    "max_worker_processes = 16"
done
psql_on() { local pg=$1; shift; psql -X -q -At -h 127.0.0.1 -p "${PORT[$pg]}" -U postgres -d bank "$@"; }

# --- pgshard over databases 0 and 1 --------------------------------------------------
port=$(free_port)
placement="[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]"
cat >"$work/users.toml" <<EOF
[[users]]
name = "postgres"
database = "bank"
auth_type = "trust"
EOF
database() { # shard
  printf '[[databases]]\nname = "bank"\nhost = "127.0.0.1"\nport = %s\ndatabase_name = "bank"\nshard = %s\n\n' \
    "${PORT[$1]}" "$1"
}
write_config() { # databases...
  {
    cat <<EOF
[general]
host = "127.0.0.1"
port = $port
default_pool_size = $((CLIENTS + 4))
two_phase_commit = true
two_phase_commit_wal_dir = "$work/2pc"
log_format = "json"
cutover_timeout = 5000
resharding_replication_retry_min_delay = 200
resharding_replica_identity_full = true
[admin]
password = "admin"

EOF
    for d in "$@"; do database "$d"; done
    for t in "pgbench_accounts aid" "pgbench_branches bid" "pgbench_tellers tid" "pgbench_history aid"; do
      set -- $t
      printf '[[sharded_tables]]\ndatabase = "bank"\nname = "%s"\ncolumn = "%s"\ndata_type = "integer"\nshard_count = 12\nplacement = %s\n\n' \
        "$1" "$2" "$placement"
    done
  } >"$work/pgdog.toml"
}
write_config 0 1
PATH="$bindir:$PATH" RUST_LOG=info "$PGSHARD" --config "$work/pgdog.toml" --users "$work/users.toml" \
  >"$work/pgshard.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do
  psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d bank -c "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.1
done
admin() { PGPASSWORD=admin psql -X -q -At -F '|' -h 127.0.0.1 -p "$port" -U admin -d admin -c "$1"; }
admin "SHOW VERSION" >/dev/null 2>&1 || { tail "$work/pgshard.log" >&2; die "pgshard did not start"; }

# --- load ---------------------------------------------------------------------------
through=(-h 127.0.0.1 -p "$port" -U postgres)
pgbench -i -q -s "$SCALE" "${through[@]}" bank >"$work/init.log" 2>&1 \
  || { cat "$work/init.log" >&2; die "pgbench -i through pgshard failed"; }
pgbench -i -q -I dtp -h 127.0.0.1 -p "${PORT[2]}" -U postgres bank >>"$work/init.log" 2>&1 \
  || { cat "$work/init.log" >&2; die "pgbench -i -I dtp on database 2 failed"; }
accounts=$(( $(psql_on 0 -c "SELECT count(*) FROM pgbench_accounts") + $(psql_on 1 -c "SELECT count(*) FROM pgbench_accounts") ))
echo "pgbench -i -s $SCALE through pgshard: $accounts accounts on databases 0 and 1 (12 logical shards)"

# --- TPC-B the whole time; REBALANCE after $BEFORE s -----------------------------------
echo "pgbench TPC-B: -c $CLIENTS -j 2 -T $DURATION, two-phase commit on; REBALANCE at ${BEFORE} s; load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$work/tx"
pgbench -n "${through[@]}" -c "$CLIENTS" -j 2 -T "$DURATION" -P 10 -l --log-prefix="$work/tx/tx" bank \
  >"$work/pgbench.out" 2>&1 &
bench=$!
sleep "$BEFORE"
write_config 0 1 2
admin "RELOAD" >/dev/null
rebalance_at=$(date +%s%3N)
admin "REBALANCE" >"$work/planned.txt"
moves=$(wc -l <"$work/planned.txt")
[ "$moves" = 4 ] || { cat "$work/planned.txt" >&2; die "REBALANCE planned $moves moves, not 4"; }
echo "REBALANCE: $(awk -F'|' '{printf "%sshard %s %s->%s", (NR>1?", ":""), $3, $4, $5}' "$work/planned.txt")"
while :; do
  admin "SHOW MOVES" >"$work/moves.txt"
  left=$(awk -F'|' '$7 != "done" && $7 != "failed"' "$work/moves.txt" | wc -l)
  [ "$left" = 0 ] && break
  kill -0 "$bench" 2>/dev/null || { cat "$work/moves.txt" >&2; die "pgbench ended before the moves: raise DURATION"; }
  sleep 0.5
done
done_at=$(date +%s%3N)
awk -F'|' '$7 == "failed"' "$work/moves.txt" | grep -q . && { cat "$work/moves.txt" >&2; die "a move failed"; }
echo "all 4 moves done $(( (done_at - rebalance_at) / 1000 )) s after REBALANCE (each 60 s after its switch)"
wait "$bench" || { cat "$work/pgbench.out" >&2; die "pgbench failed (a client aborted)"; }
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.out")
[ "${failed:-0}" = 0 ] || die "$failed failed TPC-B transactions"
grep -E "^(number of (transactions actually processed|failed)|latency average|tps)" "$work/pgbench.out"

# --- figures ----------------------------------------------------------------------------
python3 - "$work/tx" "$work/pgshard.log" "$work/moves.txt" "$rebalance_at" <<'PY'
import glob, json, sys
from datetime import datetime

tx_dir, log, moves_txt, rebalance_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# pgbench -l: client_id transaction_no time(us) script_no time_epoch time_us
txs = []
for path in glob.glob(tx_dir + "/tx*"):
    for line in open(path):
        f = line.split()
        if len(f) >= 6:
            end = int(f[4]) * 1000 + int(f[5]) / 1000
            txs.append((end - int(f[2]) / 1000, end, int(f[2]) / 1000))
start, end = min(t[0] for t in txs), max(t[1] for t in txs)
max_wait = {}
for line in open(moves_txt):
    f = line.rstrip("\n").split("|")
    max_wait[f[0]] = f[10] if len(f) > 10 else ""
switches = []
for line in open(log):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    message = event.get("fields", {}).get("message", "")
    if "switched to database" in message and "statements held" in message:
        at = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp() * 1000
        held = int(message.split("statements held ")[1].split()[0])
        switches.append((at - held, at, event["fields"].get("id", "?"), message.split()[2]))
switches.sort()
if len(switches) != 4:
    sys.exit(f"rebalance.sh: {len(switches)} switches in pgshard's log, not 4")
last = switches[-1][1]

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else 0.0

def window(name, lo, hi):
    done = [t for t in txs if lo <= t[1] < hi]
    secs = (hi - lo) / 1000
    lat = [t[2] for t in done]
    print(f"| {name} | {secs:.0f} | {len(done)} | {len(done) / secs:.0f} | {pct(lat, 0.5):.1f} | {pct(lat, 0.99):.1f} | {max(lat, default=0):.0f} |")

print()
print("| window | s | transactions | tps | p50 ms | p99 ms | max ms |")
print("|---|---|---|---|---|---|---|")
window("before (up to REBALANCE)", start, rebalance_at)
window("during (REBALANCE to the last switch)", rebalance_at, last)
window("after (cleanups included)", last, end)
print()
print("| move | logical shard | cutover at s | statements held ms (max_wait_ms) | transactions in flight | p99 ms | max ms |")
print("|---|---|---|---|---|---|---|")
worst = []
for lo, hi, move, shard in switches:
    inflight = [t[2] for t in txs if t[0] < hi and t[1] > lo]
    worst += inflight
    print(f"| {move} | {shard} | {(lo - start) / 1000:.1f} | {max_wait.get(move, '?')} | {len(inflight)} | {pct(inflight, 0.99):.0f} | {max(inflight, default=0):.0f} |")
print(f"(all cutovers: p99 {pct(worst, 0.99):.0f} ms, max {max(worst, default=0):.0f} ms of the transactions in flight during one)")
PY

# --- checks ----------------------------------------------------------------------------
sum_of() { # table column
  local s=0 pg
  for pg in 0 1 2; do s=$((s + $(psql_on "$pg" -c "SELECT coalesce(sum($2), 0) FROM $1"))); done
  echo "$s"
}
a=$(sum_of pgbench_accounts abalance); b=$(sum_of pgbench_branches bbalance)
t=$(sum_of pgbench_tellers tbalance); h=$(sum_of pgbench_history delta)
echo "balances: accounts $a, branches $b, tellers $t, history deltas $h"
[ "$a" = "$b" ] && [ "$b" = "$t" ] && [ "$t" = "$h" ] || die "TPC-B balances differ"
# Each row where the placement now says: the moved shards' rows on 2 only.
admin "SHOW PLACEMENT" | awk -F'|' '$1 == "bank" {print $3, $4}' | sort -n -u >"$work/placement.txt"
per_db=$(awk '{n[$2]++} END {printf "%s %s %s", n[0], n[1], n[2]}' "$work/placement.txt")
[ "$per_db" = "4 4 4" ] || die "placement is not 4 shards per database: $per_db"
shards=$(awk '{printf "%s%s", (NR>1?",":""), $2}' "$work/placement.txt")
for pg in 0 1 2; do
  for tk in "pgbench_accounts aid" "pgbench_branches bid" "pgbench_tellers tid" "pgbench_history aid"; do
    set -- $tk
    # The database each row's logical shard is placed on (the postgres
    # hasher: Postgres's own hash partitioning, shard_count 12).
    wrong=$(psql_on "$pg" -c "SELECT count(*) FROM $1 WHERE (ARRAY[$shards])[(((hashint8extended($2::int8, 8816678312871386365)::numeric + 18446744073709551616 + 5305509591434766563) % 18446744073709551616) % 12)::int + 1] <> $pg")
    [ "$wrong" = 0 ] || die "$wrong rows of $1 on database $pg belong elsewhere"
  done
  for q in "pg_replication_slots" "pg_publication" "pg_subscription" "pg_prepared_xacts"; do
    left=$(psql_on "$pg" -c "SELECT count(*) FROM $q")
    [ "$left" = 0 ] || die "$left rows in $q on database $pg"
  done
done
rows=$(( $(psql_on 0 -c "SELECT count(*) FROM pgbench_accounts") + $(psql_on 1 -c "SELECT count(*) FROM pgbench_accounts") + $(psql_on 2 -c "SELECT count(*) FROM pgbench_accounts") ))
[ "$rows" = "$accounts" ] || die "$rows accounts after, $accounts before"
echo "consistent: every row once, where the placement says; no slot, publication, subscription or prepared transaction left"
