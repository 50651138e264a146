//! Fuzzing on the stable toolchain: proptest over raw bytes and over structured inputs of the
//! workload loader, `ContractionSpec::parse`, the tensor constructors, and what follows them
//! (tensor operations, factorizations, contractions on every executor). Nothing may panic:
//! every failure is a typed `Err`, and where two executors both succeed they agree.
//!
//! Cases per target: `BLOCKCONTRACT_FUZZ_CASES` (default 256, the short run CI does). The
//! long run: `BLOCKCONTRACT_FUZZ_CASES=200000 cargo test --release --test fuzz` (5 targets).
//! Inputs that once failed are kept: proptest stores them in `fuzz.proptest-regressions`
//! (replayed first on every run), and each has a named test at the end of this file.

mod common;

use blockcontract::linalg::{eigh, lq, qr, svd, Truncation};
use blockcontract::spec::{Assign, ContractionSpec, IndexSpec, OperandSpec, Tree};
use blockcontract::{
    contract_dyn, ChargeKind, Complex64, Conj, DType, DynTensor, Executor, Flow, Leg, Scalar,
    Space, Symmetry, Tensor, Workload,
};
use common::Rng;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn config() -> Config {
    let cases = std::env::var("BLOCKCONTRACT_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        max_shrink_iters: 2000,
        ..Config::default()
    }
}

/// Dense elements a tensor on these legs would have, zero-dimension legs counted as 1 (so
/// that a huge leg beside an empty one is not small), if representable.
fn dense_size(legs: &[Leg]) -> Option<usize> {
    legs.iter()
        .try_fold(1usize, |n, l| n.checked_mul(l.space.dim().max(1)))
}

/// Largest dense size the harness runs operations and contractions on.
const SMALL: usize = 4096;

// ---------------------------------------------------------------- workload loader

/// A small valid workload: a three-operand U(1) contraction with a sparse MPO-like operand.
const BASE: &str = r#"{
 "format": "blocksparse-workload/1",
 "name": "fuzz_base",
 "source": "fuzz",
 "symmetry": ["U1"],
 "dtype": "f64",
 "spaces": {
  "v": {"sectors": [{"charge": [-1], "dim": 2}, {"charge": [0], "dim": 3}, {"charge": [1], "dim": 2}]},
  "p": {"sectors": [{"charge": [-1], "dim": 1}, {"charge": [1], "dim": 1}], "local": true}
 },
 "tensors": {
  "A": {"seed": 1, "charge": [0], "legs": [{"space": "v", "flow": "out"}, {"space": "p", "flow": "in"}, {"space": "v", "flow": "in"}]},
  "B": {"seed": 2, "charge": [0], "legs": [{"space": "v", "flow": "out"}, {"space": "v", "flow": "in"}], "blocks": [[0, 0], [1, 1]]},
  "C": {"seed": 3, "charge": [0], "legs": [{"space": "p", "flow": "in"}, {"space": "p", "flow": "out"}]}
 },
 "contraction": "Out[a,s,c] = A[a,t,b] * B[b,c] * C[s,t]",
 "order": [["A", "B"], ["(A*B)", "C"]]
}"#;

/// Values a mutation puts in place of a number or a string.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "-7",
    "1e300",
    "-0",
    "0.5",
    "4294967296",
    "1099511627776",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "null",
    "[]",
    "{}",
    "\"1\"",
    "true",
];
const STRINGS: &[&str] = &[
    "\"v\"",
    "\"p\"",
    "\"w\"",
    "\"\"",
    "\"out\"",
    "\"in\"",
    "\"up\"",
    "\"U1\"",
    "\"Z0\"",
    "\"Z2\"",
    "\"Z99999999999\"",
    "\"SU2\"",
    "\"f32\"",
    "\"c64\"",
    "\"f16\"",
    "\"A\"",
    "\"B\"",
    "\"Out\"",
    "\"(A*B)\"",
    "\"C[a]=A[a]\"",
    "\"Out[a,s,c] = A[a,t,b] * B[b,c]\"",
    "\"Out[a,c] = A[a,t,t] * B[b,c]\"",
    "0",
    "null",
    "[\"v\"]",
];

