//! The models, written as sums of terms on the library's sites (`blockcontract::mps`): the
//! S=1/2 Heisenberg chain (U(1), charge 2Sz) and the Fermi-Hubbard chain (U(1)xU(1), charges
//! N and 2Sz; the MPO builder inserts the Jordan-Wigner strings), with the product state DMRG
//! starts from.
//!
//! Conventions (flows): an MPS tensor is `[left In, physical In, right Out]` with charge 0, so
//! a bond's charge is the charge accumulated from the left; the MPO tensors are the library's
//! (`[left In, right Out, physical In, physical Out]`, charge 0).

use blockcontract::mps::{Mpo, ParticleConserve, Site, SpinConserve, Terms};
use blockcontract::{DynTensor, Error, Leg, Space, Symmetry, Tensor};
use ndarray::ArrayD;
use std::sync::Arc;

/// A lattice model on a chain: its sites, its MPO and the product state (one state label per
/// site, in TeNPy's start state up, down, up, ...).
pub struct Model {
    pub name: &'static str,
    pub symmetry: Symmetry,
    pub sites: Vec<Site>,
    pub mpo: Mpo<f64>,
    /// The dense index of each site's initial state.
    pub init: Vec<usize>,
}

/// `sites`, `terms` and the start state (`up` on even sites, `down` on odd ones).
fn model(name: &'static str, sites: Vec<Site>, terms: &Terms<f64>) -> Result<Model, Error> {
    let mpo = Mpo::from_terms(&sites, terms)?;
    let init = sites
        .iter()
        .enumerate()
        .map(|(i, s)| s.state(if i % 2 == 0 { "up" } else { "down" }))
        .collect::<Result<_, _>>()?;
    Ok(Model {
        name,
        symmetry: sites[0].space().symmetry().clone(),
        sites,
        mpo,
        init,
    })
}

/// The S=1/2 Heisenberg chain `H = sum_i S_i . S_(i+1)` on `l` sites.
pub fn heisenberg(l: usize) -> Result<Model, Error> {
    let site = Site::spin(1, SpinConserve::Sz)?;
    let mut h = Terms::new();
    for i in 0..l.saturating_sub(1) {
        h.add(0.5, &[("Sp", i), ("Sm", i + 1)]);
        h.add(0.5, &[("Sm", i), ("Sp", i + 1)]);
        h.add(1.0, &[("Sz", i), ("Sz", i + 1)]);
    }
    model("heisenberg", vec![site; l], &h)
}

/// The Fermi-Hubbard chain `H = -t sum (c+_i c_(i+1) + h.c.) + U sum n_up n_dn` with t = 1,
/// U = 4 on `l` sites.
pub fn hubbard(l: usize) -> Result<Model, Error> {
    let (t, u) = (1.0, 4.0);
    let site = Site::spinful_fermion(ParticleConserve::N)?;
    let mut h = Terms::new();
    for i in 0..l.saturating_sub(1) {
        for (c, cd) in [("Cu", "Cdu"), ("Cd", "Cdd")] {
            h.add(-t, &[(cd, i), (c, i + 1)]);
            h.add(-t, &[(cd, i + 1), (c, i)]);
        }
    }
    for i in 0..l {
        h.add(u, &[("NuNd", i)]);
    }
    model("hubbard", vec![site; l], &h)
}

/// A model by name on `l` sites.
pub fn by_name(name: &str, l: usize) -> Result<Model, Error> {
    match name {
        "heisenberg" => heisenberg(l),
        "hubbard" => hubbard(l),
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
/// `[In, In, Out]` (right) on the one-dimensional bond `b`: the MPO's boundary bond has one
/// state (`start` on the left, `done` on the right).
pub fn boundary(model: &Model, b: &Arc<Space>, left: bool) -> Result<Tensor<f64, 3>, Error> {
    let bonds = &model.mpo.bonds;
    let mpo_bond = if left {
        &bonds[0]
    } else {
        &bonds[bonds.len() - 1]
    };
    let legs = if left {
        [Leg::out(b), Leg::out(mpo_bond), Leg::inc(b)]
    } else {
        [Leg::inc(b), Leg::inc(mpo_bond), Leg::out(b)]
    };
    let dense = ArrayD::<f64>::ones(vec![1, 1, 1]);
    Tensor::from_dense(legs, model.symmetry.zero(), &dense)
}

/// The product state: site `i` a `1 x 1 x 1` tensor in its initial state, bonds carrying the
/// accumulated charge.
pub fn product_state(model: &Model) -> Result<Vec<Tensor<f64, 3>>, Error> {
    let sym = &model.symmetry;
    let mut q = sym.zero();
    let mut left = trivial_space(sym, q.values())?;
    let mut mps = Vec::with_capacity(model.sites.len());
    for (site, &s) in model.sites.iter().zip(&model.init) {
        let phys = site.space();
        let (sector, _) = phys.locate(s).ok_or_else(|| Error::InvalidArgument {
            name: "init".into(),
            reason: format!("state {s} outside the site's {} states", phys.dim()),
        })?;
        q = sym.add(&q, &phys.sectors()[sector].charge);
        let right = trivial_space(sym, q.values())?;
        let legs = vec![Leg::inc(&left), Leg::inc(phys), Leg::out(&right)];
        let t = DynTensor::<f64>::from_fn(legs, sym.zero(), Some(&[vec![0, sector, 0]]), |i| {
            if i[1] == s {
                1.0
            } else {
                0.0
            }
        })?;
        mps.push(Tensor::try_from(t)?);
        left = right;
    }
    Ok(mps)
}
