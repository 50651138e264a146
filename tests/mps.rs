//! Sites and MPOs from terms against independent dense constructions: every standard site's
//! operators against their defining relations, every MPO against the Hamiltonian built as a
//! sum of Kronecker products (Jordan-Wigner strings written out), bond dimensions, and each
//! malformed term or site refused with its typed error.

use blockcontract::mps::{Dmrg, Mpo, Mps, ParticleConserve, Site, SpinConserve, Terms};
use blockcontract::{Complex64, Error, Scalar};
use ndarray::{Array1, Array2, Ix3, Ix4};

/// The operator `name` of `site` as a dense matrix.
fn op(site: &Site, name: &str) -> Array2<f64> {
    let o = site.op(name).unwrap();
    Array2::from_shape_fn((o.dim, o.dim), |(p, q)| o.at(p, q))
}

fn comm(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    a.dot(b) - b.dot(a)
}

fn anti(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    a.dot(b) + b.dot(a)
}

fn assert_close(a: &Array2<f64>, b: &Array2<f64>, what: &str) {
    let d = (a - b).iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(d < 1e-12, "{what}: max difference {d}\n{a}\n{b}");
}

#[test]
fn spin_operators_obey_the_su2_algebra() {
    for twice_s in 1..=4 {
        for conserve in [SpinConserve::Sz, SpinConserve::None] {
            let site = Site::spin(twice_s, conserve).unwrap();
            let (sz, sp, sm) = (op(&site, "Sz"), op(&site, "Sp"), op(&site, "Sm"));
            assert_close(&comm(&sz, &sp), &sp, "[Sz, S+] = S+");
            assert_close(&comm(&sp, &sm), &(&sz * 2.0), "[S+, S-] = 2 Sz");
            let s = twice_s as f64 / 2.0;
            let casimir = sz.dot(&sz) + (sp.dot(&sm) + sm.dot(&sp)) * 0.5;
            let want = Array2::eye(site.dim()) * (s * (s + 1.0));
            assert_close(&casimir, &want, "S^2 = S(S+1)");
            if conserve == SpinConserve::None {
                assert_close(&op(&site, "Sx"), &((&sp + &sm) * 0.5), "Sx");
            } else {
                assert!(site.op("Sx").is_err(), "Sx breaks U(1): not defined");
            }
        }
    }
    let half = Site::spin(1, SpinConserve::Sz).unwrap();
    assert_eq!(half.labels(), ["down", "up"]);
    let (down, up) = (half.state("down").unwrap(), half.state("up").unwrap());
    assert_eq!(op(&half, "Sp")[[up, down]], 1.0);
    assert_eq!(half.state_charge(up), [1]);
}

#[test]
fn fermion_operators_anticommute_and_count() {
    for conserve in [
        ParticleConserve::N,
        ParticleConserve::Parity,
        ParticleConserve::None,
    ] {
        let site = Site::spinful_fermion(conserve).unwrap();
        let id = Array2::<f64>::eye(4);
        let (cu, cd) = (op(&site, "Cu"), op(&site, "Cd"));
        let (cdu, cdd) = (op(&site, "Cdu"), op(&site, "Cdd"));
        assert_close(&anti(&cu, &cdu), &id, "{c_up, c+_up} = 1");
        assert_close(&anti(&cd, &cdd), &id, "{c_dn, c+_dn} = 1");
        assert_close(&anti(&cu, &cdd), &(&id * 0.0), "{c_up, c+_dn} = 0");
        assert_close(&anti(&cu, &cd), &(&id * 0.0), "{c_up, c_dn} = 0");
        assert_close(&op(&site, "Nu"), &cdu.dot(&cu), "Nu");
        assert_close(&op(&site, "Nd"), &cdd.dot(&cd), "Nd");
        assert_close(&op(&site, "NuNd"), &cdu.dot(&cu).dot(&cdd.dot(&cd)), "NuNd");
        let n = op(&site, "Ntot");
        let jw = Array2::from_diag(&n.diag().mapv(|x| (-1f64).powi(x as i32)));
        assert_close(&op(&site, "JW"), &jw, "JW = (-1)^N");
        assert_close(&op(&site, "Sp"), &cdu.dot(&cd), "S+ = c+_up c_dn");
        assert_close(
            &op(&site, "Sz"),
            &((op(&site, "Nu") - op(&site, "Nd")) * 0.5),
            "Sz",
        );
        // |updown> = c+_up c+_dn |empty>
        let (e, ud) = (site.state("empty").unwrap(), site.state("updown").unwrap());
        assert_eq!(cdu.dot(&cdd)[[ud, e]], 1.0);
        assert!(site.op("Cu").unwrap().fermionic && !site.op("Nu").unwrap().fermionic);
    }
    let s = Site::spinless_fermion(ParticleConserve::N).unwrap();
    let (c, cd) = (op(&s, "C"), op(&s, "Cd"));
    assert_close(&anti(&c, &cd), &Array2::eye(2), "{c, c+} = 1");
    assert_close(&op(&s, "N"), &cd.dot(&c), "N = c+ c");
    assert_close(&op(&s, "JW"), &(Array2::eye(2) - op(&s, "N") * 2.0), "JW");
}

