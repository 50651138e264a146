//! Finite DMRG (two-site, or `--sites 1`: single-site with subspace expansion), every contraction written with `contract!`, printing the lines of
//! TeNPy's DMRG (`../shared/peers/dmrg_peer.py`) with the same settings, so that the two
//! compare line by line, then the plan cache's counters and the time per phase.
//!
//! `cargo run --release --example dmrg -- --model heisenberg --L 64 --chi 32,64,128 --sweeps 2,2,2`

mod model;

use blockcontract::linalg::Reorthogonalization;
use blockcontract::mps::{Dmrg, UpdateRecord};
use blockcontract::Error;
use clap::Parser;
use std::time::Instant;

/// Command-line options (those of `dmrg_peer.py`).
#[derive(Parser, Debug)]
#[command(about = "Two-site DMRG on block-sparse tensors (TeNPy's settings and output)")]
struct Args {
    /// `heisenberg`, `xxz`, `spin1`, `j1j2`, `cylinder` (width 3), `hubbard` or `bose-hubbard`:
    /// the models and parameters of `scripts/peer/dmrg_peer.py` (see `model.rs`).
    #[arg(long)]
    model: String,
    /// Number of sites.
    #[arg(long = "L")]
    l: usize,
    /// Bond dimension per stage, comma separated.
    #[arg(long, default_value = "64,128")]
    chi: String,
    /// Sweeps per stage, comma separated (the last repeats for the remaining stages).
    #[arg(long, default_value = "2,2")]
    sweeps: String,
    /// Threads: the contractions' (components and large GEMMs side by side) and the factorizations' (sectors side by side).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Lanczos reorthogonalisation: `partial` (when the basis's estimated loss of
    /// orthogonality calls for it) or `full` (every step).
    #[arg(long, default_value = "partial")]
    reorthogonalize: String,
    /// Write one line per local update to this file: sweep, bond, dimension of the two-site
    /// problem, Lanczos applications, energy.
    #[arg(long)]
    updates: Option<std::path::PathBuf>,
    /// After the sweeps, measure the state: `<Sz>` (or `<Ntot>`) on every site, the
    /// entanglement entropy at every bond, and the energy variance `<H^2> - <H>^2`.
    #[arg(long)]
    measure: bool,
    /// The coefficient form of the effective Hamiltonian and environments: `cost` (the cost
    /// model decides per contraction), `always` or `off` (the pairwise steps).
    #[arg(long, default_value = "cost")]
    coefficient_form: String,
    /// Sites per local update: 2 (two-site DMRG) or 1 (single-site with subspace expansion).
    #[arg(long, default_value_t = 2)]
    sites: usize,
    /// The subspace expansion's weight of single-site updates (`--sites 1`).
    #[arg(long, default_value_t = 1e-3)]
    expansion: f64,
}

/// The `--sites` and `--expansion` choice, or an error naming the option.
fn sites(n: usize, expansion: f64) -> Result<blockcontract::mps::Sites, Error> {
    use blockcontract::mps::Sites;
    match n {
        2 => Ok(Sites::Two),
        1 if expansion.is_finite() && expansion >= 0.0 => Ok(Sites::One { expansion }),
        1 => Err(Error::InvalidArgument {
            name: "--expansion".into(),
            reason: format!("{expansion}: expected a finite weight >= 0"),
        }),
        _ => Err(Error::InvalidArgument {
            name: "--sites".into(),
            reason: format!("{n}: expected 1 or 2"),
        }),
    }
}

/// The `--coefficient-form` choice, or an error naming the option.
fn coefficient_form(s: &str) -> Result<Option<blockcontract::plan::Policy>, Error> {
    use blockcontract::plan::Policy;
    match s {
        "cost" => Ok(Some(Policy::CostModel)),
        "always" => Ok(Some(Policy::Always)),
        "off" => Ok(None),
        _ => Err(Error::InvalidArgument {
            name: "--coefficient-form".into(),
            reason: format!("`{s}`: expected `cost`, `always` or `off`"),
        }),
    }
}

/// The `--reorthogonalize` choice, or an error naming the option.
fn reorthogonalization(s: &str) -> Result<Reorthogonalization, Error> {
    match s {
        "partial" => Ok(Reorthogonalization::Partial),
        "full" => Ok(Reorthogonalization::Full),
        _ => Err(Error::InvalidArgument {
            name: "--reorthogonalize".into(),
            reason: format!("`{s}`: expected `partial` or `full`"),
        }),
    }
}

/// A comma-separated list of positive integers, or an error naming the option.
fn list(name: &str, s: &str) -> Result<Vec<usize>, Error> {
    let v: Result<Vec<usize>, _> = s.split(',').map(|x| x.trim().parse::<usize>()).collect();
    match v {
        Ok(v) if !v.is_empty() && v.iter().all(|&x| x > 0) => Ok(v),
        _ => Err(Error::InvalidArgument {
            name: name.into(),
            reason: format!("`{s}` is not a comma-separated list of positive integers"),
        }),
    }
}