/// Spans of number-like and string tokens in `s` (byte ranges).
fn tokens(s: &str) -> Vec<(usize, usize, bool)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += 1;
            }
            out.push((i, (j + 1).min(b.len()), false));
            i = j + 1;
        } else if b[i] == b'-' || b[i].is_ascii_digit() {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_digit() || b"eE.+-".contains(&b[j])) {
                j += 1;
            }
            out.push((i, j, true));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// 1-2 random mutations of `BASE`: mostly a token replaced (the JSON stays well formed), else a
/// span deleted or duplicated, or two bytes swapped.
fn mutate(seed: u64) -> String {
    let mut rng = Rng(seed);
    let mut s = BASE.to_string();
    for _ in 0..1 + rng.below(2) {
        let toks = tokens(&s);
        match rng.below(10) {
            0..=6 if !toks.is_empty() => {
                let (a, b, num) = toks[rng.below(toks.len())];
                let with = if num && rng.coin() {
                    // a plausible value: most structures stay valid and run
                    (rng.below(7) as i64 - 2).to_string()
                } else if num || rng.below(4) == 0 {
                    NUMBERS[rng.below(NUMBERS.len())].to_string()
                } else {
                    STRINGS[rng.below(STRINGS.len())].to_string()
                };
                s.replace_range(a..b, &with);
            }
            7 => {
                let a = rng.below(s.len());
                let b = (a + 1 + rng.below(40)).min(s.len());
                if s.is_char_boundary(a) && s.is_char_boundary(b) {
                    s.replace_range(a..b, "");
                }
            }
            8 => {
                let a = rng.below(s.len());
                let b = (a + 1 + rng.below(80)).min(s.len());
                let at = rng.below(s.len());
                if [a, b, at].iter().all(|&x| s.is_char_boundary(x)) {
                    let piece = s[a..b].to_string();
                    s.insert_str(at, &piece);
                }
            }
            _ => {
                let (a, b) = (rng.below(s.len()), rng.below(s.len()));
                let mut v = s.into_bytes();
                v.swap(a, b);
                s = String::from_utf8_lossy(&v).into_owned();
            }
        }
    }
    s
}

/// Parses `text`; a workload that parses is built and run on the planned and pairwise
/// executors (and the dense one) when small, and the results agree.
fn load_and_run(text: &str, reach: &Reach) -> Result<(), TestCaseError> {
    let Ok(w) = Workload::parse(text, "fuzz.json") else {
        return Ok(());
    };
    reach.hit(0);
    let small = w.tensors.iter().all(|t| {
        let legs: Vec<Leg> = t
            .legs
            .iter()
            .map(|(s, f)| Leg::new(&w.spaces[s], *f))
            .collect();
        dense_size(&legs).is_some_and(|n| n <= SMALL)
    });
    if !small {
        // building may fail (TooLarge) but must not panic; skip the arithmetic
        let _ = w.tensors.first().map(|t| w.build_tensor::<f64>(&t.name));
        return Ok(());
    }
    reach.hit(1);
    match w.dtype {
        DType::F64 => run_all::<f64>(&w, reach),
        DType::F32 => run_all::<f32>(&w, reach),
        DType::C64 => run_all::<Complex64>(&w, reach),
    }
}

fn run_all<T: Scalar>(w: &Workload, reach: &Reach) -> Result<(), TestCaseError> {
    let planned = w.run::<T>(Executor::Planned);
    if planned.is_ok() {
        reach.hit(2);
    }
    let pairwise = w.run::<T>(Executor::Pairwise);
    let dense = w.run::<T>(Executor::Dense);
    agree(&planned, &pairwise, "planned vs pairwise")?;
    agree(&dense, &pairwise, "dense vs pairwise")
}

