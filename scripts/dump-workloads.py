"""Dumps `blocksparse-workload/1` files (../shared/workloads/FORMAT.md) from a TeNPy two-site
DMRG of a model other than the shipped ones, so that the bench can be run on other block
structures than the shipped files.

    scripts/dump-workloads.sh --model tfi --L 32 --chi 512 --sweeps 3 --out /tmp/wl

runs TeNPy's DMRG (svd_min 1e-14) up to bond dimension `chi` in a few stages, then writes, at
the central bond, `<model>_m<m>_gemm.json` (m: the largest bond dimension reached) (the two-site theta times its conjugate over the
central bond and one site), `_heff1.json` and `_heff2.json` (TeNPy's matvec order:
L * psi * W (* W) * R). Models (open chains, TeNPy built-ins):

    tfi        transverse-field Ising, J=1, g=1 (critical), parity conserved (Z2)
    spin1      S=1 Heisenberg chain, Sz conserved (U1, charge 2*Sz)
    bosehub    Bose-Hubbard chain, t=1, U=4, n_max=3, N conserved (U1), filling 1
    j1j2       S=1/2 J1-J2 chain, J2=0.3, Sz conserved (U1)
    cylinder   S=1/2 Heisenberg on a width-4 square cylinder, Sz conserved (U1)
    heisenberg S=1/2 Heisenberg chain, Sz conserved (U1), as the shipped files (larger m)
    hubbard    Fermi-Hubbard chain, t=1, U=4, N and Sz conserved (U1xU1), as the shipped files

Element values are not dumped: they come from FORMAT.md's generator. Every leg of a tensor is
sorted and bunched (LegCharge sort and bunch), so each sector appears once per space.
"""
import argparse
import json
import os
import sys

import numpy as np
from threadpoolctl import threadpool_limits
from tenpy.algorithms.dmrg import TwoSiteDMRGEngine
from tenpy.networks.mps import MPS


