#!/usr/bin/env bash
# Builds the pgx v5 driver checks (main.go, checks.go; pgx pinned in go.mod
# and go.sum) into .cache/pgx-checks. Modules come from the Go module proxy
# (GOPROXY as configured); Go's default module and build caches are used, so
# a second clone on the same machine builds in about a second. Idempotent;
# quiet unless something fails.
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN=local
# Modules from the configured module proxy only, never from their origin
# repositories.
GOPROXY="$(go env GOPROXY)"
export GOPROXY="${GOPROXY%[,|]direct}"
mkdir -p .cache
go build -trimpath -o .cache/pgx-checks .
