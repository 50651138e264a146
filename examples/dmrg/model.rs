//! The models: the S=1/2 Heisenberg chain (U(1), charge 2Sz) and the Fermi-Hubbard chain
//! (U(1)xU(1), charges N and 2Sz, Jordan-Wigner MPO), as MPOs built from dense operator
//! matrices, with the product state DMRG starts from.
//!
//! Conventions (flows): an MPS tensor is `[left In, physical In, right Out]` with charge 0, so
//! a bond's charge is the charge accumulated from the left; the MPO tensor is
//! `[left In, right Out, bra physical In, ket physical Out]` with charge 0: its element
//! `W[wl, wr, p, p*]` is `<p| O |p*>` of the operator in channel `(wl, wr)`.

use blockcontract::{ChargeKind, DynTensor, Error, Leg, Space, Symmetry, Tensor};
use ndarray::{Array4, ArrayD};
use std::sync::Arc;

/// A lattice model: its symmetry, the site space, the bulk MPO, the MPO channels the left and
/// right boundaries select, and the product state (one physical sector per site).
pub struct Model {
    pub name: &'static str,
    pub symmetry: Symmetry,
    pub phys: Arc<Space>,
    pub mpo_bond: Arc<Space>,
    pub w: Tensor<f64, 4>,
    /// Dense index (in `mpo_bond`) of the channel the left boundary starts in.
    pub start: usize,
    /// Dense index of the channel the right boundary ends in.
    pub end: usize,
    /// The physical sector of each site's initial state, for a chain of length `l`.
    pub init: fn(usize) -> Vec<usize>,
}

/// An MPO: its bond space, its tensor, and each channel's dense index in the bond space.
type Mpo = (Arc<Space>, Tensor<f64, 4>, Vec<usize>);

/// An MPO from channels (charges) and operator entries `(wl, wr, coefficient, matrix)` whose
/// matrices are `<p|O|p*>` in the site space's dense order.
fn mpo(
    sym: &Symmetry,
    phys: &Arc<Space>,
    channels: &[Vec<i64>],
    entries: &[(usize, usize, f64, Vec<Vec<f64>>)],
) -> Result<Mpo, Error> {
    // channels grouped by charge into sectors; each channel's dense index in that space
    let mut charges: Vec<Vec<i64>> = Vec::new();
    for c in channels {
        if !charges.contains(c) {
            charges.push(c.clone());
        }
    }
    let mut dense = vec![0usize; channels.len()];
    let mut next = 0;
    let mut sectors = Vec::new();
    for q in &charges {
        let members: Vec<usize> = (0..channels.len()).filter(|&i| &channels[i] == q).collect();
        for &m in &members {
            dense[m] = next;
            next += 1;
        }
        sectors.push((q.clone(), members.len()));
    }
    let bond = Arc::new(Space::block(sym, &sectors)?);
    let d = phys.dim();
    let mut w = Array4::<f64>::zeros((channels.len(), channels.len(), d, d));
    for (wl, wr, c, m) in entries {
        for (p, row) in m.iter().enumerate() {
            for (ps, &x) in row.iter().enumerate() {
                w[[dense[*wl], dense[*wr], p, ps]] += c * x;
            }
        }
    }
    let legs = [
        Leg::inc(&bond),
        Leg::out(&bond),
        Leg::inc(phys),
        Leg::out(phys),
    ];
    let t = Tensor::from_dense(legs, sym.zero(), &w.into_dyn())?;
    Ok((bond, t, dense))
}

fn matmul(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (0..n).map(|k| a[i][k] * b[k][j]).sum())
                .collect()
        })
        .collect()
}

fn transpose(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    (0..n).map(|i| (0..n).map(|j| a[j][i]).collect()).collect()
}

fn diag(v: &[f64]) -> Vec<Vec<f64>> {
    let n = v.len();
    (0..n)
        .map(|i| (0..n).map(|j| if i == j { v[i] } else { 0.0 }).collect())
        .collect()
}

/// The S=1/2 Heisenberg chain `H = sum_i S_i . S_(i+1)`; site states `[down, up]` (charges
/// 2Sz = -1, +1). Channels: 0 done, 1 after `S-/2`, 2 after `S+/2`, 3 after `Sz`, 4 start.
pub fn heisenberg() -> Result<Model, Error> {
    let sym = Symmetry::u1();
    let phys = Arc::new(Space::local(&sym, &[(vec![-1], 1), (vec![1], 1)])?);
    let id = diag(&[1.0, 1.0]);
    let sz = diag(&[-0.5, 0.5]);
    let sp = vec![vec![0.0, 0.0], vec![1.0, 0.0]]; // <up|S+|down> = 1
    let sm = transpose(&sp);
    let channels = vec![vec![0], vec![-2], vec![2], vec![0], vec![0]];
    let entries = vec![
        (0, 0, 1.0, id.clone()),
        (4, 4, 1.0, id),
        (4, 1, 0.5, sm.clone()),
        (1, 0, 1.0, sp.clone()),
        (4, 2, 0.5, sp),
        (2, 0, 1.0, sm),
        (4, 3, 1.0, sz.clone()),
        (3, 0, 1.0, sz),
    ];
    let (bond, w, dense) = mpo(&sym, &phys, &channels, &entries)?;
    Ok(Model {
        name: "heisenberg",
        symmetry: sym,
        phys,
        mpo_bond: bond,
        w,
        start: dense[4],
        end: dense[0],
        init: |l| (0..l).map(|i| if i % 2 == 0 { 1 } else { 0 }).collect(),
    })
}

