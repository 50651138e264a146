//! Every shipped workload, run on the per-pair reference (and the dense oracle where small),
//! agrees with the peer's `expected.json` to 1e-10 relative to the norm; so do the workloads of
//! other models (`workloads/other`, dumped by `scripts/dump-workloads.sh`), on the planned
//! executor and the per-pair reference; malformed files are rejected with an error naming the
//! field.

use blockcontract::workload::{checksum, load_expected, Expected, Workload};
use blockcontract::{Error, Executor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The workload files in `workloads/<sub>` (expected.json aside), sorted, and that folder's
/// `expected.json`.
fn workloads_in(sub: &str) -> (Vec<PathBuf>, HashMap<String, Expected>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(sub);
    let expected = load_expected(dir.join("expected.json")).unwrap();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json") && p.file_name().unwrap() != "expected.json"
        })
        .collect();
    v.sort();
    (v, expected)
}

#[test]
fn shipped_workloads_match_expected() {
    let (files, expected) = workloads_in("");
    assert_eq!(files.len(), 24, "all 24 shipped workloads present");
    for f in files {
        let mut execs = vec![Executor::Pairwise];
        if f.to_string_lossy().contains("m64") {
            execs.push(Executor::Dense);
        }
        check_against(&f, &expected, &execs);
    }
}

#[test]
fn other_models_match_tenpy_on_the_planned_and_the_pairwise_executor() {
    // transverse-field Ising (Z2), spin-1, Bose-Hubbard, J1-J2, a width-4 cylinder at m = 380
    // to 512, and the Heisenberg and Hubbard chains at m = 1024: block structures the
    // shipped files do not have
    let (files, expected) = workloads_in("other");
    assert_eq!(files.len(), 21, "all 21 workloads of other models present");
    for f in files {
        check_against(&f, &expected, &[Executor::Planned, Executor::Pairwise]);
    }
}

/// Runs workload `f` on each executor and compares its result with `expected` (1e-10 of the
/// norm).
fn check_against(f: &Path, expected: &HashMap<String, Expected>, execs: &[Executor]) {
    let w = Workload::load(f).unwrap();
    let e = expected
        .get(&w.name)
        .unwrap_or_else(|| panic!("{} missing from expected.json", w.name));
    for &ex in execs {
        let (r, _) = w.run::<f64>(ex).unwrap();
        let (n, c) = (r.norm(), checksum(&r));
        assert!(
            e.agrees(n, c, 1e-10),
            "{} on {}: norm {n} vs {}, checksum {c} vs {}",
            w.name,
            ex.name(),
            e.norm,
            e.checksum
        );
    }
}

fn base() -> serde_json::Value {
    serde_json::json!({
        "format": "blocksparse-workload/1",
        "name": "t",
        "symmetry": ["U1"],
        "dtype": "f64",
        "spaces": {
            "v": {"sectors": [{"charge": [0], "dim": 2}, {"charge": [1], "dim": 1}]}
        },
        "tensors": {
            "A": {"seed": 1, "charge": [0], "legs": [{"space": "v", "flow": "out"}, {"space": "v", "flow": "in"}]},
            "B": {"seed": 2, "charge": [0], "legs": [{"space": "v", "flow": "out"}, {"space": "v", "flow": "in"}],
                  "blocks": [[0, 0]]}
        },
        "contraction": "C[a,b] = A[a,k] * B[k,b]"
    })
}

fn field_of(v: serde_json::Value) -> String {
    match Workload::parse(&v.to_string(), "test.json") {
        Err(Error::Workload { field, .. }) => field,
        Err(e) => panic!("wrong error kind: {e}"),
        Ok(_) => panic!("accepted a malformed workload"),
    }
}

#[test]
fn valid_base_parses_and_runs() {
    let w = Workload::parse(&base().to_string(), "test.json").unwrap();
    let (r, _) = w.run::<f64>(Executor::Pairwise).unwrap();
    let (d, _) = w.run::<f64>(Executor::Dense).unwrap();
    assert!((r.norm() - d.norm()).abs() < 1e-14 && r.norm() > 0.0);
}

