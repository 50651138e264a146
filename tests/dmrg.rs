//! The library's DMRG (`blockcontract::mps::Dmrg`) against exact diagonalisation: the
//! Heisenberg chain (L = 10) and the Fermi-Hubbard chain (L = 6, half filling) at bond
//! dimensions that hold their ground states exactly, to 1e-10; and the plan caches staying
//! under their capacity over a whole run.

use blockcontract::mps::{Dmrg, Mpo, Mps, ParticleConserve, Site, SpinConserve, Terms};
use faer::Mat;

/// A chain of `sites` with Hamiltonian `terms`, from up, down, up, ...
struct Model {
    name: &'static str,
    sites: Vec<Site>,
    mpo: Mpo<f64>,
}

impl Model {
    fn new(name: &'static str, sites: Vec<Site>, terms: &Terms<f64>) -> Model {
        let mpo = Mpo::from_terms(&sites, terms).unwrap();
        Model { name, sites, mpo }
    }
    fn start(&self) -> Mps {
        let labels: Vec<&str> = (0..self.sites.len())
            .map(|i| if i % 2 == 0 { "up" } else { "down" })
            .collect();
        Mps::product(&self.sites, &labels).unwrap()
    }
    fn dmrg(&self) -> Dmrg<'_> {
        Dmrg::new(&self.mpo, self.start()).unwrap()
    }
}

/// The S=1/2 Heisenberg chain.
fn heisenberg(l: usize) -> Model {
    let mut h = Terms::new();
    for i in 0..l - 1 {
        h.add(0.5, &[("Sp", i), ("Sm", i + 1)]);
        h.add(0.5, &[("Sm", i), ("Sp", i + 1)]);
        h.add(1.0, &[("Sz", i), ("Sz", i + 1)]);
    }
    let site = Site::spin(1, SpinConserve::Sz).unwrap();
    Model::new("heisenberg", vec![site; l], &h)
}

/// The Fermi-Hubbard chain, t = 1, U = 4.
fn hubbard(l: usize) -> Model {
    let mut h = Terms::new();
    for i in 0..l - 1 {
        for (c, cd) in [("Cu", "Cdu"), ("Cd", "Cdd")] {
            h.add(-1.0, &[(cd, i), (c, i + 1)]);
            h.add(-1.0, &[(cd, i + 1), (c, i)]);
        }
    }
    for i in 0..l {
        h.add(4.0, &[("NuNd", i)]);
    }
    let site = Site::spinful_fermion(ParticleConserve::N).unwrap();
    Model::new("hubbard", vec![site; l], &h)
}

/// The lowest eigenvalue of a dense symmetric matrix.
fn ground(h: &Mat<f64>) -> f64 {
    h.as_ref()
        .self_adjoint_eigenvalues(faer::Side::Lower)
        .unwrap()[0]
}

/// The S=1/2 Heisenberg chain on `l` sites in its Sz = 0 sector, built from spin flips.
fn heisenberg_exact(l: usize) -> f64 {
    let states: Vec<u32> = (0..1u32 << l)
        .filter(|s| s.count_ones() as usize * 2 == l)
        .collect();
    let index = |s: u32| states.binary_search(&s).unwrap();
    let mut h = Mat::<f64>::zeros(states.len(), states.len());
    for (j, &s) in states.iter().enumerate() {
        for i in 0..l - 1 {
            let (a, b) = ((s >> i) & 1, (s >> (i + 1)) & 1);
            h[(j, j)] += if a == b { 0.25 } else { -0.25 };
            if a != b {
                let t = s ^ (0b11 << i);
                h[(index(t), j)] += 0.5;
            }
        }
    }
    ground(&h)
}

