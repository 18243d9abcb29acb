# Helpers the bench scripts share (sourced, not run): the `postgres` user
# for Postgres's own programs when run as root, a temp work dir, free
# ports, Postgres servers to bench against.

# `"${as_pg[@]}" initdb ...`: as the `postgres` user when run as root
# (Postgres refuses to run as root), as is otherwise.
as_pg=()
if [ "$(id -u)" -eq 0 ]; then as_pg=(runuser -u postgres --); fi

# A temp dir named after $1 that the `postgres` user may write in.
bench_workdir() {
  local dir
  dir=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$dir"
  [ ${#as_pg[@]} -eq 0 ] || chown postgres "$dir"
  echo "$dir"
}

# A TCP port nothing listens on now.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 30000))
    if ! ss -ltnH "sport = :$port" | grep -q .; then echo "$port"; return; fi
  done
}

# Stop the Postgres whose data directory is $1, if it runs.
stop_postgres() {
  if [ -f "$1/postmaster.pid" ]; then
    "${as_pg[@]}" "$bindir/pg_ctl" -D "$1" -m immediate stop >/dev/null 2>&1 || true
  fi
}

# Where the proxies reach Postgres: 127.0.0.1, or with BACKEND=unix the
# Unix-socket directory $work (callers set unix_socket_directories to it).
backend_host() {
  case ${BACKEND:-tcp} in
    tcp) echo 127.0.0.1 ;;
    unix) echo "$work" ;;
    *) echo "BACKEND is tcp or unix, not $BACKEND" >&2; return 1 ;;
  esac
}

# PgBouncer's ini (file $1) for the `pgbench` database of the Postgres on
# port $pg_port (of `backend_host`): listening on port $2, transaction
# mode, pool $3, trust, logging to $4. Callers append what else they need.
write_pgbouncer_ini() {
  echo '"postgres" ""' >"$(dirname "$1")/userlist.txt"
  cat >"$1" <<INI
[databases]
pgbench = host=$(backend_host) port=$pg_port dbname=pgbench
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $2
unix_socket_dir =
auth_type = trust
auth_file = $(dirname "$1")/userlist.txt
pool_mode = transaction
default_pool_size = $3
max_client_conn = 1000
log_connections = 0
log_disconnections = 0
logfile = $4
INI
}

# A pgshard `[[databases]]` entry for the `pgbench` database of the
# Postgres on port $pg_port of `backend_host`; with $1 and $2, shard $1
# with pool $2.
pgshard_database() {
  printf '\n[[databases]]\nname = "pgbench"\nhost = "%s"\nport = %s\ndatabase_name = "pgbench"\n' "$(backend_host)" "$pg_port"
  [ -z "${1:-}" ] || printf 'shard = %s\npool_size = %s\n' "$1" "$2"
}

# The same database as two shards of pool $1 each, pgbench_accounts
# sharded by aid: every -S statement is routed, and any route answers
# right (each "shard" holds every row).
pgshard_two_shards() {
  pgshard_database 0 "$1"
  pgshard_database 1 "$1"
  printf '\n[[sharded_tables]]\ndatabase = "pgbench"\nname = "pgbench_accounts"\ncolumn = "aid"\ndata_type = "bigint"\n'
}

# Set $bindir to the newest installed Postgres's programs (or
# $PGSHARD_PG_BINDIR's); exit, saying why, without them or pgbench.
find_postgres() {
  bindir=${PGSHARD_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
  [ -x "$bindir/initdb" ] || { echo "$(basename "$0"): no Postgres binaries (scripts/setup.sh installs them)" >&2; exit 1; }
  command -v pgbench >/dev/null || { echo "$(basename "$0"): no pgbench" >&2; exit 1; }
}

# A Postgres in $work/$1 on a free port (recorded in the caller's
# associative array PORT[$1]), listening on 127.0.0.1 and on a Unix socket
# in $work, with database $2 created; any further arguments are lines
# added to its postgresql.conf (after 200 connections, 100 prepared
# transactions, 128MB shared_buffers).
start_bench_postgres() {
  local name=$1 database=$2 line
  shift 2
  PORT[$name]=$(free_port)
  "${as_pg[@]}" "$bindir/initdb" -D "$work/$name" -U postgres -A trust --no-sync >/dev/null
  {
    printf '%s\n' "listen_addresses = '127.0.0.1'" "port = ${PORT[$name]}" \
      "unix_socket_directories = '$work'" "max_connections = 200" \
      "max_prepared_transactions = 100" "shared_buffers = 128MB" "log_min_messages = warning"
    for line in "$@"; do printf '%s\n' "$line"; done
  } >>"$work/$name/postgresql.conf"
  "${as_pg[@]}" "$bindir/pg_ctl" -D "$work/$name" -l "$work/$name.log" -w start >/dev/null
  psql -X -q -h 127.0.0.1 -p "${PORT[$name]}" -U postgres -d postgres -c "CREATE DATABASE $database" >/dev/null
}
