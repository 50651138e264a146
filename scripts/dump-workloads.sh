#!/usr/bin/env bash
# Dumps workloads from a TeNPy DMRG of another model (scripts/dump-workloads.py; its
# docstring lists the models), in the peer's venv (../shared/peers/run_peer.sh makes it).
#   scripts/dump-workloads.sh --model tfi --L 32 --chi 512 --out /tmp/wl
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tenpy-peer-venv}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "no TeNPy venv at $VENV: run ../shared/peers/run_peer.sh on a workload first" >&2
    exit 2
fi
exec "$VENV/bin/python" "$HERE/dump-workloads.py" "$@"
