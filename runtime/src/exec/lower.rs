//! Lowering a plan to a device op list (plain data, cuBLAS conventions), and a CPU
//! interpreter of that list, so that the lowering the CUDA executor consumes is tested on
//! machines without a GPU.
//!
//! cuBLAS is column-major; our blocks are row-major-strided views. [`cublas_form`] is the one
//! place where a row-major product `C = A B` becomes cuBLAS's `C^T = B^T A^T` (or stays
//! `C = A B` for column-major outputs). Operands whose strides no cuBLAS leading dimension
//! can express, or that must be conjugated, are gathered into scratch first.

use crate::contract::pairwise::MatShape;
use crate::contract::Conj;
use crate::plan::{Access, Group, GroupKind, Input, Place, Plan, StepPlan};
use crate::view::Layout;

/// A buffer of the lowered program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buf {
    /// An input of the step: its left operand.
    Left,
    /// Its right operand.
    Right,
    /// The step's output.
    Out,
    /// Scratch for packed A operands.
    ScratchA,
    /// Scratch for packed B operands.
    ScratchB,
    /// Scratch for GEMM results that are scattered.
    ScratchC,
}

/// An element offset in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ptr {
    /// The buffer.
    pub buf: Buf,
    /// Offset in elements.
    pub offset: usize,
}

/// One strided copy: `dims` elements from `src` (strides `src_strides`) to `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Offset in the source buffer.
    pub src: usize,
    /// Offset in the destination buffer.
    pub dst: usize,
    /// Extents.
    pub dims: Vec<usize>,
    /// Source strides.
    pub src_strides: Vec<isize>,
    /// Destination strides.
    pub dst_strides: Vec<isize>,
}

/// cuBLAS operation of an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trans {
    /// `CUBLAS_OP_N`.
    N,
    /// `CUBLAS_OP_T`.
    T,
}

/// A cuBLAS GEMM, column-major: `C = alpha op(A) op(B) + beta C` (`beta` is 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmOp {
    /// Operation on A.
    pub transa: Trans,
    /// Operation on B.
    pub transb: Trans,
    /// Rows of C (column-major).
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// Inner dimension.
    pub k: usize,
    /// First operand.
    pub a: Ptr,
    /// Its leading dimension.
    pub lda: usize,
    /// Second operand.
    pub b: Ptr,
    /// Its leading dimension.
    pub ldb: usize,
    /// Output.
    pub c: Ptr,
    /// Its leading dimension.
    pub ldc: usize,
    /// `beta = 1` (accumulate) or `beta = 0` (overwrite).
    pub accumulate: bool,
}

/// One device operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// One kernel: copy (or add) every segment from `src` to `dst`, conjugating if asked.
    Gather {
        /// Source buffer.
        src: Buf,
        /// Destination buffer.
        dst: Buf,
        /// The copies.
        segments: Vec<Segment>,
        /// `dst += src` instead of `dst = src`.
        accumulate: bool,
        /// Conjugate while copying.
        conj: bool,
    },
    /// `cublas<t>gemm`.
    Gemm(GemmOp),
    /// `cublas<t>gemmGroupedBatched` (CUDA >= 12.5): GEMMs of different shapes in one
    /// launch. Their outputs are disjoint (one group per hazard-free set), so they may run
    /// concurrently.
    GemmGrouped {
        /// The GEMMs.
        gemms: Vec<GemmOp>,
    },
    /// `cublas<t>gemmStridedBatched`: `batch` GEMMs, pointers advanced by the strides.
    GemmStridedBatched {
        /// The first GEMM.
        gemm: GemmOp,
        /// Number of GEMMs.
        batch: usize,
        /// Element stride between A matrices.
        stride_a: usize,
        /// Between B matrices.
        stride_b: usize,
        /// Between C matrices.
        stride_c: usize,
    },
}

impl Op {
    /// Device kernel launches of this op.
    pub fn launches(&self) -> usize {
        1
    }
}

/// The ops of one pairwise step, and the scratch they need.
#[derive(Debug, Clone)]
pub struct StepOps {
    /// In order, on one stream.
    pub ops: Vec<Op>,
    /// Output length (elements, zero-initialised).
    pub out_len: usize,
    /// Scratch lengths for A, B and C.
    pub scratch: [usize; 3],
    /// Where the step's operands come from.
    pub inputs: (Input, Input),
    /// Whether the contraction's alpha applies (the last step).
    pub scaled: bool,
}