/// Both succeed and agree, or both fail.
fn agree<T: Scalar, S>(
    a: &blockcontract::Result<(DynTensor<T>, S)>,
    b: &blockcontract::Result<(DynTensor<T>, S)>,
    what: &str,
) -> Result<(), TestCaseError> {
    match (a, b) {
        (Ok((x, _)), Ok((y, _))) => {
            let mut d = x.clone();
            if d.axpy(-T::one(), y).is_err() {
                return Err(TestCaseError::fail(format!("{what}: different legs")));
            }
            let tol = if T::DTYPE == DType::F32 { 1e-4 } else { 1e-10 };
            prop_assert!(
                d.norm() <= tol * (1.0 + y.norm()),
                "{what}: differ by {}",
                d.norm()
            );
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) | (Err(e), Ok(_)) => {
            return Err(TestCaseError::fail(format!(
                "{what}: one executor failed alone: {e}"
            )))
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- contraction notation

/// A contraction string from a grammar with mistakes: 1-4 factors of 0-4 indices over a small
/// alphabet (some repeated, some `conj(..)`), an output of the open ones or not, `=`/`:=`/`+=`.
fn notation(seed: u64) -> String {
    let mut rng = Rng(seed);
    let names = ["i", "j", "k", "l", "m"];
    let nf = 1 + rng.below(4);
    let mut factors = Vec::new();
    let mut all = Vec::new();
    for f in 0..nf {
        let ix: Vec<&str> = (0..rng.below(5))
            .map(|_| names[rng.below(names.len())])
            .collect();
        all.extend(ix.iter().copied());
        let name = ["A", "B", "C", "D"][f];
        factors.push(match rng.below(5) {
            0 => format!("conj({name})[{}]", ix.join(",")),
            1 => format!("conj({name}[{}])", ix.join(",")),
            _ => format!("{name}[{}]", ix.join(",")),
        });
    }
    let mut out: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| all.iter().filter(|x| *x == n).count() == 1)
        .collect();
    if rng.below(5) == 0 {
        out.push(names[rng.below(names.len())]);
    }
    rng.shuffle(&mut out);
    let op = ["=", ":=", "+=", "-=", "=="][rng.below(5)];
    let mut s = format!("Out[{}] {op} {}", out.join(","), factors.join(" * "));
    if rng.below(6) == 0 {
        // a random byte edit
        let at = rng.below(s.len() + 1);
        let c = b"[],*=():+ xA0"[rng.below(13)] as char;
        if s.is_char_boundary(at) {
            s.insert(at, c);
        }
    }
    s
}

fn check_spec(text: &str) {
    if let Ok(spec) = ContractionSpec::parse(text) {
        SPEC.hit(0);
        if spec.validate().is_ok() {
            SPEC.hit(1);
        }
        let _ = spec.traces();
        let _ = spec.without_traces();
        let _ = spec.output_labels();
        let _ = blockcontract::plan::cache::spec_fingerprint(&spec);
    }
}

// ---------------------------------------------------------------- structured contractions

/// A random contraction: 1-4 operands over a small space pool, labels mostly valid, with
/// random flows, charges, `conj` and order; it contracts on every executor or fails on all.
fn contraction_case(seed: u64) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed);
    let sym = common::symmetry(rng.below(5));
    let pool: Vec<Arc<Space>> = (0..3).map(|_| common::space(&mut rng, &sym)).collect();
    let nops = 1 + rng.below(4);
    let nlabels = 1 + rng.below(6);
    let mut ops_ix: Vec<Vec<usize>> = Vec::new();
    let mut legs: Vec<Vec<Leg>> = Vec::new();
    for _ in 0..nops {
        let rank = rng.below(4);
        let ix: Vec<usize> = (0..rank).map(|_| rng.below(nlabels)).collect();
        legs.push(
            ix.iter()
                .map(|&l| {
                    // the same label usually on the same space
                    let sp = if rng.below(8) == 0 {
                        rng.below(pool.len())
                    } else {
                        l % pool.len()
                    };
                    Leg::new(&pool[sp], if rng.coin() { Flow::Out } else { Flow::In })
                })
                .collect(),
        );
        ops_ix.push(ix);
    }
    let count = |l: usize| ops_ix.iter().flatten().filter(|&&x| x == l).count();
    let mut output: Vec<usize> = (0..nlabels).filter(|&l| count(l) == 1).collect();
    if rng.below(6) == 0 && !output.is_empty() {
        output.pop();
    }
    rng.shuffle(&mut output);
    let ix = |label| IndexSpec {
        label,
        flow: None,
        local: false,
    };
    let operands: Vec<OperandSpec> = ops_ix
        .iter()
        .enumerate()
        .map(|(i, x)| OperandSpec {
            name: format!("T{i}"),
            conj: if rng.below(4) == 0 {
                Conj::Yes
            } else {
                Conj::No
            },
            indices: x.iter().map(|&l| ix(l)).collect(),
        })
        .collect();
    let tree = (nops > 1 && rng.coin()).then(|| {
        let mut t = Tree::Leaf(0);
        for i in 1..nops {
            t = if rng.coin() {
                Tree::Node(Box::new(t), Box::new(Tree::Leaf(i)))
            } else {
                Tree::Node(Box::new(Tree::Leaf(i)), Box::new(t))
            };
        }
        t
    });
    let spec = ContractionSpec {
        labels: (0..nlabels).map(|l| format!("x{l}")).collect(),
        output_name: "Out".into(),
        output: output.into_iter().map(ix).collect(),
        operands,
        tree,
        assign: Assign::New,
    };
    let mut tensors = Vec::new();
    for l in legs {
        if dense_size(&l).is_none_or(|n| n > SMALL) {
            return Ok(());
        }
        let t = if l.is_empty() {
            DynTensor::<f64>::zeros_in(&sym, l, sym.zero())
        } else {
            let q = random_charge(&mut rng, &l, &sym);
            DynTensor::<f64>::random(l, q, rng.next() >> 12)
        };
        match t {
            Ok(t) => tensors.push(t),
            Err(_) => return Ok(()),
        }
    }
    CONTRACT.hit(0);
    let refs: Vec<&DynTensor<f64>> = tensors.iter().collect();
    let planned = contract_dyn(&spec, &refs, 0.5, Executor::Planned);
    let pairwise = contract_dyn(&spec, &refs, 0.5, Executor::Pairwise);
    let dense = contract_dyn(&spec, &refs, 0.5, Executor::Dense);
    match (&planned, &pairwise, &dense) {
        (Ok(_), _, _) => CONTRACT.hit(1),
        (Err(_), Err(_), Err(_)) => CONTRACT.hit(2),
        _ => {}
    }
    agree(&planned, &pairwise, "planned vs pairwise")?;
    agree(&dense, &pairwise, "dense vs pairwise")
}

