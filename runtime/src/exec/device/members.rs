//! Lowering member groups (single, batched, grouped): strided-batched and grouped launches.

use super::cublas::{cublas_form, form};
use super::lower::{block_segment, Lowerer, Side};
use super::{Buf, Op, Ptr};
use crate::plan::{Group, Place};
use crate::scalar::Conj;
use crate::view::{Layout, MatShape};

impl Lowerer<'_> {
    /// A grouped call: each member reaches its blocks in place where cuBLAS can, else through
    /// its own region of scratch (one gather kernel per operand for the whole call); one
    /// grouped GEMM launch (or one GEMM per member without grouped GEMM); one scatter.
    pub(super) fn grouped_members(&mut self, g: &Group) {
        let sp = self.sp;
        let geo = &sp.geometry;
        let (mut ga, mut gb) = (Vec::new(), Vec::new());
        let (mut oa, mut ob, mut oc) = (0usize, 0usize, 0usize);
        let mut gemms = Vec::new();
        let mut scatter = Vec::new();
        for (((pa, pb), pc), &pi) in g.a.iter().zip(&g.b).zip(&g.c).zip(&g.pairs) {
            let pr = sp.pairs[pi as usize];
            let (m, n, k) = (pr.m, pr.n, pr.k);
            let direct =
                |mats: &[Option<MatShape>], layouts: &[Layout], p: &Place, buf: Buf, conj: Conj| {
                    mats[p.block as usize]
                        .filter(|s| conj == Conj::No && form(s, true).is_some())
                        .map(|s| {
                            (
                                Ptr {
                                    buf,
                                    offset: layouts[p.block as usize].offset,
                                },
                                s,
                            )
                        })
                };
            let a = direct(&sp.a_mats, self.a_layouts, pa, Buf::Left, geo.conj.0).unwrap_or_else(
                || {
                    ga.push((oa, *pa));
                    oa += m * k;
                    (
                        Ptr {
                            buf: Buf::ScratchA,
                            offset: oa - m * k,
                        },
                        MatShape {
                            m,
                            rs: k as isize,
                            n: k,
                            cs: 1,
                        },
                    )
                },
            );
            let b = direct(&sp.b_mats, self.b_layouts, pb, Buf::Right, geo.conj.1).unwrap_or_else(
                || {
                    gb.push((ob, *pb));
                    ob += k * n;
                    (
                        Ptr {
                            buf: Buf::ScratchB,
                            offset: ob - k * n,
                        },
                        MatShape {
                            m: k,
                            rs: n as isize,
                            n,
                            cs: 1,
                        },
                    )
                },
            );
            let c = sp.c_mats[pc.block as usize].map(|s| {
                (
                    Ptr {
                        buf: Buf::Out,
                        offset: sp.out_layouts[pc.block as usize].offset,
                    },
                    s,
                )
            });
            match c.and_then(|c| cublas_form(c, a, b, true)) {
                Some(op) => gemms.push(op),
                None => {
                    let cs = (
                        Ptr {
                            buf: Buf::ScratchC,
                            offset: oc,
                        },
                        MatShape {
                            m,
                            rs: n as isize,
                            n,
                            cs: 1,
                        },
                    );
                    gemms.push(
                        cublas_form(cs, a, b, false).expect("packed operands are addressable"),
                    );
                    scatter.push(block_segment(
                        &sp.out_layouts[pc.block as usize],
                        &geo.c_rows,
                        &geo.c_cols,
                        n,
                        oc,
                        true,
                    ));
                    oc += m * n;
                }
            }
        }
        if !ga.is_empty() {
            let places: Vec<(usize, Place)> = ga
                .iter()
                .map(|&(o, p)| {
                    (
                        o,
                        Place {
                            row: 0,
                            col: 0,
                            ..p
                        },
                    )
                })
                .collect();
            self.gather_members(
                Buf::Left,
                Buf::ScratchA,
                &places,
                true,
                geo.conj.0 == Conj::Yes,
            );
        }
        if !gb.is_empty() {
            let places: Vec<(usize, Place)> = gb
                .iter()
                .map(|&(o, p)| {
                    (
                        o,
                        Place {
                            row: 0,
                            col: 0,
                            ..p
                        },
                    )
                })
                .collect();
            self.gather_members(
                Buf::Right,
                Buf::ScratchB,
                &places,
                false,
                geo.conj.1 == Conj::Yes,
            );
        }
        self.scratch[0] = self.scratch[0].max(oa);
        self.scratch[1] = self.scratch[1].max(ob);
        self.scratch[2] = self.scratch[2].max(oc);
        if self.grouped {
            self.ops.push(Op::GemmGrouped { gemms });
        } else {
            self.ops.extend(gemms.into_iter().map(Op::Gemm));
        }
        if !scatter.is_empty() {
            self.ops.push(Op::Gather {
                src: Buf::ScratchC,
                dst: Buf::Out,
                segments: scatter,
                accumulate: true,
                conj: false,
            });
        }
    }

    /// Gathers member blocks (each its own row-major matrix at its offset) into scratch.
    fn gather_members(
        &mut self,
        src: Buf,
        dst: Buf,
        places: &[(usize, Place)],
        is_a: bool,
        conj: bool,
    ) {
        let geo = &self.sp.geometry;
        let (layouts, rows, cols) = if is_a {
            (self.a_layouts, &geo.a_free, &geo.a_contr)
        } else {
            (self.b_layouts, &geo.b_contr, &geo.b_free)
        };
        let segments = places
            .iter()
            .map(|(base, p)| {
                let l = &layouts[p.block as usize];
                let c: usize = cols.iter().map(|&x| l.dims[x]).product();
                block_segment(l, rows, cols, c, *base, false)
            })
            .collect();
        self.ops.push(Op::Gather {
            src,
            dst,
            segments,
            accumulate: false,
            conj,
        });
    }

    /// A member operand: in place when every member's block sits at a constant stride with
    /// one shape, else all members' blocks gathered into scratch (one kernel).
    fn member_operand(
        &mut self,
        side: &Side<'_>,
        direct: Option<(usize, isize, MatShape)>,
        r: usize,
        c: usize,
    ) -> (Ptr, usize, MatShape) {
        if let Some((o, st, s)) = direct {
            return (
                Ptr {
                    buf: side.src,
                    offset: o,
                },
                st as usize,
                s,
            );
        }
        let places: Vec<(usize, Place)> = side
            .places
            .iter()
            .enumerate()
            .map(|(i, p)| (i * r * c, *p))
            .collect();
        self.gather(
            side.src,
            side.scratch,
            &places,
            side.layouts,
            side.rows,
            side.cols,
            c,
            side.conj == Conj::Yes,
        );
        self.scratch[side.slot] = self.scratch[side.slot].max(side.places.len() * r * c);
        (
            Ptr {
                buf: side.scratch,
                offset: 0,
            },
            r * c,
            MatShape {
                m: r,
                rs: c as isize,
                n: c,
                cs: 1,
            },
        )
    }

    /// Single and batched groups: one GEMM launch (strided-batched for several members),
    /// operands that cannot be addressed uniformly gathered first.
    pub(super) fn members(&mut self, g: &Group) {
        let sp = self.sp;
        let geo = &sp.geometry;
        let (m, n, k) = (g.m, g.n, g.k);
        let cnt = g.pairs.len();
        // uniform direct access: same strides for every member, constant offset step
        let uniform = |places: &[Place],
                       mats: &[Option<MatShape>],
                       layouts: &[Layout],
                       conj: Conj|
         -> Option<(usize, isize, MatShape)> {
            if conj == Conj::Yes {
                return None;
            }
            let s0 = mats[places[0].block as usize]?;
            let o0 = layouts[places[0].block as usize].offset;
            let step = if places.len() > 1 {
                layouts[places[1].block as usize].offset as isize - o0 as isize
            } else {
                0
            };
            for (i, p) in places.iter().enumerate() {
                let s = mats[p.block as usize]?;
                if s != s0
                    || layouts[p.block as usize].offset as isize != o0 as isize + i as isize * step
                {
                    return None;
                }
            }
            (step >= 0).then_some((o0, step, s0))
        };
        let c = uniform(&g.c, &sp.c_mats, &sp.out_layouts, Conj::No);
        let a_side = Side {
            src: Buf::Left,
            scratch: Buf::ScratchA,
            slot: 0,
            places: &g.a,
            mats: &sp.a_mats,
            layouts: self.a_layouts,
            rows: &geo.a_free,
            cols: &geo.a_contr,
            conj: geo.conj.0,
        };
        let b_side = Side {
            src: Buf::Right,
            scratch: Buf::ScratchB,
            slot: 1,
            places: &g.b,
            mats: &sp.b_mats,
            layouts: self.b_layouts,
            rows: &geo.b_contr,
            cols: &geo.b_free,
            conj: geo.conj.1,
        };
        let a = uniform(a_side.places, a_side.mats, a_side.layouts, a_side.conj)
            .filter(|(_, _, s)| form(s, true).is_some());
        let b = uniform(b_side.places, b_side.mats, b_side.layouts, b_side.conj)
            .filter(|(_, _, s)| form(s, true).is_some());
        let (ap, astep, ash) = self.member_operand(&a_side, a, m, k);
        let (bp, bstep, bsh) = self.member_operand(&b_side, b, k, n);
        let direct_c = c.and_then(|(o, st, s)| {
            cublas_form(
                (
                    Ptr {
                        buf: Buf::Out,
                        offset: o,
                    },
                    s,
                ),
                (ap, ash),
                (bp, bsh),
                true,
            )
            .map(|op| (op, st as usize))
        });
        let (op, cstep, scatter) = match direct_c {
            Some((op, st)) => (op, st, false),
            None => {
                self.scratch[2] = self.scratch[2].max(cnt * m * n);
                let cs = MatShape {
                    m,
                    rs: n as isize,
                    n,
                    cs: 1,
                };
                let op = cublas_form(
                    (
                        Ptr {
                            buf: Buf::ScratchC,
                            offset: 0,
                        },
                        cs,
                    ),
                    (ap, ash),
                    (bp, bsh),
                    false,
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
            let segments =
                g.c.iter()
                    .enumerate()
                    .map(|(i, p)| {
                        block_segment(
                            &sp.out_layouts[p.block as usize],
                            &geo.c_rows,
                            &geo.c_cols,
                            n,
                            i * m * n,
                            true,
                        )
                    })
                    .collect();
            self.ops.push(Op::Gather {
                src: Buf::ScratchC,
                dst: Buf::Out,
                segments,
                accumulate: true,
                conj: false,
            });
        }
    }
}
