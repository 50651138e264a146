//! The standard sites: spin S, spinful fermions, spinless fermions and bosons with an
//! occupation cutoff, with TeNPy's operator names.

use super::site::{ParticleConserve, Site, SpinConserve};
use crate::{ChargeKind, Error, Result, Symmetry};

/// `m x m` zeros.
fn zeros(d: usize) -> Vec<Vec<f64>> {
    vec![vec![0.0; d]; d]
}

fn diag(v: &[f64]) -> Vec<Vec<f64>> {
    let mut m = zeros(v.len());
    for (i, &x) in v.iter().enumerate() {
        m[i][i] = x;
    }
    m
}

fn transpose(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = a.len();
    (0..d).map(|i| (0..d).map(|j| a[j][i]).collect()).collect()
}

fn matmul(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = a.len();
    (0..d)
        .map(|i| {
            (0..d)
                .map(|j| (0..d).map(|k| a[i][k] * b[k][j]).sum())
                .collect()
        })
        .collect()
}

/// The symmetry and each state's charge for a conservation choice: `n` the particle numbers
/// (or, for spins, `2 Sz`).
fn charges(conserve: ParticleConserve, n: &[i64]) -> Result<(Symmetry, Vec<Vec<i64>>)> {
    Ok(match conserve {
        ParticleConserve::N => (Symmetry::u1(), n.iter().map(|&x| vec![x]).collect()),
        ParticleConserve::Parity => (
            Symmetry::zn(2)?,
            n.iter().map(|&x| vec![x.rem_euclid(2)]).collect(),
        ),
        ParticleConserve::None => (Symmetry::none(), n.iter().map(|_| vec![]).collect()),
    })
}

impl Site {
    /// A spin `S = twice_s / 2` (1/2, 1, 3/2, ...): states `m = -S..=S` (labels `down` for
    /// `-S`, `up` for `+S`, `2m` in between: `down`, `0`, `up` for S = 1), charge `2m` under
    /// [`SpinConserve::Sz`].
    /// Operators `Id`, `Sz`, `Sp`, `Sm` (`<m+1|S+|m> = sqrt(S(S+1) - m(m+1))`), and `Sx`
    /// without conservation.
    pub fn spin(twice_s: u32, conserve: SpinConserve) -> Result<Site> {
        if twice_s == 0 {
            return Err(Error::InvalidSite {
                site: "spin".into(),
                reason: "spin 0 has one state and no dynamics; twice_s >= 1".into(),
            });
        }
        let d = twice_s as usize + 1;
        let twice_m: Vec<i64> = (0..d).map(|i| 2 * i as i64 - twice_s as i64).collect();
        // TeNPy's labels: `down` and `up` for m = -S and +S, `2m` in between
        let labels: Vec<String> = twice_m
            .iter()
            .map(|&m| match m {
                m if m == -(twice_s as i64) => "down".to_string(),
                m if m == twice_s as i64 => "up".to_string(),
                m => m.to_string(),
            })
            .collect();
        let (sym, qs) = match conserve {
            SpinConserve::Sz => (Symmetry::u1(), twice_m.iter().map(|&m| vec![m]).collect()),
            SpinConserve::None => (Symmetry::none(), vec![vec![]; d]),
        };
        let states: Vec<(&str, Vec<i64>)> = labels.iter().map(String::as_str).zip(qs).collect();
        let mut site = Site::new(&format!("spin-{twice_s}/2"), &sym, &states)?;
        let s = twice_s as f64 / 2.0;
        let m: Vec<f64> = twice_m.iter().map(|&x| x as f64 / 2.0).collect();
        let mut sp = zeros(d);
        for i in 0..d - 1 {
            sp[i + 1][i] = (s * (s + 1.0) - m[i] * (m[i] + 1.0)).sqrt();
        }
        site.add_operator("Sz", &diag(&m), false)?;
        site.add_operator("Sp", &sp, false)?;
        site.add_operator("Sm", &transpose(&sp), false)?;
        if conserve == SpinConserve::None {
            let sx: Vec<Vec<f64>> = (0..d)
                .map(|i| (0..d).map(|j| 0.5 * (sp[i][j] + sp[j][i])).collect())
                .collect();
            site.add_operator("Sx", &sx, false)?;
        }
        Ok(site)
    }

