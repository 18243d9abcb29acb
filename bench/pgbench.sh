#!/usr/bin/env bash
# pgbench through nothing, PgBouncer and pgshard, side by side in one run
# (issue 14). Starts one Postgres (initdb in a temp dir, as the `postgres`
# user when run as root), PgBouncer (Debian's package; scripts/setup.sh
# --bench installs it) and pgshard (release build) on free ports, then runs
# each case of the matrix on every target, the target order rotated from one
# case and pass to the next, and prints per case: tps, the ratio to direct,
# and the proxy's CPU per transaction from /proc (utime + stime of all its
# threads over the run, divided by the transactions pgbench completed) and
# its context switches per transaction. A JSON copy goes to $JSON.
#
#   bench/pgbench.sh                 # the full matrix, 15 s per run, 2 passes
#   DURATION=5 PASSES=1 bench/pgbench.sh            # a quick one
#   CASES="S-prepared-c16" bench/pgbench.sh          # some cases only
#   SYSCALLS=1 CASES="S-prepared-c16" bench/pgbench.sh
#       # also count the proxies' syscalls and context switches per
#       # transaction with `perf stat` (tracepoints; costs a little CPU)
#
# Environment: DURATION (s, 15), PASSES (2), CASES (space-separated names
# from the list below; default all), TARGETS (default "direct pgbouncer
# pgshard pgshard-sharded"; the sharded one runs only the -S cases; also
# pgshard-w<N> (N workers), pgshard-rr (unsharded, two servers in turn
# at one client: the sharded target's baseline), pgshard-base and
# pgshard-base-w<N> (the build
# $PGSHARD_BASE, for a before/after in one run), relay (the floor:
# bench's relay_floor, one thread relaying bytes between each client and
# a server connection of its own; what any proxy's kernel work costs)), SCALE
# (10), POOL (10), WORKERS (pgshard's `workers`; default its config
# default), JSON (target/pgbench.json), PGSHARD (a built binary to use
# instead of building), KEEP=1 (leave the temp dir), HOLD=1 (start
# everything, print each target's port and PID, and wait until interrupted
# instead of running the matrix: for perf record and one-off pgbench runs),
# BACKEND (tcp, or unix: both proxies reach Postgres over its Unix socket),
# CLIENT (tcp, or unix: pgbench reaches every target over its Unix socket in
# the temp dir: Postgres's, PgBouncer's and pgshard's `unix_socket_dir`; the
# relay listens on TCP only, so it is left out then).
#
# Nothing here asserts speed; the numbers are for people.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION=${DURATION:-15}
PASSES=${PASSES:-2}
SCALE=${SCALE:-10}
POOL=${POOL:-10}
TARGETS=${TARGETS:-"direct pgbouncer pgshard pgshard-sharded"}
CLIENT=${CLIENT:-tcp}
target_dir=${CARGO_TARGET_DIR:-$root/target}
JSON=${JSON:-$target_dir/pgbench.json}
ALL_CASES="S-simple-c1 S-simple-c16 S-simple-c64 S-prepared-c16 TPCB-simple-c16"
CASES=${CASES:-$ALL_CASES}

die() { echo "pgbench.sh: $*" >&2; exit 1; }

# --- binaries ---------------------------------------------------------------
bindir=${PGSHARD_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || die "no Postgres binaries (scripts/setup.sh installs them)"
case $CLIENT in
  tcp) ;;
  unix) [[ " $TARGETS " != *" relay "* ]] || die "CLIENT=unix: the relay listens on TCP only; leave it out of TARGETS" ;;
  *) die "CLIENT is tcp or unix, not $CLIENT" ;;
esac
command -v pgbench >/dev/null || die "no pgbench (package postgresql-contrib / postgresql)"
command -v pgbouncer >/dev/null || die "no pgbouncer: run scripts/setup.sh --bench (apt-get install pgbouncer)"
wants_pgshard=""
[[ " $TARGETS " != *" pgshard"* ]] || wants_pgshard=1
if [ -n "$wants_pgshard" ] && [ -z "${PGSHARD:-}" ]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q -p proxy --bin pgshard
  PGSHARD=$target_dir/release/pgshard
fi
[ -z "$wants_pgshard" ] || [ -x "$PGSHARD" ] || die "no pgshard binary at $PGSHARD"
relay_bin=""
if [[ " $TARGETS " == *" relay "* ]]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q -p bench --bin relay_floor
  relay_bin=$target_dir/release/relay_floor
fi
hz=$(getconf CLK_TCK)

