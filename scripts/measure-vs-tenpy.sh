#!/usr/bin/env bash
# Ours and TeNPy's DMRG (scripts/peer/run.sh) on the same model, schedule and start, each with
# --measure; prints both `total` lines, the MPO bond dimensions, and the largest differences
# of the final energy, the local densities (<Sz>, <Ntot> or <N> per site), the entanglement
# entropies (every bond) and the energy variance.
#
#   scripts/measure-vs-tenpy.sh --model xxz --L 32 --chi 32,64,128 --sweeps 2,2,2
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --example dmrg >&2
ours=$(./target/release/examples/dmrg "$@" --threads 1 --measure)
theirs=$(scripts/peer/run.sh "$@" --threads 1 --measure)
python3 - "$ours" "$theirs" <<'PY'
import sys
def parse(text):
    d = {}
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == 'total':
            d['total'] = line
            d['E'] = float(w[w.index('E') + 1])
        elif w[0] == 'measure' and w[1] == 'mpo_bond_dim':
            d['mpo'] = int(w[2])
        elif w[0] == 'measure' and w[1] == 'energy':
            d['energy'], d['variance'] = float(w[2]), float(w[4])
        elif w[0] == 'measure':
            d[w[1]] = [float(x) for x in w[2:]]
        elif w[0] == 'updates':
            d['mpo'] = int(w[w.index('mpo_bond_dim') + 1])
    return d
o, t = parse(sys.argv[1]), parse(sys.argv[2])
print('ours:  ' + o['total'])
print('TeNPy: ' + t['total'])
dens = [k for k in o if k.startswith('<')][0]
diff = lambda a, b: max(abs(x - y) for x, y in zip(a, b))
print('energy difference %.2e (ours - TeNPy %.2e); %s max difference %.2e; entropy max difference %.2e; '
      'variance ours %.3e TeNPy %.3e; MPO bond dimension ours %d TeNPy %d'
      % (abs(o['E'] - t['E']), o['E'] - t['E'], dens, diff(o[dens], t[dens]),
         diff(o['entropy'], t['entropy']), o['variance'], t['variance'], o['mpo'], t['mpo']))
PY