/// The charge of a random block on `legs` (so that the tensor is not empty), or zero.
fn random_charge(rng: &mut Rng, legs: &[Leg], sym: &Symmetry) -> blockcontract::Charge {
    let mut q = sym.zero();
    for l in legs {
        let n = l.space.num_sectors();
        if n > 0 {
            let s = rng.below(n);
            sym.add_signed(&mut q, l.flow.sign(), &l.space.sectors()[s].charge);
        }
    }
    q
}

// ---------------------------------------------------------------- tensor constructors

/// A symmetry from raw choices, Z0 and empty products included (may be an error).
fn raw_symmetry(rng: &mut Rng) -> blockcontract::Result<Symmetry> {
    let kinds = (0..rng.below(3))
        .map(|_| match rng.below(3) {
            0 => ChargeKind::U1,
            _ => ChargeKind::Zn(rng.below(5) as u32),
        })
        .collect();
    Symmetry::new(kinds)
}

/// A dimension: small, zero, or far too large.
fn raw_dim(rng: &mut Rng) -> usize {
    match rng.below(24) {
        0 => 1 << 40,
        1 => usize::MAX,
        2 => usize::MAX / 3,
        3 | 4 => 0,
        _ => 1 + rng.below(3),
    }
}

/// Random spaces (charges of any arity, duplicates, huge dims), legs, charges, block lists,
/// dense arrays; whatever constructs is taken through the operations when small.
fn constructor_case(seed: u64) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed);
    let Ok(sym) = raw_symmetry(&mut rng) else {
        return Ok(());
    };
    let arity = |rng: &mut Rng| {
        if rng.below(10) == 0 {
            rng.below(3)
        } else {
            sym.len()
        }
    };
    let mut spaces = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let secs: Vec<(Vec<i64>, usize)> = (0..rng.below(4))
            .map(|_| {
                let q = (0..arity(&mut rng))
                    .map(|_| rng.below(5) as i64 - 2)
                    .collect();
                (q, raw_dim(&mut rng))
            })
            .collect();
        let sp = if rng.coin() {
            Space::block(&sym, &secs)
        } else {
            Space::local(&sym, &secs)
        };
        if let Ok(sp) = sp {
            spaces.push(Arc::new(sp));
        }
    }
    if spaces.is_empty() {
        return Ok(());
    }
    BUILD.hit(0);
    let rank = rng.below(5);
    let legs: Vec<Leg> = (0..rank)
        .map(|_| {
            let s = &spaces[rng.below(spaces.len())];
            Leg::new(s, if rng.coin() { Flow::Out } else { Flow::In })
        })
        .collect();
    let qv: Vec<i64> = (0..arity(&mut rng))
        .map(|_| rng.below(5) as i64 - 2)
        .collect();
    let Ok(q) = sym.charge(&qv) else {
        return Ok(());
    };
    let small = dense_size(&legs).is_some_and(|n| n <= SMALL);
    let blocks: Vec<Vec<usize>> = (0..rng.below(4))
        .map(|_| {
            (0..rank + usize::from(rng.below(8) == 0))
                .map(|_| rng.below(4))
                .collect()
        })
        .collect();
    let made = match rng.below(5) {
        0 => DynTensor::<f64>::zeros_in(&sym, legs.clone(), q.clone()),
        1 => DynTensor::<f64>::zeros_with_blocks_in(&sym, legs.clone(), q.clone(), &blocks),
        2 if small || rng.below(4) == 0 => {
            DynTensor::<f64>::from_fn(legs.clone(), q.clone(), None, |i| i.len() as f64)
        }
        3 if small => {
            let shape: Vec<usize> = legs
                .iter()
                .map(|l| l.space.dim() + usize::from(rng.below(6) == 0))
                .collect();
            let dense = ndarray::ArrayD::from_shape_fn(shape, |_| {
                if rng.below(3) == 0 {
                    0.0
                } else {
                    1.0 + rng.below(7) as f64
                }
            });
            DynTensor::<f64>::from_dense(legs.clone(), q.clone(), &dense)
        }
        _ if small || rng.below(4) == 0 => {
            DynTensor::<f64>::random(legs.clone(), q.clone(), rng.next() >> 12)
        }
        _ => return Ok(()),
    };
    let Ok(t) = made else {
        return Ok(());
    };
    BUILD.hit(1);
    if small {
        operations(&mut rng, &t)?;
        BUILD.hit(2);
    }
    Ok(())
}

