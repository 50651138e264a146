//! The example's models, each a few lines of terms on the library's sites
//! (`blockcontract::mps`), with the parameters and start states of
//! `scripts/peer/dmrg_peer.py`: the S=1/2 Heisenberg chain, the XXZ chain in a field, the
//! spin-1 chain with single-ion anisotropy, the J1-J2 chain, the Heisenberg model on a
//! width-3 cylinder (U(1) on 2Sz), the Fermi-Hubbard chain (U(1)xU(1) on N and 2Sz; the MPO
//! builder inserts the Jordan-Wigner strings) and the Bose-Hubbard chain (U(1) on N).

use blockcontract::mps::{Mpo, Mps, ParticleConserve, Site, SpinConserve, Terms};
use blockcontract::Error;

/// A lattice model on a chain: its sites, its MPO and its start state.
pub struct Model {
    pub name: &'static str,
    pub sites: Vec<Site>,
    pub mpo: Mpo<f64>,
    pub start: Mps,
}

/// `sites` and `terms`, starting from `up` on even sites and `down` on odd ones (`1` on
/// every site for bosons).
fn model(name: &'static str, sites: Vec<Site>, terms: &Terms<f64>) -> Result<Model, Error> {
    let mpo = Mpo::from_terms(&sites, terms)?;
    let labels: Vec<&str> = (0..sites.len())
        .map(|i| match (name, i % 2) {
            ("bose-hubbard", _) => "1",
            (_, 0) => "up",
            _ => "down",
        })
        .collect();
    let start = Mps::product(&sites, &labels)?;
    Ok(Model {
        name,
        sites,
        mpo,
        start,
    })
}

/// `J (S+_i S-_j / 2 + S-_i S+_j / 2 + jz Sz_i Sz_j)`.
fn exchange(h: &mut Terms<f64>, j: f64, jz: f64, i: usize, k: usize) {
    h.add(0.5 * j, &[("Sp", i), ("Sm", k)]);
    h.add(0.5 * j, &[("Sm", i), ("Sp", k)]);
    h.add(j * jz, &[("Sz", i), ("Sz", k)]);
}

/// A spin-S chain: exchange `J = 1` (`Sz Sz` times `jz`) to the nearest neighbour and `j2` to
/// the next-nearest, field `hz`, anisotropy `d Sz^2`.
fn spin_chain(
    twice_s: u32,
    l: usize,
    (jz, j2, hz, d): (f64, f64, f64, f64),
) -> Result<Terms<f64>, Error> {
    let mut h = Terms::new();
    for i in 0..l {
        if i + 1 < l {
            exchange(&mut h, 1.0, jz, i, i + 1);
        }
        if i + 2 < l && j2 != 0.0 {
            exchange(&mut h, j2, 1.0, i, i + 2);
        }
        if hz != 0.0 {
            h.add(-hz, &[("Sz", i)]);
        }
        if d != 0.0 && twice_s > 1 {
            h.add(d, &[("Sz", i), ("Sz", i)]);
        }
    }
    Ok(h)
}

/// The S=1/2 Heisenberg chain `H = sum_i S_i . S_(i+1)` on `l` sites.
pub fn heisenberg(l: usize) -> Result<Model, Error> {
    let h = spin_chain(1, l, (1.0, 0.0, 0.0, 0.0))?;
    model("heisenberg", vec![Site::spin(1, SpinConserve::Sz)?; l], &h)
}

/// The S=1/2 Heisenberg model on a width-3 cylinder of `l = 3 Lx` sites, site `3 x + y`.
pub fn cylinder(l: usize) -> Result<Model, Error> {
    if !l.is_multiple_of(3) {
        return Err(Error::InvalidArgument {
            name: "L".into(),
            reason: format!("{l} sites: a width-3 cylinder needs a multiple of 3"),
        });
    }
    let mut h = Terms::new();
    for x in 0..l / 3 {
        for y in 0..3 {
            let i = 3 * x + y;
            if x + 1 < l / 3 {
                exchange(&mut h, 1.0, 1.0, i, i + 3);
            }
            exchange(&mut h, 1.0, 1.0, i, 3 * x + (y + 1) % 3);
        }
    }
    model("cylinder", vec![Site::spin(1, SpinConserve::Sz)?; l], &h)
}

/// The Bose-Hubbard chain `-t sum (b+_i b_(i+1) + h.c.) + U/2 sum n (n - 1)`, t = 1, U = 4,
/// at most 3 bosons a site.
pub fn bose_hubbard(l: usize) -> Result<Model, Error> {
    let (t, u) = (1.0, 4.0);
    let mut h = Terms::new();
    for i in 0..l {
        if i + 1 < l {
            h.add(-t, &[("Bd", i), ("B", i + 1)]);
            h.add(-t, &[("Bd", i + 1), ("B", i)]);
        }
        h.add(u / 2.0, &[("NN", i)]).add(-u / 2.0, &[("N", i)]);
    }
    let site = Site::boson(3, ParticleConserve::N)?;
    model("bose-hubbard", vec![site; l], &h)
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
        "xxz" => {
            let h = spin_chain(1, l, (0.5, 0.0, 0.2, 0.0))?;
            model("xxz", vec![Site::spin(1, SpinConserve::Sz)?; l], &h)
        }
        "spin1" => {
            let h = spin_chain(2, l, (1.0, 0.0, 0.0, 0.3))?;
            model("spin1", vec![Site::spin(2, SpinConserve::Sz)?; l], &h)
        }
        "j1j2" => {
            let h = spin_chain(1, l, (1.0, 0.3, 0.0, 0.0))?;
            model("j1j2", vec![Site::spin(1, SpinConserve::Sz)?; l], &h)
        }
        "cylinder" => cylinder(l),
        "hubbard" => hubbard(l),
        "bose-hubbard" => bose_hubbard(l),
        _ => Err(Error::InvalidArgument {
            name: "--model".into(),
            reason: format!(
                "unknown model `{name}`; expected heisenberg, xxz, spin1, j1j2, cylinder, hubbard or bose-hubbard"
            ),
        }),
    }
}