/// The Fermi-Hubbard chain (t = 1, U = 4) on `l` sites at half filling and Sz = 0: modes
/// ordered (1 up, 1 down, 2 up, ...), hopping signs from the modes in between.
fn hubbard_exact(l: usize) -> f64 {
    let (t, u) = (1.0, 4.0);
    let modes = 2 * l;
    let count = |s: u32, m: usize| -> u32 { (0..l).map(|i| (s >> (2 * i + m)) & 1).sum() };
    let states: Vec<u32> = (0..1u32 << modes)
        .filter(|&s| count(s, 0) as usize * 2 == l && count(s, 1) as usize * 2 == l)
        .collect();
    let index = |s: u32| states.binary_search(&s).unwrap();
    let mut h = Mat::<f64>::zeros(states.len(), states.len());
    for (j, &s) in states.iter().enumerate() {
        for i in 0..l {
            if (s >> (2 * i)) & 1 == 1 && (s >> (2 * i + 1)) & 1 == 1 {
                h[(j, j)] += u;
            }
        }
        for i in 0..l - 1 {
            for m in 0..2 {
                let (a, b) = (2 * i + m, 2 * (i + 1) + m);
                // c+_a c_b and c+_b c_a: one occupied, the other empty
                if ((s >> a) & 1) != ((s >> b) & 1) {
                    let between = (s >> (a + 1)) & ((1u32 << (b - a - 1)) - 1);
                    let sign = if between.count_ones().is_multiple_of(2) {
                        1.0
                    } else {
                        -1.0
                    };
                    let t2 = s ^ (1 << a) ^ (1 << b);
                    h[(index(t2), j)] += -t * sign;
                }
            }
        }
    }
    ground(&h)
}

/// DMRG energy after `sweeps` sweeps at bond dimension `chi`; checks each sweep's report.
fn dmrg(model: &Model, chi: usize, sweeps: usize) -> f64 {
    let l = model.sites.len();
    let mut d = model.dmrg();
    d.set_heff_plan_capacity(1 << 20);
    let mut e = f64::NAN;
    let mut applications = 0;
    for k in 0..sweeps {
        let r = d.sweep(chi).unwrap();
        applications += r.applications;
        assert_eq!((r.sweep, r.chi), (k + 1, chi));
        assert!(r.max_trunc_err >= 0.0 && r.seconds >= 0.0 && r.applications > 0);
        assert!(
            d.max_bond() <= chi,
            "{}: bond {} over {chi}",
            model.name,
            d.max_bond()
        );
        e = r.energy;
    }
    // one lookup per application; at most one plan per local update (the others reuse it)
    let h = d.heff_plans();
    assert_eq!(h.hits + h.misses, applications as u64, "{h:?}");
    assert!(
        h.misses as usize <= d.updates,
        "{h:?} for {} updates",
        d.updates
    );
    assert!(h.bytes <= h.capacity, "{h:?}");
    // the update log: one record per local update, 2 (L - 2) a sweep, bonds in TeNPy's order
    let log = &d.update_log;
    assert_eq!(log.len(), d.updates);
    assert_eq!(log.len(), sweeps * 2 * (l - 2));
    assert_eq!(
        log.iter().map(|u| u.applications).sum::<usize>(),
        applications
    );
    for (k, u) in log.iter().enumerate() {
        let (sweep, at) = (k / (2 * (l - 2)), k % (2 * (l - 2)));
        let bond = if at < l - 2 { at } else { 2 * (l - 2) - at };
        assert_eq!((u.sweep, u.bond), (sweep + 1, bond), "update {k}");
        assert!(u.dim > 0 && u.energy.is_finite());
    }
    assert_eq!(log.last().map(|u| u.energy), Some(e));
    e
}

#[test]
fn dmrg_finds_the_exact_ground_state_energy_of_small_chains() {
    // a small capacity, so that the bound is exercised over the runs below
    let cap = 1 << 20;
    blockcontract::set_plan_cache_capacity(cap);

    let exact = heisenberg_exact(10);
    let e = dmrg(&heisenberg(10), 32, 4);
    assert!(
        (e - exact).abs() < 1e-10,
        "Heisenberg L=10: {e} vs exact {exact}"
    );

    let exact = hubbard_exact(6);
    let e = dmrg(&hubbard(6), 64, 4);
    assert!(
        (e - exact).abs() < 1e-10,
        "Hubbard L=6: {e} vs exact {exact}"
    );

    let sites = blockcontract::plan_cache_sites();
    assert!(!sites.is_empty());
    for s in &sites {
        assert!(s.bytes <= s.capacity, "{s:?}");
    }
    assert!(
        sites.iter().map(|s| s.evictions).sum::<u64>() > 0,
        "the bound was never reached"
    );
    assert!(sites.iter().map(|s| s.hits).sum::<u64>() > 0);
}