/// Every operation on a constructed tensor, with random (often invalid) arguments.
fn operations(rng: &mut Rng, t: &DynTensor<f64>) -> Result<(), TestCaseError> {
    let rank = t.rank();
    let n = t.norm();
    prop_assert!(n.is_finite());
    let dense = t.to_dense().unwrap();
    if let Ok(back) = DynTensor::from_dense(t.legs().to_vec(), t.charge().clone(), &dense) {
        prop_assert!((back.norm() - n).abs() <= 1e-12 * (1.0 + n));
    }
    let mut perm: Vec<usize> = (0..rank).collect();
    rng.shuffle(&mut perm);
    if rng.below(4) == 0 {
        perm.push(rng.below(rank + 1));
    } else if rng.below(4) == 0 && !perm.is_empty() {
        perm[0] = rng.below(rank + 1);
    }
    if let Ok(r) = t.relayout(&perm) {
        prop_assert!((r.norm() - n).abs() <= 1e-12 * (1.0 + n));
    }
    let _ = t.permuted(&perm, Conj::Yes, 2.0);
    let _ = t.conj();
    let _ = t.scalar();
    let key: Vec<usize> = (0..rank).map(|_| rng.below(4)).collect();
    let _ = t.block_array(&key);
    let pairs: Vec<(usize, usize)> = (0..rng.below(3))
        .map(|_| (rng.below(rank + 1), rng.below(rank + 1)))
        .collect();
    let names: Vec<String> = (0..pairs.len() + rng.below(2))
        .map(|i| format!("p{i}"))
        .collect();
    let _ = t.partial_trace(&pairs, &names);
    let mut legs: Vec<usize> = (0..rank).collect();
    rng.shuffle(&mut legs);
    let cut = rng.below(rank + 1);
    let (mut rows, mut cols) = (legs[..cut].to_vec(), legs[cut..].to_vec());
    if rng.below(5) == 0 {
        rows.push(rng.below(rank + 2));
    }
    if rng.below(5) == 0 {
        cols.pop();
    }
    let trunc = match rng.below(4) {
        0 => Truncation::none(),
        1 => Truncation::new(rng.below(4), 1e-12),
        2 => Truncation::new(8, f64::NAN),
        _ => Truncation::new(3, -1.0),
    };
    let _ = svd(t, &rows, &cols, &trunc);
    let _ = qr(t, &rows, &cols);
    let _ = lq(t, &rows, &cols);
    let _ = eigh(t, &rows, &cols);
    let _ = Tensor::<f64, 3>::try_from(t.clone());
    let mut y = t.clone();
    let _ = y.axpy(0.5, t);
    let _ = y.inner(t);
    Ok(())
}