/// A lowered plan.
#[derive(Debug, Clone)]
pub struct Lowered {
    /// Per step.
    pub steps: Vec<StepOps>,
}

impl Lowered {
    /// Kernel launches of one contraction (GEMMs and gather/scatter kernels).
    pub fn launches(&self) -> usize {
        self.steps
            .iter()
            .map(|s| s.ops.iter().map(Op::launches).sum::<usize>())
            .sum()
    }
    /// GEMM launches (single, batched) of one contraction.
    pub fn gemm_launches(&self) -> usize {
        self.steps
            .iter()
            .map(|s| {
                s.ops
                    .iter()
                    .filter(|o| !matches!(o, Op::Gather { .. }))
                    .count()
            })
            .sum()
    }
}

/// How to lower.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LowerOptions {
    /// Merge the single GEMMs of independent groups into grouped-batched launches
    /// (cuBLAS >= 12.5).
    pub grouped: bool,
}

/// A row-major-strided matrix as cuBLAS sees it: `(op needed to get X^T, ld)` when the
/// caller wants `X^T`, or `(op to get X, ld)` when it wants X. None when no unit stride.
fn form(x: &MatShape, want_transposed: bool) -> Option<(Trans, usize)> {
    // memory as column-major: X (rows r, ld cs) if rs == 1, or X^T (rows c, ld rs) if cs == 1
    let colmajor = x.rs == 1 || x.m <= 1;
    let rowmajor = x.cs == 1 || x.n <= 1;
    if want_transposed {
        if rowmajor && x.rs >= 0 {
            Some((Trans::N, (x.rs.max(0) as usize).max(x.n).max(1)))
        } else if colmajor && x.cs >= 0 {
            Some((Trans::T, (x.cs.max(0) as usize).max(x.m).max(1)))
        } else {
            None
        }
    } else if colmajor && x.cs >= 0 {
        Some((Trans::N, (x.cs.max(0) as usize).max(x.m).max(1)))
    } else if rowmajor && x.rs >= 0 {
        Some((Trans::T, (x.rs.max(0) as usize).max(x.n).max(1)))
    } else {
        None
    }
}

/// The one row-major -> column-major adapter: cuBLAS arguments for `C = A B` given the three
/// matrices' row-major strides; None if one of them needs packing first.
pub fn cublas_form(
    c: (Ptr, MatShape),
    a: (Ptr, MatShape),
    b: (Ptr, MatShape),
    accumulate: bool,
) -> Option<GemmOp> {
    let (cp, cs) = c;
    let (ap, ash) = a;
    let (bp, bsh) = b;
    let k = ash.n;
    if (cs.cs == 1 || cs.n <= 1) && cs.rs >= 0 {
        // C^T (n x m, ld rs_c) = B^T A^T
        let (tb, ldb) = form(&bsh, true)?;
        let (ta, lda) = form(&ash, true)?;
        Some(GemmOp {
            transa: tb,
            transb: ta,
            m: cs.n,
            n: cs.m,
            k,
            a: bp,
            lda: ldb,
            b: ap,
            ldb: lda,
            c: cp,
            ldc: (cs.rs as usize).max(cs.n).max(1),
            accumulate,
        })
    } else if cs.rs == 1 && cs.cs >= 0 {
        let (ta, lda) = form(&ash, false)?;
        let (tb, ldb) = form(&bsh, false)?;
        Some(GemmOp {
            transa: ta,
            transb: tb,
            m: cs.m,
            n: cs.n,
            k,
            a: ap,
            lda,
            b: bp,
            ldb,
            c: cp,
            ldc: (cs.cs as usize).max(cs.m).max(1),
            accumulate,
        })
    } else {
        None
    }
}

/// A block's axes ordered rows then columns, as a segment into a row-major matrix of row
/// stride `rs` at `at` (or out of it, when `reverse`).
fn block_segment(
    l: &Layout,
    rows: &[usize],
    cols: &[usize],
    rs: usize,
    at: usize,
    reverse: bool,
) -> Segment {
    let axes: Vec<usize> = rows.iter().chain(cols).copied().collect();
    let p = l.permuted(&axes);
    let mut mat = vec![0isize; axes.len()];
    let mut acc = rs as isize;
    for j in (0..rows.len()).rev() {
        mat[j] = acc;
        acc *= p.dims[j] as isize;
    }
    let mut acc = 1isize;
    for j in (rows.len()..axes.len()).rev() {
        mat[j] = acc;
        acc *= p.dims[j] as isize;
    }
    if reverse {
        Segment {
            src: at,
            dst: p.offset,
            dims: p.dims,
            src_strides: mat,
            dst_strides: p.strides,
        }
    } else {
        Segment {
            src: p.offset,
            dst: at,
            dims: p.dims,
            src_strides: p.strides,
            dst_strides: mat,
        }
    }
}