/// With truncation (bond dimension 6 on a chain that needs 32): every sweep's energy is
/// variational (above the exact one) and, from the second sweep on, does not rise by more than
/// truncation moves it (the reported energy is the last local update's, before truncation).
/// A Lanczos that lost orthogonality once reported energies below the spectrum.
#[test]
fn truncated_dmrg_stays_variational_and_converges_monotonically() {
    let exact = heisenberg_exact(10);
    let m = heisenberg(10);
    let mut d = m.dmrg();
    let mut last = f64::INFINITY;
    for k in 0..6 {
        let r = d.sweep(6).unwrap();
        assert!(
            r.energy >= exact - 1e-10,
            "sweep {k}: {} below exact {exact}",
            r.energy
        );
        if k > 0 {
            assert!(
                r.energy <= last + 1e-4,
                "sweep {k}: {} after {last}",
                r.energy
            );
        }
        last = r.energy;
    }
    assert!(
        last - exact < 1e-2 && r_trunc_positive(&mut d),
        "{last} vs {exact}"
    );
}

/// One more sweep truncates something (the bound is below what the chain needs).
fn r_trunc_positive(d: &mut Dmrg<'_>) -> bool {
    d.sweep(6).is_ok_and(|r| r.max_trunc_err > 0.0)
}

#[test]
fn bad_dmrg_arguments_get_typed_errors() {
    let m = heisenberg(2);
    let e = Dmrg::new(&m.mpo, m.start()).err().unwrap();
    assert!(
        matches!(e, blockcontract::Error::InvalidArgument { ref name, .. } if name == "mps"),
        "{e}"
    );
    let big = heisenberg(4);
    let e = Dmrg::new(&big.mpo, heisenberg(5).start()).err().unwrap();
    assert!(e.to_string().contains("5 sites for an MPO of 4"), "{e}");
    let mut d = big.dmrg();
    assert!(d.sweep(0).is_err());
}

#[test]
fn exact_references_are_right() {
    // two-site checks of the exact diagonalisation itself: S.S singlet -3/4; the Hubbard dimer
    // at half filling (U = 4, t = 1): (U - sqrt(U^2 + 16 t^2)) / 2
    assert!((heisenberg_exact(2) + 0.75).abs() < 1e-12);
    let want = (4.0 - (16.0f64 + 16.0).sqrt()) / 2.0;
    assert!((hubbard_exact(2) - want).abs() < 1e-12);
}

#[test]
fn a_schedule_runs_to_its_end_or_stops_on_convergence() {
    use blockcontract::mps::Stop;
    let exact = heisenberg_exact(10);
    let m = heisenberg(10);
    let mut seen = 0;
    let reports = m
        .dmrg()
        .run(
            &[(8, 1), (32, 10)],
            &Stop {
                energy: 1e-10,
                discarded_weight: 1e-8,
            },
            |_| seen += 1,
        )
        .unwrap();
    assert_eq!(seen, reports.len());
    assert!(
        reports.len() < 11,
        "converged early: {} sweeps",
        reports.len()
    );
    assert!(reports.len() >= 3, "at least two sweeps of the last stage");
    let last = reports.last().unwrap();
    assert!(
        (last.energy - exact).abs() < 1e-9,
        "{} vs {exact}",
        last.energy
    );
    assert_eq!((reports[0].chi, last.chi), (8, 32));
    let mut d = m.dmrg();
    let calls = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let seen_updates = calls.clone();
    d.on_update(move |u| {
        assert!(u.applications > 0 && u.bond < 9);
        seen_updates.set(seen_updates.get() + 1);
    });
    let all = d.run(&[(8, 2), (16, 2)], &Stop::never(), |_| {}).unwrap();
    assert_eq!(calls.get(), 4 * 2 * 8, "one call per local update");
    let chis: Vec<usize> = all.iter().map(|r| r.chi).collect();
    assert_eq!(chis, [8, 8, 16, 16]);
}

