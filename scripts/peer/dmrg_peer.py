"""TeNPy two-site DMRG as a peer (the project's copy of ../shared/peers/dmrg_peer.py) for an end-to-end DMRG benchmark.

Runs TeNPy's TwoSiteDMRGEngine on a built-in model with a fixed bond-dimension
schedule and a fixed number of sweeps, one BLAS thread, and prints one line per
sweep and a closing summary line, so that another DMRG code can be timed against
it in the same run on the same problem.

    python dmrg_peer.py --model heisenberg --L 32 --chi 64,128,256 --sweeps 2,2,2

Models (TeNPy built-ins, open chains, the sectors DMRG starts in):
    heisenberg  S=1/2 Heisenberg chain, H = sum_i S_i . S_{i+1} (Jx=Jy=Jz=1),
                Sz conserved (U(1), charge 2*Sz), Neel start (up, down, ...), Sz=0
    hubbard     Fermi-Hubbard chain, t=1, U=4, mu=0, Jordan-Wigner MPO,
                N and Sz conserved (U(1)xU(1), charges N and 2*Sz),
                start (up, down, ...), half filling, Sz=0
    xxz         S=1/2 XXZ chain in a field, Jz=0.5, hz=0.2, Neel start
    spin1       spin-1 Heisenberg chain with D Sz^2, D=0.3, Neel start (up, down, ...)
    j1j2        S=1/2 J1-J2 chain, J1=1, J2=0.3, Neel start
    cylinder    S=1/2 Heisenberg on a width-3 cylinder (Square lattice, Ly=3, periodic
                in y, MPS order y fastest), L = 3 Lx sites, Neel start in MPS order
    bose-hubbard  Bose-Hubbard chain, t=1, U=4, n_max=3, N conserved, one boson a site
(the project's copy adds the last five; examples/dmrg has the same models)

Output, one line per sweep:
    sweep K chi C E <energy> max_trunc_err <eps> time_s <seconds>
then:
    total <model> L <L> E <energy> time_s <seconds> sweeps <n> lanczos_vectors <N>
(lanczos_vectors: the Krylov dimensions summed over the local updates that ran
Lanczos, the number of effective-Hamiltonian applications; TeNPy solves a local
problem of dimension < 400 by exact diagonalisation instead and reports N = -1
for it, which the shared copy of this script summed as -1 each)
then, with this copy's additions:
    updates <n> lanczos_updates <n> ed_updates <n>
and, with --updates FILE, one line per local update: sweep, bond, Lanczos vectors
(-1 for exact diagonalisation), energy; with --measure, the lines `measure <op> ...`
(the local density on every site), `measure entropy ...` (every bond) and `measure
energy E variance V`, as examples/dmrg --measure prints them.
Settings: svd_min 1e-14, no mixer, Lanczos N_max 20 / E_tol 1e-14 / P_tol 1e-14; with
--sites 1, SingleSiteDMRGEngine with the SubspaceExpansion mixer of amplitude
expansion^2 (TeNPy's amplitude is the squared weight), kept constant.
"""
import argparse
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits
from tenpy.algorithms.dmrg import SingleSiteDMRGEngine, TwoSiteDMRGEngine
from tenpy.networks.mps import MPS


