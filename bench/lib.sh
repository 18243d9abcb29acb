# Helpers the bench scripts share (sourced, not run): the `postgres` user
# for Postgres's own programs when run as root, a temp work dir, free
# ports.

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
