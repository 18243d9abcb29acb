#!/usr/bin/env bash
# Instructions per statement of each routing step (parse, summary, route
# after a miss, route of a prepared statement), counted by callgrind: on
# this shared 2-core machine the count does not move with the load, so a
# change to the miss path shows in it where `cargo bench --bench route`'s
# times drown in noise. Per case it runs bench's route_loop under callgrind
# twice (N1 and N2 iterations) and prints (instructions of run 2 - run 1) /
# (N2 - N1): what one statement costs, without the start-up.
#
#   bench/route_instructions.sh                      # this checkout
#   BASE=de2cabc bench/route_instructions.sh         # and a commit beside it
#
# Environment: BASE (a commit built in a worktree under the target dir,
# with its own target dir, the first time), STATEMENTS (names of
# bench::route_set::prepared_set; all by default), N1 (100), N2 (1100),
# RELEASE_LIKE=1 (build the workspace's crates as `[profile.release]`
# does, fat LTO and one codegen unit, dependencies at 16 units: under
# the bench profile's thin LTO a step's count moves by tens to hundreds
# of instructions with changes to code it does not run, so compare two
# commits this way; the first build rebuilds every dependency).
# Nothing asserts anything: numbers for people.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
N1=${N1:-100}
N2=${N2:-1100}
STATEMENTS=${STATEMENTS:-"point_select pgbench_update join_group_order msg_reserve msg_read queue_take"}
target_dir=${CARGO_TARGET_DIR:-$root/target}
command -v valgrind >/dev/null || { echo "route_instructions.sh: no valgrind (scripts/setup.sh installs it)" >&2; exit 1; }

profile=()
if [ -n "${RELEASE_LIKE:-}" ]; then
  profile=(--config 'profile.bench.lto="fat"' --config 'profile.bench.codegen-units=1'
    --config 'profile.bench.package."*".codegen-units=16')
fi

build() { # checkout dir, target dir -> path of route_loop
  (cd "$1" && CARGO_TARGET_DIR=$2 CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} \
    cargo build --profile bench --locked -q -p bench --example route_loop "${profile[@]}")
  echo "$2/release/examples/route_loop"
}

count() { # binary mode statement iterations -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

per_step() { # binary -> one line per statement
  local bin=$1 name mode a b line
  for name in $STATEMENTS; do
    line="$(printf '%-18s' "$name")"
    for mode in parse summary miss prepared; do
      a=$(count "$bin" "$mode" "$name" "$N1"); b=$(count "$bin" "$mode" "$name" "$N2")
      line+=$(printf ' %9d' $(( (b - a) / (N2 - N1) )))
    done
    echo "$line"
  done
}

header=$(printf '%-18s %9s %9s %9s %9s' statement parse +summary +route prepared)
bins=("$(build "$root" "$target_dir")")
labels=("$(git rev-parse --short HEAD)")
if [ -n "${BASE:-}" ]; then
  base_dir=$target_dir/route-instructions-$BASE
  [ -d "$base_dir/src" ] || git worktree add -f --detach "$base_dir/src" "$BASE" >/dev/null
  # A commit older than this script has no route_loop or route_set: bring
  # today's (the router API they use is older than de2cabc).
  mkdir -p "$base_dir/src/bench/examples"
  cp bench/examples/route_loop.rs "$base_dir/src/bench/examples/"
  if [ ! -f "$base_dir/src/bench/src/route_set.rs" ]; then
    cp bench/src/route_set.rs "$base_dir/src/bench/src/"
    echo "pub mod route_set;" >> "$base_dir/src/bench/src/lib.rs"
  fi
  bins+=("$(build "$base_dir/src" "$base_dir/target")")
  labels+=("$BASE")
fi
for i in "${!bins[@]}"; do
  echo "== ${labels[$i]}: instructions per statement (parse; parse + summary; parse + summary + route; prepared route)"
  echo "$header"
  per_step "${bins[$i]}"
done
