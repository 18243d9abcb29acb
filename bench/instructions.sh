#!/usr/bin/env bash
# User-space instructions per transaction of each proxy, counted by
# valgrind's callgrind (issue 14): unlike CPU time on this shared 2-core
# machine, the count does not move with the machine's load, so a change to
# the hot path shows in it even when it hides in the noise of
# bench/pgbench.sh. Kernel work (the socket syscalls, ~80% of a proxy's CPU
# per transaction) is not counted: bench/pgbench.sh measures all of it.
#
# Starts one Postgres (initdb in a temp dir, as the `postgres` user when
# run as root), pgbench -i, then each target under callgrind: PgBouncer
# (Debian's, scripts/setup.sh --bench), pgshard (release build) and
# pgshard over two shard entries of the same database (every -S statement
# routed), and on request `relay` (bench's relay_floor: bytes relayed
# between each client and a server connection of its own, the floor).
# Per case it runs pgbench twice, with T1 and T2 transactions per
# client, zeroing the counters before and dumping them after each run:
# (instructions of run 2 - run 1) / (transactions of run 2 - run 1)
# leaves out what connecting costs.
#
#   bench/instructions.sh
#   CASES="S-simple-c1" TARGETS="pgbouncer pgshard" bench/instructions.sh
#
# Environment: CASES (S-simple-c1 S-simple-c16 S-prepared-c16), TARGETS
# (pgbouncer pgshard pgshard-sharded), BACKEND (tcp, or unix: the proxies
# reach Postgres over its Unix socket), T1 (100), T2 (400), POOL (each
# proxy's pool size, 10; the sharded one splits it), PGSHARD (a
# built binary instead of building), JSON (target/instructions.json),
# KEEP=1 (leave the temp dir). Nothing asserts anything: numbers for people.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

CASES=${CASES:-"S-simple-c1 S-simple-c16 S-prepared-c16"}
TARGETS=${TARGETS:-"pgbouncer pgshard pgshard-sharded"}
T1=${T1:-100}
T2=${T2:-400}
POOL=${POOL:-10}
target_dir=${CARGO_TARGET_DIR:-$root/target}
JSON=${JSON:-$target_dir/instructions.json}

