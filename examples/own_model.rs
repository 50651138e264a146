//! A model of your own in a few lines: the S=1/2 Heisenberg ladder (two legs, leg coupling
//! J = 1, rung coupling J_rung = 0.5; site 2x + y for rung x, leg y) as a sum of terms, its
//! ground state by two-site DMRG with a schedule that stops on convergence, and what is
//! measured on it.
//!
//! `cargo run --release --example own_model -- [RUNGS]` (default 12)

use blockcontract::mps::{Dmrg, Mpo, Mps, Site, SpinConserve, Stop, Terms};

fn main() -> Result<(), blockcontract::Error> {
    let rungs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(12);
    let (l, j, j_rung) = (2 * rungs, 1.0, 0.5);
    // the model: every bond is an exchange S_i . S_k = (S+ S- + S- S+) / 2 + Sz Sz
    let mut h = Terms::new();
    let mut exchange = |c: f64, i: usize, k: usize| {
        h.add(c / 2.0, &[("Sp", i), ("Sm", k)])
            .add(c / 2.0, &[("Sm", i), ("Sp", k)]);
        h.add(c, &[("Sz", i), ("Sz", k)]);
    };
    for x in 0..rungs {
        exchange(j_rung, 2 * x, 2 * x + 1);
        if x + 1 < rungs {
            exchange(j, 2 * x, 2 * x + 2);
            exchange(j, 2 * x + 1, 2 * x + 3);
        }
    }
    let sites = vec![Site::spin(1, SpinConserve::Sz)?; l];
    let mpo = Mpo::<f64>::from_terms(&sites, &h)?;
    println!(
        "ladder of {rungs} rungs: {l} sites, MPO bond dimension {}",
        mpo.bond_dims().iter().max().unwrap_or(&1)
    );

    // its ground state: from the Neel state, bond dimension 32 then 64, stopping when a sweep
    // moves the energy by less than 1e-10
    let neel: Vec<&str> = (0..l)
        .map(|i| if (i + i / 2) % 2 == 0 { "up" } else { "down" })
        .collect();
    let mut dmrg = Dmrg::new(&mpo, Mps::product(&sites, &neel)?)?;
    let stop = Stop {
        energy: 1e-10,
        discarded_weight: 1e-6,
    };
    dmrg.run(&[(32, 2), (64, 10)], &stop, |r| {
        println!(
            "sweep {} chi {} E {:.12} max_trunc_err {:.3e} time_s {:.3}",
            r.sweep, r.chi, r.energy, r.max_trunc_err, r.seconds
        )
    })?;

    // what is measured on it
    let psi = &dmrg.mps;
    let (e, var) = psi.energy_and_variance(&mpo)?;
    println!(
        "energy {e:.12} per site {:.12}, variance {var:.3e}",
        e / l as f64
    );
    let rung = psi.correlation(&sites, &[("Sz", l / 2), ("Sz", l / 2 + 1)])?;
    let leg = psi.correlation(&sites, &[("Sz", l / 2), ("Sz", l / 2 + 2)])?;
    println!("<Sz Sz> across the middle rung {rung:.6}, along a leg {leg:.6}");
    let s = psi.entanglement_entropies()?;
    println!(
        "entanglement entropy at the middle bond {:.6}",
        s[l / 2 - 1]
    );
    Ok(())
}
