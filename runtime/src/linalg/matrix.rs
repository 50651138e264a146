//! A block-sparse tensor seen as a block-diagonal matrix: its legs split into a row group and
//! a column group, one dense matrix per coupled charge (the charge of the row legs), and back.

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::hash::{FxMap, InlineKey};
use crate::scalar::Scalar;
use crate::symmetry::{Charge, Leg, Symmetry};
use crate::view::{strided_copy, CopyMode};
use faer::Mat;

/// The sector combinations along one side of a sector matrix: each a sector position per leg
/// of the group, its offset in the matrix and its dimension.
#[derive(Debug, Clone, Default)]
pub(crate) struct Basis {
    pub combos: Vec<(Box<[u32]>, usize, usize)>,
    pub index: FxMap<InlineKey, usize>,
    pub dim: usize,
}

impl Basis {
    fn add(&mut self, combo: Box<[u32]>, dim: usize) -> usize {
        let key = InlineKey::pick(&combo, &IDENT[..combo.len()]);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        self.combos.push((combo, self.dim, dim));
        self.dim += dim;
        self.index.insert(key, self.combos.len() - 1);
        self.combos.len() - 1
    }
}

const IDENT: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// One coupled charge: the row charge `q` (sum over row legs of `sign(flow) * charge`), its
/// row and column bases, and the tensor's blocks in it.
#[derive(Debug, Clone)]
pub(crate) struct Sector {
    pub q: Charge,
    pub rows: Basis,
    pub cols: Basis,
    /// (block position in the tensor, row combo, col combo)
    pub blocks: Vec<(usize, usize, usize)>,
}

/// The legs of a tensor split into rows and columns, validated: every leg in exactly one
/// group, no leg out of range.
pub(crate) fn check_groups(rank: usize, rows: &[usize], cols: &[usize]) -> Result<()> {
    let mut seen = vec![0u8; rank];
    for (group, legs) in [("rows", rows), ("cols", cols)] {
        for &l in legs {
            if l >= rank {
                return Err(Error::InvalidLegs {
                    reason: format!(
                        "leg {l} in {group} does not exist: the tensor has {rank} legs"
                    ),
                });
            }
            seen[l] += 1;
            if seen[l] > 1 {
                return Err(Error::InvalidLegs {
                    reason: format!("leg {l} appears twice among rows {rows:?} and cols {cols:?}"),
                });
            }
        }
    }
    if let Some(l) = seen.iter().position(|&s| s == 0) {
        return Err(Error::InvalidLegs {
            reason: format!("leg {l} is in neither rows {rows:?} nor cols {cols:?}"),
        });
    }
    Ok(())
}

/// The row charge of a block: the sum over `legs` of `sign(flow) * charge`.
fn group_charge(sym: &Symmetry, legs: &[Leg], key: &[u32], group: &[usize]) -> Charge {
    let mut q = sym.zero();
    for &l in group {
        let leg = &legs[l];
        sym.add_signed(
            &mut q,
            leg.flow.sign(),
            &leg.space.sectors()[key[l] as usize].charge,
        );
    }
    q
}

/// The sectors of `t` with rows `rows` and columns `cols`. With `square`, rows and columns
/// share one basis (the union of both; the col legs must be the row legs' duals, in order).
pub(crate) fn sectors<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    square: bool,
) -> Vec<Sector> {
    let sym = t.symmetry();
    let legs = t.legs();
    let mut by_q: FxMap<Charge, usize> = FxMap::default();
    let mut out: Vec<Sector> = Vec::new();
    for (bi, b) in t.blocks().iter().enumerate() {
        let q = group_charge(sym, legs, &b.key, rows);
        let si = *by_q.entry(q.clone()).or_insert_with(|| {
            out.push(Sector {
                q,
                rows: Basis::default(),
                cols: Basis::default(),
                blocks: Vec::new(),
            });
            out.len() - 1
        });
        let rk: Box<[u32]> = rows.iter().map(|&l| b.key[l]).collect();
        let ck: Box<[u32]> = cols.iter().map(|&l| b.key[l]).collect();
        let rd: usize = rows.iter().map(|&l| b.layout.dims[l]).product();
        let cd: usize = cols.iter().map(|&l| b.layout.dims[l]).product();
        let s = &mut out[si];
        let (r, c) = if square {
            (s.rows.add(rk.clone(), rd), s.rows.add(ck.clone(), cd))
        } else {
            (s.rows.add(rk, rd), s.cols.add(ck, cd))
        };
        s.blocks.push((bi, r, c));
    }
    if square {
        for s in &mut out {
            s.cols = s.rows.clone();
        }
    }
    out.sort_by(|a, b| a.q.cmp(&b.q));
    out
}

/// The sectors of two tensors over legs of the same spaces (`a`'s and `b`'s row groups),
/// paired by row charge, both of a pair on one row basis (the union of their combos, `a`'s
/// first); a charge only one of them has gets an empty partner (no columns, no blocks).
pub(crate) fn joint_sectors(a: Vec<Sector>, b: Vec<Sector>) -> Vec<(Sector, Sector)> {
    let empty = |q: &Charge| Sector {
        q: q.clone(),
        rows: Basis::default(),
        cols: Basis::default(),
        blocks: Vec::new(),
    };
    let mut bs: FxMap<Charge, Sector> = b.into_iter().map(|s| (s.q.clone(), s)).collect();
    let mut out: Vec<(Sector, Sector)> = Vec::new();
    for sa in a {
        let sb = bs.remove(&sa.q).unwrap_or_else(|| empty(&sa.q));
        out.push((sa, sb));
    }
    out.extend(bs.into_values().map(|sb| (empty(&sb.q), sb)));
    for (sa, sb) in &mut out {
        let mut union = sa.rows.clone();
        for (_, r, _) in &mut sb.blocks {
            let (combo, _, dim) = &sb.rows.combos[*r];
            *r = union.add(combo.clone(), *dim);
        }
        sa.rows = union.clone();
        sb.rows = union;
    }
    out.sort_by(|x, y| x.0.q.cmp(&y.0.q));
    out
}