/// Spinless fermions with hopping `t e^(i phi)` on an open chain of `l` sites, half filled.
fn complex_hopping(
    l: usize,
    phi: f64,
) -> (
    Vec<Site>,
    Mpo<blockcontract::Complex64>,
    Mps<blockcontract::Complex64>,
) {
    use blockcontract::Complex64;
    let sites = vec![Site::spinless_fermion(ParticleConserve::N).unwrap(); l];
    let hop = Complex64::from_polar(1.0, phi);
    let mut h = Terms::new();
    for i in 0..l - 1 {
        h.add(-hop, &[("Cd", i), ("C", i + 1)]);
        h.add(-hop.conj(), &[("Cd", i + 1), ("C", i)]);
    }
    let mpo = Mpo::from_terms(&sites, &h).unwrap();
    let labels: Vec<&str> = (0..l)
        .map(|i| if i % 2 == 0 { "full" } else { "empty" })
        .collect();
    let mps = Mps::product(&sites, &labels).unwrap();
    (sites, mpo, mps)
}

#[test]
fn complex_dmrg_finds_the_gauge_invariant_ground_state() {
    // an open chain's hopping phase is a gauge: the energy is that of free fermions,
    // the sum of the l/2 lowest -2 cos(k pi / (l + 1))
    let l = 8;
    let exact: f64 = (1..=l / 2)
        .map(|k| -2.0 * (k as f64 * std::f64::consts::PI / (l as f64 + 1.0)).cos())
        .sum();
    for phi in [0.0, 0.7] {
        let (sites, mpo, mps) = complex_hopping(l, phi);
        let mut d = Dmrg::new(&mpo, mps).unwrap();
        let mut e = f64::NAN;
        for _ in 0..4 {
            e = d.sweep(16).unwrap().energy;
        }
        assert!((e - exact).abs() < 1e-10, "phi {phi}: {e} vs {exact}");
        let (h, var) = d.mps.energy_and_variance(&mpo).unwrap();
        assert!((h - exact).abs() < 1e-10 && var.abs() < 1e-9, "{h} {var}");
        // <c+_3 c_4> carries the phase: |.| is gauge invariant, the phase is -phi
        let g = d.mps.correlation(&sites, &[("Cd", 3), ("C", 4)]).unwrap();
        if phi != 0.0 {
            assert!(
                (g.arg() + phi).abs() < 1e-8
                    || (g.arg() + phi - std::f64::consts::TAU).abs() < 1e-8,
                "{g}"
            );
        } else {
            assert!(g.im.abs() < 1e-12, "{g}");
        }
    }
}

