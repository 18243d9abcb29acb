#!/usr/bin/env bash
# The long run of pgshard's property (fuzz) tests (issue 35): every target
# with many more cases than `cargo test` runs. Usage:
#
#   scripts/fuzz.sh [CASES] [END_TO_END_CASES]
#
# CASES (default 20000) is PROPTEST_CASES for the unit targets (codec, key
# decoding, COPY splitting, merge values, config, the router on random SQL);
# END_TO_END_CASES (default 2000) is the number of hostile connections of
# each end-to-end test against real Postgres. Prints each target's time.
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-20000}"
end_to_end="${2:-2000}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

run() {
    local label=$1 n=$2
    shift 2
    local start=$SECONDS
    PROPTEST_CASES="$n" cargo test --locked "$@"
    echo "== $label: $n cases per property, $((SECONDS - start)) s"
}

run "router unit targets (keys, COPY, config)" "$cases" -p router --lib fuzz_tests
run "router on random SQL" "$cases" -p router --test fuzz_sql
run "proxy unit targets (codec, SCRAM, merge values)" "$cases" -p proxy --lib fuzz_tests
run "end to end (hostile clients, fake server)" "$end_to_end" -p integration --test fuzz_clients -- --nocapture
