//! Random symmetric tensors and contractions for property tests.
#![allow(dead_code)]

use blockcontract::spec::{Assign, ContractionSpec, IndexSpec, OperandSpec, Tree};
use blockcontract::workload::{generate, splitmix64};
use blockcontract::{ChargeKind, DynTensor, Flow, Leg, Scalar, Space, Symmetry};
use std::sync::Arc;

/// A tiny deterministic RNG (SplitMix64).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        splitmix64(self.0)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    pub fn shuffle<X>(&mut self, v: &mut [X]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

pub fn symmetry(which: usize) -> Symmetry {
    match which % 5 {
        0 => Symmetry::u1(),
        1 => Symmetry::zn(2).unwrap(),
        2 => Symmetry::new(vec![ChargeKind::U1, ChargeKind::U1]).unwrap(),
        3 => Symmetry::new(vec![ChargeKind::U1, ChargeKind::Zn(3)]).unwrap(),
        _ => Symmetry::none(),
    }
}

/// A random space: 1-4 sectors of distinct small charges, dims 1..=3 and sometimes 0 (local: dims 1).
pub fn space(rng: &mut Rng, sym: &Symmetry) -> Arc<Space> {
    let local = rng.below(4) == 0;
    let want = if sym.is_empty() {
        1
    } else {
        1 + rng.below(4).max(rng.below(4))
    };
    let mut secs: Vec<(Vec<i64>, usize)> = Vec::new();
    for _ in 0..50 {
        if secs.len() >= want {
            break;
        }
        let q: Vec<i64> = sym
            .kinds()
            .iter()
            .map(|k| match k {
                ChargeKind::U1 => rng.below(3) as i64 - 1,
                ChargeKind::Zn(n) => rng.below(*n as usize) as i64,
            })
            .collect();
        let qn = sym.charge(&q).unwrap();
        if secs.iter().any(|(c, _)| sym.charge(c).unwrap() == qn) {
            continue;
        }
        let dim = if local {
            1
        } else if rng.below(8) == 0 {
            0
        } else {
            1 + rng.below(3)
        };
        secs.push((q, dim));
    }
    let sp = if local {
        Space::local(sym, &secs)
    } else {
        Space::block(sym, &secs)
    };
    Arc::new(sp.unwrap())
}

/// A deterministic element value for a dense index.
pub fn value<T: Scalar>(seed: u64, idx: &[usize]) -> T {
    let mut i = 0u64;
    for &x in idx {
        i = i.wrapping_mul(1000).wrapping_add(x as u64);
    }
    T::from_parts(generate(seed, i), generate(seed, i ^ (1 << 63)))
}

/// A random tensor on `legs`: its charge is that of a random block; about a quarter of the
/// allowed blocks are dropped when `sparse`; half the time its blocks are stored in a random
/// axis order (non-unit strides).
pub fn tensor<T: Scalar>(rng: &mut Rng, legs: Vec<Leg>, sparse: bool) -> DynTensor<T> {
    let sym = legs[0].space.symmetry().clone();
    let mut q = sym.zero();
    for l in &legs {
        let s = rng.below(l.space.num_sectors());
        sym.add_signed(&mut q, l.flow.sign(), &l.space.sectors()[s].charge);
    }
    let full = DynTensor::<T>::zeros(legs.clone(), q.clone()).unwrap();
    let seed = rng.next() >> 12;
    let t = if sparse {
        let keys: Vec<Vec<usize>> = full
            .blocks()
            .iter()
            .filter(|_| rng.below(4) != 0)
            .map(|b| b.key.iter().map(|&x| x as usize).collect())
            .collect();
        DynTensor::from_fn(legs, q, Some(&keys), |i| value(seed, i)).unwrap()
    } else {
        DynTensor::from_fn(legs, q, None, |i| value(seed, i)).unwrap()
    };
    if rng.coin() {
        let mut order: Vec<usize> = (0..t.rank()).collect();
        rng.shuffle(&mut order);
        t.relayout(&order).unwrap()
    } else {
        t
    }
}

/// A random pairwise contraction with its operands.
pub struct Case<T> {
    pub a: DynTensor<T>,
    pub b: DynTensor<T>,
    pub spec: ContractionSpec,
}