# --- temp dir, ports, cleanup -----------------------------------------------
work=$(bench_workdir pgshard-pgbench)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  stop_postgres "$work/pg"
  if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

pg_port=$(free_port); bouncer_port=$(free_port)

# --- Postgres -----------------------------------------------------------------
"${as_pg[@]}" "$bindir/initdb" -D "$work/pg" -U postgres -A trust --no-sync >/dev/null
cat >>"$work/pg/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$work'
max_connections = 300
shared_buffers = 128MB
fsync = off
full_page_writes = off
synchronous_commit = on
log_min_messages = warning
EOF
"${as_pg[@]}" "$bindir/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w start >/dev/null
psql_pg() { psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres "$@"; }
psql_pg -d postgres -c "CREATE DATABASE pgbench" >/dev/null
echo "initialising pgbench scale $SCALE on 127.0.0.1:$pg_port (proxies reach it over ${BACKEND:-tcp})"
pgbench -i -q -s "$SCALE" -h 127.0.0.1 -p "$pg_port" -U postgres pgbench >/dev/null 2>&1 \
  || die "pgbench -i failed"
psql_pg -d pgbench -c "VACUUM ANALYZE" >/dev/null

# --- PgBouncer ------------------------------------------------------------------
write_pgbouncer_ini "$work/pgbouncer.ini" "$bouncer_port" "$POOL" "$work/pgbouncer.log"
[ "$CLIENT" = tcp ] || sed -i "s|^unix_socket_dir =.*|unix_socket_dir = $work|" "$work/pgbouncer.ini"
echo "pidfile = $work/pgbouncer.pid" >>"$work/pgbouncer.ini"
[ ${#as_pg[@]} -eq 0 ] || chown postgres "$work/pgbouncer.ini" "$work/userlist.txt"
"${as_pg[@]}" pgbouncer -d "$work/pgbouncer.ini"
for _ in $(seq 50); do [ -s "$work/pgbouncer.pid" ] && break; sleep 0.1; done
bouncer_pid=$(cat "$work/pgbouncer.pid")
pids+=("$bouncer_pid")

# --- pgshard: one cluster, and the same database as two "shards" ------------------
# pgshard-sharded routes pgbench_accounts by aid over two shard entries that
# are the same database (each holds every row, so any route answers right):
# what sharded routing adds per transaction, at the same total pool size.
# pgshard-rr is unsharded with server_round_robin and min_pool_size = 2:
# at one client its transactions go to two servers in turn, as the sharded
# target's do, so the difference between the two is what routing costs.
# pgshard-base is another build ($PGSHARD_BASE) with the plain config: a
# before/after comparison in one run (pgshard-base-w<N>: with N workers).
declare -A PORT=([direct]=$pg_port [pgbouncer]=$bouncer_port) PID=([direct]="" [pgbouncer]=$bouncer_pid)
workers_line=""
[ -z "${WORKERS:-}" ] || workers_line="workers = $WORKERS"
unix_line=""
[ "$CLIENT" = tcp ] || unix_line="unix_socket_dir = \"$work\""
start_pgshard() { # name binary databases-toml [workers] [more [general] lines]
  local name=$1 binary=$2 databases=$3 port workers_line=$workers_line more=${5:-}
  [ -z "${4:-}" ] || workers_line="workers = $4"
  port=$(free_port)
  cat >"$work/$name.toml" <<EOF
[general]
host = "127.0.0.1"
port = $port
$unix_line
$workers_line
$more
default_pool_size = $POOL
pooler_mode = "transaction"
auth_type = "trust"
$databases
EOF
  printf '[[users]]\nname = "postgres"\ndatabase = "pgbench"\npassword = "unused"\n' >"$work/$name-users.toml"
  # In a session of its own, as a daemon runs (PgBouncer's -d, Postgres
  # under pg_ctl): with the kernel's autogroup scheduling, a process of this
  # script's session would share one scheduling group with pgbench.
  RUST_LOG=${RUST_LOG:-info} setsid "$binary" --config "$work/$name.toml" --users "$work/$name-users.toml" \
    >"$work/$name.log" 2>&1 &
  PID[$name]=$!
  PORT[$name]=$port
  pids+=("$!")
}
half=$(( (POOL + 1) / 2 ))
for t in $TARGETS; do
  case $t in
    pgshard) start_pgshard pgshard "$PGSHARD" "$(pgshard_database)" ;;
    pgshard-w[0-9]*) start_pgshard "$t" "$PGSHARD" "$(pgshard_database)" "${t#pgshard-w}" ;;
    pgshard-base | pgshard-base-w[0-9]*)
      [ -x "${PGSHARD_BASE:-}" ] || die "target $t needs PGSHARD_BASE=<a pgshard binary>"
      base_workers=""
      [ "$t" = pgshard-base ] || base_workers=${t#pgshard-base-w}
      start_pgshard "$t" "$PGSHARD_BASE" "$(pgshard_database)" $base_workers ;;
    pgshard-sharded)
      start_pgshard pgshard-sharded "$PGSHARD" "$(pgshard_two_shards "$half")" ;;
    pgshard-rr)
      start_pgshard pgshard-rr "$PGSHARD" "$(pgshard_database)" "" \
        $'server_round_robin = true\nmin_pool_size = 2' ;;
    relay)
      PORT[relay]=$(free_port)
      setsid "$relay_bin" --listen "127.0.0.1:${PORT[relay]}" --host "$(backend_host)" --port "$pg_port" \
        >"$work/relay.log" 2>&1 &
      PID[relay]=$!
      pids+=("$!") ;;
    direct | pgbouncer) ;;
    *) die "unknown target $t" ;;
  esac
