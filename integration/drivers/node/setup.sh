#!/usr/bin/env bash
# Installs the Node.js drivers the checks use (package-lock.json, npm registry)
# into ./node_modules, only when it is missing or older than the lock file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "setup.sh: '$tool' not found: install Node.js (18 or newer) with npm" >&2
        exit 1
    fi
done
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
    echo "setup.sh: Node.js $(node --version) is too old: 18 or newer needed" >&2
    exit 1
fi

stamp=node_modules/.pgshard-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
echo "setup.sh: installing node drivers (npm ci)" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" >"$stamp"
