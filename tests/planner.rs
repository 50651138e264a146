//! The coalescing planner: kernel calls counted per kind on hand-built cases, zero wasted
//! flops, every kind (forced on and off) equal to the per-pair reference on random tensors
//! with 1 and 2 threads, the plan cache, and the Hubbard workloads' call counts.

mod common;

use blockcontract::exec::execute;
use blockcontract::plan::{build_plan, GroupKind, PlanOptions};
use blockcontract::spec::Tree;
use blockcontract::workload::{checksum, load_expected, Workload};
use blockcontract::{
    contract_dyn, ContractionSpec, DynTensor, Error, Executor, Leg, PlanCache, Scalar, Space,
    Symmetry,
};
use num_complex::Complex64;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

fn spaces() -> (Symmetry, Arc<Space>, Arc<Space>) {
    let u1 = Symmetry::u1();
    let v = Arc::new(
        Space::block(
            &u1,
            &[
                (vec![-2], 1),
                (vec![-1], 2),
                (vec![0], 3),
                (vec![1], 2),
                (vec![2], 1),
            ],
        )
        .unwrap(),
    );
    let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap());
    (u1, v, p)
}

fn full<T: Scalar>(legs: Vec<Leg>, seed: u64) -> DynTensor<T> {
    let q = legs[0].space.symmetry().zero();
    DynTensor::from_fn(legs, q, None, |i| common::value(seed, i)).unwrap()
}

/// Runs `spec` forced to one kind; checks the result against the reference, that executed
/// counts equal the plan's, and that no group wastes flops. Returns calls per kind.
fn run_forced(spec: &ContractionSpec, ops: &[&DynTensor<f64>], opts: &PlanOptions) -> [usize; 6] {
    let plan = build_plan(spec, ops, opts).unwrap();
    let (got, _, counts) = execute(&plan, ops, 1.0, 1, None).unwrap();
    let (want, _) = contract_dyn(spec, ops, 1.0, Executor::Pairwise).unwrap();
    assert!(common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap()) < 1e-12);
    assert_eq!(counts, plan.counts());
    assert_eq!(counts.pairs, plan.pair_gemms());
    for st in &plan.steps {
        let mut covered: Vec<u32> = st
            .plan
            .groups
            .iter()
            .flat_map(|g| g.pairs.clone())
            .collect();
        covered.sort();
        let live: Vec<u32> = (0..st.plan.pairs.len() as u32)
            .filter(|&p| {
                let x = st.plan.pairs[p as usize];
                x.m * x.n * x.k > 0
            })
            .collect();
        assert_eq!(covered, live, "every nonempty pair in exactly one group");
        for g in &st.plan.groups {
            assert_eq!(g.wasted_flops, 0.0, "{} group wastes flops", g.kind);
            assert_eq!(g.kernel_calls(), 1);
        }
    }
    counts.by_kind
}

fn by_key(pairs: &[(u32, u32, u32)], key: impl Fn(&(u32, u32, u32)) -> u32) -> HashMap<u32, usize> {
    let mut m = HashMap::new();
    for p in pairs {
        *m.entry(key(p)).or_insert(0) += 1;
    }
    m
}

#[test]
fn free_axis_groups_one_per_contracted_block() {
    // A[a,s,k] * B[k,t,c]: for each k sector, rows (a,s) x columns (t,c) share it
    let (_, v, p) = spaces();
    let a = full::<f64>(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], 1);
    let b = full::<f64>(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], 2);
    let spec = ContractionSpec::parse("C[a,s,t,c] = A[a,s,k] * B[k,t,c]").unwrap();
    // independent count: pairs per k sector
    let mut per_k: HashMap<u32, usize> = HashMap::new();
    for ab in a.blocks() {
        for bb in b.blocks() {
            if ab.key[2] == bb.key[0] {
                *per_k.entry(ab.key[2]).or_insert(0) += 1;
            }
        }
    }
    let counts = run_forced(&spec, &[&a, &b], &PlanOptions::only(GroupKind::FreeAxis));
    assert_eq!(
        counts[GroupKind::FreeAxis as usize],
        per_k.values().filter(|&&n| n > 1).count()
    );
    assert_eq!(
        counts[GroupKind::Single as usize],
        per_k.values().filter(|&&n| n == 1).count()
    );
    assert_eq!(counts.iter().sum::<usize>(), per_k.len());
}

#[test]
fn contraction_axis_groups_one_per_output_block() {
    // A[a,k,l] * B[k,l,c]: each output block (a,c) sums over several (k,l)
    let (_, v, _) = spaces();
    let a = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::out(&v)], 3);
    let b = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)], 4);
    let spec = ContractionSpec::parse("C[a,c] = A[a,k,l] * B[k,l,c]").unwrap();
    let mut triples = Vec::new();
    for ab in a.blocks() {
        for bb in b.blocks() {
            if ab.key[1] == bb.key[0] && ab.key[2] == bb.key[1] {
                triples.push((ab.key[0], bb.key[2], 0));
            }
        }
    }
    let per_c = by_key(&triples, |t| t.0 * 100 + t.1);
    let counts = run_forced(
        &spec,
        &[&a, &b],
        &PlanOptions::only(GroupKind::ContractionAxis),
    );
    assert_eq!(
        counts[GroupKind::ContractionAxis as usize],
        per_c.values().filter(|&&n| n > 1).count()
    );
    assert_eq!(
        counts[GroupKind::Single as usize],
        per_c.values().filter(|&&n| n == 1).count()
    );
}

#[test]
fn rectangles_one_per_fully_populated_coupled_sector() {
    // A[a,s,k,l] * B[k,l,c], all allowed blocks: each coupled charge q = k - l (as A sees it)
    // with several (k,l) keys and several rows or columns is one dense GEMM
    let (_, v, p) = spaces();
    let a = full::<f64>(
        vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v), Leg::out(&v)],
        5,
    );
    let b = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)], 6);
    let spec = ContractionSpec::parse("C[a,s,c] = A[a,s,k,l] * B[k,l,c]").unwrap();
    let q = |s: u32| v.sectors()[s as usize].charge.values()[0];
    // classes: rows, inner keys and columns per coupled charge, and the pairs present
    let mut rows: HashMap<i64, HashSet<(u32, u32)>> = HashMap::new();
    let mut inner: HashMap<i64, HashSet<(u32, u32)>> = HashMap::new();
    let mut cols: HashMap<i64, HashSet<u32>> = HashMap::new();
    let mut npairs: HashMap<i64, usize> = HashMap::new();
    for ab in a.blocks() {
        for bb in b.blocks() {
            if ab.key[2] == bb.key[0] && ab.key[3] == bb.key[1] {
                let c = -q(ab.key[2]) + q(ab.key[3]);
                rows.entry(c).or_default().insert((ab.key[0], ab.key[1]));
                inner.entry(c).or_default().insert((ab.key[2], ab.key[3]));
                cols.entry(c).or_default().insert(bb.key[2]);
                *npairs.entry(c).or_insert(0) += 1;
            }
        }
    }
    let rect = npairs
        .keys()
        .filter(|c| {
            let (r, k, n) = (rows[c].len(), inner[c].len(), cols[c].len());
            npairs[c] == r * k * n && k > 1 && (r > 1 || n > 1)
        })
        .count();
    assert!(rect >= 2, "the case must contain rectangles");
    let counts = run_forced(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Rectangle));
    assert_eq!(counts[GroupKind::Rectangle as usize], rect);
    let plan = build_plan(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Rectangle)).unwrap();
    // the output is laid out so that each rectangle's GEMM writes in place
    for g in plan.steps[0]
        .plan
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Rectangle)
    {
        assert!(!g.c_access.is_packed());
    }
    assert!(plan.explain().contains("coupled sector fully populated"));
}