#[test]
fn malformed_workloads_name_the_field() {
    type Mutation = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|v| v["format"] = "blocksparse-workload/2".into()),
            "format",
        ),
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("name");
            }),
            "name",
        ),
        (
            Box::new(|v| v["symmetry"] = serde_json::json!(["SU2"])),
            "symmetry[0]",
        ),
        (Box::new(|v| v["dtype"] = "f16".into()), "dtype"),
        (
            Box::new(|v| v["spaces"]["v"]["sectors"][1]["charge"] = serde_json::json!([0])),
            "spaces.v.sectors",
        ),
        (
            Box::new(|v| v["spaces"]["v"]["sectors"][0]["dim"] = serde_json::json!(-1)),
            "spaces.v.sectors[0].dim",
        ),
        (
            Box::new(|v| v["spaces"]["v"]["sectors"][0]["charge"] = serde_json::json!([0, 1])),
            "spaces.v.sectors[0].charge",
        ),
        (
            Box::new(|v| v["tensors"]["A"]["legs"][0]["space"] = "w".into()),
            "tensors.A.legs[0].space",
        ),
        (
            Box::new(|v| v["tensors"]["A"]["legs"][1]["flow"] = "sideways".into()),
            "tensors.A.legs[1].flow",
        ),
        (
            Box::new(|v| v["tensors"]["B"]["blocks"] = serde_json::json!([[0, 1]])),
            "tensors.B.blocks",
        ),
        (
            Box::new(|v| v["tensors"]["B"]["blocks"] = serde_json::json!([[0, 0], [0, 0]])),
            "tensors.B.blocks",
        ),
        (
            Box::new(|v| v["tensors"]["B"]["blocks"] = serde_json::json!([[0, 5]])),
            "tensors.B.blocks",
        ),
        (
            Box::new(|v| v["tensors"]["A"]["seed"] = serde_json::json!(1u64 << 60)),
            "tensors.A.seed",
        ),
        (
            Box::new(|v| v["contraction"] = "C[a,b] = A[a,k] * X[k,b]".into()),
            "contraction",
        ),
        (
            Box::new(|v| v["contraction"] = "C[a,b] = A[a,k] * B[k,k]".into()),
            "contraction",
        ),
        (
            Box::new(|v| v["contraction"] = "C[a,b] = A[a,k] * B[b,k]".into()),
            "contraction",
        ),
        (
            Box::new(|v| v["order"] = serde_json::json!([["A", "Q"]])),
            "order[0]",
        ),
        (Box::new(|v| v["order"] = serde_json::json!([])), "order"),
        (
            Box::new(|v| v["order"] = serde_json::json!([["A", "B", "A"]])),
            "order[0]",
        ),
        // unknown fields are rejected, named themselves
        (Box::new(|v| v["colour"] = "red".into()), "colour"),
        (
            Box::new(|v| v["tensors"]["A"]["legs"][0]["colour"] = "red".into()),
            "tensors.A.legs[0].colour",
        ),
        (
            Box::new(|v| v["tensors"]["A"]["seed"] = "one".into()),
            "tensors.A.seed",
        ),
    ];
    for (i, (mutate, want)) in cases.into_iter().enumerate() {
        let mut v = base();
        mutate(&mut v);
        assert_eq!(field_of(v), want, "case {i}");
    }
    assert!(matches!(
        Workload::parse("{not json", "x.json"),
        Err(Error::Workload { .. })
    ));
    assert!(matches!(
        Workload::load("/nonexistent/w.json"),
        Err(Error::Io { .. })
    ));
}

#[test]
fn dtype_mismatch_is_an_error() {
    let w = Workload::parse(&base().to_string(), "test.json").unwrap();
    assert!(matches!(
        w.run::<f32>(Executor::Pairwise),
        Err(Error::DtypeMismatch { .. })
    ));
}