    /// Spinful fermions: states `empty`, `up`, `down`, `updown = c+_up c+_down |empty>`;
    /// charges (N, 2 Sz) under [`ParticleConserve::N`] (U(1) x U(1)), N mod 2 under `Parity`.
    /// Operators `Cu`, `Cdu`, `Cd`, `Cdd` (fermionic; `Cd` annihilates a down spin), `Nu`,
    /// `Nd`, `NuNd`, `Ntot`, `Sz`, `Sp`, `Sm`, and `JW = (-1)^N`.
    pub fn spinful_fermion(conserve: ParticleConserve) -> Result<Site> {
        let (n, sz) = ([0, 1, 1, 2], [0i64, 1, -1, 0]);
        let (sym, qs) = match conserve {
            ParticleConserve::N => (
                Symmetry::new(vec![ChargeKind::U1, ChargeKind::U1])?,
                (0..4).map(|i| vec![n[i], sz[i]]).collect(),
            ),
            other => charges(other, &n)?,
        };
        let labels = ["empty", "up", "down", "updown"];
        let states: Vec<(&str, Vec<i64>)> = labels.iter().copied().zip(qs).collect();
        let mut site = Site::new("spinful fermion", &sym, &states)?;
        let mut cu = zeros(4);
        cu[0][1] = 1.0; // <empty|c_up|up>
        cu[2][3] = 1.0; // <down|c_up|updown>
        let mut cd = zeros(4);
        cd[0][2] = 1.0; // <empty|c_down|down>
        cd[1][3] = -1.0; // <up|c_down|updown>: c_down passes c+_up
        let nu = diag(&[0.0, 1.0, 0.0, 1.0]);
        let nd = diag(&[0.0, 0.0, 1.0, 1.0]);
        site.add_operator("Cu", &cu, true)?;
        site.add_operator("Cdu", &transpose(&cu), true)?;
        site.add_operator("Cd", &cd, true)?;
        site.add_operator("Cdd", &transpose(&cd), true)?;
        site.add_operator("Nu", &nu, false)?;
        site.add_operator("Nd", &nd, false)?;
        site.add_operator("NuNd", &matmul(&nu, &nd), false)?;
        site.add_operator("Ntot", &diag(&[0.0, 1.0, 1.0, 2.0]), false)?;
        site.add_operator("Sz", &diag(&[0.0, 0.5, -0.5, 0.0]), false)?;
        let sp = matmul(&transpose(&cu), &cd); // c+_up c_down
        site.add_operator("Sp", &sp, false)?;
        site.add_operator("Sm", &transpose(&sp), false)?;
        site.add_operator("JW", &diag(&[1.0, -1.0, -1.0, 1.0]), false)?;
        Ok(site)
    }

    /// Spinless fermions: states `empty`, `full`; operators `C`, `Cd` (fermionic), `N`, and
    /// `JW = (-1)^N`.
    pub fn spinless_fermion(conserve: ParticleConserve) -> Result<Site> {
        let (sym, qs) = charges(conserve, &[0, 1])?;
        let states: Vec<(&str, Vec<i64>)> = ["empty", "full"].into_iter().zip(qs).collect();
        let mut site = Site::new("spinless fermion", &sym, &states)?;
        let mut c = zeros(2);
        c[0][1] = 1.0;
        site.add_operator("C", &c, true)?;
        site.add_operator("Cd", &transpose(&c), true)?;
        site.add_operator("N", &diag(&[0.0, 1.0]), false)?;
        site.add_operator("JW", &diag(&[1.0, -1.0]), false)?;
        Ok(site)
    }

    /// Bosons with at most `n_max` per site: states `0..=n_max`; operators `B`
    /// (`<n-1|b|n> = sqrt(n)`), `Bd`, `N`, `NN` (`N^2`).
    pub fn boson(n_max: usize, conserve: ParticleConserve) -> Result<Site> {
        if n_max == 0 {
            return Err(Error::InvalidSite {
                site: "boson".into(),
                reason: "n_max 0 leaves one state; at least 1".into(),
            });
        }
        let d = n_max + 1;
        let n: Vec<i64> = (0..d as i64).collect();
        let (sym, qs) = charges(conserve, &n)?;
        let labels: Vec<String> = n.iter().map(|x| x.to_string()).collect();
        let states: Vec<(&str, Vec<i64>)> = labels.iter().map(String::as_str).zip(qs).collect();
        let mut site = Site::new(&format!("boson (n_max {n_max})"), &sym, &states)?;
        let mut b = zeros(d);
        for k in 1..d {
            b[k - 1][k] = (k as f64).sqrt();
        }
        let nn: Vec<f64> = (0..d).map(|k| k as f64).collect();
        site.add_operator("B", &b, false)?;
        site.add_operator("Bd", &transpose(&b), false)?;
        site.add_operator("N", &diag(&nn), false)?;
        let sq: Vec<f64> = nn.iter().map(|x| x * x).collect();
        site.add_operator("NN", &diag(&sq), false)?;
        Ok(site)
    }
}