#[test]
fn batched_groups_one_per_shape() {
    let (_, v, p) = spaces();
    let a = full::<f64>(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], 7);
    let b = full::<f64>(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], 8);
    let spec = ContractionSpec::parse("C[a,s,t,c] = A[a,s,k] * B[k,t,c]").unwrap();
    let plan = build_plan(&spec, &[&a, &b], &PlanOptions::uncoalesced()).unwrap();
    let mut shapes: HashMap<(usize, usize, usize), usize> = HashMap::new();
    for pr in &plan.steps[0].plan.pairs {
        *shapes.entry((pr.m, pr.n, pr.k)).or_insert(0) += 1;
    }
    let counts = run_forced(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Batched));
    assert_eq!(
        counts[GroupKind::Batched as usize],
        shapes.values().filter(|&&n| n > 1).count()
    );
    assert_eq!(
        counts[GroupKind::Single as usize],
        shapes.values().filter(|&&n| n == 1).count()
    );
    // uncoalesced: one call per pair
    let counts = run_forced(&spec, &[&a, &b], &PlanOptions::uncoalesced());
    assert_eq!(counts[GroupKind::Single as usize], plan.pair_gemms());
    // explain names each group's kernel, as the executor will choose it
    use blockcontract::plan::kernel_choice::{member_kernel, Kernel};
    let batched = build_plan(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Batched)).unwrap();
    let text = batched.explain_with(None, usize::MAX);
    let groups = &batched.steps[0].plan.groups;
    let tiny = groups
        .iter()
        .filter(|g| member_kernel(g.kind, g.m, g.n, g.k) == Kernel::Tiny)
        .count();
    assert!(tiny > 0, "the case must have tiny batched groups");
    assert_eq!(text.matches("kernel tiny:").count(), tiny, "{text}");
    let lines = text.lines().filter(|l| l.contains("  kernel ")).count();
    assert_eq!(lines, groups.len(), "{text}");
}

fn forced_options() -> Vec<PlanOptions> {
    let mut v: Vec<PlanOptions> = GroupKind::ALL[1..]
        .iter()
        .map(|&k| PlanOptions::only(k))
        .collect();
    v.push(PlanOptions::uncoalesced());
    let mut all = PlanOptions::only(GroupKind::Rectangle);
    all.batched = true;
    all.free_axis = true;
    all.contraction_axis = true;
    v.push(all);
    let mut model = PlanOptions::only(GroupKind::Rectangle);
    model.batched = true;
    model.free_axis = true;
    model.contraction_axis = true;
    model.policy = blockcontract::plan::Policy::CostModel;
    v.push(model);
    v
}

fn check_forced<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let c = common::pair_case::<T>(seed, sym);
    let ops = [&c.a, &c.b];
    let (want, _) = contract_dyn(&c.spec, &ops, T::from_f64(0.5), Executor::Pairwise)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let wd = want.to_dense().unwrap();
    for opts in forced_options() {
        let plan =
            build_plan(&c.spec, &ops, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for threads in [1, 2] {
            let (got, _, _) = execute(&plan, &ops, T::from_f64(0.5), threads, None).unwrap();
            let d = common::rel_diff(&got.to_dense().unwrap(), &wd);
            prop_assert!(
                d <= 1e-12,
                "{:?} threads {threads}: relative difference {d}",
                opts.policy
            );
        }
    }
    Ok(())
}

/// One tensor as both operands (with and without conj, blocks possibly transposed on both
/// sides): every kind forced on and off, 1 and 2 threads, against the dense reference.
fn check_same_tensor<T: Scalar>(seed: u64, sym: usize) -> Result<(), TestCaseError> {
    let c = common::same_tensor_case::<T>(seed, sym);
    let ops = [&c.x, &c.x];
    let alpha = T::from_f64(0.5);
    let (want, _) = contract_dyn(&c.spec, &ops, alpha, Executor::Dense)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let wd = want.to_dense().unwrap();
    for opts in forced_options() {
        let plan =
            build_plan(&c.spec, &ops, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for threads in [1, 2] {
            let (got, _, _) = execute(&plan, &ops, alpha, threads, None).unwrap();
            let d = common::rel_diff(&got.to_dense().unwrap(), &wd);
            prop_assert!(
                d <= 1e-12,
                "{:?} threads {threads}: relative difference {d}",
                opts.policy
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn one_tensor_as_both_operands_matches_dense_f64(seed in any::<u64>(), sym in 0usize..5) {
        check_same_tensor::<f64>(seed, sym)?;
    }

    #[test]
    fn one_tensor_as_both_operands_matches_dense_complex(seed in any::<u64>(), sym in 0usize..5) {
        check_same_tensor::<Complex64>(seed, sym)?;
    }

    #[test]
    fn every_kind_forced_on_and_off_matches_the_reference_f64(seed in any::<u64>(), sym in 0usize..5) {
        check_forced::<f64>(seed, sym)?;
    }

    #[test]
    fn every_kind_forced_on_and_off_matches_the_reference_complex(seed in any::<u64>(), sym in 0usize..5) {
        check_forced::<Complex64>(seed, sym)?;
    }
}

#[test]
fn multi_step_chains_match_in_every_mode_and_thread_count() {
    let (_, v, p) = spaces();
    let mut rng = common::Rng(11);
    let l = common::tensor::<f64>(
        &mut rng,
        vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)],
        false,
    );
    let psi = common::tensor::<f64>(
        &mut rng,
        vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)],
        true,
    );
    let r = common::tensor::<f64>(
        &mut rng,
        vec![Leg::out(&v), Leg::out(&v), Leg::inc(&v)],
        false,
    );
    for tree in [
        None,
        Some(Tree::Node(
            Box::new(Tree::Node(Box::new(Tree::Leaf(0)), Box::new(Tree::Leaf(1)))),
            Box::new(Tree::Leaf(2)),
        )),
    ] {
        let mut spec = ContractionSpec::parse("Y[a,s,b] = L[a,w,x] * P[x,s,y] * R[y,w,b]").unwrap();
        spec.tree = tree;
        let ops = [&l, &psi, &r];
        let (want, _) = contract_dyn(&spec, &ops, 1.0, Executor::Dense).unwrap();
        for opts in forced_options() {
            let plan = build_plan(&spec, &ops, &opts).unwrap();
            for threads in [1, 2] {
                let (got, _, _) = execute(&plan, &ops, 1.0, threads, None).unwrap();
                assert!(
                    common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap()) < 1e-12
                );
            }
        }
    }
}

