//! The main example: a two-site DMRG effective-Hamiltonian application on the real block
//! structure of a Fermi-Hubbard ground state (U(1)xU(1), m = 128), written with `contract!`,
//! checked against the peer's result, with its plan explained.
//!
//! `cargo run --release --example heff`

use blockcontract::plan::{build_plan, PlanOptions};
use blockcontract::workload::{checksum, load_expected, Workload};
use blockcontract::{contract, contract_dyn, DynTensor, Executor};
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m128_heff2.json"))?;
    let t = |name: &str| w.build_tensor::<f64>(name);
    let (l, psi, w0, w1, r) = (t("L")?, t("psi")?, t("W0")?, t("W1")?, t("R")?);
    for (name, x) in [
        ("L", &l),
        ("psi", &psi),
        ("W0", &w0),
        ("W1", &w1),
        ("R", &r),
    ] {
        println!(
            "{name:<4} rank {} with {:>4} blocks",
            x.rank(),
            x.num_blocks()
        );
    }

    // Y = L * psi * W0 * W1 * R in TeNPy's matvec order; the runtime plans it once per
    // block structure and reuses the plan on every later call from this line
    let heff = || contract!(y[a, s, u, b] := (((l[a, w, x] * psi[x, t, q, z]) * w0[w, v, s, t]) * w1[v, k, u, q]) * r[z, k, b]);
    let y = heff()?;
    let t0 = Instant::now();
    let n = 50;
    for _ in 0..n {
        std::hint::black_box(heff()?);
    }
    let planned_ms = t0.elapsed().as_secs_f64() * 1e3 / n as f64;

    let exp = load_expected(dir.join("expected.json"))?[&w.name];
    let (norm, sum) = (y.norm(), checksum(&y));
    println!(
        "Y: {} blocks; norm {norm:.12e} checksum {sum:.12e}",
        y.num_blocks()
    );
    if !exp.agrees(norm, sum, 1e-10) {
        return Err(format!(
            "disagrees with the peer (norm {:.12e}, checksum {:.12e})",
            exp.norm, exp.checksum
        )
        .into());
    }
    println!("agrees with the peer (TeNPy) to 1e-10");

    // the same contraction on the per-pair reference, for comparison
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let t0 = Instant::now();
    for _ in 0..n {
        std::hint::black_box(contract_dyn(
            &w.contraction,
            &refs,
            1.0,
            Executor::Pairwise,
        )?);
    }
    let pairwise_ms = t0.elapsed().as_secs_f64() * 1e3 / n as f64;
    println!(
        "planned {planned_ms:.3} ms vs one GEMM per block pair {pairwise_ms:.3} ms per application"
    );

    // what the planner did, and why
    let plan = build_plan(&w.contraction, &refs, &PlanOptions::default())?;
    print!("{}", plan.explain_with(None, 3));
    Ok(())
}