def make_model(model, L):
    """The model and its start state; the parameters are fixed (examples/dmrg uses the same)."""
    from tenpy.models.spins import SpinChain, SpinModel
    from tenpy.models.hubbard import FermiHubbardChain, BoseHubbardChain
    neel = ['up', 'down'] * (L // 2) + ['up'] * (L % 2)
    spin = {'Jx': 1., 'Jy': 1., 'Jz': 1., 'hz': 0., 'conserve': 'Sz', 'bc_MPS': 'finite'}
    if model == 'heisenberg':
        M = SpinChain(dict(spin, L=L, S=0.5))
    elif model == 'xxz':
        # XXZ chain in a field: Jz = 0.5, hz = 0.2
        M = SpinChain(dict(spin, L=L, S=0.5, Jz=0.5, hz=0.2))
    elif model == 'spin1':
        # spin-1 Heisenberg chain with single-ion anisotropy D = 0.3
        M = SpinChain(dict(spin, L=L, S=1., D=0.3))
    elif model == 'j1j2':
        M = J1J2Chain({'L': L, 'J2': 0.3, 'bc_MPS': 'finite'})
    elif model == 'cylinder':
        # S=1/2 Heisenberg on a width-3 cylinder, L = 3 Lx sites, MPS order y fastest
        if L % 3:
            raise SystemExit('cylinder: L must be a multiple of 3')
        M = SpinModel(dict(spin, lattice='Square', Lx=L // 3, Ly=3, bc_y='cylinder', S=0.5))
    elif model == 'hubbard':
        M = FermiHubbardChain({'L': L, 't': 1., 'U': 4., 'mu': 0., 'cons_N': 'N',
                               'cons_Sz': 'Sz', 'bc_MPS': 'finite'})
    elif model == 'bose-hubbard':
        # t = 1, U = 4, at most 3 bosons a site, one per site to start
        M = BoseHubbardChain({'L': L, 't': 1., 'U': 4., 'n_max': 3, 'conserve': 'N',
                              'bc_MPS': 'finite'})
        return M, ['1'] * L
    else:
        raise SystemExit('unknown model %r' % model)
    return M, neel


def _j1j2_class():
    from tenpy.models.model import CouplingMPOModel
    from tenpy.networks.site import SpinHalfSite

    class J1J2(CouplingMPOModel):
        """S=1/2 chain with J1 = 1 (nearest) and J2 (next-nearest) Heisenberg couplings."""
        default_lattice = 'Chain'
        force_default_lattice = True

        def init_sites(self, model_params):
            return SpinHalfSite(conserve='Sz')

        def init_terms(self, model_params):
            j2 = model_params.get('J2', 0.3)
            for j, dx in [(1., 1), (j2, 2)]:
                self.add_coupling(0.5 * j, 0, 'Sp', 0, 'Sm', dx, plus_hc=True)
                self.add_coupling(j, 0, 'Sz', 0, 'Sz', dx)
    return J1J2


def J1J2Chain(params):
    return _j1j2_class()(params)


def print_phases(prof, total):
    """One line: the cumulative time of TeNPy's DMRG phases under cProfile (its overhead
    included; `total_s` the sweeps' wall time under the profiler)."""
    import pstats
    st = pstats.Stats(prof).stats
    def cum(path_end, names):
        return sum(v[3] for (f, _, n), v in st.items() if f.endswith(path_end) and n in names)
    diag = cum('algorithms/dmrg.py', {'diag'})
    svd = cum('algorithms/dmrg.py', {'mixed_svd'})
    env = cum('algorithms/mps_common.py', {'update_LP', 'update_RP'})
    print('phases diag_s %.3f mixed_svd_s %.3f environments_s %.3f total_s %.3f' % (diag, svd, env, total))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', required=True,
                    choices=['heisenberg', 'xxz', 'spin1', 'j1j2', 'cylinder', 'hubbard', 'bose-hubbard'])
    ap.add_argument('--L', type=int, required=True)
    ap.add_argument('--chi', default='64,128', help='bond dimension per stage, comma separated')
    ap.add_argument('--sweeps', default='2,2', help='sweeps per stage, comma separated')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--sites', type=int, default=2, choices=[1, 2],
                    help='2: TwoSiteDMRGEngine; 1: SingleSiteDMRGEngine with the SubspaceExpansion mixer')
    ap.add_argument('--expansion', type=float, default=1e-3,
                    help='with --sites 1: the expansion weight alpha of examples/dmrg (the mixer amplitude alpha^2, '
                         'TeNPy\'s amplitude being the squared weight), constant: no decay, never disabled')
    ap.add_argument('--updates', default=None, help='write one line per local update to this file')
    ap.add_argument('--measure', action='store_true',
                    help='then print <Sz> (Heisenberg) or <Ntot> (Hubbard) per site, the entanglement entropy per bond, and <H> with its variance')
    ap.add_argument('--profile', action='store_true',
                    help='run the sweeps under cProfile and print the time of each phase: the local eigensolver (diag), the factorization (mixed_svd), the environments (update_LP/update_RP)')
    a = ap.parse_args()
    prof = None
    if a.profile:
        import cProfile
        prof = cProfile.Profile()
    chis = [int(c) for c in a.chi.split(',')]
    sweeps = [int(s) for s in a.sweeps.split(',')]
    sweeps += [sweeps[-1]] * (len(chis) - len(sweeps))
    M, init = make_model(a.model, a.L)
    psi = MPS.from_product_state(M.lat.mps_sites(), init, bc='finite')
    k = 0
    total = 0.
    matvecs = 0
    n_updates = n_ed = 0
    log = open(a.updates, 'w') if a.updates else None
    E = float('nan')
    with threadpool_limits(limits=a.threads):
        for chi, n in zip(chis, sweeps):
            opts = {
                'trunc_params': {'chi_max': chi, 'svd_min': 1.e-14, 'trunc_cut': None},
                'lanczos_params': {'N_max': 20, 'E_tol': 1.e-14, 'P_tol': 1.e-14},
            }
            if a.sites == 1:
                opts['mixer'] = 'SubspaceExpansion'
                opts['mixer_params'] = {'amplitude': a.expansion ** 2, 'decay': None,
                                        'disable_after': None}
                eng = SingleSiteDMRGEngine(psi, M, opts)
                eng.mixer_activate()  # eng.run() would; the sweeps here are called one by one
            else:
                eng = TwoSiteDMRGEngine(psi, M, opts)
            n_seen = 0
            for _ in range(n):
                t0 = time.perf_counter()
                if prof:
                    prof.enable()
                eng.sweep(optimize=True)
                if prof:
                    prof.disable()
                dt = time.perf_counter() - t0
                E = float(eng.update_stats['E_total'][-1])
                err = float(max(eng.trunc_err_list)) if eng.trunc_err_list else 0.
                total += dt
                k += 1
                new = eng.update_stats['N_lanczos'][n_seen:]
                matvecs += sum(n for n in new if n > 0)
                n_updates += len(new)
                n_ed += sum(1 for n in new if n <= 0)
                if log:
                    for i0, n_l, e0 in zip(eng.update_stats['i0'][n_seen:], new,
                                           eng.update_stats['E_total'][n_seen:]):
                        log.write('%d %d %d %.14f\n' % (k, i0, n_l, e0))
                n_seen = len(eng.update_stats['N_lanczos'])
                print('sweep %d chi %d E %.12f max_trunc_err %.3e time_s %.3f' % (k, chi, E, err, dt),
                      flush=True)
    print('total %s L %d E %.12f time_s %.3f sweeps %d lanczos_vectors %d' % (a.model, a.L, E, total, k, matvecs))
    print('updates %d lanczos_updates %d ed_updates %d mpo_bond_dim %d' % (
        n_updates, n_updates - n_ed, n_ed, max(M.H_MPO.chi)))
    if prof:
        print_phases(prof, total)
    if a.measure:
        fmt = lambda v: ' '.join('%.6f' % x for x in v)
        op = {'hubbard': 'Ntot', 'bose-hubbard': 'N'}.get(a.model, 'Sz')
        print('measure <%s> %s' % (op, fmt(psi.expectation_value(op))))
        print('measure entropy %s' % fmt(psi.entanglement_entropy()))
        e = M.H_MPO.expectation_value(psi)
        var = M.H_MPO.variance(psi)
        print('measure energy %.12f variance %.3e' % (e, var))


if __name__ == '__main__':
    sys.exit(main())