#[test]
fn f32_and_c64_workloads_follow_the_generator() {
    let mut v = base();
    v["dtype"] = "c64".into();
    let w = Workload::parse(&v.to_string(), "c.json").unwrap();
    let (r, _) = w.run::<num_complex::Complex64>(Executor::Pairwise).unwrap();
    let (d, _) = w.run::<num_complex::Complex64>(Executor::Dense).unwrap();
    assert!((r.norm() - d.norm()).abs() < 1e-13 * d.norm());
    let a = w.build_tensor::<num_complex::Complex64>("A").unwrap();
    // element (0,0): dense index 0, imaginary part uses index 2^63
    let a00 = a.block_array(&[0, 0]).unwrap()[[0, 0]];
    assert_eq!(a00.re, blockcontract::workload::generate(1, 0));
    assert_eq!(a00.im, blockcontract::workload::generate(1, 1 << 63));
    v["dtype"] = "f32".into();
    let w = Workload::parse(&v.to_string(), "f.json").unwrap();
    let a = w.build_tensor::<f32>("A").unwrap();
    assert_eq!(
        a.block_array(&[1, 1]).unwrap()[[0, 0]],
        blockcontract::workload::generate(1, 8) as f32
    );
}

/// `Workload::near` keeps every space's sectors (charges, order) and every tensor's blocks,
/// moves each block-leg sector's dimension by at most one (never below one), leaves local legs
/// alone, changes some dimension, and is planned from the original's cached plan with a
/// result that agrees with the per-pair reference.
#[test]
fn a_near_workload_keeps_sectors_and_blocks_and_plans_from_the_original() {
    use blockcontract::plan::{cache::spec_fingerprint, PlanOptions};
    use blockcontract::{contract_dyn, execute, DynTensor, PlanCache, SpaceKind};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    for file in [
        "hubbard_u1u1_m64_heff2.json",
        "heisenberg_u1_m64_heff1.json",
    ] {
        let w = Workload::load(dir.join(file)).unwrap();
        let n = w.near(7).unwrap();
        let mut moved = 0;
        for (name, sp) in &w.spaces {
            let ns = &n.spaces[name];
            assert_eq!(ns.sectors().len(), sp.sectors().len(), "{file}: {name}");
            for (a, b) in sp.sectors().iter().zip(ns.sectors()) {
                assert_eq!(a.charge, b.charge, "{file}: {name}");
                if sp.kind() == SpaceKind::Local {
                    assert_eq!(a.dim, b.dim, "{file}: local leg {name} unchanged");
                }
                assert!(b.dim >= 1 && a.dim.abs_diff(b.dim) <= 1, "{file}: {name}");
                moved += usize::from(a.dim != b.dim);
            }
        }
        assert!(moved > 0, "{file}: some dimension moved");
        let (ops, nops) = (
            w.build_operands::<f64>().unwrap(),
            n.build_operands::<f64>().unwrap(),
        );
        for (a, b) in ops.iter().zip(&nops) {
            let keys =
                |t: &DynTensor<f64>| t.blocks().iter().map(|x| x.key.clone()).collect::<Vec<_>>();
            assert_eq!(keys(a), keys(b), "{file}: the same blocks");
        }
        let (r, nr): (Vec<&DynTensor<f64>>, Vec<&DynTensor<f64>>) =
            (ops.iter().collect(), nops.iter().collect());
        let (spec, opts) = (&w.contraction, PlanOptions::default());
        let cache = PlanCache::new();
        cache
            .get_or_plan(spec, spec_fingerprint(spec), &r, &opts)
            .unwrap();
        let plan = cache
            .get_or_plan(spec, spec_fingerprint(spec), &nr, &opts)
            .unwrap();
        assert_eq!(
            cache.stats().templated,
            1,
            "{file}: planned from the original"
        );
        let (got, _, _) = execute(&plan, &nr, 1.0, 1, None).unwrap();
        let (want, _) = contract_dyn(spec, &nr, 1.0, Executor::Pairwise).unwrap();
        let diff = got.to_dense().unwrap() - want.to_dense().unwrap();
        let rel = diff.iter().map(|x| x * x).sum::<f64>().sqrt() / want.norm();
        assert!(rel < 1e-12, "{file}: relative difference {rel}");
    }
}
