//! Lowering a plan's groups to device ops: the driver, concatenating groups and gathers.

use super::cublas::{cublas_form, form};
use super::{Buf, GemmOp, LowerOptions, Lowered, Op, Ptr, Segment, StepOps};
use crate::plan::{Access, Group, GroupKind, Input, Place, Plan, StepPlan};
use crate::scalar::Conj;
use crate::view::{Layout, MatShape};

/// A block's axes ordered rows then columns, as a segment into a row-major matrix of row
/// stride `rs` at `at` (or out of it, when `reverse`).
pub(super) fn block_segment(
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
pub(super) struct Side<'a> {
    pub(super) src: Buf,
    pub(super) scratch: Buf,
    pub(super) slot: usize,
    pub(super) places: &'a [Place],
    pub(super) mats: &'a [Option<MatShape>],
    pub(super) layouts: &'a [Layout],
    pub(super) rows: &'a [usize],
    pub(super) cols: &'a [usize],
    pub(super) conj: Conj,
}

pub(super) struct Lowerer<'a> {
    pub(super) sp: &'a StepPlan,
    pub(super) a_layouts: &'a [Layout],
    pub(super) b_layouts: &'a [Layout],
    pub(super) ops: Vec<Op>,
    pub(super) scratch: [usize; 3],
    pub(super) grouped: bool,
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
    pub(super) fn gather(
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
}