/// Python's `%.3e`: a signed exponent of at least two digits.
fn sci(x: f64) -> String {
    let s = format!("{x:.3e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn run(args: &Args) -> Result<(), Error> {
    let chis = list("--chi", &args.chi)?;
    let mut sweeps = list("--sweeps", &args.sweeps)?;
    while sweeps.len() < chis.len() {
        sweeps.push(*sweeps.last().unwrap_or(&1));
    }
    if args.threads == 0 {
        return Err(Error::InvalidArgument {
            name: "--threads".into(),
            reason: "at least 1".into(),
        });
    }
    blockcontract::linalg::set_threads(args.threads);
    blockcontract::set_coefficient_form(coefficient_form(&args.coefficient_form)?);
    if args.l < 3 {
        return Err(Error::InvalidArgument {
            name: "--L".into(),
            reason: format!("{} sites; two-site DMRG needs at least 3", args.l),
        });
    }
    let model = model::by_name(&args.model, args.l)?;
    let t_start = Instant::now();
    let reortho = reorthogonalization(&args.reorthogonalize)?;
    let mut dmrg = Dmrg::new(&model.mpo, model.start.clone())?;
    dmrg.sites = sites(args.sites, args.expansion)?;
    // a progress line on a terminal (stderr), overwritten at each local update
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let bonds = args.l - 2;
        dmrg.on_update(move |u| {
            eprint!(
                "\r  sweep {} bond {:>3}/{} dim {:>9} lanczos {:>2} E {:.10}   ",
                u.sweep, u.bond, bonds, u.dim, u.applications, u.energy
            );
        });
    }
    dmrg.lanczos.reorthogonalization = reortho;
    dmrg.threads = args.threads;
    let mut total = dmrg.phases.environments;
    let (mut energy, mut apps, mut count) = (f64::NAN, 0usize, 0usize);
    for (&chi, &n) in chis.iter().zip(&sweeps) {
        for _ in 0..n {
            let r = dmrg.sweep(chi)?;
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                eprint!("\r{:79}\r", "");
            }
            println!(
                "sweep {} chi {} E {:.12} max_trunc_err {} time_s {:.3}",
                r.sweep,
                r.chi,
                r.energy,
                sci(r.max_trunc_err),
                r.seconds
            );
            total += r.seconds;
            energy = r.energy;
            apps += r.applications;
            count += 1;
        }
    }
    println!(
        "total {} L {} E {:.12} time_s {:.3} sweeps {} lanczos_vectors {}",
        model.name, args.l, energy, total, count, apps
    );
    if let Some(path) = &args.updates {
        write_updates(path, &dmrg.update_log)?;
    }
    if args.measure {
        let bond = model.mpo.bond_dims().into_iter().max().unwrap_or(1);
        println!("measure mpo_bond_dim {bond}");
        measure(&model, &dmrg.mps)?;
    }
    let c = blockcontract::plan_caches();
    let p = dmrg.phases;
    let wall = t_start.elapsed().as_secs_f64();
    println!(
        "# other plans (environments, factorization): {} hits, {} misses ({:.1}% reused), {} evictions, {} plans held ({:.1} MB of {:.0} MB); planning {:.3} s ({:.1}% of the run)",
        c.hits,
        c.misses,
        100.0 * c.hits as f64 / (c.hits + c.misses).max(1) as f64,
        c.evictions,
        c.plans,
        c.bytes as f64 / 1e6,
        c.capacity as f64 / 1e6,
        c.plan_seconds,
        100.0 * c.plan_seconds / wall
    );
    let h = dmrg.heff_plans();
    println!(
        "# heff plans: {} applications, {} local updates, {} plans made ({} from the plan of a structure differing only in sector dimensions; {} updates reused the plan of an earlier update with the same block structure), planning {:.3} s ({:.1}% of the run)",
        h.hits + h.misses,
        dmrg.updates,
        h.misses,
        h.templated,
        dmrg.updates as u64 - h.misses.min(dmrg.updates as u64),
        h.plan_seconds,
        100.0 * h.plan_seconds / wall
    );
    println!(
        "# lanczos: {} applications, {} of them followed by a pass against the whole basis ({:?} reorthogonalisation)",
        dmrg.lanczos_steps, dmrg.lanczos_full_passes, reortho
    );
    println!(
        "# phases: heff (Lanczos) {:.3} s ({:.1}%), factorize {:.3} s ({:.1}%), environments {:.3} s ({:.1}%); max bond {}",
        p.heff,
        100.0 * p.heff / wall,
        p.factorize,
        100.0 * p.factorize / wall,
        p.environments,
        100.0 * p.environments / wall,
        dmrg.max_bond()
    );
    Ok(())
}

/// The `--measure` lines: a local density, the entropies, the energy and its variance.
fn measure(model: &model::Model, mps: &blockcontract::mps::Mps) -> Result<(), Error> {
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.6}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let op = match model.name {
        "hubbard" => "Ntot",
        "bose-hubbard" => "N",
        _ => "Sz",
    };
    println!(
        "measure <{op}> {}",
        fmt(&mps.expectation(&model.sites, op)?)
    );
    println!("measure entropy {}", fmt(&mps.entanglement_entropies()?));
    let (e, var) = mps.energy_and_variance(&model.mpo)?;
    println!("measure energy {e:.12} variance {var:.3e}");
    Ok(())
}

/// The `--updates` file: one line per local update.
fn write_updates(path: &std::path::Path, log: &[UpdateRecord]) -> Result<(), Error> {
    let text: String = log
        .iter()
        .map(|u| {
            format!(
                "{} {} {} {} {:.14}\n",
                u.sweep, u.bond, u.dim, u.applications, u.energy
            )
        })
        .collect();
    std::fs::write(path, text).map_err(|e| Error::InvalidArgument {
        name: "--updates".into(),
        reason: format!("cannot write `{}`: {e}", path.display()),
    })
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
