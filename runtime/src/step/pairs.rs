//! The block pairs of a step: one GEMM per pair of blocks that meet on the contracted legs.

use super::Geometry;
use crate::block::{block_charge, BlockKey, DynTensor};
use crate::hash::{FxMap, InlineKey};
use crate::scalar::Scalar;

/// `0..16`: every position of an output key.
const IDENTITY: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// The blocks of `t` by their sectors on `legs` (the contracted legs).
pub fn by_contracted<T: Scalar>(t: &DynTensor<T>, legs: &[usize]) -> FxMap<InlineKey, Vec<u32>> {
    let mut m: FxMap<InlineKey, Vec<u32>> = FxMap::default();
    for (j, blk) in t.blocks().iter().enumerate() {
        m.entry(InlineKey::pick(&blk.key, legs))
            .or_default()
            .push(j as u32);
    }
    m
}

/// One block-pair GEMM: `C[c] += A[a] * B[b]` with shape `m x k` times `k x n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PairGemm {
    /// Block position in A.
    pub a: u32,
    /// Block position in B.
    pub b: u32,
    /// Block position in the output.
    pub c: u32,
    /// Rows (product of A's free dims).
    pub m: usize,
    /// Columns (product of B's free dims).
    pub n: usize,
    /// Inner dimension (product of contracted dims).
    pub k: usize,
}

impl PairGemm {
    /// Useful flops (2mnk; complex counts 4x the real multiply-adds).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// The output's block keys and the pair GEMMs, sorted by (output, A, B) block.
#[derive(Debug, Clone)]
pub struct PairList {
    /// Output block keys, sorted; `PairGemm::c` indexes this.
    pub out_keys: Vec<BlockKey>,
    /// The GEMMs.
    pub pairs: Vec<PairGemm>,
}

/// The pairs pointed at their outputs' new numbers (`rank`) and sorted by (output, A, B): by
/// output, stably (each output's pairs were made in (A, B) order: A blocks in order, and each
/// contracted key's B blocks in order), in one bucket pass.
fn by_output(mut pairs: Vec<PairGemm>, rank: &[u32]) -> Vec<PairGemm> {
    let mut starts = vec![0usize; rank.len() + 1];
    for p in &mut pairs {
        p.c = rank[p.c as usize];
        starts[p.c as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut sorted = pairs.clone();
    for p in pairs {
        sorted[starts[p.c as usize]] = p;
        starts[p.c as usize] += 1;
    }
    sorted
}

/// Enumerates every matching block pair.
pub fn enumerate<T: Scalar>(a: &DynTensor<T>, b: &DynTensor<T>, g: &Geometry) -> PairList {
    let by_contr = by_contracted(b, &g.b_contr);
    let mut out_index: FxMap<InlineKey, u32> = FxMap::default();
    out_index.reserve(a.num_blocks().max(b.num_blocks()));
    let mut out_keys: Vec<InlineKey> = Vec::new();
    let rank_out = g.c_rows.len() + g.c_cols.len();
    // each A block's partners, looked up once; the pair list allocated once at its length
    let partners: Vec<Option<&Vec<u32>>> = a
        .blocks()
        .iter()
        .map(|ablk| by_contr.get(&InlineKey::pick(&ablk.key, &g.a_contr)))
        .collect();
    let mut pairs = Vec::with_capacity(partners.iter().flatten().map(|bs| bs.len()).sum());
    for (i, (ablk, &bs)) in a.blocks().iter().zip(&partners).enumerate() {
        let Some(bs) = bs else {
            continue;
        };
        let m: usize = g.a_free.iter().map(|&l| ablk.layout.dims[l]).product();
        let k: usize = g.a_contr.iter().map(|&l| ablk.layout.dims[l]).product();
        for &j in bs {
            let bblk = &b.blocks()[j as usize];
            let mut ok = [0u32; 16];
            for (&p, &l) in g.c_rows.iter().zip(&g.a_free) {
                ok[p] = ablk.key[l];
            }
            for (&p, &l) in g.c_cols.iter().zip(&g.b_free) {
                ok[p] = bblk.key[l];
            }
            let ik = InlineKey::pick(&ok, &IDENTITY[..rank_out]);
            let c = *out_index.entry(ik).or_insert_with(|| {
                out_keys.push(ik);
                (out_keys.len() - 1) as u32
            });
            let n: usize = g.b_free.iter().map(|&l| bblk.layout.dims[l]).product();
            pairs.push(PairGemm {
                a: i as u32,
                b: j,
                c,
                m,
                n,
                k,
            });
        }
    }
    // a full contraction (rank-0 result) of charge zero always has its one element
    if rank_out == 0 && out_keys.is_empty() && g.out_charge == g.symmetry.zero() {
        out_keys.push(InlineKey::pick(&[], &[]));
    }
    // renumber output blocks in key order (keys are distinct: an unstable sort gives the one
    // order)
    let mut order: Vec<u32> = (0..out_keys.len() as u32).collect();
    order.sort_unstable_by(|&x, &y| out_keys[x as usize].cmp(&out_keys[y as usize]));
    let mut rank = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        rank[old as usize] = new as u32;
    }
    let pairs = by_output(pairs, &rank);
    debug_assert!(pairs
        .windows(2)
        .all(|w| (w[0].c, w[0].a, w[0].b) < (w[1].c, w[1].a, w[1].b)));
    let out_keys: Vec<BlockKey> = order
        .iter()
        .map(|&o| out_keys[o as usize].ids().into())
        .collect();
    debug_assert!(out_keys
        .iter()
        .all(|k| { block_charge(&g.out_legs, &g.symmetry, k) == g.out_charge }));
    PairList { out_keys, pairs }
}