#[test]
fn one_and_two_threads_agree() {
    let m = hubbard(8);
    let mut energies = Vec::new();
    for threads in [1, 2] {
        blockcontract::linalg::set_threads(threads);
        let mut d = m.dmrg();
        d.threads = threads;
        let r: Vec<f64> = (0..3).map(|_| d.sweep(32).unwrap().energy).collect();
        energies.push(r);
    }
    blockcontract::linalg::set_threads(1);
    for (a, b) in energies[0].iter().zip(&energies[1]) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn a_random_state_in_a_sector_is_normalised_seeded_and_a_dmrg_start() {
    let m = heisenberg(10);
    let a: Mps = Mps::random(&m.sites, &[0], 8, 7).unwrap();
    let b: Mps = Mps::random(&m.sites, &[0], 8, 7).unwrap();
    let c: Mps = Mps::random(&m.sites, &[0], 8, 8).unwrap();
    assert!((a.norm_squared().unwrap() - 1.0).abs() < 1e-12);
    assert!(
        (a.overlap(&b).unwrap() - 1.0).abs() < 1e-12,
        "the same seed, the same state"
    );
    assert!(
        a.overlap(&c).unwrap().abs() < 0.99,
        "another seed, another state"
    );
    assert!(a.bond_dims().iter().all(|&d| d <= 8) && a.bond_dims().iter().any(|&d| d > 1));
    let sz: f64 = a.expectation(&m.sites, "Sz").unwrap().iter().sum();
    assert!(sz.abs() < 1e-12, "total Sz {sz}");
    // right-canonical: every site right of the first is an isometry from the right
    for t in &a.tensors[1..] {
        let e = blockcontract::contract!(e[x, xp] := t[x, s, y] * conj(t)[xp, s, y]).unwrap();
        let e = e.to_dense().unwrap();
        for ((i, j), v) in e.indexed_iter().map(|(ix, v)| ((ix[0], ix[1]), *v)) {
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((v - want).abs() < 1e-12, "({i}, {j}): {v}");
        }
    }
    let s = a.entanglement_entropies().unwrap();
    assert!(s.iter().all(|&x| x > 0.0), "{s:?}");
    let mut d = Dmrg::new(&m.mpo, a).unwrap();
    let mut e = f64::NAN;
    for _ in 0..4 {
        e = d.sweep(32).unwrap().energy;
    }
    assert!((e - heisenberg_exact(10)).abs() < 1e-10, "{e}");
    // fermions in the sector N = 6, Sz = 2 (charges N and 2 Sz)
    let h = hubbard(6);
    let f: Mps = Mps::random(&h.sites, &[6, 2], 16, 1).unwrap();
    let n: f64 = f.expectation(&h.sites, "Ntot").unwrap().iter().sum();
    let sz: f64 = f.expectation(&h.sites, "Sz").unwrap().iter().sum();
    assert!(
        (n - 6.0).abs() < 1e-10 && (sz - 1.0).abs() < 1e-10,
        "{n} {sz}"
    );
    // a charge no state has
    assert!(Mps::<f64>::random(&m.sites, &[1], 8, 1).is_err());
    assert!(Mps::<f64>::random(&m.sites, &[0], 0, 1).is_err());
}

/// Single-site DMRG with subspace expansion from a product state (bond dimension 1: only the
/// expansion can grow it) reaches the exact ground state, f64 and complex; the state stays
/// normalised with its energy the reported one and its canonical form usable by a two-site
/// sweep after it; without expansion the bonds cannot grow from a product state.
#[test]
fn single_site_dmrg_with_expansion_finds_the_exact_ground_state() {
    use blockcontract::mps::Sites;
    for (model, exact, chi) in [
        (heisenberg(10), heisenberg_exact(10), 32),
        (hubbard(6), hubbard_exact(6), 64),
    ] {
        let mut d = model.dmrg();
        d.sites = Sites::One { expansion: 1e-3 };
        let mut e = f64::NAN;
        for _ in 0..6 {
            e = d.sweep(chi).unwrap().energy;
        }
        assert!(
            (e - exact).abs() < 1e-9,
            "{}: {e} vs exact {exact}",
            model.name
        );
        assert_eq!(d.update_log.len(), d.updates);
        let (h, var) = d.mps.energy_and_variance(&model.mpo).unwrap();
        assert!(
            (h - exact).abs() < 1e-9 && var.abs() < 1e-8,
            "{}: {h} {var}",
            model.name
        );
        assert!((d.mps.norm_squared().unwrap() - 1.0).abs() < 1e-10);
        // a two-site sweep continues from where the single-site sweep left the centre
        d.sites = Sites::Two;
        let e2 = d.sweep(chi).unwrap().energy;
        assert!(
            (e2 - exact).abs() < 1e-9,
            "{}: two-site after: {e2}",
            model.name
        );

        let mut plain = model.dmrg();
        plain.sites = Sites::One { expansion: 0.0 };
        plain.sweep(chi).unwrap();
        assert_eq!(
            plain.max_bond(),
            1,
            "{}: no expansion, no growth",
            model.name
        );
    }

    let l = 8;
    let exact: f64 = (1..=l / 2)
        .map(|k| -2.0 * (k as f64 * std::f64::consts::PI / (l as f64 + 1.0)).cos())
        .sum();
    let (_, mpo, mps) = complex_hopping(l, 0.7);
    let mut d = Dmrg::new(&mpo, mps).unwrap();
    d.sites = Sites::One { expansion: 1e-3 };
    let mut e = f64::NAN;
    for _ in 0..6 {
        e = d.sweep(16).unwrap().energy;
    }
    assert!((e - exact).abs() < 1e-9, "complex hopping: {e} vs {exact}");
}