#[test]
fn boson_operators_below_the_cutoff() {
    for n_max in 1..=4 {
        let site = Site::boson(n_max, ParticleConserve::N).unwrap();
        let (b, bd) = (op(&site, "B"), op(&site, "Bd"));
        let c = comm(&b, &bd);
        for k in 0..n_max {
            assert!(
                (c[[k, k]] - 1.0).abs() < 1e-12,
                "[b, b+] = 1 below the cutoff"
            );
        }
        assert_close(&op(&site, "N"), &bd.dot(&b), "N = b+ b");
        assert_close(&op(&site, "NN"), &op(&site, "N").dot(&op(&site, "N")), "NN");
    }
}

/// `a (x) b`.
fn kron(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    let (n, m) = (a.nrows(), b.nrows());
    Array2::from_shape_fn((n * m, n * m), |(i, j)| {
        a[[i / m, j / m]] * b[[i % m, j % m]]
    })
}

/// The operator `name` on site `i` of the chain as a full matrix; a fermionic one carries
/// `JW` on every site left of `i` (Jordan-Wigner, written out).
fn full(sites: &[Site], name: &str, i: usize) -> Array2<f64> {
    let fermionic = sites[i].op(name).unwrap().fermionic;
    let mut m = Array2::<f64>::eye(1);
    for (j, s) in sites.iter().enumerate() {
        let local = if j == i {
            op(s, name)
        } else if j < i && fermionic {
            op(s, "JW")
        } else {
            Array2::eye(s.dim())
        };
        m = kron(&m, &local);
    }
    m
}

/// `sum_k c_k prod_j O_j` with each operator a full matrix, in the order written.
fn dense_h(sites: &[Site], terms: &[(f64, Vec<(&str, usize)>)]) -> Array2<f64> {
    let n: usize = sites.iter().map(Site::dim).product();
    let mut h = Array2::<f64>::zeros((n, n));
    for (c, ops) in terms {
        let p = ops
            .iter()
            .fold(Array2::eye(n), |acc, (o, i)| acc.dot(&full(sites, o, *i)));
        h = h + p * *c;
    }
    h
}

/// The MPO contracted to a full matrix (the boundaries have one state each), in complex
/// arithmetic: `z` gives each entry as a complex number.
fn mpo_complex<T: Scalar>(mpo: &Mpo<T>, z: impl Fn(T) -> Complex64) -> Array2<Complex64> {
    // acc[w, P, Q]: the sites so far, ending on bond state w
    let mut acc = ndarray::Array3::<Complex64>::ones((1, 1, 1));
    for w in &mpo.w {
        let w = w.to_dense().unwrap().into_dimensionality::<Ix4>().unwrap();
        let (dl, dr, d, _) = w.dim();
        let (n, _) = (acc.shape()[1], acc.shape()[2]);
        let mut next = ndarray::Array3::<Complex64>::zeros((dr, n * d, n * d));
        for a in 0..dl {
            for b in 0..dr {
                for p in 0..d {
                    for q in 0..d {
                        let x = z(w[[a, b, p, q]]);
                        if x == Complex64::new(0.0, 0.0) {
                            continue;
                        }
                        for i in 0..n {
                            for j in 0..n {
                                next[[b, i * d + p, j * d + q]] += acc[[a, i, j]] * x;
                            }
                        }
                    }
                }
            }
        }
        acc = next;
    }
    acc.index_axis(ndarray::Axis(0), 0).to_owned()
}