// ---------------------------------------------------------------- the targets

/// Counters of how far inputs got, printed by each target (a harness whose inputs all fail at
/// the first check would test nothing).
#[derive(Default)]
struct Reach([AtomicUsize; 4]);

impl Reach {
    fn hit(&self, stage: usize) {
        self.0[stage].fetch_add(1, Ordering::Relaxed);
    }
    fn report(&self, target: &str, stages: [&str; 4], cases: u32) {
        let counts: Vec<String> = stages
            .iter()
            .zip(&self.0)
            .filter(|(s, _)| !s.is_empty())
            .map(|(s, c)| format!("{s} {}", c.load(Ordering::Relaxed)))
            .collect();
        eprintln!("fuzz {target}: {cases} cases: {}", counts.join(", "));
    }
}

static RAW: Reach = Reach([const { AtomicUsize::new(0) }; 4]);
static MUTATED: Reach = Reach([const { AtomicUsize::new(0) }; 4]);
static CONTRACT: Reach = Reach([const { AtomicUsize::new(0) }; 4]);
static BUILD: Reach = Reach([const { AtomicUsize::new(0) }; 4]);
static SPEC: Reach = Reach([const { AtomicUsize::new(0) }; 4]);

/// Runs `f` on `cases` inputs from `strategy` (failures shrunk, persisted next to this file
/// and replayed first), then prints how far they got.
fn fuzz<S: Strategy>(
    name: &'static str,
    strategy: S,
    reach: &Reach,
    stages: [&str; 4],
    f: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut cfg = config();
    cfg.source_file = Some(file!());
    cfg.test_name = Some(name);
    cfg.failure_persistence = Some(Box::new(FileFailurePersistence::WithSource(
        "proptest-regressions",
    )));
    let cases = cfg.cases;
    let mut runner = TestRunner::new(cfg);
    if let Err(e) = runner.run(&strategy, f) {
        panic!("{name}: {e}");
    }
    reach.report(name, stages, cases);
}

#[test]
fn workload_loader_on_raw_bytes() {
    fuzz(
        "workload_loader_on_raw_bytes",
        proptest::collection::vec(any::<u8>(), 0..600),
        &RAW,
        ["parsed", "small", "ran", ""],
        |bytes| load_and_run(&String::from_utf8_lossy(&bytes), &RAW),
    );
}

#[test]
fn workload_loader_on_mutated_files() {
    fuzz(
        "workload_loader_on_mutated_files",
        any::<u64>(),
        &MUTATED,
        ["parsed", "small", "ran", ""],
        |seed| load_and_run(&mutate(seed), &MUTATED),
    );
}

#[test]
fn contraction_notation() {
    fuzz(
        "contraction_notation",
        (any::<u64>(), "[A-Dijk\\[\\],*=:+() ]{0,40}"),
        &SPEC,
        ["parsed", "valid", "", ""],
        |(seed, raw)| {
            check_spec(&notation(seed));
            check_spec(&raw);
            Ok(())
        },
    );
}