#[test]
fn a_second_call_with_the_same_structure_hits_the_cache() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m64_heff1.json")).unwrap();
    let ops = w.build_operands::<f64>().unwrap();
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let cache = PlanCache::new();
    let opts = PlanOptions::default();
    let fp = blockcontract::plan::cache::spec_fingerprint(&w.contraction);
    let p1 = cache.get_or_plan(&w.contraction, fp, &refs, &opts).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (0, 1));
    // new tensors with the same structure (other values) hit
    let ops2: Vec<DynTensor<f64>> = ops
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.scale(2.0);
            t
        })
        .collect();
    let refs2: Vec<&DynTensor<f64>> = ops2.iter().collect();
    let p2 = cache
        .get_or_plan(&w.contraction, fp, &refs2, &opts)
        .unwrap();
    assert!(Arc::ptr_eq(&p1, &p2));
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    // a different structure (one block fewer) misses
    let t = &ops[1];
    let keys: Vec<Vec<usize>> = t.blocks()[1..]
        .iter()
        .map(|b| b.key.iter().map(|&x| x as usize).collect())
        .collect();
    let fewer =
        DynTensor::<f64>::zeros_with_blocks(t.legs().to_vec(), t.charge().clone(), &keys).unwrap();
    let refs3 = [refs[0], &fewer, refs[2], refs[3]];
    let _ = cache
        .get_or_plan(&w.contraction, fp, &refs3, &opts)
        .unwrap();
    assert_eq!((cache.hits(), cache.misses()), (1, 2));
    assert_eq!(cache.len(), 2);
}

#[test]
fn hubbard_heff_workloads_coalesce_and_match_the_peer() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let expected = load_expected(dir.join("expected.json")).unwrap();
    eprintln!("cost model: {}", blockcontract::CostModel::calibrated());
    for m in [64, 128, 256, 512] {
        for kind in ["heff1", "heff2"] {
            let w = Workload::load(dir.join(format!("hubbard_u1u1_m{m}_{kind}.json"))).unwrap();
            let ops = w.build_operands::<f64>().unwrap();
            let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
            // the fixed default constants make the plan independent of this machine's noise
            let opts = PlanOptions {
                model: blockcontract::CostModel::default(),
                ..PlanOptions::default()
            };
            let plan = build_plan(&w.contraction, &refs, &opts).unwrap();
            let (y, _, counts) = execute(&plan, &refs, 1.0, 1, None).unwrap();
            assert!(
                expected[&w.name].agrees(y.norm(), checksum(&y), 1e-10),
                "{}",
                w.name
            );
            let ratio = counts.total() as f64 / plan.pair_gemms() as f64;
            eprintln!(
                "{}: {} pair GEMMs -> {} kernel calls ({:.1}%)",
                w.name,
                plan.pair_gemms(),
                counts.total(),
                100.0 * ratio
            );
            assert!(
                ratio < 0.5,
                "{}: coalescing must at least halve the calls",
                w.name
            );
        }
    }
}

#[test]
fn a_plan_refuses_operands_of_another_structure() {
    let (_, v, p) = spaces();
    let a = full::<f64>(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], 1);
    let b = full::<f64>(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)], 2);
    let spec = ContractionSpec::parse("C[a,s,t,c] = A[a,s,k] * B[k,t,c]").unwrap();
    let plan = build_plan(&spec, &[&a, &b], &PlanOptions::default()).unwrap();
    // same legs, blocks stored in another memory order: other strides, so another plan
    let other = a.relayout(&[2, 1, 0]).unwrap();
    let err = execute(&plan, &[&other, &b], 1.0, 1, None).unwrap_err();
    assert!(matches!(err, Error::PlanMismatch { operand: 0 }), "{err}");
    assert!(matches!(
        execute(&plan, &[&a], 1.0, 1, None),
        Err(Error::OperandCount {
            expected: 2,
            found: 1
        })
    ));
    // while values may change freely
    let mut a2 = a.clone();
    a2.scale(3.0);
    assert!(execute(&plan, &[&a2, &b], 1.0, 1, None).is_ok());
}

#[test]
fn blocks_transposed_for_several_gemms_are_transposed_once() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m64_heff2.json")).unwrap();
    let ops = w.build_operands::<f64>().unwrap();
    let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
    let expected = load_expected(dir.join("expected.json")).unwrap();
    for opts in [
        PlanOptions::only(GroupKind::Batched),
        PlanOptions::uncoalesced(),
    ] {
        let plan = build_plan(&w.contraction, &refs, &opts).unwrap();
        // the MPO steps read blocks of (L*psi) whose legs do not fuse, several times each
        assert!(plan.steps.iter().any(|s| s
            .plan
            .operands
            .iter()
            .map(|o| o.cache_len)
            .sum::<usize>()
            > 0));
        for threads in [1, 2] {
            let (y, _, _) = execute(&plan, &refs, 1.0, threads, None).unwrap();
            assert!(expected[&w.name].agrees(y.norm(), checksum(&y), 1e-10));
        }
    }
}

/// An MPO step's intermediate X[a, w.., z] (U(1), charges -1, 0, 1): long outer legs `a`
/// (out) and `z` (in) of sector dimensions `big`, and `shorts` short legs of dimensions `small`
/// between them, stored with W's flow when X is to be conjugated (conjugation flips flows);
/// returns X and the short legs' space.
fn mpo_intermediate<T: Scalar>(
    big: [usize; 3],
    small: [usize; 3],
    shorts: usize,
    conj: bool,
    seed: u64,
) -> (DynTensor<T>, Arc<Space>) {
    use blockcontract::Flow;
    let u1 = Symmetry::u1();
    let space = |d: [usize; 3]| {
        let sectors = [(vec![-1], d[0]), (vec![0], d[1]), (vec![1], d[2])];
        Arc::new(Space::block(&u1, &sectors).unwrap())
    };
    let (big, small) = (space(big), space(small));
    let short = if conj { Flow::Out } else { Flow::In };
    let mut legs = vec![Leg::new(&big, Flow::Out)];
    legs.extend((0..shorts).map(|_| Leg::new(&small, short)));
    legs.push(Leg::new(&big, Flow::In));
    (full::<T>(legs, seed), small)
}

