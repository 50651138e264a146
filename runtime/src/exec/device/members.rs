//! Lowering member groups (single, batched, grouped): strided-batched and grouped launches.

use super::cublas::{cublas_form, form};
use super::lower::{Lowerer, Operand};
use super::{Accum, Buf, GemmOp, Op, Ptr};
use crate::plan::{Group, Place};
use crate::scalar::Conj;
use crate::step::Side;
use crate::view::{Layout, MatShape};

/// The members' blocks addressed uniformly: one shape and strides for all, offsets a constant
/// step apart: `(first offset, step, shape)`, or None.
fn uniform(
    places: &[Place],
    mats: &[Option<MatShape>],
    layouts: &[Layout],
    conj: Conj,
) -> Option<(usize, usize, MatShape)> {
    if conj == Conj::Yes {
        return None;
    }
    let s0 = mats[places.first()?.block as usize]?;
    let o0 = layouts[places[0].block as usize].offset;
    let step = match places.get(1) {
        Some(p) => layouts[p.block as usize].offset as isize - o0 as isize,
        None => 0,
    };
    for (i, p) in places.iter().enumerate() {
        let s = mats[p.block as usize]?;
        if s != s0 || layouts[p.block as usize].offset as isize != o0 as isize + i as isize * step {
            return None;
        }
    }
    (step >= 0).then_some((o0, step as usize, s0))
}