/// A real MPO contracted to a full matrix.
fn mpo_dense(mpo: &Mpo<f64>) -> Array2<f64> {
    mpo_complex(mpo, |x| Complex64::new(x, 0.0)).mapv(|z| z.re)
}

fn check(sites: &[Site], terms: &[(f64, Vec<(&str, usize)>)], what: &str) -> Vec<usize> {
    let mut t = Terms::new();
    for (c, ops) in terms {
        t.add(*c, ops);
    }
    let mpo = Mpo::<f64>::from_terms(sites, &t).unwrap();
    assert_close(&mpo_dense(&mpo), &dense_h(sites, terms), what);
    mpo.bond_dims()
}

fn heisenberg_terms(l: usize, jz: f64, h: f64) -> Vec<(f64, Vec<(&'static str, usize)>)> {
    let mut t = Vec::new();
    for i in 0..l - 1 {
        t.push((0.5, vec![("Sp", i), ("Sm", i + 1)]));
        t.push((0.5, vec![("Sm", i), ("Sp", i + 1)]));
        t.push((jz, vec![("Sz", i), ("Sz", i + 1)]));
    }
    for i in 0..l {
        t.push((-h, vec![("Sz", i)]));
    }
    t
}

#[test]
fn spin_chains_match_their_dense_hamiltonians() {
    let half = Site::spin(1, SpinConserve::Sz).unwrap();
    let dims = check(
        &vec![half.clone(); 6],
        &heisenberg_terms(6, 1.0, 0.0),
        "Heisenberg",
    );
    assert_eq!(dims, [1, 5, 5, 5, 5, 5, 1], "TeNPy's bond dimension 5");
    check(
        &vec![half.clone(); 6],
        &heisenberg_terms(6, 0.7, 0.3),
        "XXZ in a field",
    );
    // J1-J2: next-nearest neighbours share the nearest neighbours' prefix states
    let mut t = heisenberg_terms(7, 1.0, 0.0);
    for i in 0..5 {
        t.push((0.25, vec![("Sp", i), ("Sm", i + 2)]));
        t.push((0.25, vec![("Sm", i), ("Sp", i + 2)]));
        t.push((0.5, vec![("Sz", i), ("Sz", i + 2)]));
    }
    let dims = check(&vec![half.clone(); 7], &t, "J1-J2");
    assert_eq!(dims.iter().max(), Some(&8), "{dims:?}");
    // spin 1 with single-ion anisotropy D Sz^2 (an on-site product of two operators)
    let one = Site::spin(2, SpinConserve::Sz).unwrap();
    let mut t = heisenberg_terms(4, 1.0, 0.0);
    for i in 0..4 {
        t.push((0.4, vec![("Sz", i), ("Sz", i)]));
    }
    check(&vec![one; 4], &t, "spin-1 with anisotropy");
    // operators written out of site order
    let t = vec![
        (1.5, vec![("Sz", 3), ("Sp", 0), ("Sm", 2)]),
        (1.5, vec![("Sz", 3), ("Sm", 0), ("Sp", 2)]),
    ];
    check(
        &vec![half; 5],
        &t,
        "three-site terms, written right to left",
    );
}

#[test]
fn fermion_chains_get_their_jordan_wigner_strings() {
    let f = Site::spinful_fermion(ParticleConserve::N).unwrap();
    let (l, tt, u) = (4, 1.0, 4.0);
    let mut t = Vec::new();
    for i in 0..l - 1 {
        for (c, cd) in [("Cu", "Cdu"), ("Cd", "Cdd")] {
            t.push((-tt, vec![(cd, i), (c, i + 1)]));
            t.push((-tt, vec![(cd, i + 1), (c, i)]));
        }
    }
    for i in 0..l {
        t.push((u, vec![("NuNd", i)]));
    }
    let dims = check(&vec![f.clone(); l], &t, "Hubbard");
    assert_eq!(dims, [1, 6, 6, 6, 1], "TeNPy's bond dimension 6");
    // long-range hopping and pair terms of spinless fermions: strings over several sites
    for conserve in [ParticleConserve::N, ParticleConserve::Parity] {
        let s = Site::spinless_fermion(conserve).unwrap();
        let t = vec![
            (0.7, vec![("Cd", 0), ("C", 4)]),
            (0.7, vec![("Cd", 4), ("C", 0)]),
            (-0.3, vec![("Cd", 1), ("Cd", 3), ("C", 2), ("C", 0)]),
            (-0.3, vec![("Cd", 0), ("Cd", 2), ("C", 3), ("C", 1)]),
            (1.1, vec![("N", 2), ("N", 4)]),
            (0.2, vec![("C", 3), ("Cd", 1)]),
            (0.2, vec![("C", 1), ("Cd", 3)]),
        ];
        check(&vec![s; 5], &t, "spinless fermions, long range");
    }
    let b = Site::boson(2, ParticleConserve::N).unwrap();
    let mut t = Vec::new();
    for i in 0..3 {
        t.push((-1.0, vec![("Bd", i), ("B", i + 1)]));
        t.push((-1.0, vec![("Bd", i + 1), ("B", i)]));
    }
    for i in 0..4 {
        t.push((2.0, vec![("NN", i)]));
        t.push((-2.5, vec![("N", i)]));
    }
    check(&vec![b; 4], &t, "Bose-Hubbard");
}

#[test]
fn complex_couplings_build_a_hermitian_mpo() {
    let s = Site::spinless_fermion(ParticleConserve::N).unwrap();
    let sites = vec![s; 4];
    let hop = Complex64::from_polar(1.0, 0.4);
    let mut t = Terms::new();
    for i in 0..3 {
        t.add(-hop, &[("Cd", i), ("C", i + 1)]);
        t.add(-hop.conj(), &[("Cd", i + 1), ("C", i)]);
    }
    let mpo = Mpo::<Complex64>::from_terms(&sites, &t).unwrap();
    let h = mpo_complex(&mpo, |z| z);
    let (re, im) = (h.mapv(|z| z.re), h.mapv(|z| z.im));
    let terms_re: Vec<(f64, Vec<(&str, usize)>)> = (0..3)
        .flat_map(|i| {
            [
                (-hop.re, vec![("Cd", i), ("C", i + 1)]),
                (-hop.re, vec![("Cd", i + 1), ("C", i)]),
            ]
        })
        .collect();
    let terms_im: Vec<(f64, Vec<(&str, usize)>)> = (0..3)
        .flat_map(|i| {
            [
                (-hop.im, vec![("Cd", i), ("C", i + 1)]),
                (hop.im, vec![("Cd", i + 1), ("C", i)]),
            ]
        })
        .collect();
    assert_close(&re, &dense_h(&sites, &terms_re), "real part");
    assert_close(&im, &dense_h(&sites, &terms_im), "imaginary part");
    assert_close(&re, &re.t().to_owned(), "Re H symmetric");
    assert_close(&im, &(-im.t().to_owned()), "Im H antisymmetric");
}

fn term_error(sites: &[Site], ops: &[(&str, usize)]) -> (usize, String) {
    let mut t = Terms::new();
    t.add(1.0, &[("Sz", 0), ("Sz", 1)]);
    t.add(1.0, ops);
    match Mpo::<f64>::from_terms(sites, &t) {
        Err(Error::InvalidTerm { term, reason, .. }) => (term, reason),
        other => panic!("{ops:?}: expected InvalidTerm, got {other:?}"),
    }
}

#[test]
fn bad_terms_and_sites_get_typed_errors() {
    let half = Site::spin(1, SpinConserve::Sz).unwrap();
    let chain = vec![half.clone(); 4];
    let (k, r) = term_error(&chain, &[("Sq", 1)]);
    assert!(
        k == 1 && r.contains("no operator `Sq`") && r.contains("site 1"),
        "{r}"
    );
    let (_, r) = term_error(&chain, &[("Sz", 2), ("Sz", 4)]);
    assert!(
        r.contains("site 4") && r.contains("outside the chain of 4"),
        "{r}"
    );
    let (_, r) = term_error(&chain, &[("Sp", 0), ("Sp", 3)]);
    assert!(r.contains("changes the conserved charges by [4]"), "{r}");
    let (_, r) = term_error(&chain, &[]);
    assert!(r.contains("at least one operator"), "{r}");
    let fermions = vec![Site::spinless_fermion(ParticleConserve::Parity).unwrap(); 3];
    let mut t = Terms::new();
    t.add(1.0, &[("C", 1)]);
    let e = Mpo::<f64>::from_terms(&fermions, &t).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidTerm { term: 0, reason, .. } if reason.contains("1 fermionic")),
        "{e}"
    );
    // a fermionic operator on a site without `JW` under its string
    let mut bare = Site::new(
        "bare",
        &blockcontract::Symmetry::u1(),
        &[("0", vec![0]), ("1", vec![1])],
    )
    .unwrap();
    bare.add_operator("c", &[vec![0.0, 1.0], vec![0.0, 0.0]], true)
        .unwrap();
    bare.add_operator("cd", &[vec![0.0, 0.0], vec![1.0, 0.0]], true)
        .unwrap();
    let mut t = Terms::new();
    t.add(1.0, &[("cd", 0), ("c", 2)]);
    let e = Mpo::<f64>::from_terms(&vec![bare.clone(); 3], &t).unwrap_err();
    assert!(
        e.to_string().contains("passes site 0") && e.to_string().contains("no `JW`"),
        "{e}"
    );
    // an operator with no definite charge
    let e = bare
        .add_operator("x", &[vec![0.0, 1.0], vec![1.0, 0.0]], false)
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidSite { site, reason } if site == "bare" && reason.contains("no definite charge")),
        "{e}"
    );
    let e = bare
        .add_operator("y", &[vec![0.0, 1.0]], false)
        .unwrap_err();
    assert!(e.to_string().contains("not a 2 x 2 matrix"), "{e}");
    let e = Site::new(
        "twice",
        &blockcontract::Symmetry::u1(),
        &[("a", vec![0]), ("a", vec![1])],
    )
    .unwrap_err();
    assert!(e.to_string().contains("`a` appears twice"), "{e}");
    // sites of different symmetries
    let plain = Site::spin(1, SpinConserve::None).unwrap();
    let e = Mpo::<f64>::from_terms(&[half, plain], &Terms::new()).unwrap_err();
    assert!(matches!(e, Error::InvalidSite { .. }), "{e}");
    assert!(
        Site::spin(0, SpinConserve::Sz).is_err() && Site::boson(0, ParticleConserve::N).is_err()
    );
}