/// Members whose block's free side does not fuse into one stride (the MPO steps' shape:
/// X[a,w,z] read as w x (a,z), or as (a,z) x w) read it in place as strided sub-GEMMs, on
/// either side of the product, f64 and complex with X conjugated, 1 and 2 threads; every
/// output block gets several members (the second ones add), and all agree with the dense
/// reference.
#[test]
fn members_read_non_fusing_blocks_in_place_as_strided_sub_gemms() {
    check_split::<f64>(false);
    check_split::<Complex64>(true);
}

fn check_split<T: Scalar>(conj: bool) {
    use blockcontract::plan::Reach;
    use blockcontract::Conj;
    let (x, small) = mpo_intermediate::<T>([130, 140, 129], [1, 3, 1], 1, conj, 7);
    let w = full::<T>(vec![Leg::out(&small), Leg::out(&small)], 8);
    for (text, ops, x_at, x_side) in [
        ("Y[v,a,z] = W[v,w] * X[a,w,z]", [&w, &x], 1, 1),
        ("Y[a,z,v] = X[a,w,z] * W[w,v]", [&x, &w], 0, 0),
    ] {
        let mut spec = ContractionSpec::parse(text).unwrap();
        spec.operands[x_at].conj = Conj::from_bool(conj);
        // fixed constants with copies priced dear, so that the split wins on every machine
        // (a calibration with cheap copies and a slow tiny kernel, as on some hosts, copies)
        let opts = PlanOptions {
            model: blockcontract::CostModel {
                pack_elem_s: 5e-9,
                ..blockcontract::CostModel::default()
            },
            ..PlanOptions::default()
        };
        let plan = build_plan(&spec, &ops, &opts).unwrap();
        let sp = &plan.steps[0].plan;
        let split: u32 = sp.groups.iter().map(|g| g.split_members).sum();
        assert!(split > 0, "{text}: no member reads X in place");
        assert_eq!(sp.splits.len(), split as usize);
        assert!(sp.members.iter().all(|m| {
            let r = [m.a, m.b];
            !matches!(r[1 - x_side], Reach::Split(_))
        }));
        let alpha = T::from_f64(0.5);
        let (want, _) = contract_dyn(&spec, &ops, alpha, Executor::Dense).unwrap();
        assert_runs_agree(&plan, &ops, alpha, &want, text);
    }
}

/// Runs `plan` on 1 and 2 threads and asserts that each result agrees with `want` to 1e-12
/// (relative, dense).
fn assert_runs_agree<T: Scalar>(
    plan: &blockcontract::Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    want: &DynTensor<T>,
    what: &str,
) {
    let wd = want.to_dense().unwrap();
    for threads in [1, 2] {
        let (got, _, _) = execute(plan, ops, alpha, threads, None).unwrap();
        let d = common::rel_diff(&got.to_dense().unwrap(), &wd);
        assert!(
            d <= 1e-12,
            "{what}, {threads} threads: relative difference {d}"
        );
    }
}

/// Contraction-axis groups of the MPO steps' shape (one output block, a few contributions
/// along k, the other extent one to three long) read the big operand in place, on either
/// side of the product (`W * X`: B; `X * W`: A): whole blocks (X[a,w,t,z] with w and t one
/// long fuses (a,z)), and blocks split into runs along z (w or t two long) where the runs are
/// at least 256 long. f64 and complex with X conjugated, alpha 0.5, 1 and 2
/// threads, and added into a target: all agree with the dense reference; `explain` says so.
#[test]
fn thin_groups_read_the_big_operand_in_place() {
    check_thin::<f64>(false);
    check_thin::<Complex64>(true);
}

fn check_thin<T: Scalar>(conj: bool) {
    use blockcontract::step::Side;
    use blockcontract::Conj;
    let only = PlanOptions::only(GroupKind::ContractionAxis);
    let (mut whole, mut split) = (0, 0);
    // with the short legs' sectors one long every block fuses (a, z) and is read whole; with
    // a sector two long some blocks split into runs along z (a group's blocks must agree, so
    // those groups split), in place where z's sector is 300 long, gathered where 2 or 3
    for shorts in [[1, 1, 1], [1, 2, 1]] {
        let (x, small) = mpo_intermediate::<T>([2, 300, 3], shorts, 2, conj, 17);
        let w = full::<T>(
            vec![Leg::out(&small), Leg::out(&small), Leg::inc(&small)],
            18,
        );
        for (text, ops, x_at, side) in [
            ("Y[v,a,z] = W[w,t,v] * X[a,w,t,z]", [&w, &x], 1, Side::B),
            ("Y[a,z,v] = X[a,w,t,z] * W[w,t,v]", [&x, &w], 0, Side::A),
        ] {
            let mut spec = ContractionSpec::parse(text).unwrap();
            spec.operands[x_at].conj = Conj::from_bool(conj);
            let plan = build_plan(&spec, &ops, &only).unwrap();
            let sp = &plan.steps[0].plan;
            let thin: Vec<_> = sp.groups.iter().filter(|g| g.thin.is_some()).collect();
            assert!(!thin.is_empty(), "{text}: no thin group");
            // blocks split into runs of 2 or 3 along z are gathered
            assert!(
                shorts[1] == 1 || sp.groups.iter().any(|g| g.thin.is_none()),
                "{text}: every group is thin (short runs must be gathered)"
            );
            for g in &thin {
                assert_eq!(g.thin.map(|t| t.0), Some(side), "{text}: {g:?}");
                assert!(
                    g.reason().contains("read in place (thin)"),
                    "{}",
                    g.reason()
                );
            }
            whole += sp.thin.iter().filter(|v| v.split.count == 1).count();
            split += sp.thin.iter().filter(|v| v.split.count > 1).count();
            let alpha = T::from_f64(0.5);
            let (want, _) = contract_dyn(&spec, &ops, alpha, Executor::Dense).unwrap();
            assert_runs_agree(&plan, &ops, alpha, &want, text);
            // into a target holding the result: the first writes add too
            let plan = blockcontract::plan::build_plan_into(&spec, &ops, &want, &only)
                .unwrap()
                .expect("the target holds every block");
            assert!(plan.steps[0].plan.groups.iter().any(|g| g.thin.is_some()));
            let mut target = want.clone();
            blockcontract::exec::execute_into(
                &plan,
                &ops,
                alpha,
                1,
                &mut target,
                blockcontract::kernel::Accum::Add,
            )
            .unwrap();
            let twice = want.to_dense().unwrap().mapv(|v| v + v);
            let d = common::rel_diff(&target.to_dense().unwrap(), &twice);
            assert!(
                d <= 1e-12,
                "{text}, added into a target: relative difference {d}"
            );
        }
    }
    assert!(
        whole > 0 && split > 0,
        "views: {whole} whole, {split} split"
    );
}