/// A (rank 1-4) times B (rank 1-4) over 0..=min ranks contracted pairs, a random output order,
/// random conj flags for complex types (the conjugated side's legs are built so flows still oppose).
pub fn pair_case<T: Scalar>(seed: u64, sym_which: usize) -> Case<T> {
    let mut rng = Rng(seed);
    let sym = symmetry(sym_which);
    let ra = 1 + rng.below(4);
    let rb = 1 + rng.below(4);
    let nc = rng.below(ra.min(rb) + 1);
    let conj_a = T::IS_COMPLEX && rng.coin();
    let conj_b = T::IS_COMPLEX && rng.coin();
    let mut la: Vec<Option<Leg>> = vec![None; ra];
    let mut lb: Vec<Option<Leg>> = vec![None; rb];
    let mut pa: Vec<usize> = (0..ra).collect();
    let mut pb: Vec<usize> = (0..rb).collect();
    rng.shuffle(&mut pa);
    rng.shuffle(&mut pb);
    let mut labels: Vec<String> = Vec::new();
    let mut ia = vec![usize::MAX; ra];
    let mut ib = vec![usize::MAX; rb];
    for c in 0..nc {
        let sp = space(&mut rng, &sym);
        let f = if rng.coin() { Flow::Out } else { Flow::In };
        let fa = if conj_a { f.dual() } else { f };
        let fb = if conj_b { f } else { f.dual() };
        la[pa[c]] = Some(Leg::new(&sp, fa));
        lb[pb[c]] = Some(Leg::new(&sp, fb));
        labels.push(format!("k{c}"));
        ia[pa[c]] = c;
        ib[pb[c]] = c;
    }
    let mut free: Vec<usize> = Vec::new();
    for (legs, ids, tag) in [(&mut la, &mut ia, "a"), (&mut lb, &mut ib, "b")] {
        for (p, l) in legs.iter_mut().enumerate() {
            if l.is_none() {
                let sp = space(&mut rng, &sym);
                let f = if rng.coin() { Flow::Out } else { Flow::In };
                *l = Some(Leg::new(&sp, f));
                labels.push(format!("{tag}{p}"));
                ids[p] = labels.len() - 1;
                free.push(labels.len() - 1);
            }
        }
    }
    rng.shuffle(&mut free);
    let sa = rng.coin();
    let a = tensor::<T>(&mut rng, la.into_iter().map(Option::unwrap).collect(), sa);
    let sb = rng.coin();
    let b = tensor::<T>(&mut rng, lb.into_iter().map(Option::unwrap).collect(), sb);
    let ix = |l: usize| IndexSpec {
        label: l,
        flow: None,
        local: false,
    };
    let spec = ContractionSpec {
        labels,
        output_name: "C".into(),
        output: free.iter().map(|&l| ix(l)).collect(),
        operands: vec![
            OperandSpec {
                name: "A".into(),
                conj: blockcontract::Conj::from_bool(conj_a),
                indices: ia.iter().map(|&l| ix(l)).collect(),
            },
            OperandSpec {
                name: "B".into(),
                conj: blockcontract::Conj::from_bool(conj_b),
                indices: ib.iter().map(|&l| ix(l)).collect(),
            },
        ],
        tree: Some(Tree::Node(Box::new(Tree::Leaf(0)), Box::new(Tree::Leaf(1)))),
        assign: Assign::New,
    };
    Case { a, b, spec }
}

/// Max elementwise |x - y| relative to the larger Frobenius norm (absolute below norm 1).
pub fn rel_diff<T: Scalar>(x: &ndarray::ArrayD<T>, y: &ndarray::ArrayD<T>) -> f64 {
    assert_eq!(x.shape(), y.shape(), "dense shapes differ");
    let nx: f64 = x.iter().map(|v| v.abs2()).sum::<f64>().sqrt();
    let ny: f64 = y.iter().map(|v| v.abs2()).sum::<f64>().sqrt();
    let d: f64 = x
        .iter()
        .zip(y.iter())
        .map(|(a, b)| (a.re() - b.re()).abs().max((a.im() - b.im()).abs()))
        .fold(0.0, f64::max);
    d / nx.max(ny).max(1.0)
}

/// A contraction whose two operands are one tensor `x`: `conj(x) * x` over a random subset of
/// legs at the same positions (a density matrix or a norm), or `x * x` joining an `Out` leg of
/// one with the `In` leg of the same space on the other (a matrix power); half the time the
/// blocks are stored in a random axis order, so both sides may need a transpose.
pub struct SameCase<T> {
    pub x: DynTensor<T>,
    pub spec: ContractionSpec,
}

