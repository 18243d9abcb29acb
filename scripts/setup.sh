#!/usr/bin/env bash
# Installs what pgshard needs to build and test on a fresh Debian machine, and
# nothing that is already there. Safe to run again. Used by demo.sh and test.sh.
#
#   libclang-dev   bindgen (parser-ffi reads libpg_query's headers)
#   gcc, make      compiling libpg_query's C sources (pg_query crate)
#   postgresql     real servers for tests and the demo (initdb, pg_ctl, pgbench)
#   valgrind       the parser's memory check (parser-ffi/tests/memcheck.rs)
#   openssl        a throwaway certificate for the TLS test (integration/tests/pooling.rs)
#
# With --drivers (scripts/test.sh) it also installs the driver suite's
# client libraries (see the end of this file); with --bench, PgBouncer from
# Debian, the baseline bench/pgbench.sh compares pgshard with (benches only:
# nothing else uses it; where systemd runs, Debian also starts a pgbouncer
# service on 6432, pgshard's default port: `systemctl disable --now
# pgbouncer` frees it).
set -euo pipefail

die() { echo "setup: $*" >&2; exit 1; }

if ! command -v cargo >/dev/null 2>&1; then
  die "cargo not found: install a Rust toolchain (rustup, stable >= 1.85) and run this again"
fi

missing=()
dpkg-query -W -f='${Status}' libclang-dev 2>/dev/null | grep -q "ok installed" || missing+=(libclang-dev)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi

if [ "${1:-}" = "--bench" ] && ! command -v pgbouncer >/dev/null 2>&1; then
  missing+=(pgbouncer)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    die "need ${missing[*]} but am not root and have no sudo; install them with apt-get and run this again"
  fi
  command -v apt-get >/dev/null 2>&1 || die "need ${missing[*]} but apt-get is not available; install them and run this again"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
  # Debian starts a cluster of its own on 5432 when postgresql is installed; the
  # harness never uses it (it runs its own servers on free ports).
fi

# Postgres refuses to run as root; the harness then runs it as `postgres`.
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  die "running as root but there is no 'postgres' user; install the postgresql package"
fi
# `--drivers`: the driver suite's clients (integration/drivers/*/setup.sh),
# each from its registry (PyPI, npm, the Go module proxy, Maven Central) into
# the repository's ignored directories; the toolchains (python3, node, go,
# java, mvn) must be there.
if [ "${1:-}" = "--drivers" ]; then
  drivers="$(cd "$(dirname "$0")/../integration/drivers" && pwd)"
  for language in python node go java; do
    started=$(date +%s)
    bash "$drivers/$language/setup.sh" || die "installing the $language drivers failed"
    echo "setup: $language drivers ready ($(( $(date +%s) - started ))s)"
  done
fi
echo "setup: ok"
