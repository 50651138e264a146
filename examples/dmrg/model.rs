//! The example's two models, written as sums of terms on the library's sites
//! (`blockcontract::mps`): the S=1/2 Heisenberg chain (U(1), charge 2Sz) and the
//! Fermi-Hubbard chain (U(1)xU(1), charges N and 2Sz; the MPO builder inserts the
//! Jordan-Wigner strings), each with TeNPy's start state up, down, up, ...

use blockcontract::mps::{Mpo, Mps, ParticleConserve, Site, SpinConserve, Terms};
use blockcontract::Error;

/// A lattice model on a chain: its sites, its MPO and its start state.
pub struct Model {
    pub name: &'static str,
    pub sites: Vec<Site>,
    pub mpo: Mpo<f64>,
    pub start: Mps,
}

/// `sites` and `terms`, starting from `up` on even sites and `down` on odd ones.
fn model(name: &'static str, sites: Vec<Site>, terms: &Terms<f64>) -> Result<Model, Error> {
    let mpo = Mpo::from_terms(&sites, terms)?;
    let labels: Vec<&str> = (0..sites.len())
        .map(|i| if i % 2 == 0 { "up" } else { "down" })
        .collect();
    let start = Mps::product(&sites, &labels)?;
    Ok(Model {
        name,
        sites,
        mpo,
        start,
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
