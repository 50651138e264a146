//! Lowering a plan's groups to device ops: the driver, concatenating groups and gathers.

use super::cublas::{cublas_form, form};
use super::{Accum, Buf, GemmOp, LowerOptions, Lowered, Op, Ptr, Segment, StepOps};
use crate::plan::{Access, Group, GroupKind, Input, Place, Plan, StepPlan};
use crate::scalar::Conj;
use crate::step::Side;
use crate::view::{Layout, MatShape};

/// Which way a segment copies between a block and a row-major matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// Block -> matrix (packing an operand).
    Gather,
    /// Matrix -> block (scattering a result).
    Scatter,
}

/// A block's axes ordered rows then columns, as a segment between the block and a row-major
/// matrix of row stride `rs` at `at`.
pub(super) fn block_segment(
    l: &Layout,
    (rows, cols): (&[usize], &[usize]),
    rs: usize,
    at: usize,
    dir: Direction,
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
    match dir {
        Direction::Scatter => Segment {
            src: at,
            dst: p.offset,
            dims: p.dims.to_vec(),
            src_strides: mat,
            dst_strides: p.strides.to_vec(),
        },
        Direction::Gather => Segment {
            src: p.offset,
            dst: at,
            dims: p.dims.to_vec(),
            src_strides: p.strides.to_vec(),
            dst_strides: mat,
        },
    }
}

/// One operand of a step as the lowering sees it.
pub(super) struct Operand<'a> {
    /// The step's buffer holding it.
    pub(super) src: Buf,
    /// Scratch for its packed blocks, and that scratch's slot in `Lowerer::scratch`.
    pub(super) scratch: (Buf, usize),
    /// Matrix view of each block (None: its strides need a transpose).
    pub(super) mats: &'a [Option<MatShape>],
    /// Layout of each block.
    pub(super) layouts: &'a [Layout],
    /// Its axes that become the GEMM operand's rows and columns.
    pub(super) axes: (&'a [usize], &'a [usize]),
    /// Whether it is read conjugated (cuBLAS's real GEMMs cannot: packed, conjugating).
    pub(super) conj: Conj,
}

pub(super) struct Lowerer<'a> {
    pub(super) sp: &'a StepPlan,
    /// Block layouts of the two operands, by [`Side::index`].
    pub(super) layouts: [&'a [Layout]; 2],
    /// Block layouts of the step's output.
    pub(super) out_layouts: &'a [Layout],
    pub(super) ops: Vec<Op>,
    pub(super) scratch: [usize; 3],
    pub(super) grouped: bool,
}

/// Lowers every step of a plan. The operands' block layouts come from the tensors.
pub fn lower(plan: &Plan, operand_layouts: &[Vec<Layout>]) -> Lowered {
    lower_with(plan, operand_layouts, LowerOptions::default())
}

