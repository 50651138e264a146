#!/usr/bin/env bash
# Instructions the planner executes per plan, counted by valgrind's callgrind: a measure of
# planning cost that does not move with the machine's load (wall time on these shared
# machines moves by 10-40% between runs). For each workload, `profile_loop FILE N --near`
# plans N structures near the workload's (all but one in 16 from a template) with the fixed
# default cost model, and only the planner (`get_or_plan`) is counted.
#
#   scripts/plan-instructions.sh workloads/hubbard_u1u1_m128_heff2.json [...] [--plans 32]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 1; }
plans=32
files=()
while [ $# -gt 0 ]; do
    case "$1" in
        --plans) plans="$2"; shift 2 ;;
        *) files+=("$1"); shift ;;
    esac
done
[ ${#files[@]} -gt 0 ] || { echo "usage: $0 WORKLOAD.json... [--plans N]" >&2; exit 2; }
cargo build --release --example profile_loop >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "$f: no such workload file" >&2; exit 2; }
    log=$(BLOCKCONTRACT_COST_MODEL=default valgrind --tool=callgrind \
        --toggle-collect='blockcontract_runtime::plan::cache::get_or_plan_here*' \
        --callgrind-out-file="$out" ./target/release/examples/profile_loop "$f" "$plans" --near 2>&1)
    ir=$(echo "$log" | awk '/Collected :/ { print $NF }')
    [ -n "$ir" ] || { echo "$f: callgrind printed no count" >&2; echo "$log" >&2; exit 1; }
    awk -v f="$(basename "$f" .json)" -v ir="$ir" -v n="$plans" \
        'BEGIN { printf "%-28s %8.2f M instructions per plan (%d plans)\n", f, ir / n / 1e6, n }'
done