/// One operand side of a group, for the lowering of its accesses.
struct Side<'a> {
    src: Buf,
    scratch: Buf,
    slot: usize,
    places: &'a [Place],
    mats: &'a [Option<MatShape>],
    layouts: &'a [Layout],
    rows: &'a [usize],
    cols: &'a [usize],
    conj: Conj,
}

struct Lowerer<'a> {
    sp: &'a StepPlan,
    a_layouts: &'a [Layout],
    b_layouts: &'a [Layout],
    ops: Vec<Op>,
    scratch: [usize; 3],
    grouped: bool,
}

/// Lowers every step of a plan. `a_layouts`/`b_layouts` of operands come from the tensors.
pub fn lower(plan: &Plan, operand_layouts: &[Vec<Layout>]) -> Lowered {
    lower_with(plan, operand_layouts, LowerOptions::default())
}

/// [`lower`] with options.
pub fn lower_with(plan: &Plan, operand_layouts: &[Vec<Layout>], options: LowerOptions) -> Lowered {
    let mut steps = Vec::new();
    let step_layouts: Vec<&[Layout]> = plan
        .steps
        .iter()
        .map(|s| s.plan.out_layouts.as_slice())
        .collect();
    let last = plan.steps.len().saturating_sub(1);
    for (i, st) in plan.steps.iter().enumerate() {
        let layouts = |inp: Input| -> &[Layout] {
            match inp {
                Input::Operand(k) => &operand_layouts[k],
                Input::Step(j) => step_layouts[j],
            }
        };
        let mut lw = Lowerer {
            sp: &st.plan,
            a_layouts: layouts(st.left),
            b_layouts: layouts(st.right),
            ops: Vec::new(),
            scratch: [0; 3],
            grouped: options.grouped,
        };
        let mut spans = Vec::with_capacity(st.plan.groups.len());
        for g in &st.plan.groups {
            let start = lw.ops.len();
            lw.group(g);
            spans.push(start..lw.ops.len());
        }
        if options.grouped {
            lw.ops = group_singles(&st.plan, lw.ops, &spans);
        }
        steps.push(StepOps {
            ops: lw.ops,
            out_len: st.plan.out_len,
            scratch: lw.scratch,
            inputs: (st.left, st.right),
            scaled: i == last,
        });
    }
    Lowered { steps }
}

/// Replaces the lone GEMMs of groups in different hazard-free sets by grouped launches, one
/// group per set in each launch, so that no two GEMMs of a launch write the same element.
fn group_singles(sp: &StepPlan, ops: Vec<Op>, spans: &[std::ops::Range<usize>]) -> Vec<Op> {
    let mut comp_of = vec![0usize; spans.len()];
    for (ci, comp) in sp.components.iter().enumerate() {
        for &g in comp {
            comp_of[g as usize] = ci;
        }
    }
    let mut take = vec![false; ops.len()];
    let mut rounds: Vec<(Vec<usize>, Vec<GemmOp>)> = Vec::new();
    for (gi, span) in spans.iter().enumerate() {
        if span.len() != 1 {
            continue;
        }
        let Op::Gemm(g) = &ops[span.start] else {
            continue;
        };
        take[span.start] = true;
        let c = comp_of[gi];
        match rounds.iter_mut().find(|r| !r.0.contains(&c)) {
            Some(r) => {
                r.0.push(c);
                r.1.push(*g);
            }
            None => rounds.push((vec![c], vec![*g])),
        }
    }
    let mut out: Vec<Op> = ops
        .into_iter()
        .zip(take)
        .filter(|(_, t)| !t)
        .map(|(o, _)| o)
        .collect();
    for (_, gemms) in rounds {
        if gemms.len() == 1 {
            out.push(Op::Gemm(gemms[0]));
        } else {
            out.push(Op::GemmGrouped { gemms });
        }
    }
    out
}