/// [`lower`] with options.
pub fn lower_with(plan: &Plan, operand_layouts: &[Vec<Layout>], options: LowerOptions) -> Lowered {
    let mut steps = Vec::new();
    let step_layouts: Vec<Vec<Layout>> = plan
        .steps
        .iter()
        .map(|s| {
            s.plan
                .out_index
                .blocks()
                .iter()
                .map(|b| b.layout.clone())
                .collect()
        })
        .collect();
    let last = plan.steps.len().saturating_sub(1);
    for (i, st) in plan.steps.iter().enumerate() {
        let layouts = |inp: Input| -> &[Layout] {
            match inp {
                Input::Operand(k) => &operand_layouts[k],
                Input::Step(j) => &step_layouts[j],
            }
        };
        let mut lw = Lowerer {
            sp: &st.plan,
            layouts: [layouts(st.left), layouts(st.right)],
            out_layouts: &step_layouts[i],
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

impl<'a> Lowerer<'a> {
    /// One operand of the step.
    pub(super) fn operand(&self, side: Side) -> Operand<'a> {
        let (src, scratch) = match side {
            Side::A => (Buf::Left, (Buf::ScratchA, 0)),
            Side::B => (Buf::Right, (Buf::ScratchB, 1)),
        };
        let geo = &self.sp.geometry;
        Operand {
            src,
            scratch,
            mats: &self.sp.operands[side.index()].mats,
            layouts: self.layouts[side.index()],
            axes: geo.mat_axes(side),
            conj: geo.conj_of(side),
        }
    }

    fn group(&mut self, g: &Group) {
        match g.kind {
            GroupKind::Single | GroupKind::Batched => self.members(g),
            GroupKind::Grouped => self.grouped_members(g),
            _ => self.concat(g),
        }
    }

    /// One gather kernel: each `(at, block)` copied into a row-major matrix of row stride
    /// `rs(block)` at `at` in the operand's scratch; grows that scratch to `len`.
    pub(super) fn gather(
        &mut self,
        op: &Operand<'_>,
        places: &[(usize, Place)],
        rs: impl Fn(&Layout) -> usize,
        len: usize,
    ) {
        let segments = places
            .iter()
            .map(|(at, p)| {
                let l = &op.layouts[p.block as usize];
                block_segment(l, op.axes, rs(l), *at, Direction::Gather)
            })
            .collect();
        self.ops.push(Op::Gather {
            src: op.src,
            dst: op.scratch.0,
            segments,
            accum: Accum::Replace,
            conj: op.conj,
        });
        self.scratch[op.scratch.1] = self.scratch[op.scratch.1].max(len);
    }

    /// One scatter kernel: each `(at, block, rs)` of the output added from a row-major
    /// matrix of row stride `rs` at `at` in the result scratch.
    pub(super) fn scatter(&mut self, places: impl Iterator<Item = (usize, u32, usize)>) {
        let sp = self.sp;
        let axes = (sp.geometry.c_rows.as_slice(), sp.geometry.c_cols.as_slice());
        let segments = places
            .map(|(at, block, rs)| {
                let l = &self.out_layouts[block as usize];
                block_segment(l, axes, rs, at, Direction::Scatter)
            })
            .collect();
        self.ops.push(Op::Gather {
            src: Buf::ScratchC,
            dst: Buf::Out,
            segments,
            accum: Accum::Add,
            conj: Conj::No,
        });
    }

    /// A concatenating group's operand: in place when cuBLAS can address it, else its blocks
    /// gathered into one row-major `r x c` matrix.
    fn concat_operand(&mut self, g: &Group, side: Side, (r, c): (usize, usize)) -> (Ptr, MatShape) {
        let op = self.operand(side);
        if let (Access::Direct(s, base), Conj::No) = (g.access(side), op.conj) {
            // the scratch-output path needs the transposed form, so that is what is required
            if form(s, true).is_some() {
                let ptr = Ptr {
                    buf: op.src,
                    offset: *base,
                };
                return (ptr, *s);
            }
        }
        let places: Vec<(usize, Place)> = g
            .places(side)
            .iter()
            .map(|p| (p.row * c + p.col, *p))
            .collect();
        self.gather(&op, &places, |_| c, r * c);
        let ptr = Ptr {
            buf: op.scratch.0,
            offset: 0,
        };
        (ptr, MatShape::row_major(r, c))
    }

    fn concat(&mut self, g: &Group) {
        let (m, n, k) = (g.m, g.n, g.k);
        let a = self.concat_operand(g, Side::A, (m, k));
        let b = self.concat_operand(g, Side::B, (k, n));
        if let Access::Direct(s, base) = g.c_access {
            let c = Ptr {
                buf: Buf::Out,
                offset: base,
            };
            if let Some(op) = cublas_form((c, s), a, b, Accum::Add) {
                self.ops.push(Op::Gemm(op));
                return;
            }
        }
        let cs = Ptr {
            buf: Buf::ScratchC,
            offset: 0,
        };
        self.scratch[2] = self.scratch[2].max(m * n);
        let op = cublas_form((cs, MatShape::row_major(m, n)), a, b, Accum::Replace);
        self.ops
            .push(Op::Gemm(op.expect("packed matrices are row-major")));
        self.scatter(g.c().iter().map(|p| (p.row * n + p.col, p.block, n)));
    }
}