done
port_of() { echo "${PORT[$1]}"; }
client_host=127.0.0.1
[ "$CLIENT" = tcp ] || client_host=$work
pid_of() { echo "${PID[$1]}"; }
for t in $TARGETS; do
  p=$(port_of "$t")
  for _ in $(seq 100); do
    psql -X -q -h 127.0.0.1 -p "$p" -U postgres -d pgbench -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
  psql -X -q -h 127.0.0.1 -p "$p" -U postgres -d pgbench -c "SELECT 1" >/dev/null \
    || die "$t on port $p does not answer (logs in $work; KEEP=1 keeps them)"
done

if [ -n "${HOLD:-}" ]; then
  for t in $TARGETS; do
    printf '%-16s port %s pid %s\n' "$t" "$(port_of "$t")" "$(pid_of "$t")"
  done
  echo "holding (logs in $work); Ctrl-C stops everything"
  while :; do sleep 3600; done
fi

# --- measuring ----------------------------------------------------------------------
cpu_ticks() { # utime + stime of the whole process (all threads)
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}
ctx_switches() { # voluntary + involuntary, summed over the process's threads
  cat /proc/"$1"/task/*/status 2>/dev/null \
    | awk '/^(non)?voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}
case_args() {
  case $1 in
    S-simple-c*) echo "-S -M simple -c ${1##*-c}" ;;
    S-prepared-c*) echo "-S -M prepared -c ${1##*-c}" ;;
    S-extended-c*) echo "-S -M extended -c ${1##*-c}" ;;
    TPCB-simple-c*) echo "-M simple -c ${1##*-c}" ;;
    *) die "unknown case $1" ;;
  esac
}
SYSCALL_EVENTS="syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_ctl,context-switches"

mkdir -p "$(dirname "$JSON")"
results="$work/results.tsv"
: >"$results"
run_one() { # case pass target
  local name=$1 pass=$2 target=$3 pid args out tps txns t0 t1 c0 c1 cpu cs perf_pid=""
  pid=$(pid_of "$target")
  args=$(case_args "$name")
  if [ -n "$pid" ]; then
    t0=$(cpu_ticks "$pid"); c0=$(ctx_switches "$pid")
    if [ -n "${SYSCALLS:-}" ]; then
      perf stat -x, -e "$SYSCALL_EVENTS" -p "$pid" -o "$work/perf.$name.$pass.$target" &
      perf_pid=$!
    fi
  fi
  # shellcheck disable=SC2086
  cpu="" cs=""
  if ! out=$(pgbench -n $args -j 2 -T "$DURATION" -h "$client_host" -p "$(port_of "$target")" -U postgres pgbench 2>&1); then
    # PgBouncer before 1.21 cannot run -M prepared in transaction mode.
    [ -z "$perf_pid" ] || { kill -INT "$perf_pid" 2>/dev/null; wait "$perf_pid" 2>/dev/null || true; }
    printf '%s\t%s\t%s\tfailed\t0\t\t\n' "$name" "$pass" "$target" >>"$results"
    printf '[%s] %-16s pass %s %-16s failed: %s\n' "$(date +%T)" "$name" "$pass" "$target" \
      "$(echo "$out" | grep -m1 -i error | cut -c1-100)"
    return 0
  fi
  txns=$(echo "$out" | awk -F': ' '/number of transactions actually processed/ { split($2, a, "/"); print a[1] }')
  tps=$(echo "$out" | awk '/^tps = / { print $3; exit }')
  if [ -n "$pid" ]; then
    t1=$(cpu_ticks "$pid"); c1=$(ctx_switches "$pid")
    cpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$txns" 'BEGIN { printf "%.1f", d * 1e6 / hz / n }')
    cs=$(awk -v d=$((c1 - c0)) -v n="$txns" 'BEGIN { printf "%.2f", d / n }')
    if [ -n "$perf_pid" ]; then
      kill -INT "$perf_pid" 2>/dev/null || true
      wait "$perf_pid" 2>/dev/null || true
      awk -F, -v n="$txns" -v t="$target" -v c="$name" '
        $3 ~ /:|context/ { e = $3; sub(/syscalls:sys_enter_/, "", e); if ($1 + 0 > 0) printf "%s %s %s/txn %.2f\n", c, t, e, $1 / n }
      ' "$work/perf.$name.$pass.$target" | tee -a "$work/syscalls.txt"
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$pass" "$target" "$tps" "$txns" "$cpu" "$cs" >>"$results"
  printf '[%s] %-16s pass %s %-16s %9.0f tps  %s\n' "$(date +%T)" "$name" "$pass" "$target" "$tps" \
    "${cpu:+cpu ${cpu} us/txn, ${cs} cs/txn}"
}

echo "matrix: $CASES; targets: $TARGETS; clients over $CLIENT; $DURATION s per run, $PASSES passes, pgbench -j 2, pool $POOL"
read -r -a targets <<<"$TARGETS"
i=0
for pass in $(seq "$PASSES"); do
  for name in $CASES; do
    n=${#targets[@]}
    for k in $(seq 0 $((n - 1))); do
      target=${targets[$(( (k + i) % n ))]}
      # The sharded cluster runs -S only (a TPC-B transaction touches
      # several keys: several shards).
      if [ "$target" = pgshard-sharded ] && [[ $name != S-* ]]; then continue; fi
      run_one "$name" "$pass" "$target"
    done
    i=$((i + 1))
  done
done

# --- report --------------------------------------------------------------------------
python3 - "$results" "$JSON" "$TARGETS" "$DURATION" "$PASSES" "$SCALE" "$POOL" <<'EOF'
import json, sys
path, out, targets, duration, passes, scale, pool = sys.argv[1:]
targets = targets.split()
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
runs = []
for name, p, target, tps, txns, cpu, cs in rows:
    failed = tps == "failed"
    runs.append(dict(case=name, pass_=int(p), target=target, failed=failed,
                     tps=None if failed else float(tps), transactions=int(txns),
                     cpu_us_per_txn=float(cpu) if cpu else None, cs_per_txn=float(cs) if cs else None))
cases = list(dict.fromkeys(r["case"] for r in runs))
def rng(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"
proxies = [t for t in targets if t != "direct"]
head = ["case", "direct tps"] + [f"{t} x direct" for t in proxies] \
     + [f"CPU us/txn {t}" for t in proxies] + [f"cs/txn {t}" for t in proxies]
print()
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
summary = []
for c in cases:
    by = {}
    for r in runs:
        if r["case"] == c:
            by.setdefault(r["target"], []).append(r)
    direct = {r["pass_"]: r["tps"] for r in by.get("direct", []) if not r["failed"]}
    ratios = {t: [r["tps"] / direct[r["pass_"]] for r in by.get(t, [])
                  if not r["failed"] and direct.get(r["pass_"])] for t in proxies}
    failed = {t for t in proxies if any(r["failed"] for r in by.get(t, []))}
    cells = [c, rng(list(direct.values()), lambda v: f"{v / 1000:.1f}k")]
    cells += ["fails" if t in failed and not ratios[t] else rng(ratios[t], lambda v: f"{v:.2f}x")
              for t in proxies]
    cells += [rng([r["cpu_us_per_txn"] for r in by.get(t, [])], lambda v: f"{v:.1f}") for t in proxies]
    cells += [rng([r["cs_per_txn"] for r in by.get(t, [])], lambda v: f"{v:.2f}") for t in proxies]
    print("| " + " | ".join(cells) + " |")
    summary.append(dict(case=c, ratios=ratios))
doc = dict(duration_s=int(duration), passes=int(passes), scale=int(scale), pool=int(pool),
           targets=targets, runs=[{**r, "pass": r.pop("pass_")} for r in runs], summary=summary)
json.dump(doc, open(out, "w"), indent=1)
print(f"\nJSON: {out}")
EOF
[ ! -s "$work/syscalls.txt" ] || { echo; echo "perf stat per transaction:"; cat "$work/syscalls.txt"; }