impl Lowerer<'_> {
    fn group(&mut self, g: &Group) {
        match g.kind {
            GroupKind::Single | GroupKind::Batched => self.members(g),
            GroupKind::Grouped => self.grouped_members(g),
            _ => self.concat(g),
        }
    }

    /// Gathers blocks into a scratch matrix (row-major, row stride `rs`); one kernel.
    #[allow(clippy::too_many_arguments)]
    fn gather(
        &mut self,
        src: Buf,
        dst: Buf,
        places: &[(usize, Place)],
        layouts: &[Layout],
        rows: &[usize],
        cols: &[usize],
        rs: usize,
        conj: bool,
    ) {
        let segments = places
            .iter()
            .map(|(base, p)| {
                block_segment(
                    &layouts[p.block as usize],
                    rows,
                    cols,
                    rs,
                    base + p.row * rs + p.col,
                    false,
                )
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

    fn concat(&mut self, g: &Group) {
        let sp = self.sp;
        let geo = &sp.geometry;
        let (m, n, k) = (g.m, g.n, g.k);
        let direct = |acc: &Access, buf: Buf, conj: Conj| match (acc, conj) {
            (Access::Direct(s, base), Conj::No) => Some((Ptr { buf, offset: *base }, *s)),
            _ => None,
        };
        let packed = |buf: Buf, r: usize, c: usize| {
            (
                Ptr { buf, offset: 0 },
                MatShape {
                    m: r,
                    rs: c as isize,
                    n: c,
                    cs: 1,
                },
            )
        };
        let mut a = direct(&g.a_access, Buf::Left, geo.conj.0);
        let mut b = direct(&g.b_access, Buf::Right, geo.conj.1);
        let c = match g.c_access {
            Access::Direct(s, base) => Some((
                Ptr {
                    buf: Buf::Out,
                    offset: base,
                },
                s,
            )),
            Access::Packed => None,
        };
        // operands cuBLAS cannot address are packed
        // (the scratch-output path needs the transposed form, so that is what is required)
        a = a.filter(|(_, s)| form(s, true).is_some());
        b = b.filter(|(_, s)| form(s, true).is_some());
        let a = a.unwrap_or_else(|| {
            let places: Vec<(usize, Place)> = g.a.iter().map(|p| (0, *p)).collect();
            self.gather(
                Buf::Left,
                Buf::ScratchA,
                &places,
                self.a_layouts,
                &geo.a_free,
                &geo.a_contr,
                k,
                geo.conj.0 == Conj::Yes,
            );
            self.scratch[0] = self.scratch[0].max(m * k);
            packed(Buf::ScratchA, m, k)
        });
        let b = b.unwrap_or_else(|| {
            let places: Vec<(usize, Place)> = g.b.iter().map(|p| (0, *p)).collect();
            self.gather(
                Buf::Right,
                Buf::ScratchB,
                &places,
                self.b_layouts,
                &geo.b_contr,
                &geo.b_free,
                n,
                geo.conj.1 == Conj::Yes,
            );
            self.scratch[1] = self.scratch[1].max(k * n);
            packed(Buf::ScratchB, k, n)
        });
        if let Some(op) = c.and_then(|c| cublas_form(c, a, b, true)) {
            self.ops.push(Op::Gemm(op));
            return;
        }
        let cs = packed(Buf::ScratchC, m, n);
        self.scratch[2] = self.scratch[2].max(m * n);
        self.ops.push(Op::Gemm(
            cublas_form(cs, a, b, false).expect("packed matrices are row-major"),
        ));
        let segments =
            g.c.iter()
                .map(|p| {
                    block_segment(
                        &sp.out_layouts[p.block as usize],
                        &geo.c_rows,
                        &geo.c_cols,
                        n,
                        p.row * n + p.col,
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

    /// A grouped call: each member reaches its blocks in place where cuBLAS can, else through
    /// its own region of scratch (one gather kernel per operand for the whole call); one
    /// grouped GEMM launch (or one GEMM per member without grouped GEMM); one scatter.
    fn grouped_members(&mut self, g: &Group) {
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
    fn members(&mut self, g: &Group) {
        let sp = self.sp;
        let geo = &sp.geometry;
        let (m, n, k) = (g.m, g.n, g.k);
        let cnt = g.pairs.len();
        // uniform direct access: same strides for every member, constant offset step
        let uniform = |places: &[Place],
                       mats: &[Option<crate::contract::pairwise::MatShape>],
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

/// Runs a lowered plan on the CPU with cuBLAS's semantics (column-major, `op`, leading
/// dimensions, batch strides, alpha/beta): the test oracle of the lowering.
pub fn interpret<T: crate::scalar::Scalar>(
    plan: &Plan,
    lowered: &Lowered,
    ops: &[&crate::block::DynTensor<T>],
    alpha: T,
) -> crate::error::Result<crate::block::DynTensor<T>> {
    plan.check_operands(ops)?;
    let Some(last) = plan.steps.last() else {
        return Err(crate::error::Error::InvalidContraction(
            "the plan has no pairwise step (a single operand): nothing to lower".into(),
        ));
    };
    let mut results: Vec<Vec<T>> = Vec::new();
    for so in &lowered.steps {
        let data = |inp: Input, results: &Vec<Vec<T>>| -> Vec<T> {
            match inp {
                Input::Operand(k) => ops[k].data().to_vec(),
                Input::Step(j) => results[j].clone(),
            }
        };
        let mut bufs: [Vec<T>; 6] = [
            data(so.inputs.0, &results),
            data(so.inputs.1, &results),
            vec![T::zero(); so.out_len],
            vec![T::zero(); so.scratch[0]],
            vec![T::zero(); so.scratch[1]],
            vec![T::zero(); so.scratch[2]],
        ];
        let a = if so.scaled { alpha } else { T::one() };
        for op in &so.ops {
            run_op(op, &mut bufs, a);
        }
        results.push(std::mem::take(&mut bufs[2]));
    }
    let g = &last.plan.geometry;
    Ok(crate::block::DynTensor::from_shared(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        last.plan.out_index.clone(),
        results.pop().expect("one result per step"),
    ))
}

fn slot(b: Buf) -> usize {
    match b {
        Buf::Left => 0,
        Buf::Right => 1,
        Buf::Out => 2,
        Buf::ScratchA => 3,
        Buf::ScratchB => 4,
        Buf::ScratchC => 5,
    }
}

fn run_op<T: crate::scalar::Scalar>(op: &Op, bufs: &mut [Vec<T>; 6], alpha: T) {
    match op {
        Op::Gather {
            src,
            dst,
            segments,
            accumulate,
            conj,
        } => {
            let s = bufs[slot(*src)].clone();
            let d = &mut bufs[slot(*dst)];
            for seg in segments {
                crate::view::for_each_pair(
                    &seg.dims,
                    &seg.src_strides,
                    &seg.dst_strides,
                    |so, dof, n, ss, ds| {
                        for i in 0..n as isize {
                            let mut v = s[(seg.src as isize + so + i * ss) as usize];
                            if *conj {
                                v = v.conj();
                            }
                            let x = &mut d[(seg.dst as isize + dof + i * ds) as usize];
                            *x = if *accumulate { *x + v } else { v };
                        }
                    },
                );
            }
        }
        Op::Gemm(g) => gemm_ref(g, bufs, alpha, 0, 0, 0),
        Op::GemmGrouped { gemms } => {
            for g in gemms {
                gemm_ref(g, bufs, alpha, 0, 0, 0);
            }
        }
        Op::GemmStridedBatched {
            gemm,
            batch,
            stride_a,
            stride_b,
            stride_c,
        } => {
            for i in 0..*batch {
                gemm_ref(gemm, bufs, alpha, i * stride_a, i * stride_b, i * stride_c);
            }
        }
    }
}

/// `C = alpha op(A) op(B) + beta C` exactly as cuBLAS defines it (column-major).
fn gemm_ref<T: crate::scalar::Scalar>(
    g: &GemmOp,
    bufs: &mut [Vec<T>; 6],
    alpha: T,
    da: usize,
    db: usize,
    dc: usize,
) {
    let a = bufs[slot(g.a.buf)].clone();
    let b = bufs[slot(g.b.buf)].clone();
    let c = &mut bufs[slot(g.c.buf)];
    let at = |i: usize, p: usize| match g.transa {
        Trans::N => a[g.a.offset + da + i + p * g.lda],
        Trans::T => a[g.a.offset + da + p + i * g.lda],
    };
    let bt = |p: usize, j: usize| match g.transb {
        Trans::N => b[g.b.offset + db + p + j * g.ldb],
        Trans::T => b[g.b.offset + db + j + p * g.ldb],
    };
    for j in 0..g.n {
        for i in 0..g.m {
            let mut acc = T::zero();
            for p in 0..g.k {
                acc += at(i, p) * bt(p, j);
            }
            let x = &mut c[g.c.offset + dc + i + j * g.ldc];
            *x = if g.accumulate {
                *x + alpha * acc
            } else {
                alpha * acc
            };
        }
    }
}