#[test]
fn a_custom_site_in_any_state_order() {
    // states given out of charge order are grouped by charge; operators follow their labels
    let sym = blockcontract::Symmetry::u1();
    let mut s = Site::new(
        "three",
        &sym,
        &[("a", vec![1]), ("b", vec![0]), ("c", vec![1])],
    )
    .unwrap();
    let m = vec![
        vec![0.0, 2.0, 0.0],
        vec![0.0, 0.0, 0.0],
        vec![0.0, 3.0, 0.0],
    ]; // b -> a, c
    s.add_operator("raise", &m, false).unwrap();
    let o = s.op("raise").unwrap();
    let (a, b, c) = (
        s.state("a").unwrap(),
        s.state("b").unwrap(),
        s.state("c").unwrap(),
    );
    assert_eq!((o.at(a, b), o.at(c, b), o.at(b, a)), (2.0, 3.0, 0.0));
    assert_eq!(s.charge_of("raise", o).unwrap(), [1]);
    assert_eq!(s.space().num_sectors(), 2);
}

/// The state as a dense vector (site 0 the slowest index).
fn dense_state(mps: &Mps) -> Array1<f64> {
    let mut v = Array2::<f64>::ones((1, 1)); // v[P, bond]
    for t in &mps.tensors {
        let a = t.to_dense().unwrap().into_dimensionality::<Ix3>().unwrap();
        let (dl, d, dr) = a.dim();
        let n = v.nrows();
        let mut next = Array2::<f64>::zeros((n * d, dr));
        for p in 0..n {
            for x in 0..dl {
                for s in 0..d {
                    for y in 0..dr {
                        next[[p * d + s, y]] += v[[p, x]] * a[[x, s, y]];
                    }
                }
            }
        }
        v = next;
    }
    v.column(0).to_owned()
}

