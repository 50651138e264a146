#!/usr/bin/env bash
# Our two-site DMRG (examples/dmrg) and TeNPy's (../shared/peers/run_dmrg_peer.sh) on the same
# problem, alternating (ours, TeNPy, ours, TeNPy, ours), one thread each; prints every run's
# `total` line and the ratio of the medians.
#
#   scripts/dmrg-vs-tenpy.sh --model heisenberg --L 64 --chi 32,64,128 --sweeps 2,2,2 [--rounds 2]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
peer="${PEER:-../shared/peers/run_dmrg_peer.sh}"
rounds=2
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
# OURS: a dmrg binary to run instead of building this checkout's
ours_bin="${OURS:-./target/release/examples/dmrg}"
[ -n "${OURS:-}" ] || cargo build --release --example dmrg >&2
ours=()
theirs=()
run_ours() {
    local out
    out=$("$ours_bin" "${args[@]}" --threads 1)
    echo "$out" | sed 's/^/ours:  /'
    ours+=("$(echo "$out" | awk '/^total/ { for (i = 1; i <= NF; i++) if ($i == "time_s") print $(i + 1) }')")
}
run_peer() {
    local out
    out=$(bash "$peer" "${args[@]}" --threads 1)
    echo "$out" | sed 's/^/TeNPy: /'
    theirs+=("$(echo "$out" | awk '/^total/ { for (i = 1; i <= NF; i++) if ($i == "time_s") print $(i + 1) }')")
}
run_ours
for _ in $(seq "$rounds"); do
    run_peer
    run_ours
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mo=$(median "${ours[@]}")
mt=$(median "${theirs[@]}")
echo "median total: ours ${mo} s, TeNPy ${mt} s; TeNPy / ours = $(awk -v a="$mt" -v b="$mo" 'BEGIN { printf "%.2f", a / b }')x"
