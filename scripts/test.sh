#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test (unit tests and the
# integration tests that start real Postgres servers). Installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --drivers
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
# --no-fail-fast: a failing test binary does not hide the ones after it.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line for the whole run (cargo prints one per test binary).
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed\n", passed, failed }' "$log"
exit "$status"