def make_model(name, L):
    """The model, the product state to start from, and a description."""
    if name == 'tfi':
        from tenpy.models.tf_ising import TFIChain
        m = TFIChain({'L': L, 'J': 1., 'g': 1., 'conserve': 'parity', 'bc_MPS': 'finite'})
        return m, ['up'] * L, 'transverse-field Ising chain J=1 g=1, parity conserved (Z2)'
    if name in ('spin1', 'heisenberg'):
        from tenpy.models.spins import SpinChain
        spin = 1. if name == 'spin1' else .5
        m = SpinChain({'L': L, 'S': spin, 'Jx': 1., 'Jy': 1., 'Jz': 1., 'conserve': 'Sz',
                       'bc_MPS': 'finite'})
        return m, ['up', 'down'] * (L // 2), ('S=%g Heisenberg chain, Sz conserved (U1, 2*Sz)'
                                              % spin)
    if name == 'bosehub':
        from tenpy.models.hubbard import BoseHubbardChain
        m = BoseHubbardChain({'L': L, 't': 1., 'U': 4., 'n_max': 3, 'conserve': 'N',
                              'bc_MPS': 'finite'})
        return m, [1] * L, 'Bose-Hubbard chain t=1 U=4 n_max=3, N conserved (U1), filling 1'
    if name == 'j1j2':
        from tenpy.models.spins_nnn import SpinChainNNN2
        m = SpinChainNNN2({'L': L, 'S': 0.5, 'Jx': 1., 'Jy': 1., 'Jz': 1., 'Jxp': .3,
                           'Jyp': .3, 'Jzp': .3, 'conserve': 'Sz', 'bc_MPS': 'finite'})
        return m, ['up', 'down'] * (L // 2), 'S=1/2 J1-J2 chain J2=0.3, Sz conserved (U1)'
    if name == 'cylinder':
        from tenpy.models.spins import SpinModel
        m = SpinModel({'lattice': 'Square', 'Lx': L // 4, 'Ly': 4, 'S': 0.5, 'Jx': 1.,
                       'Jy': 1., 'Jz': 1., 'conserve': 'Sz', 'bc_MPS': 'finite',
                       'bc_y': 'cylinder'})
        n = m.lat.N_sites
        return m, ['up', 'down'] * (n // 2), 'S=1/2 Heisenberg, width-4 square cylinder (U1)'
    if name == 'hubbard':
        from tenpy.models.hubbard import FermiHubbardChain
        m = FermiHubbardChain({'L': L, 't': 1., 'U': 4., 'mu': 0., 'cons_N': 'N',
                               'cons_Sz': 'Sz', 'bc_MPS': 'finite'})
        return m, ['up', 'down'] * (L // 2), 'Fermi-Hubbard chain t=1 U=4, N and 2*Sz (U1xU1)'
    raise SystemExit('unknown model %r (tfi, spin1, bosehub, j1j2, cylinder, heisenberg, '
                     'hubbard)' % name)


class Spaces:
    """Named spaces of a workload: one per distinct (charges, dims) list."""

    def __init__(self, mod):
        self.mod = mod
        self.named = {}

    def leg(self, leg, hint):
        """The workload leg of a sorted, bunched TeNPy leg: its space's name and its flow."""
        assert leg.sorted and leg.bunched, 'legs must be sorted and bunched'
        sectors = []
        for q, lo, hi in zip(leg.charges, leg.slices[:-1], leg.slices[1:]):
            sectors.append({'charge': [int(x) for x in q], 'dim': int(hi - lo)})
        local = hint.startswith('p')
        key = json.dumps(sectors)
        for name, sp in self.named.items():
            if json.dumps(sp['sectors']) == key:
                return name, leg.qconj
        name = hint
        i = 1
        while name in self.named:
            name = '%s%d' % (hint, i)
            i += 1
        sp = {'sectors': sectors}
        if local:
            sp['local'] = True
        self.named[name] = sp
        return name, leg.qconj


def tensor(arr, labels, spaces, hints, seed, keep_blocks):
    """One workload tensor from a TeNPy array with these leg labels, in this order."""
    arr = arr.transpose(labels)
    _, arr = arr.sort_legcharge(True, True)
    legs = []
    for leg, hint in zip(arr.legs, hints):
        name, qconj = spaces.leg(leg, hint)
        legs.append({'space': name, 'flow': 'out' if qconj == 1 else 'in'})
    t = {'seed': seed, 'charge': [int(x) for x in arr.qtotal], 'legs': legs}
    if keep_blocks:
        t['blocks'] = sorted([int(x) for x in row] for row in arr._qdata)
    return t


def workload(name, source, mod, tensors, contraction, order):
    syms = ['U1' if m == 1 else 'Z%d' % m for m in mod]
    spaces = Spaces(mod)
    ts = {}
    for i, (tname, (arr, labels, hints, keep)) in enumerate(tensors.items()):
        ts[tname] = tensor(arr, labels, spaces, hints, i + 1, keep)
    return {
        'format': 'blocksparse-workload/1', 'name': name, 'source': source,
        'symmetry': syms, 'dtype': 'f64', 'spaces': spaces.named, 'tensors': ts,
        'contraction': contraction, 'order': order,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', required=True)
    ap.add_argument('--L', type=int, required=True)
    ap.add_argument('--chi', type=int, required=True)
    ap.add_argument('--sweeps', type=int, default=3, help='sweeps at the last bond dimension')
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    model, init, desc = make_model(a.model, a.L)
    psi = MPS.from_product_state(model.lat.mps_sites(), init, bc='finite')
    chis = [c for c in (32, 64, 128, 256, 512, 1024, 2048) if c < a.chi] + [a.chi]
    with threadpool_limits(limits=1):
        for i, chi in enumerate(chis):
            eng = TwoSiteDMRGEngine(psi, model, {
                'trunc_params': {'chi_max': chi, 'svd_min': 1.e-14, 'trunc_cut': None},
                'lanczos_params': {'N_max': 20, 'E_tol': 1.e-12, 'P_tol': 1.e-12},
            })
            for _ in range(a.sweeps if i == len(chis) - 1 else 1):
                eng.sweep(optimize=True)
            print('# chi %d E %.10f bonds %s' % (chi, eng.update_stats['E_total'][-1],
                                                  max(psi.chi)), file=sys.stderr, flush=True)
    n = psi.L
    i = n // 2 - 1
    mod = list(int(x) for x in model.lat.mps_sites()[0].leg.chinfo.mod)
    env = eng.env
    LP, RP2, RP1 = env.get_LP(i), env.get_RP(i + 1), env.get_RP(i)
    W0, W1 = model.H_MPO.get_W(i), model.H_MPO.get_W(i + 1)
    theta2 = psi.get_theta(i, n=2)
    theta1 = psi.get_theta(i, n=1)
    m = max(psi.chi)
    src = ('TeNPy two-site DMRG of the %s, L=%d, chi_max=%d (largest bond %d), E=%.10f; '
           'central sites %d,%d; legs sorted and bunched (scripts/dump-workloads.py)'
           % (desc, n, a.chi, m, eng.update_stats['E_total'][-1], i, i + 1))
    base = '%s_m%d' % (a.model, m)
    os.makedirs(a.out, exist_ok=True)
    out = {}
    out['heff2'] = workload(base + '_heff2', src, mod, {
        'L': (LP, ['vR*', 'wR', 'vR'], ['vL', 'w', 'vL'], False),
        'psi': (theta2, ['vL', 'p0', 'p1', 'vR'], ['vL', 'p', 'p', 'vR'], True),
        'W0': (W0, ['wL', 'wR', 'p', 'p*'], ['w', 'w', 'p', 'p'], True),
        'W1': (W1, ['wL', 'wR', 'p', 'p*'], ['w', 'w', 'p', 'p'], True),
        'R': (RP2, ['vL', 'wL', 'vL*'], ['vR', 'w', 'vR'], False),
    }, 'Y[a,s,r,b] = L[a,w,x] * psi[x,t,q,y] * W0[w,u,s,t] * W1[u,v,r,q] * R[y,v,b]',
        [['L', 'psi'], ['W0', '(L*psi)'], ['(W0*(L*psi))', 'W1'], ['((W0*(L*psi))*W1)', 'R']])
    out['heff1'] = workload(base + '_heff1', src, mod, {
        'L': (LP, ['vR*', 'wR', 'vR'], ['vL', 'w', 'vL'], False),
        'psi': (theta1, ['vL', 'p0', 'vR'], ['vL', 'p', 'vR'], True),
        'W0': (W0, ['wL', 'wR', 'p', 'p*'], ['w', 'w', 'p', 'p'], True),
        'R': (RP1, ['vL', 'wL', 'vL*'], ['vR', 'w', 'vR'], False),
    }, 'Y[a,s,b] = L[a,w,x] * psi[x,t,y] * W0[w,v,s,t] * R[y,v,b]',
        [['L', 'psi'], ['W0', '(L*psi)'], ['(W0*(L*psi))', 'R']])
    # the block-sparse matrix product across the central bond: theta2[(vL.p0), (p1.vR)] =
    # A * B, A = get_B(i, 'A') with (vL.p) one pipe, B = get_B(i + 1, 'Th') with (p.vR)
    a_ = psi.get_B(i, 'A').combine_legs(['vL', 'p'], qconj=+1)
    b_ = psi.get_B(i + 1, 'Th').combine_legs(['p', 'vR'], qconj=-1)
    out['gemm'] = workload(base + '_gemm', src, mod, {
        'A': (a_, ['(vL.p)', 'vR'], ['vLp', 'vC'], True),
        'B': (b_, ['vL', '(p.vR)'], ['vC', 'pvR'], True),
    }, 'C[a,b] = A[a,k] * B[k,b]', [['A', 'B']])
    for kind, w in out.items():
        path = os.path.join(a.out, '%s_%s.json' % (base, kind))
        with open(path, 'w') as f:
            json.dump(w, f)
        print(path)


if __name__ == '__main__':
    sys.exit(main())