/// A thin group is priced as what it runs: one tiny-kernel call per contribution and
/// sub-matrix of the big operand, and one pass over the big operand and the output at the
/// streaming rate (`elem_s`, the big operand being read from memory), not at the in-cache
/// copy rate. Checked by moving one constant at a time (the groups are forced, so the plans
/// differ only in their prices): whole blocks and blocks split into runs.
#[test]
fn thin_groups_are_priced_by_their_calls_and_one_streaming_pass() {
    use blockcontract::step::Side;
    use blockcontract::CostModel;
    let base = PlanOptions::only(GroupKind::ContractionAxis);
    let with = |f: &dyn Fn(&mut CostModel)| {
        let mut o = base;
        f(&mut o.model);
        o
    };
    let more_stream = with(&|m| m.elem_s *= 3.0);
    let more_calls = with(&|m| m.tiny_call_s *= 3.0);
    let more_copy = with(&|m| m.pack_elem_s *= 3.0);
    let mut split_seen = false;
    for shorts in [[1, 1, 1], [1, 2, 1]] {
        let (x, small) = mpo_intermediate::<f64>([2, 300, 3], shorts, 2, false, 17);
        let w = full::<f64>(
            vec![Leg::out(&small), Leg::out(&small), Leg::inc(&small)],
            18,
        );
        let spec = ContractionSpec::parse("Y[v,a,z] = W[w,t,v] * X[a,w,t,z]").unwrap();
        let plan_with = |o: &PlanOptions| build_plan(&spec, &[&w, &x], o).unwrap();
        let plans = [&base, &more_stream, &more_calls, &more_copy].map(plan_with);
        let steps: Vec<_> = plans.iter().map(|p| &p.steps[0].plan).collect();
        let mut thin_seen = 0;
        for (i, g) in steps[0].groups.iter().enumerate() {
            let Some((side, start)) = g.thin else {
                continue;
            };
            thin_seen += 1;
            assert_eq!(side, Side::B);
            let places = g.places(side).len();
            let count = steps[0].thin[start as usize].split.count;
            split_seen |= count > 1;
            let calls = (places * count) as f64;
            let elems = (g.n * (g.k + g.m)) as f64;
            let p = |s: usize| steps[s].groups[i].predicted_s;
            let m = &base.model;
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
            assert!(
                close(p(1) - p(0), elems * 2.0 * m.elem_s),
                "{shorts:?}: a pass over {elems} elements at the streaming rate: {} vs {}",
                p(1) - p(0),
                elems * 2.0 * m.elem_s
            );
            assert!(
                close(p(2) - p(0), calls * 2.0 * m.tiny_call_s),
                "{shorts:?}: {calls} tiny-kernel calls: {} vs {}",
                p(2) - p(0),
                calls * 2.0 * m.tiny_call_s
            );
            // only the small operand's gather, if any, is a copy
            assert!(
                close(p(3) - p(0), g.packed_elems as f64 * 2.0 * m.pack_elem_s),
                "{shorts:?}: copies {} vs {}",
                p(3) - p(0),
                g.packed_elems as f64 * 2.0 * m.pack_elem_s
            );
        }
        assert!(thin_seen > 0, "{shorts:?}: no thin group");
    }
    assert!(split_seen, "no thin group read as several sub-matrices");
}

/// Concatenating groups that pack blocks whose rows run along their last axis (the MPO
/// steps' shape: X[a,w,t,z] read as (a,z) x (w,t), w and t a few long) pack them column-major,
/// so that the copies move rows of z elements instead of a few (w,t) at a time (and so is an
/// output packed into a target laid out (a,v,z)); the result agrees with the
/// dense reference, f64 and complex with X conjugated, 1 and 2 threads (the f64 groups of
/// one to three columns on the tiny kernel's thin path). A packed matrix whose rows do not
/// run along the blocks stays row-major.
#[test]
fn packs_whose_rows_run_along_the_blocks_are_column_major() {
    check_col_major::<f64>(false);
    check_col_major::<Complex64>(true);
}

fn check_col_major<T: Scalar>(conj: bool) {
    use blockcontract::Conj;
    // two short contracted legs: an output block gets several (w, t), concatenated along k
    let (x, small) = mpo_intermediate::<T>([30, 40, 29], [1, 3, 2], 2, conj, 11);
    let w = full::<T>(
        vec![Leg::out(&small), Leg::out(&small), Leg::inc(&small)],
        12,
    );
    let mut spec = ContractionSpec::parse("Y[a,z,v] = X[a,w,t,z] * W[w,t,v]").unwrap();
    spec.operands[0].conj = Conj::from_bool(conj);
    let plan = build_plan(
        &spec,
        &[&x, &w],
        &PlanOptions::only(GroupKind::ContractionAxis),
    )
    .unwrap();
    let groups = &plan.steps[0].plan.groups;
    let concat: Vec<_> = groups
        .iter()
        .filter(|g| g.kind == GroupKind::ContractionAxis)
        .collect();
    assert!(!concat.is_empty(), "no contraction-axis group");
    // X (A) packed column-major; W (B), whose rows are w, row-major
    for g in &concat {
        assert!(g.a_access.is_packed() && g.packed_col_major[0], "{g:?}");
        assert!(!g.packed_col_major[1], "{g:?}");
        assert!(
            g.reason().contains("A packed column-major"),
            "{}",
            g.reason()
        );
    }
    // some groups are long and thin (C of at most THIN_MAX_N columns, row-major, written in
    // place; A column-major): unconjugated, the executor runs those on the tiny kernel
    // (`thin_wins`), checked against the dense reference below
    assert!(
        concat
            .iter()
            .any(|g| g.n <= blockcontract::kernel::THIN_MAX_N
                && g.n * g.k <= 16
                && !g.c_access.is_packed()),
        "no long, thin group"
    );
    let alpha = T::from_f64(0.5);
    let (want, _) = contract_dyn(&spec, &[&x, &w], alpha, Executor::Dense).unwrap();
    assert_runs_agree(&plan, &[&x, &w], alpha, &want, "X * W");
    // written into a target whose blocks are (a, v, z) row-major: the output's rows (a, z)
    // run along z there too, so its packed matrix is column-major as well
    let spec = {
        let mut s = ContractionSpec::parse("Y[a,v,z] = X[a,w,t,z] * W[w,t,v]").unwrap();
        s.operands[0].conj = Conj::from_bool(conj);
        s
    };
    let (want, _) = contract_dyn(&spec, &[&x, &w], alpha, Executor::Dense).unwrap();
    let only = PlanOptions::only(GroupKind::ContractionAxis);
    let plan = blockcontract::plan::build_plan_into(&spec, &[&x, &w], &want, &only)
        .unwrap()
        .expect("the target holds every block");
    let groups = &plan.steps[0].plan.groups;
    assert!(
        groups
            .iter()
            .any(|g| g.c_access.is_packed() && g.packed_col_major[2]),
        "no output packed column-major"
    );
    for threads in [1, 2] {
        // target += result: twice the result
        let mut target = want.clone();
        blockcontract::exec::execute_into(
            &plan,
            &[&x, &w],
            alpha,
            threads,
            &mut target,
            blockcontract::kernel::Accum::Add,
        )
        .unwrap();
        let mut twice = want.clone();
        twice.scale(T::from_f64(2.0));
        let d = common::rel_diff(&target.to_dense().unwrap(), &twice.to_dense().unwrap());
        assert!(
            d <= 1e-12,
            "into, {threads} threads: relative difference {d}"
        );
    }
}

