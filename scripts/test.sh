#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test (unit tests and the
# integration tests that start real Postgres servers). Installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
