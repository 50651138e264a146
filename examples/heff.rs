//! The main example: the two-site DMRG effective Hamiltonian on a real Hubbard U(1)xU(1)
//! block structure, checked against the peer's result.
//!
//! `cargo run --release --example heff`

use blockcontract::workload::{checksum, load_expected, Workload};
use blockcontract::{contract_dyn, DynTensor, Executor};
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m128_heff2.json"))?;
    let ops = w.build_operands::<f64>()?;
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    println!("{}: {}", w.name, w.contraction_text());
    for (o, t) in w.contraction.operands.iter().zip(&ops) {
        println!(
            "  {:<4} rank {} with {:>4} blocks",
            o.name,
            t.rank(),
            t.num_blocks()
        );
    }
    let t0 = Instant::now();
    let (y, stats) = contract_dyn(&w.contraction, &refs, 1.0, Executor::Pairwise)?;
    let dt = t0.elapsed();
    let exp = load_expected(dir.join("expected.json"))?[&w.name];
    let (n, c) = (y.norm(), checksum(&y));
    println!(
        "Y: {} blocks, {} block-pair GEMMs in {} kernel calls, {:.3} ms",
        y.num_blocks(),
        stats.pair_gemms(),
        stats.kernel_calls(),
        dt.as_secs_f64() * 1e3
    );
    println!(
        "norm {n:.12e} checksum {c:.12e}; peer: norm {:.12e} checksum {:.12e}",
        exp.norm, exp.checksum
    );
    if !exp.agrees(n, c, 1e-10) {
        return Err("result disagrees with the peer".into());
    }
    println!("agrees with the peer to 1e-10");
    Ok(())
}