#[test]
fn grouped_calls_never_write_one_block_twice() {
    // A[a,k] * B[k,c]: every pair its own shape; one output block may receive several pairs
    let (_, v, _) = spaces();
    let a = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::out(&v)], 9);
    let b = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)], 10);
    let spec = ContractionSpec::parse("C[a,c] = A[a,k,l] * B[k,l,c]").unwrap();
    let plan = build_plan(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Grouped)).unwrap();
    let st = &plan.steps[0].plan;
    // first fit over output blocks: as many calls as the most pairs any output block receives
    let mut per_c: HashMap<u32, usize> = HashMap::new();
    for p in &st.pairs {
        if p.m * p.n * p.k > 0 {
            *per_c.entry(p.c).or_insert(0) += 1;
        }
    }
    let calls = per_c.values().copied().max().unwrap();
    assert_eq!(st.groups.len(), calls);
    for g in &st.groups {
        let mut cs: Vec<u32> = g.c().iter().map(|p| p.block).collect();
        let n = cs.len();
        cs.sort();
        cs.dedup();
        assert_eq!(cs.len(), n, "a grouped call writes an output block twice");
    }
    let counts = run_forced(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Grouped));
    assert!(counts[GroupKind::Grouped as usize] >= 1);
}

#[test]
fn the_cost_model_takes_grouped_calls_on_a_cpu_and_a_device() {
    // Tiny pairs of different shapes: on a CPU a grouped call is a loop of the same GEMMs
    // (a tie with singles, broken towards fewer calls); on a device one launch replaces many.
    let (_, v, _) = spaces();
    let a = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::out(&v)], 11);
    let b = full::<f64>(vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)], 12);
    let spec = ContractionSpec::parse("C[a,c] = A[a,k,l] * B[k,l,c]").unwrap();
    for model in [
        blockcontract::CostModel::default(),
        blockcontract::CostModel::gpu_default(),
    ] {
        let mut opts = PlanOptions::only(GroupKind::Grouped);
        opts.policy = blockcontract::plan::Policy::CostModel;
        opts.model = model;
        let forced = build_plan(&spec, &[&a, &b], &PlanOptions::only(GroupKind::Grouped)).unwrap();
        let chosen = build_plan(&spec, &[&a, &b], &opts).unwrap();
        let kinds = |p: &blockcontract::plan::Plan| -> Vec<(GroupKind, usize)> {
            p.steps[0]
                .plan
                .groups
                .iter()
                .map(|g| (g.kind, g.pairs.len()))
                .collect()
        };
        assert!(
            kinds(&chosen).iter().any(|&(k, _)| k == GroupKind::Grouped),
            "{model}: no grouped call"
        );
        assert_eq!(kinds(&chosen), kinds(&forced), "{model}");
        let counts = run_forced(&spec, &[&a, &b], &opts);
        assert_eq!(
            counts[GroupKind::Grouped as usize],
            forced.counts().by_kind[GroupKind::Grouped as usize]
        );
    }
}

/// The one-site effective Hamiltonian, ((L*P)*W)*R, its order given.
fn heff1_spec() -> ContractionSpec {
    let mut spec =
        ContractionSpec::parse("Y[a,s,b] = L[a,w,x] * P[x,t,y] * W[w,v,s,t] * R[y,v,b]").unwrap();
    spec.tree = Some(Tree::Node(
        Box::new(Tree::Node(
            Box::new(Tree::Node(Box::new(Tree::Leaf(0)), Box::new(Tree::Leaf(1)))),
            Box::new(Tree::Leaf(2)),
        )),
        Box::new(Tree::Leaf(3)),
    ));
    spec
}

#[test]
fn buffers_reused_across_calls_give_the_same_results() {
    // intermediates come from the plan's pool and are overwritten, never zero-filled: repeated
    // calls, interleaved with operands of another structure, must give identical results
    let (_, v, p) = spaces();
    let mut rng = common::Rng(5);
    let mk = |rng: &mut common::Rng, legs: Vec<Leg>| common::tensor::<f64>(rng, legs, true);
    let l = mk(&mut rng, vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)]);
    let psi = mk(&mut rng, vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)]);
    let w = mk(
        &mut rng,
        vec![Leg::out(&v), Leg::inc(&v), Leg::out(&p), Leg::inc(&p)],
    );
    let r = mk(&mut rng, vec![Leg::out(&v), Leg::out(&v), Leg::inc(&v)]);
    let other = psi.relayout(&[2, 1, 0]).unwrap();
    let spec = heff1_spec();
    let (want, _) = contract_dyn(&spec, &[&l, &psi, &w, &r], 1.0, Executor::Dense).unwrap();
    let cache = PlanCache::new();
    let fp = blockcontract::plan::cache::spec_fingerprint(&spec);
    let opts = PlanOptions::default();
    let mut first: Option<Vec<f64>> = None;
    for i in 0..6 {
        let x = if i % 2 == 0 { &psi } else { &other };
        let ops = [&l, x, &w, &r];
        let plan = cache.get_or_plan(&spec, fp, &ops, &opts).unwrap();
        let (got, _, _) = execute(&plan, &ops, 1.0, 1 + i % 2, None).unwrap();
        assert!(
            common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap()) < 1e-12,
            "call {i}"
        );
        if i % 2 == 0 {
            let d = got
                .to_dense()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<f64>>();
            match &first {
                None => first = Some(d),
                Some(f) => assert_eq!(f, &d, "call {i} differs from the first"),
            }
        }
    }
    assert_eq!(cache.misses(), 2);
}