/// `<v|O|v> / <v|v>` for a full matrix `O`.
fn dense_expect(v: &Array1<f64>, o: &Array2<f64>) -> f64 {
    v.dot(&o.dot(v)) / v.dot(v)
}

/// The entanglement entropy of the dense state `v` at every bond (its Schmidt values by SVD).
fn dense_entropies(v: &Array1<f64>, dims: &[usize]) -> Vec<f64> {
    let n = v.dot(v);
    (1..dims.len())
        .map(|cut| {
            let rows: usize = dims[..cut].iter().product();
            let cols = v.len() / rows;
            let m = faer::Mat::<f64>::from_fn(rows, cols, |i, j| v[i * cols + j] / n.sqrt());
            let s = m.as_ref().singular_values().unwrap();
            -s.iter()
                .map(|x| x * x)
                .filter(|&p| p > 1e-300)
                .map(|p| p * p.ln())
                .sum::<f64>()
        })
        .collect()
}

/// The state's entropies at every bond against those of its dense vector `v`.
fn check_entropies(mps: &Mps, sites: &[Site], v: &Array1<f64>, what: &str) {
    let dims: Vec<usize> = sites.iter().map(Site::dim).collect();
    let got = mps.entanglement_entropies().unwrap();
    assert_eq!(got.len(), dims.len() - 1);
    for (g, w) in got.iter().zip(dense_entropies(v, &dims)) {
        close(*g, w, what);
    }
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-10, "{what}: {a} vs {b}");
}