/// The dense matrix of one sector (column-major), blocks copied to their places.
pub(crate) fn dense<T: Scalar>(
    t: &DynTensor<T>,
    rows: &[usize],
    cols: &[usize],
    s: &Sector,
) -> Mat<T> {
    let mut m = Mat::<T>::zeros(s.rows.dim, s.cols.dim);
    let cstride = m.col_stride();
    let base = m.as_ptr_mut();
    for &(bi, r, c) in &s.blocks {
        let l = &t.blocks()[bi].layout;
        if l.is_empty() {
            continue;
        }
        let (dims, src, dst) = matrix_strides(&l.dims, &l.strides, rows, cols, (1, cstride));
        let (ro, co) = (s.rows.combos[r].1, s.cols.combos[c].1);
        // SAFETY: the block lies in the tensor's buffer; its image lies inside the matrix at
        // (row offset, column offset), which the basis sized to hold it.
        unsafe {
            strided_copy(
                &dims,
                t.data().as_ptr().add(l.offset),
                &src,
                base.offset(ro as isize + co as isize * cstride),
                &dst,
                CopyMode::Set,
            )
        };
    }
    m
}

/// A block's axes ordered rows then columns, with its own strides and the strides of its
/// image in a matrix of strides `(rs, cs)` (row legs fused row-major along rows, column
/// legs along columns).
fn matrix_strides(
    dims: &[usize],
    strides: &[isize],
    rows: &[usize],
    cols: &[usize],
    (rs, cs): (isize, isize),
) -> (Vec<usize>, Vec<isize>, Vec<isize>) {
    let order: Vec<usize> = rows.iter().chain(cols).copied().collect();
    let d: Vec<usize> = order.iter().map(|&a| dims[a]).collect();
    let src: Vec<isize> = order.iter().map(|&a| strides[a]).collect();
    let mut dst = vec![0isize; order.len()];
    let mut acc = rs;
    for j in (0..rows.len()).rev() {
        dst[j] = acc;
        acc *= d[j] as isize;
    }
    let mut acc = cs;
    for j in (rows.len()..order.len()).rev() {
        dst[j] = acc;
        acc *= d[j] as isize;
    }
    (d, src, dst)
}

/// Which side of a factor the new bond leg is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BondAt {
    /// `legs..., bond`: the group's combos index the matrix rows, the bond its columns.
    Last,
    /// `bond, legs...`: the bond indexes the matrix rows, the group's combos its columns.
    First,
}

/// A factor tensor from per-sector dense matrices: legs `group_legs` (of `t`) plus the new
/// `bond` leg, the bond's sector `i` holding `mats[i]`'s `kept[i]` columns (`BondAt::Last`) or
/// rows (`BondAt::First`), the group's combos from `bases[i]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn factor<T: Scalar>(
    t_legs: &[Leg],
    group: &[usize],
    bases: &[&Basis],
    mats: &[faer::MatRef<'_, T>],
    kept: &[usize],
    bond: &Leg,
    at: BondAt,
    charge: Charge,
) -> Result<DynTensor<T>> {
    crate::block::check_rank(group.len() + 1)?;
    let mut legs: Vec<Leg> = group.iter().map(|&l| t_legs[l].clone()).collect();
    let bpos = match at {
        BondAt::Last => {
            legs.push(bond.clone());
            group.len()
        }
        BondAt::First => {
            legs.insert(0, bond.clone());
            0
        }
    };
    let mut keys: Vec<Vec<usize>> = Vec::new();
    for (si, basis) in bases.iter().enumerate() {
        if kept[si] == 0 {
            continue;
        }
        for (combo, _, _) in &basis.combos {
            let mut k: Vec<usize> = combo.iter().map(|&x| x as usize).collect();
            k.insert(bpos, si);
            keys.push(k);
        }
    }
    let mut out = DynTensor::<T>::zeros_with_blocks(legs, charge, &keys)?;
    for (si, basis) in bases.iter().enumerate() {
        let (m, k) = (&mats[si], kept[si]);
        for (combo, off, _) in &basis.combos {
            if k == 0 {
                continue;
            }
            let mut key: Vec<u32> = combo.to_vec();
            key.insert(bpos, si as u32);
            let Some(bi) = out.find_block(&key) else {
                continue;
            };
            let l = out.blocks()[bi].layout.clone();
            if l.is_empty() {
                continue;
            }
            let glegs: Vec<usize> = (0..l.dims.len()).filter(|&a| a != bpos).collect();
            let (rs, cs) = (m.row_stride(), m.col_stride());
            let (rows, cols, start) = match at {
                BondAt::Last => (glegs, vec![bpos], *off as isize * rs),
                BondAt::First => (vec![bpos], glegs, *off as isize * cs),
            };
            let (dims, block_strides, mat_strides) =
                matrix_strides(&l.dims, &l.strides, &rows, &cols, (rs, cs));
            // SAFETY: the matrix region (the combo's rows or columns, the kept bond part)
            // lies inside `m`; the block lies inside `out`'s buffer.
            unsafe {
                strided_copy(
                    &dims,
                    m.as_ptr().offset(start),
                    &mat_strides,
                    out.data_mut().as_mut_ptr().add(l.offset),
                    &block_strides,
                    CopyMode::Set,
                )
            };
        }
    }
    Ok(out)
}
