#!/usr/bin/env bash
# Installs the Python drivers of the driver suite into a private venv
# (integration/drivers/python/.venv, git-ignored): psycopg 3 with its binary
# wheel (a bundled libpq new enough for pipeline mode) and asyncpg, pinned,
# from PyPI. Idempotent and quiet when the pinned versions are already there.
set -euo pipefail

PSYCOPG_VERSION=3.3.9
ASYNCPG_VERSION=0.32.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"

if ! command -v python3 >/dev/null 2>&1; then
    echo "python setup: python3 is missing (install it, e.g. apt-get install python3 python3-venv)" >&2
    exit 1
fi

installed() {
    "$venv/bin/python" - "$PSYCOPG_VERSION" "$ASYNCPG_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
assert version("psycopg") == sys.argv[1]
assert version("psycopg-binary") == sys.argv[1]
assert version("asyncpg") == sys.argv[2]
import psycopg, asyncpg  # noqa: F401  (the binary implementation must load)
assert psycopg.pq.__impl__ == "binary", psycopg.pq.__impl__
EOF
}

if [ -x "$venv/bin/python" ] && installed; then
    exit 0
fi

make_venv() { rm -rf "$venv" && python3 -m venv "$venv" >/dev/null 2>&1; }

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    if ! make_venv; then
        # Debian's python3 ships venv's ensurepip separately.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "python setup: installing python3-venv" >&2
            apt-get install -y -qq python3-venv >/dev/null 2>&1 \
                || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-venv >/dev/null 2>&1; } \
                || true
        fi
        if ! make_venv; then
            rm -rf "$venv"
            echo "python setup: 'python3 -m venv' failed (on Debian: apt-get install python3-venv)" >&2
            exit 1
        fi
    fi
fi

"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "psycopg[binary]==$PSYCOPG_VERSION" "asyncpg==$ASYNCPG_VERSION"

if ! installed; then
    echo "python setup: the installed drivers do not load from $venv" >&2
    exit 1
fi