/// A DMRG state of `terms` on `sites` (far enough from converged that nothing is special).
fn state(sites: &[Site], terms: &[(f64, Vec<(&str, usize)>)], chi: usize) -> (Mpo<f64>, Mps) {
    let mut t = Terms::new();
    for (c, ops) in terms {
        t.add(*c, ops);
    }
    let mpo = Mpo::from_terms(sites, &t).unwrap();
    let labels: Vec<&str> = (0..sites.len())
        .map(|i| if i % 2 == 0 { "up" } else { "down" })
        .collect();
    let mut d = Dmrg::new(&mpo, Mps::product(sites, &labels).unwrap()).unwrap();
    d.sweep(chi).unwrap();
    let mps = d.mps.clone();
    (mpo, mps)
}

#[test]
fn measurements_match_the_dense_state_vector() {
    // spins: an XXZ chain in a field after one sweep at chi 6 (truncated: a generic MPS)
    let l = 7;
    let sites = vec![Site::spin(1, SpinConserve::Sz).unwrap(); l];
    let terms = heisenberg_terms(l, 0.8, 0.2);
    let (mpo, mps) = state(&sites, &terms, 6);
    let v = dense_state(&mps);
    close(mps.norm_squared().unwrap(), v.dot(&v), "norm");
    let sz = mps.expectation(&sites, "Sz").unwrap();
    for (i, x) in sz.iter().enumerate() {
        close(*x, dense_expect(&v, &full(&sites, "Sz", i)), "<Sz_i>");
    }
    for (a, i, b, j) in [
        ("Sp", 1, "Sm", 4),
        ("Sm", 5, "Sp", 2),
        ("Sz", 0, "Sz", 6),
        ("Sz", 3, "Sz", 3),
    ] {
        let want = dense_expect(&v, &full(&sites, a, i).dot(&full(&sites, b, j)));
        close(
            mps.correlation(&sites, &[(a, i), (b, j)]).unwrap(),
            want,
            "<A_i B_j>",
        );
    }
    check_entropies(&mps, &sites, &v, "entropy");
    let h = dense_h(&sites, &terms);
    let (e, var) = mps.energy_and_variance(&mpo).unwrap();
    close(e, dense_expect(&v, &h), "<H>");
    let want = dense_expect(&v, &h.dot(&h)) - dense_expect(&v, &h).powi(2);
    close(var, want, "variance");
    assert!(var > 1e-6, "a truncated state has a variance ({var})");
    let labels: Vec<&str> = (0..l)
        .map(|i| if i % 2 == 0 { "up" } else { "down" })
        .collect();
    let neel = Mps::product(&sites, &labels).unwrap();
    close(
        neel.overlap(&mps).unwrap(),
        v.dot(&dense_state(&neel)),
        "overlap",
    );

    // fermions: correlators carry their strings, whatever the written order
    let l = 4;
    let sites = vec![Site::spinful_fermion(ParticleConserve::N).unwrap(); l];
    let mut terms = Vec::new();
    for i in 0..l - 1 {
        for (c, cd) in [("Cu", "Cdu"), ("Cd", "Cdd")] {
            terms.push((-1.0, vec![(cd, i), (c, i + 1)]));
            terms.push((-1.0, vec![(cd, i + 1), (c, i)]));
        }
    }
    for i in 0..l {
        terms.push((4.0, vec![("NuNd", i)]));
    }
    let (_, mps) = state(&sites, &terms, 8);
    let v = dense_state(&mps);
    for ops in [
        vec![("Cdu", 0), ("Cu", 3)],
        vec![("Cu", 3), ("Cdu", 0)],
        vec![("Cdd", 1), ("Cd", 2)],
        vec![("Cdu", 0), ("Cdd", 1), ("Cd", 3), ("Cu", 2)],
        vec![("Ntot", 2)],
    ] {
        let want = dense_expect(
            &v,
            &ops.iter().fold(Array2::eye(v.len()), |m, (o, i)| {
                m.dot(&full(&sites, o, *i))
            }),
        );
        close(
            mps.correlation(&sites, &ops).unwrap(),
            want,
            &format!("{ops:?}"),
        );
    }
    check_entropies(&mps, &sites, &v, "fermion entropy");
    assert!(mps.correlation(&sites, &[("Cu", 9)]).is_err());
}

