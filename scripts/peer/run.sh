#!/usr/bin/env bash
# The project's copy of TeNPy's DMRG peer (dmrg_peer.py beside this file), in the venv and
# timing environment of ../shared/peers/run_dmrg_peer.sh (which creates the venv on first use):
#
#   scripts/peer/run.sh --model heisenberg --L 32 --chi 128,256 --sweeps 1,1 [--updates FILE]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SHARED="${SHARED_PEERS:-$HERE/../../../shared/peers}"
VENV="${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tenpy-peer-venv}"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import numpy, tenpy, threadpoolctl' 2>/dev/null; then
    bash "$SHARED/run_dmrg_peer.sh" --model heisenberg --L 4 --chi 4 --sweeps 1 >/dev/null
fi
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE MALLOC_MMAP_THRESHOLD_=1073741824 \
    MALLOC_TRIM_THRESHOLD_=1073741824 PYTHONWARNINGS=ignore "$VENV/bin/python" "$HERE/dmrg_peer.py" "$@"
