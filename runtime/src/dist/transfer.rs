//! Moving blocks between ranks: packing a tensor's blocks into one contiguous message and
//! unpacking it on the other side, and one step's exchange (every send and receive posted,
//! then waited on).

use super::comm::{step_tag, Dist, DistScalar, DistTensor};
use super::place::{Message, StepPlacement};
use crate::block::{Block, DynTensor};
use crate::error::Result;
use crate::exec::intermediate_buffer_of;
use crate::scalar::Scalar;
use crate::view::{for_each_pair, Layout, MAX_RANK};
use ::mpi::traits::*;
use std::borrow::Cow;

/// Calls `f(first element, length, stride)` for each row of a block (a rank-0 block is one
/// element).
pub(super) fn for_each_row(l: &Layout, mut f: impl FnMut(isize, usize, isize)) {
    let zero = [0isize; MAX_RANK];
    for_each_pair(
        &l.dims,
        &l.strides,
        &zero[..l.dims.len()],
        |o, _, n, s, _| f(l.offset as isize + o, n, s),
    );
}

/// The values of `blocks` of `t`, row by row in each block's layout order (the receiver has
/// the same layouts, so the same order unpacks them).
pub(super) fn pack<T: Scalar>(t: &DynTensor<T>, blocks: &[u32]) -> Vec<T> {
    let data = t.data();
    let mut out = Vec::new();
    for &b in blocks {
        for_each_row(&t.blocks()[b as usize].layout, |start, n, s| {
            if s == 1 {
                out.extend_from_slice(&data[start as usize..start as usize + n]);
            } else {
                out.extend((0..n as isize).map(|i| data[(start + i * s) as usize]));
            }
        });
    }
    out
}

/// Writes `values` (as [`pack`] made them) into `blocks` of `t`.
pub(super) fn unpack<T: Scalar>(t: &mut DynTensor<T>, blocks: &[u32], values: &[T]) {
    let layouts: Vec<Layout> = blocks
        .iter()
        .map(|&b| t.blocks()[b as usize].layout.clone())
        .collect();
    let data = t.data_mut();
    let mut k = 0;
    for l in &layouts {
        for_each_row(l, |start, n, s| {
            if s == 1 {
                data[start as usize..start as usize + n].copy_from_slice(&values[k..k + n]);
                k += n;
                return;
            }
            for i in 0..n as isize {
                data[(start + i * s) as usize] = values[k];
                k += 1;
            }
        });
    }
}

/// Elements of a block.
pub(super) fn elems(b: &Block) -> usize {
    b.layout.dims.iter().product()
}

/// The blocks `rank` owns.
pub(super) fn owned(owners: &[u32], rank: usize) -> Vec<u32> {
    (0..owners.len() as u32)
        .filter(|&b| owners[b as usize] as usize == rank)
        .collect()
}

/// A copy of `t` holding this rank's blocks in a pooled buffer (the other blocks are
/// unspecified until something is received into them).
pub(super) fn own_blocks_copy<T: Scalar>(t: &DistTensor<T>, rank: usize) -> Result<DistTensor<T>> {
    let len = t.full.data().len();
    let mut buf = intermediate_buffer_of::<T>(len, "a received operand")?;
    let src = t.full.data();
    for b in owned(&t.owners, rank) {
        for_each_row(&t.full.blocks()[b as usize].layout, |start, n, s| {
            if s == 1 {
                let r = start as usize..start as usize + n;
                buf[r.clone()].copy_from_slice(&src[r]);
                return;
            }
            for i in 0..n as isize {
                let at = (start + i * s) as usize;
                buf[at] = src[at];
            }
        });
    }
    Ok(DistTensor {
        full: t.full.with_data(buf),
        owners: t.owners.clone(),
    })
}

impl Dist {
    /// Sends this rank's blocks that others need and receives the ones it needs, for one
    /// step: every send and receive posted, then all waited on. The operands come back with
    /// the received blocks written in (an operand of the caller's that receives something is
    /// first copied, its own blocks only, into a pooled buffer), with the number of messages
    /// this rank sent.
    pub(super) fn exchange<'t, T: DistScalar>(
        &self,
        step: usize,
        pl: &StepPlacement,
        ops: [Cow<'t, DistTensor<T>>; 2],
    ) -> Result<([Cow<'t, DistTensor<T>>; 2], usize)> {
        let me = self.rank() as u32;
        let sends: Vec<(&Message, Vec<T>)> = pl
            .messages
            .iter()
            .filter(|m| m.from == me)
            .map(|m| (m, pack(&ops[m.side.index()].full, &m.blocks)))
            .collect();
        let incoming: Vec<&Message> = pl.messages.iter().filter(|m| m.to == me).collect();
        let mut bufs: Vec<Vec<T>> = incoming.iter().map(|m| vec![T::zero(); m.elems]).collect();
        ::mpi::request::scope(|scope| {
            let posted: Vec<_> = sends
                .iter()
                .map(|(m, buf)| {
                    self.comm
                        .process_at_rank(m.to as i32)
                        .immediate_send_with_tag(scope, &buf[..], step_tag(step, m.side.index()))
                })
                .collect();
            let receiving: Vec<_> = incoming
                .iter()
                .zip(bufs.iter_mut())
                .map(|(m, buf)| {
                    self.comm
                        .process_at_rank(m.from as i32)
                        .immediate_receive_into_with_tag(
                            scope,
                            &mut buf[..],
                            step_tag(step, m.side.index()),
                        )
                })
                .collect();
            for r in receiving {
                r.wait();
            }
            for s in posted {
                s.wait();
            }
        });
        let mut out = ops;
        let mut local = Ok(());
        for (side, slot) in out.iter_mut().enumerate() {
            let arrived: Vec<(&Message, &Vec<T>)> = incoming
                .iter()
                .zip(&bufs)
                .filter(|(m, _)| m.side.index() == side)
                .map(|(m, b)| (*m, b))
                .collect();
            if arrived.is_empty() {
                continue;
            }
            if let Cow::Borrowed(t) = &*slot {
                match own_blocks_copy(t, self.rank()) {
                    Ok(copy) => *slot = Cow::Owned(copy),
                    Err(e) => {
                        local = Err(e);
                        continue;
                    }
                }
            }
            let t = slot.to_mut();
            for (m, buf) in arrived {
                unpack(&mut t.full, &m.blocks, buf);
            }
        }
        // every rank agrees, whether or not it received anything
        self.agree(local)?;
        Ok((out, sends.len()))
    }
}