/// Intermediates come from spare buffers that keep the length they were filled to: a
/// structure with smaller sectors runs in buffers longer than its steps write (their tails
/// hold the larger structure's values; a sector of dimension 0 leaves output blocks that no
/// GEMM writes, zeroed by the step), and the larger one runs again in buffers holding the
/// smaller one's values. Calls alternating between the two, on 1 and 2 threads, each agree
/// with the dense result.
#[test]
fn intermediates_in_longer_reused_buffers_give_the_same_results() {
    let u1 = Symmetry::u1();
    let space = |dims: [usize; 5]| {
        let secs: Vec<(Vec<i64>, usize)> = (-2..=2).zip(dims).map(|(q, d)| (vec![q], d)).collect();
        Arc::new(Space::block(&u1, &secs).unwrap())
    };
    let p = Arc::new(Space::local(&u1, &[(vec![-1], 1), (vec![1], 1)]).unwrap());
    let spec = heff1_spec();
    let mut rng = common::Rng(11);
    let mut cases = Vec::new();
    for dims in [[2, 4, 5, 4, 2], [1, 2, 0, 2, 1]] {
        let v = space(dims);
        let mut mk = |legs: Vec<Leg>| common::tensor::<f64>(&mut rng, legs, true);
        let ops = vec![
            mk(vec![Leg::out(&v), Leg::inc(&v), Leg::inc(&v)]),
            mk(vec![Leg::out(&v), Leg::out(&p), Leg::inc(&v)]),
            mk(vec![Leg::out(&v), Leg::inc(&v), Leg::out(&p), Leg::inc(&p)]),
            mk(vec![Leg::out(&v), Leg::out(&v), Leg::inc(&v)]),
        ];
        let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
        let (want, _) = contract_dyn(&spec, &refs, 1.0, Executor::Dense).unwrap();
        cases.push((ops, want.to_dense().unwrap()));
    }
    let cache = PlanCache::new();
    let fp = blockcontract::plan::cache::spec_fingerprint(&spec);
    let opts = PlanOptions::default();
    for i in 0..8 {
        let (ops, want) = &cases[i % 2];
        let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
        let plan = cache.get_or_plan(&spec, fp, &refs, &opts).unwrap();
        let (got, _, _) = execute(&plan, &refs, 1.0, 1 + i / 4, None).unwrap();
        assert!(
            common::rel_diff(&got.to_dense().unwrap(), want) < 1e-12,
            "call {i}"
        );
    }
}

/// Ranks beyond the axes a layout stores inline (6): rank-8 operands (one relaid out, so its
/// strides are not row-major) and a rank-9 result, every kind forced on and off and the
/// planner's own choice, against the dense executor.
#[test]
fn operands_of_rank_eight_agree_with_dense() {
    let u1 = Symmetry::u1();
    let v = Arc::new(Space::block(&u1, &[(vec![-1], 1), (vec![0], 2), (vec![1], 1)]).unwrap());
    let legs = |flows: &[blockcontract::Flow]| -> Vec<Leg> {
        flows.iter().map(|&f| Leg::new(&v, f)).collect()
    };
    use blockcontract::Flow::{In, Out};
    let a: DynTensor<f64> = full(legs(&[Out, Out, In, Out, In, Out, In, In]), 3);
    let a = a.relayout(&[7, 0, 6, 1, 5, 2, 4, 3]).unwrap();
    let b: DynTensor<f64> = full(legs(&[Out, Out, Out, In, Out, In, Out]), 4);
    let spec = ContractionSpec::parse(
        "C[a0,a1,a2,a3,a4,b3,b4,b5,b6] := A[a0,a1,k0,a2,k1,a3,a4,k2] * B[k0,k2,k1,b3,b4,b5,b6]",
    )
    .unwrap();
    let ops = [&a, &b];
    let (want, _) = contract_dyn(&spec, &ops, 1.0, Executor::Dense).unwrap();
    assert_eq!(want.rank(), 9);
    let wd = want.to_dense().unwrap();
    let mut options = forced_options();
    options.push(PlanOptions::default());
    for opts in options {
        let plan = build_plan(&spec, &ops, &opts).unwrap();
        let (got, _, _) = execute(&plan, &ops, 1.0, 1, None).unwrap();
        let d = common::rel_diff(&got.to_dense().unwrap(), &wd);
        assert!(d <= 1e-12, "{:?}: relative difference {d}", opts.policy);
    }
}

/// A pairwise case, then the same sectors and blocks with other dimensions (some zero): the
/// second plan is made from the first (or hits it, when the dimensions came out the same),
/// its batched calls each of one shape, and agrees with the dense executor; with the cost
/// model's choices (`o` = 0) or each kind forced.
fn check_template<T: Scalar>(
    seed: u64,
    sym: usize,
    o: usize,
    tol: f64,
) -> Result<(), TestCaseError> {
    let c = common::pair_case::<T>(seed, sym);
    let cache = PlanCache::new();
    let mut options = vec![PlanOptions::default()];
    options.extend(forced_options());
    let opts = options[o % options.len()];
    let fp = blockcontract::plan::cache::spec_fingerprint(&c.spec);
    let fail = |e: Error| TestCaseError::fail(e.to_string());
    cache
        .get_or_plan(&c.spec, fp, &[&c.a, &c.b], &opts)
        .map_err(fail)?;
    let mut rng = common::Rng(seed ^ 0x7e3a);
    let mut map = HashMap::new();
    let zero = rng.coin();
    let a = common::resized(&c.a, &mut map, &mut rng, zero);
    let b = common::resized(&c.b, &mut map, &mut rng, zero);
    let ops = [&a, &b];
    let plan = cache.get_or_plan(&c.spec, fp, &ops, &opts).map_err(fail)?;
    let s = cache.stats();
    prop_assert!(s.hits + s.templated == 1, "{s:?}");
    for st in &plan.steps {
        for g in st
            .plan
            .groups
            .iter()
            .filter(|g| g.kind == GroupKind::Batched)
        {
            let shape = |p: &u32| {
                let x = &st.plan.pairs[*p as usize];
                (x.m, x.n, x.k)
            };
            prop_assert!(
                g.pairs.iter().all(|p| shape(p) == shape(&g.pairs[0])),
                "a batched call of several shapes"
            );
        }
    }
    let alpha = T::from_f64(0.5);
    let (got, _, _) = execute(&plan, &ops, alpha, 1, None).map_err(fail)?;
    let (want, _) = contract_dyn(&c.spec, &ops, alpha, Executor::Dense).map_err(fail)?;
    let d = common::rel_diff(&got.to_dense().unwrap(), &want.to_dense().unwrap());
    prop_assert!(d <= tol, "relative difference {d}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn plans_from_a_template_agree_with_dense_f64(
        seed in any::<u64>(), sym in 0usize..5, o in 0usize..9,
    ) {
        check_template::<f64>(seed, sym, o, 1e-12)?;
    }

    #[test]
    fn plans_from_a_template_agree_with_dense_complex(
        seed in any::<u64>(), sym in 0usize..5, o in 0usize..9,
    ) {
        check_template::<Complex64>(seed, sym, o, 1e-12)?;
    }
}