pub fn same_tensor_case<T: Scalar>(seed: u64, sym_which: usize) -> SameCase<T> {
    let mut rng = Rng(seed);
    let sym = symmetry(sym_which);
    let conj = rng.coin();
    let r = 2 + rng.below(3);
    let mut legs: Vec<Leg> = (0..r)
        .map(|_| {
            let f = if rng.coin() { Flow::Out } else { Flow::In };
            Leg::new(&space(&mut rng, &sym), f)
        })
        .collect();
    // (leg of the left operand, leg of the right operand) pairs that are contracted
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    if conj {
        for i in 0..r {
            if rng.coin() {
                pairs.push((i, i));
            }
        }
    } else {
        let mut pos: Vec<usize> = (0..r).collect();
        rng.shuffle(&mut pos);
        let (p, q) = (pos[0], pos[1]);
        let sp = space(&mut rng, &sym);
        legs[p] = Leg::out(&sp);
        legs[q] = Leg::inc(&sp);
        pairs.push((p, q));
        if rng.coin() {
            pairs.push((q, p));
        }
    }
    let sparse = rng.coin();
    let x = tensor::<T>(&mut rng, legs, sparse);
    let mut labels: Vec<String> = Vec::new();
    let mut la = vec![usize::MAX; r];
    let mut lb = vec![usize::MAX; r];
    for (c, &(i, j)) in pairs.iter().enumerate() {
        labels.push(format!("k{c}"));
        la[i] = c;
        lb[j] = c;
    }
    let mut free = Vec::new();
    for (tag, ids) in [("a", &mut la), ("b", &mut lb)] {
        for (p, id) in ids.iter_mut().enumerate() {
            if *id == usize::MAX {
                labels.push(format!("{tag}{p}"));
                *id = labels.len() - 1;
                free.push(*id);
            }
        }
    }
    rng.shuffle(&mut free);
    let ix = |l: usize| IndexSpec {
        label: l,
        flow: None,
        local: false,
    };
    let op = |conj: bool, ids: &[usize]| OperandSpec {
        name: "X".into(),
        conj: blockcontract::Conj::from_bool(conj),
        indices: ids.iter().map(|&l| ix(l)).collect(),
    };
    let spec = ContractionSpec {
        labels,
        output_name: "C".into(),
        output: free.iter().map(|&l| ix(l)).collect(),
        operands: vec![op(conj, &la), op(false, &lb)],
        tree: Some(Tree::Node(Box::new(Tree::Leaf(0)), Box::new(Tree::Leaf(1)))),
        assign: Assign::New,
    };
    SameCase { x, spec }
}

/// `t`'s structure with other sector dimensions: each block space gets new dimensions
/// (1..=3; also 0, one time in six, when `zero`) through `map`, which is shared across
/// tensors so that contracted legs keep one space; local spaces, flows, the charge and the
/// block keys are kept; values deterministic from the rng.
pub fn resized<T: Scalar>(
    t: &DynTensor<T>,
    map: &mut std::collections::HashMap<u64, Arc<Space>>,
    rng: &mut Rng,
    zero: bool,
) -> DynTensor<T> {
    let legs: Vec<Leg> = t
        .legs()
        .iter()
        .map(|l| {
            let sp = map
                .entry(l.space.fingerprint())
                .or_insert_with(|| {
                    if l.space.kind() == blockcontract::SpaceKind::Local {
                        return l.space.clone();
                    }
                    let secs: Vec<(Vec<i64>, usize)> = l
                        .space
                        .sectors()
                        .iter()
                        .map(|s| {
                            let d = if zero && rng.below(6) == 0 {
                                0
                            } else {
                                1 + rng.below(3)
                            };
                            (s.charge.values().to_vec(), d)
                        })
                        .collect();
                    Arc::new(Space::block(l.space.symmetry(), &secs).unwrap())
                })
                .clone();
            Leg::new(&sp, l.flow)
        })
        .collect();
    let keys: Vec<Vec<usize>> = t
        .blocks()
        .iter()
        .map(|b| b.key.iter().map(|&x| x as usize).collect())
        .collect();
    let seed = rng.next() >> 12;
    DynTensor::from_fn(legs, t.charge().clone(), Some(&keys), |i| value(seed, i)).unwrap()
}