#[test]
fn contractions_agree_or_fail_on_every_executor() {
    fuzz(
        "contractions_agree_or_fail_on_every_executor",
        any::<u64>(),
        &CONTRACT,
        ["built", "contracted", "refused by all", ""],
        contraction_case,
    );
}

#[test]
fn tensor_constructors_and_operations() {
    fuzz(
        "tensor_constructors_and_operations",
        any::<u64>(),
        &BUILD,
        ["spaces", "constructed", "operated", ""],
        constructor_case,
    );
}

/// The unmutated base file runs (the mutations start from a valid workload).
#[test]
fn the_base_workload_is_valid_and_runs() {
    let w = Workload::parse(BASE, "base.json").unwrap();
    let (planned, _) = w.run::<f64>(Executor::Planned).unwrap();
    let (dense, _) = w.run::<f64>(Executor::Dense).unwrap();
    let mut d = planned.clone();
    d.axpy(-1.0, &dense).unwrap();
    assert!(planned.norm() > 0.0 && d.norm() < 1e-12 * planned.norm());
}

// ---------------------------------------------------------------- inputs that once failed

/// Found by `contractions_agree_or_fail_on_every_executor` (seed 2780357958711839710): a
/// single operand already in the output's order lost its scalar on the pairwise executor.
#[test]
fn a_single_operand_is_scaled_on_every_executor() {
    let u1 = Symmetry::u1();
    let v = Arc::new(Space::block(&u1, &[(vec![-1], 3), (vec![1], 3)]).unwrap());
    let t = DynTensor::<f64>::random(vec![Leg::out(&v)], u1.charge(&[1]).unwrap(), 5).unwrap();
    let spec = ContractionSpec::parse("Out[i] = T[i]").unwrap();
    for exec in [Executor::Planned, Executor::Pairwise, Executor::Dense] {
        let (r, _) = contract_dyn(&spec, &[&t], 0.5, exec).unwrap();
        assert!((r.norm() - 0.5 * t.norm()).abs() < 1e-14, "{exec:?}");
    }
}

/// Found by `tensor_constructors_and_operations`: a tensor with an empty leg beside a leg of
/// `usize::MAX` elements made `to_dense` panic inside ndarray; it is `TooLarge` now.
#[test]
fn the_dense_form_of_an_unaddressable_shape_is_too_large() {
    let u1 = Symmetry::u1();
    let empty = Arc::new(Space::block(&u1, &[(vec![0], 0)]).unwrap());
    let huge = Arc::new(Space::block(&u1, &[(vec![0], usize::MAX)]).unwrap());
    let legs = vec![Leg::out(&empty), Leg::inc(&huge), Leg::inc(&huge)];
    let t = DynTensor::<f64>::zeros(legs, u1.zero()).unwrap();
    assert!(matches!(
        t.to_dense(),
        Err(blockcontract::Error::TooLarge { .. })
    ));
}

/// Found by `contractions_agree_or_fail_on_every_executor` in the long run (seed
/// 16946417871081285338 after an earlier case): rank-0 tensors of U(1) and Z_2 with the same
/// charge values had the same structure fingerprint, so a cached U(1) plan ran on Z_2
/// operands and gave the result the U(1) charge.
#[test]
fn plans_of_rank_0_operands_are_cached_per_symmetry() {
    let spec = ContractionSpec::parse("Out[] = conj(A)[] * B[]").unwrap();
    let mut charges = Vec::new();
    for sym in [Symmetry::u1(), Symmetry::zn(2).unwrap()] {
        let a = DynTensor::<f64>::zeros_in(&sym, vec![], sym.charge(&[1]).unwrap()).unwrap();
        let b = DynTensor::<f64>::zeros_in(&sym, vec![], sym.zero()).unwrap();
        let (r, _) = contract_dyn(&spec, &[&a, &b], 1.0, Executor::Planned).unwrap();
        charges.push((r.symmetry().clone(), r.charge().clone()));
    }
    assert_eq!(charges[0].1, Symmetry::u1().charge(&[-1]).unwrap());
    assert_eq!(charges[1].0, Symmetry::zn(2).unwrap());
    assert_eq!(charges[1].1, Symmetry::zn(2).unwrap().charge(&[1]).unwrap());
}