/// The Hubbard two-site effective Hamiltonian, then the same sectors with other dimensions:
/// with the workload's order and with the planner's own, the second plan comes from the
/// first (same order, same concatenations) and agrees with the per-pair reference, also
/// when written in place into a target.
#[test]
fn a_structure_differing_only_in_sector_dimensions_plans_from_the_cached_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m64_heff2.json")).unwrap();
    let ops = w.build_operands::<f64>().unwrap();
    let mut rng = common::Rng(11);
    let mut map = HashMap::new();
    let ops2: Vec<DynTensor<f64>> = ops
        .iter()
        .map(|t| common::resized(t, &mut map, &mut rng, false))
        .collect();
    let (r1, r2): (Vec<&DynTensor<f64>>, Vec<&DynTensor<f64>>) =
        (ops.iter().collect(), ops2.iter().collect());
    let opts = PlanOptions::default();
    for given in [true, false] {
        let mut spec = w.contraction.clone();
        if !given {
            spec.tree = None;
        }
        let fp = blockcontract::plan::cache::spec_fingerprint(&spec);
        let cache = PlanCache::new();
        let p1 = cache.get_or_plan(&spec, fp, &r1, &opts).unwrap();
        let p2 = cache.get_or_plan(&spec, fp, &r2, &opts).unwrap();
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.templated), (0, 2, 1), "{s:?}");
        assert_eq!(p1.tree, p2.tree);
        let concat = |p: &blockcontract::Plan| -> Vec<usize> {
            p.steps
                .iter()
                .map(|st| st.plan.groups.iter().filter(|g| !g.is_members()).count())
                .collect()
        };
        assert_eq!(concat(&p1), concat(&p2));
        assert_ne!(p1.flops(), p2.flops(), "the dimensions did change");
        let (got, _, _) = execute(&p2, &r2, 1.0, 1, None).unwrap();
        let (want, _) = contract_dyn(&spec, &r2, 1.0, Executor::Pairwise).unwrap();
        let wd = want.to_dense().unwrap();
        assert!(common::rel_diff(&got.to_dense().unwrap(), &wd) < 1e-12);
        // in place: the target of the first structure, then of the second
        let into = |t: &DynTensor<f64>, refs: &[&DynTensor<f64>]| {
            cache
                .get_or_plan_into(&spec, fp, refs, t, &opts)
                .unwrap()
                .expect("a full target takes the result in place")
        };
        let sk = p1.output_skeleton::<f64>().unwrap();
        let t1 = DynTensor::<f64>::zeros(sk.legs().to_vec(), sk.charge().clone()).unwrap();
        let _ = into(&t1, &r1);
        let before = cache.stats().templated;
        let mut t2 = DynTensor::<f64>::zeros(want.legs().to_vec(), want.charge().clone()).unwrap();
        let p = into(&t2, &r2);
        assert_eq!(cache.stats().templated, before + 1);
        blockcontract::exec::execute_into(
            &p,
            &r2,
            1.0,
            1,
            &mut t2,
            blockcontract::kernel::Accum::Replace,
        )
        .unwrap();
        assert!(common::rel_diff(&t2.to_dense().unwrap(), &wd) < 1e-12);
    }
}

/// Checks a step plan's hazard-free components and first-write marks: the components hold
/// every group once, each ascending, numbered by their first group, and no output block is
/// written from two of them; every written block's first place in execution order is marked
/// first (or listed in `zero_blocks`, for a direct concatenated GEMM that adds), no later one
/// is, and an unwritten block is zeroed.
fn check_components_and_first_writes(name: &str, sp: &blockcontract::plan::StepPlan) {
    let ng = sp.groups.len();
    let mut seen = vec![false; ng];
    let mut owner: HashMap<u32, usize> = HashMap::new();
    let mut last_first = None;
    for (ci, comp) in sp.components.iter().enumerate() {
        assert!(!comp.is_empty(), "{name}: empty component {ci}");
        assert!(
            comp.windows(2).all(|w| w[0] < w[1]),
            "{name}: component {ci} not ascending"
        );
        assert!(
            last_first < Some(comp[0]),
            "{name}: components not numbered by first group"
        );
        last_first = Some(comp[0]);
        for &g in comp {
            assert!(
                !std::mem::replace(&mut seen[g as usize], true),
                "{name}: group {g} twice"
            );
            for p in sp.groups[g as usize].c() {
                let o = *owner.entry(p.block).or_insert(ci);
                assert_eq!(
                    o, ci,
                    "{name}: block {} written from two components",
                    p.block
                );
            }
        }
    }
    assert!(seen.iter().all(|&s| s), "{name}: a group in no component");
    let zero: HashSet<u32> = sp.zero_blocks.iter().copied().collect();
    let mut written = HashSet::new();
    for g in &sp.groups {
        for p in g.c() {
            let first = written.insert(p.block);
            assert!(
                !p.first || first,
                "{name}: block {} marked first twice",
                p.block
            );
            assert!(
                p.first || !first || zero.contains(&p.block),
                "{name}: block {}'s first writer neither overwrites nor is zeroed",
                p.block
            );
        }
        for p in g.a().iter().chain(g.b()) {
            assert!(!p.first, "{name}: an operand place marked first");
        }
    }
    for b in 0..sp.out_keys.len() as u32 {
        assert!(
            written.contains(&b) || zero.contains(&b),
            "{name}: block {b} unwritten, not zeroed"
        );
    }
}

#[test]
fn components_and_first_writes_hold_from_scratch_and_from_a_template() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let opts = PlanOptions {
        model: blockcontract::CostModel::default(),
        ..PlanOptions::default()
    };
    for name in ["hubbard_u1u1_m64_heff2", "heisenberg_u1_m64_heff2"] {
        let w = Workload::load(dir.join(format!("{name}.json"))).unwrap();
        let cache = PlanCache::new();
        let fp = blockcontract::plan::cache::spec_fingerprint(&w.contraction);
        for (i, x) in [w.clone(), w.near(5).unwrap()].iter().enumerate() {
            let ops = x.build_operands::<f64>().unwrap();
            let refs: Vec<&DynTensor<f64>> = ops.iter().collect();
            let plan = cache.get_or_plan(&x.contraction, fp, &refs, &opts).unwrap();
            for st in &plan.steps {
                check_components_and_first_writes(&format!("{name} #{i} {}", st.name), &st.plan);
            }
        }
        assert_eq!(
            cache.stats().templated,
            1,
            "{name}: the near structure used the template"
        );
    }
}