#[test]
fn a_saved_state_loads_back_and_a_bad_file_is_refused() {
    let l = 6;
    let sites = vec![Site::spinful_fermion(ParticleConserve::N).unwrap(); l];
    let mut terms = Vec::new();
    for i in 0..l - 1 {
        terms.push((-1.0, vec![("Cdu", i), ("Cu", i + 1)]));
        terms.push((-1.0, vec![("Cdu", i + 1), ("Cu", i)]));
        terms.push((-1.0, vec![("Cdd", i), ("Cd", i + 1)]));
        terms.push((-1.0, vec![("Cdd", i + 1), ("Cd", i)]));
    }
    let (mpo, mps) = state(&sites, &terms, 12);
    let path = std::env::temp_dir().join(format!("blockcontract-mps-{}.bin", std::process::id()));
    mps.save(&path).unwrap();
    let back = Mps::load(&path).unwrap();
    assert_eq!(back.len(), mps.len());
    for (a, b) in back.tensors.iter().zip(&mps.tensors) {
        assert_eq!(a.num_blocks(), b.num_blocks());
        assert_eq!(
            a.to_dense().unwrap(),
            b.to_dense().unwrap(),
            "values exactly equal"
        );
    }
    close(
        back.overlap(&mps).unwrap(),
        mps.norm_squared().unwrap(),
        "overlap with itself",
    );
    let (e0, _) = mps.energy_and_variance(&mpo).unwrap();
    let (e1, _) = back.energy_and_variance(&mpo).unwrap();
    assert_eq!(e0, e1);
    // the loaded state works with the original MPO in a DMRG run
    let mut d = Dmrg::new(&mpo, back).unwrap();
    assert!(d.sweep(12).unwrap().energy <= e0 + 1e-10);

    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let refused = |b: &[u8], what: &str, needle: &str| match Mps::from_bytes(b) {
        Err(Error::StateFile { reason, .. }) => {
            assert!(reason.contains(needle), "{what}: {reason}")
        }
        other => panic!("{what}: expected StateFile, got {other:?}"),
    };
    refused(&bytes[..bytes.len() - 9], "truncated values", "truncated");
    refused(&bytes[..40], "truncated header", "truncated");
    refused(
        &bytes[..7],
        "shorter than the magic",
        "not a blockcontract MPS file",
    );
    let mut flipped = bytes.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 0x40;
    refused(&flipped, "a flipped value bit", "checksum");
    refused(
        b"{\"sites\": []}\n plain JSON, not ours",
        "foreign",
        "not a blockcontract MPS file",
    );
    let mut text = bytes.clone();
    let h = u64::from_le_bytes(text[8..16].try_into().unwrap()) as usize;
    let header = String::from_utf8(text[16..16 + h].to_vec()).unwrap();
    let v2 = header.replace("\"version\":1", "\"version\":2");
    assert_ne!(v2, header);
    text.splice(16..16 + h, v2.bytes());
    refused(&text, "another version", "version 2");
    let mut garbled = bytes.clone();
    garbled[20] = b'#';
    refused(&garbled, "a broken header", "header");
    // a file that does not exist is an I/O error naming it
    let e = Mps::load("/nonexistent/state.bin").unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path.contains("nonexistent")),
        "{e}"
    );
}