impl Lowerer<'_> {
    /// A member operand of a single or batched group: in place when every member's block sits
    /// at a constant stride with one shape, else all members' blocks gathered into scratch
    /// (one kernel). Returns the first matrix, the stride between members and the shape.
    fn member_operand(
        &mut self,
        g: &Group,
        side: Side,
        (r, c): (usize, usize),
    ) -> (Ptr, usize, MatShape) {
        let op = self.operand(side);
        let places = g.places(side);
        let direct = uniform(places, op.mats, op.layouts, op.conj)
            .filter(|(_, _, s)| form(s, true).is_some());
        if let Some((o, st, s)) = direct {
            let ptr = Ptr {
                buf: op.src,
                offset: o,
            };
            return (ptr, st, s);
        }
        let at: Vec<(usize, Place)> = places
            .iter()
            .enumerate()
            .map(|(i, p)| (i * r * c, *p))
            .collect();
        self.gather(&op, &at, |_| c, places.len() * r * c);
        let ptr = Ptr {
            buf: op.scratch.0,
            offset: 0,
        };
        (ptr, r * c, MatShape::row_major(r, c))
    }

    /// Single and batched groups: one GEMM launch (strided-batched for several members),
    /// operands that cannot be addressed uniformly gathered first.
    pub(super) fn members(&mut self, g: &Group) {
        let sp = self.sp;
        let (m, n, k) = (g.m, g.n, g.k);
        let cnt = g.pairs.len();
        let (ap, astep, ash) = self.member_operand(g, Side::A, (m, k));
        let (bp, bstep, bsh) = self.member_operand(g, Side::B, (k, n));
        let direct_c =
            uniform(g.c(), &sp.c_mats, self.out_layouts, Conj::No).and_then(|(o, st, s)| {
                let c = Ptr {
                    buf: Buf::Out,
                    offset: o,
                };
                cublas_form((c, s), (ap, ash), (bp, bsh), Accum::Add).map(|op| (op, st))
            });
        let (op, cstep, scatter) = match direct_c {
            Some((op, st)) => (op, st, false),
            None => {
                self.scratch[2] = self.scratch[2].max(cnt * m * n);
                let c = Ptr {
                    buf: Buf::ScratchC,
                    offset: 0,
                };
                let op = cublas_form(
                    (c, MatShape::row_major(m, n)),
                    (ap, ash),
                    (bp, bsh),
                    Accum::Replace,
                )
                .expect("packed operands are addressable");
                (op, m * n, true)
            }
        };
        // the adapter may have swapped A and B (C^T = B^T A^T): strides follow the pointers
        let (sa, sb) = if op.a == ap {
            (astep, bstep)
        } else {
            (bstep, astep)
        };
        if cnt == 1 {
            self.ops.push(Op::Gemm(op));
        } else {
            self.ops.push(Op::GemmStridedBatched {
                gemm: op,
                batch: cnt,
                stride_a: sa,
                stride_b: sb,
                stride_c: cstep,
            });
        }
        if scatter {
            self.scatter(
                g.c()
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (i * m * n, p.block, n)),
            );
        }
    }

    /// A grouped member's operand: its block in place where cuBLAS can address it, else the
    /// next `r x c` region of scratch (gathered later, with the group's other members').
    fn grouped_operand(
        op: &Operand<'_>,
        p: &Place,
        (r, c): (usize, usize),
        pending: &mut (Vec<(usize, Place)>, usize),
    ) -> (Ptr, MatShape) {
        let direct =
            op.mats[p.block as usize].filter(|s| op.conj == Conj::No && form(s, true).is_some());
        if let Some(s) = direct {
            let ptr = Ptr {
                buf: op.src,
                offset: op.layouts[p.block as usize].offset,
            };
            return (ptr, s);
        }
        let at = pending.1;
        pending.0.push((at, *p));
        pending.1 += r * c;
        let ptr = Ptr {
            buf: op.scratch.0,
            offset: at,
        };
        (ptr, MatShape::row_major(r, c))
    }

    /// A grouped call: each member reaches its blocks in place where cuBLAS can, else through
    /// its own region of scratch (one gather kernel per operand for the whole call); one
    /// grouped GEMM launch (or one GEMM per member without grouped GEMM); one scatter.
    pub(super) fn grouped_members(&mut self, g: &Group) {
        let sp = self.sp;
        let (opa, opb) = (self.operand(Side::A), self.operand(Side::B));
        let (mut pa, mut pb) = ((Vec::new(), 0), (Vec::new(), 0));
        let mut oc = 0;
        let mut gemms: Vec<GemmOp> = Vec::new();
        let mut scatter = Vec::new();
        for (((xa, xb), pc), &pi) in g.a().iter().zip(g.b()).zip(g.c()).zip(&g.pairs) {
            let pr = sp.pairs[pi as usize];
            let (m, n, k) = (pr.m, pr.n, pr.k);
            let a = Self::grouped_operand(&opa, xa, (m, k), &mut pa);
            let b = Self::grouped_operand(&opb, xb, (k, n), &mut pb);
            let c = sp.c_mats[pc.block as usize].map(|s| {
                let ptr = Ptr {
                    buf: Buf::Out,
                    offset: sp.out_layout(pc.block as usize).offset,
                };
                (ptr, s)
            });
            match c.and_then(|c| cublas_form(c, a, b, Accum::Add)) {
                Some(op) => gemms.push(op),
                None => {
                    let cs = Ptr {
                        buf: Buf::ScratchC,
                        offset: oc,
                    };
                    let op = cublas_form((cs, MatShape::row_major(m, n)), a, b, Accum::Replace);
                    gemms.push(op.expect("packed operands are addressable"));
                    scatter.push((oc, pc.block, n));
                    oc += m * n;
                }
            }
        }
        // each member's block its own row-major matrix (row stride: its own columns)
        for (op, (places, len)) in [(&opa, &pa), (&opb, &pb)] {
            if !places.is_empty() {
                let cols = op.axes.1;
                self.gather(
                    op,
                    places,
                    |l| cols.iter().map(|&x| l.dims[x]).product(),
                    *len,
                );
            }
        }
        self.scratch[2] = self.scratch[2].max(oc);
        if self.grouped {
            self.ops.push(Op::GemmGrouped { gemms });
        } else {
            self.ops.extend(gemms.into_iter().map(Op::Gemm));
        }
        if !scatter.is_empty() {
            self.scatter(scatter.into_iter());
        }
    }
}