/// The Fermi-Hubbard chain `H = -t sum (c+_i c_(i+1) + h.c.) + U sum n_up n_dn - mu sum n`
/// with t = 1, U = 4, mu = 0. Site states `[empty, up, down, updown]` (charges (N, 2Sz)),
/// `|updown> = c+_up c+_dn |0>`; fermion signs by Jordan-Wigner strings: the hopping
/// `c+_i c_(i+1) = (C+ F)_i C_(i+1)` and `c+_(i+1) c_i = (F C)_i C+_(i+1)`.
/// Channels: 0 start, 1 end, 2/3 after `(C+ F)` up/down, 4/5 after `(F C)` up/down.
pub fn hubbard() -> Result<Model, Error> {
    let sym = Symmetry::new(vec![ChargeKind::U1, ChargeKind::U1])?;
    let phys = Arc::new(Space::local(
        &sym,
        &[
            (vec![0, 0], 1),
            (vec![1, 1], 1),
            (vec![1, -1], 1),
            (vec![2, 0], 1),
        ],
    )?);
    let (t, u, mu) = (1.0, 4.0, 0.0);
    let id = diag(&[1.0; 4]);
    let f = diag(&[1.0, -1.0, -1.0, 1.0]);
    let mut c_up = vec![vec![0.0; 4]; 4];
    c_up[0][1] = 1.0; // <0|c_up|up>
    c_up[2][3] = 1.0; // <dn|c_up|updn>
    let mut c_dn = vec![vec![0.0; 4]; 4];
    c_dn[0][2] = 1.0; // <0|c_dn|dn>
    c_dn[1][3] = -1.0; // <up|c_dn|updn> = -1 (c_dn passes c+_up)
    let onsite = diag(&[0.0, -mu, -mu, u - 2.0 * mu]);
    let mut entries = vec![
        (0, 0, 1.0, id.clone()),
        (1, 1, 1.0, id),
        (0, 1, 1.0, onsite),
    ];
    for (k, c) in [c_up, c_dn].into_iter().enumerate() {
        let cd = transpose(&c);
        entries.push((0, 2 + k, -t, matmul(&cd, &f)));
        entries.push((2 + k, 1, 1.0, c.clone()));
        entries.push((0, 4 + k, -t, matmul(&f, &c)));
        entries.push((4 + k, 1, 1.0, cd));
    }
    let channels = vec![
        vec![0, 0],
        vec![0, 0],
        vec![1, 1],
        vec![1, -1],
        vec![-1, -1],
        vec![-1, 1],
    ];
    let (bond, w, dense) = mpo(&sym, &phys, &channels, &entries)?;
    Ok(Model {
        name: "hubbard",
        symmetry: sym,
        phys,
        mpo_bond: bond,
        w,
        start: dense[0],
        end: dense[1],
        init: |l| (0..l).map(|i| if i % 2 == 0 { 1 } else { 2 }).collect(),
    })
}

/// A model by name.
pub fn by_name(name: &str) -> Result<Model, Error> {
    match name {
        "heisenberg" => heisenberg(),
        "hubbard" => hubbard(),
        _ => Err(Error::InvalidArgument {
            name: "--model".into(),
            reason: format!("unknown model `{name}`; expected heisenberg or hubbard"),
        }),
    }
}

/// A one-sector space of dimension 1 with charge `q`.
pub fn trivial_space(sym: &Symmetry, q: &[i64]) -> Result<Arc<Space>, Error> {
    Ok(Arc::new(Space::block(sym, &[(q.to_vec(), 1)])?))
}

/// A boundary environment `[mps bond Out, mpo bond Out, mps bond In]` (left) or
/// `[In, In, Out]` (right) on the one-dimensional bond `b`, selecting MPO channel `channel`.
pub fn boundary(
    model: &Model,
    b: &Arc<Space>,
    channel: usize,
    left: bool,
) -> Result<Tensor<f64, 3>, Error> {
    let legs = if left {
        [Leg::out(b), Leg::out(&model.mpo_bond), Leg::inc(b)]
    } else {
        [Leg::inc(b), Leg::inc(&model.mpo_bond), Leg::out(b)]
    };
    let mut dense = ArrayD::<f64>::zeros(vec![1, model.mpo_bond.dim(), 1]);
    dense[[0, channel, 0]] = 1.0;
    Tensor::from_dense(legs, model.symmetry.zero(), &dense)
}

/// The product state: site `i` a `1 x 1 x 1` tensor in physical sector `init[i]`, bonds
/// carrying the accumulated charge.
pub fn product_state(model: &Model, l: usize) -> Result<Vec<Tensor<f64, 3>>, Error> {
    let sym = &model.symmetry;
    let init = (model.init)(l);
    let mut q = sym.zero();
    let mut left = trivial_space(sym, q.values())?;
    let mut mps = Vec::with_capacity(l);
    for &s in &init {
        let qs = &model.phys.sectors()[s].charge;
        q = sym.add(&q, qs);
        let right = trivial_space(sym, q.values())?;
        let legs = vec![Leg::inc(&left), Leg::inc(&model.phys), Leg::out(&right)];
        let t = DynTensor::<f64>::from_fn(legs, sym.zero(), Some(&[vec![0, s, 0]]), |_| 1.0)?;
        mps.push(Tensor::try_from(t)?);
        left = right;
    }
    Ok(mps)
}