die() { echo "instructions.sh: $*" >&2; exit 1; }
bindir=${PGSHARD_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || die "no Postgres binaries (scripts/setup.sh installs them)"
command -v valgrind >/dev/null || die "no valgrind (scripts/setup.sh installs it)"
command -v callgrind_control >/dev/null || die "no callgrind_control (package valgrind)"
[[ " $TARGETS " != *" pgbouncer "* ]] || command -v pgbouncer >/dev/null \
  || die "no pgbouncer: run scripts/setup.sh --bench"
if [[ " $TARGETS " == *" pgshard"* ]] && [ -z "${PGSHARD:-}" ]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q -p proxy --bin pgshard
  PGSHARD=$target_dir/release/pgshard
fi

if [[ " $TARGETS " == *" relay "* ]]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --locked -q -p bench --bin relay_floor
  RELAY=$target_dir/release/relay_floor
fi

work=$(bench_workdir pgshard-instructions)
proxy_pid=""
stop_proxy() {
  [ -n "$proxy_pid" ] || return 0
  kill -INT "$proxy_pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$proxy_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$proxy_pid" 2>/dev/null || true
  proxy_pid=""
}
cleanup() {
  stop_proxy
  stop_postgres "$work/pg"
  if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

# --- Postgres -----------------------------------------------------------------
pg_port=$(free_port)
"${as_pg[@]}" "$bindir/initdb" -D "$work/pg" -U postgres -A trust --no-sync >/dev/null
cat >>"$work/pg/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$work'
max_connections = 100
fsync = off
log_min_messages = warning
EOF
"${as_pg[@]}" "$bindir/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w start >/dev/null
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "CREATE DATABASE pgbench" >/dev/null
pgbench -i -q -s 2 -h 127.0.0.1 -p "$pg_port" -U postgres pgbench >/dev/null 2>&1 || die "pgbench -i failed"

# --- the proxies, one at a time under callgrind ----------------------------------
# callgrind_control talks to the valgrind process of its own user.
ctl() { "${as_pg[@]}" callgrind_control "$@" >/dev/null 2>&1; }
start_proxy() { # target port
  local target=$1 port=$2 databases
  case $target in
    pgbouncer)
      write_pgbouncer_ini "$work/pgbouncer.ini" "$port" "$POOL" "$work/pgbouncer-own.log"
      set -- pgbouncer "$work/pgbouncer.ini" ;;
    pgshard | pgshard-sharded)
      databases=$(pgshard_database)
      [ "$target" = pgshard ] || databases=$(pgshard_two_shards $(((POOL + 1) / 2)))
      printf '[general]\nhost = "127.0.0.1"\nport = %s\ndefault_pool_size = %s\npooler_mode = "transaction"\nauth_type = "trust"\n\n%s\n' \
        "$port" "$POOL" "$databases" >"$work/$target.toml"
      printf '[[users]]\nname = "postgres"\ndatabase = "pgbench"\npassword = "unused"\n' >"$work/users.toml"
      set -- "$work/pgshard" --config "$work/$target.toml" --users "$work/users.toml" ;;
    relay)
      set -- "$work/relay_floor" --listen "127.0.0.1:$port" --host "$(backend_host)" --port "$pg_port" ;;
    *) die "unknown target $target" ;;
  esac
  [ ${#as_pg[@]} -eq 0 ] || chown -R postgres "$work"
  "${as_pg[@]}" env RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$work/$target.out" "$@" \
    >"$work/$target.log" 2>&1 &
  local launcher=$!
  # Valgrind starts a program ~50 times slower than it runs natively.
  for _ in $(seq 200); do
    psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d pgbench -c "SELECT 1" >/dev/null 2>&1 && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.3
  done
  psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d pgbench -c "SELECT 1" >/dev/null 2>&1 \
    || die "$target did not start ($work/$target.log; KEEP=1 keeps it)"
  proxy_pid=$(pgrep -n -f "callgrind-out-file=$work/$target.out") || die "no valgrind process for $target"
}
case_args() {
  case $1 in
    S-simple-c*) echo "-S -M simple -c ${1##*-c}" ;;
    S-prepared-c*) echo "-S -M prepared -c ${1##*-c}" ;;
    *) die "unknown case $1" ;;
  esac
}
dumped_total() { # the counters' total in the newest dump
  local file
  file=$(ls -t "$work/$1.out".* 2>/dev/null | head -1)
  [ -n "$file" ] || die "no callgrind dump for $1"
  awk '/^(summary|totals):/ { print $2; exit }' "$file"
}
measure() { # target case port -> instructions per transaction
  local target=$1 name=$2 port=$3 args clients t total i1 i2
  args=$(case_args "$name")
  clients=${name##*-c}
  for t in "$T1" "$T2"; do
    ctl -z "$proxy_pid"
    # shellcheck disable=SC2086
    pgbench -n $args -j 1 -t "$t" -h 127.0.0.1 -p "$port" -U postgres pgbench >"$work/pgbench.out" 2>&1 \
      || { echo "failed"; return; }
    grep -q "number of failed transactions: 0" "$work/pgbench.out" || { echo "failed"; return; }
    ctl -d "$proxy_pid"
    sleep 1
    total=$(dumped_total "$target")
    if [ "$t" = "$T1" ]; then i1=$total; else i2=$total; fi
  done
  awk -v a="$i1" -v b="$i2" -v n=$(((T2 - T1) * clients)) 'BEGIN { printf "%.0f", (b - a) / n }'
}

results="$work/results.tsv"
: >"$results"
# A copy the postgres user can run.
[[ " $TARGETS " != *" pgshard"* ]] || cp "$PGSHARD" "$work/pgshard"
[[ " $TARGETS " != *" relay "* ]] || cp "$RELAY" "$work/relay_floor"
echo "cases: $CASES; targets: $TARGETS; $T1 and $T2 transactions per client"
for target in $TARGETS; do
  port=$(free_port)
  start_proxy "$target" "$port"
  for name in $CASES; do
    per=$(measure "$target" "$name" "$port")
    printf '%s\t%s\t%s\n' "$name" "$target" "$per" >>"$results"
    printf '[%s] %-16s %-16s %s instructions/txn\n' "$(date +%T)" "$name" "$target" "$per"
  done
  stop_proxy
done

mkdir -p "$(dirname "$JSON")"
python3 - "$results" "$JSON" "$TARGETS" <<'EOF'
import json, sys
path, out, targets = sys.argv[1], sys.argv[2], sys.argv[3].split()
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
cases = list(dict.fromkeys(r[0] for r in rows))
value = {(c, t): v for c, t, v in rows}
print()
print("| case | " + " | ".join(f"{t} instructions/txn" for t in targets) + " |")
print("|---|" + "---|" * len(targets))
for c in cases:
    print(f"| {c} | " + " | ".join(value.get((c, t), "-") for t in targets) + " |")
json.dump([dict(case=c, target=t, instructions_per_txn=None if v == "failed" else int(v))
           for c, t, v in rows], open(out, "w"), indent=1)
print(f"\nJSON: {out}")
EOF
