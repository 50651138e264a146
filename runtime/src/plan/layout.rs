//! The output's layout (sole writers laid out in place), operand access (zero-copy or packed),
//! scratch sizes and hazard-free components.

use super::group::{Access, Group, GroupKind, Place};
use super::step_plan::{Components, StepPlan};
use crate::block::Block;
use crate::step::Side;
use crate::view::{mat_shape, split_shape, Layout, MatShape, SplitShape};

/// Output layout: the blocks of each rectangle or free-axis group that is their only writer
/// tile one row-major `m x n` matrix, so its GEMM writes in place; every other block is
/// row-major, after them. Sets the output's length and matrix views; returns the output's
/// blocks.
pub(super) fn assign_output_layout(sp: &mut StepPlan, groups: &[Group]) -> Vec<Block> {
    let g = &sp.geometry;
    let nout = sp.out_keys.len();
    // built in an array and copied once (collecting into the small vector checks its room per
    // element); beyond MAX_RANK legs, collected
    let dims = |key: &[u32]| -> crate::view::Dims {
        let dim = |(&s, l): (&u32, &crate::symmetry::Leg)| l.space.dim_of(s as usize);
        if key.len() > crate::view::MAX_RANK {
            return key.iter().zip(&g.out_legs).map(dim).collect();
        }
        let mut d = [0usize; crate::view::MAX_RANK];
        for (x, kl) in d.iter_mut().zip(key.iter().zip(&g.out_legs)) {
            *x = dim(kl);
        }
        crate::view::Dims::from_slice(&d[..key.len().min(g.out_legs.len())])
    };
    // per block laid out for its group: (offset, the group's row stride)
    let (tiled, mut offset) = tiles(groups, nout);
    let blocks: Vec<Block> = tiled
        .iter()
        .zip(sp.out_keys.iter())
        .map(|(&(at, n), key)| {
            let d = dims(key);
            if at == usize::MAX {
                let layout = Layout::row_major(&d, offset);
                offset += layout.len();
                return Block {
                    key: key.clone(),
                    layout,
                };
            }
            let mut strides = crate::view::Strides::from_elem(0, d.len());
            let mut acc = n as isize;
            for &ax in g.c_rows.iter().rev() {
                strides[ax] = acc;
                acc *= d[ax] as isize;
            }
            let mut acc = 1isize;
            for &ax in g.c_cols.iter().rev() {
                strides[ax] = acc;
                acc *= d[ax] as isize;
            }
            Block {
                key: key.clone(),
                layout: Layout {
                    dims: d,
                    strides,
                    offset: at,
                },
            }
        })
        .collect();
    sp.out_len = offset;
    sp.c_mats = blocks
        .iter()
        .map(|b| mat_shape(&b.layout, &g.c_rows, &g.c_cols))
        .collect();
    blocks
}

/// The output blocks each rectangle or free-axis group writes alone, tiled into that group's
/// row-major `m x n` matrix, largest groups first: per block (offset, the group's row stride),
/// `(usize::MAX, 0)` for a block left row-major; and the length the tiles take.
fn tiles(groups: &[Group], nout: usize) -> (Vec<(usize, usize)>, usize) {
    let mut tiled: Vec<(usize, usize)> = vec![(usize::MAX, 0); nout];
    let mut offset = 0usize;
    // output blocks written by exactly one group can be laid out for that group
    let mut writers = vec![0u32; nout];
    for gr in groups {
        for p in gr.c() {
            writers[p.block as usize] += 1;
        }
    }
    let mut order: Vec<&Group> = groups
        .iter()
        .filter(|x| matches!(x.kind, GroupKind::Rectangle | GroupKind::FreeAxis))
        .filter(|x| x.c().iter().all(|p| writers[p.block as usize] == 1))
        .collect();
    order.sort_by_key(|x| std::cmp::Reverse(x.m * x.n));
    for gr in order {
        if gr
            .c()
            .iter()
            .any(|p| tiled[p.block as usize].0 != usize::MAX)
        {
            continue;
        }
        for p in gr.c() {
            tiled[p.block as usize] = (offset + p.row * gr.n + p.col, gr.n);
        }
        offset += gr.m * gr.n;
    }
    (tiled, offset)
}

/// Works out every copy the step makes between a block and a packed matrix (see
/// [`crate::view::Packs`]): per operand block and per output block that is not one strided
/// matrix, its copy into a row-major matrix of its own (members, the transpose cache); per
/// packed operand or output of a concatenating group, one copy per place, into a row-major
/// or a column-major matrix, whichever copies longer rows ([`col_major_wins`]). `blocks`: the
/// operands' and the output's; `like`: a template's copies (room is reserved for as many).
pub(super) fn assign_packs(
    sp: &mut StepPlan,
    groups: &mut [Group],
    blocks: [&[Block]; 3],
    like: Option<&crate::view::Packs>,
) {
    let mut packs = like.map_or_else(Default::default, crate::view::Packs::with_room_of);
    let g = &sp.geometry;
    let own_rs =
        |l: &Layout, cols: &[usize]| cols.iter().map(|&c| l.dims[c]).product::<usize>() as isize;
    let used = member_blocks(sp, groups, blocks[2].len());
    for side in Side::BOTH {
        let axes = g.mat_axes(side);
        let op = &mut sp.operands[side.index()];
        op.block_pack = blocks[side.index()]
            .iter()
            .zip(&op.mats)
            .zip(&used[side.index()])
            .map(|((b, m), &u)| match m {
                None if u => packs.push(&b.layout, axes, own_rs(&b.layout, axes.1), 0),
                _ => u32::MAX,
            })
            .collect();
    }
    let c_axes = (g.c_rows.as_slice(), g.c_cols.as_slice());
    sp.c_pack = blocks[2]
        .iter()
        .zip(&sp.c_mats)
        .zip(&used[2])
        .map(|((b, m), &u)| match m {
            None if u => packs.push(&b.layout, c_axes, own_rs(&b.layout, c_axes.1), 0),
            _ => u32::MAX,
        })
        .collect();
    for gr in groups.iter_mut().filter(|gr| !gr.is_members()) {
        concat_packs(
            gr,
            &mut packs,
            blocks,
            [g.mat_axes(Side::A), g.mat_axes(Side::B), c_axes],
        );
    }
    sp.packs = packs;
}

/// Per operand (A, B, C), whether a member GEMM reads or writes each block: only those are
/// copied on their own.
fn member_blocks(sp: &StepPlan, groups: &[Group], c_blocks: usize) -> [Vec<bool>; 3] {
    let mut used = [
        vec![false; sp.operands[0].mats.len()],
        vec![false; sp.operands[1].mats.len()],
        vec![false; c_blocks],
    ];
    for gr in groups.iter().filter(|gr| gr.is_members()) {
        for (u, places) in used.iter_mut().zip([gr.a(), gr.b(), gr.c()]) {
            for p in places {
                u[p.block as usize] = true;
            }
        }
    }
    used
}

/// The copies of a concatenating group's packed operands into `packs`, each row- or
/// column-major as [`col_major_wins`] decides; `axes` the (rows, cols) axes of A, B and C.
fn concat_packs(
    gr: &mut Group,
    packs: &mut crate::view::Packs,
    blocks: [&[Block]; 3],
    axes: [(&[usize], &[usize]); 3],
) {
    let shapes = [(gr.m, gr.k), (gr.k, gr.n), (gr.m, gr.n)];
    // set afresh (a group rebuilt from a template's carries the template's)
    let (mut starts, mut col_majors) = ([u32::MAX; 3], [false; 3]);
    for (i, axes) in axes.into_iter().enumerate() {
        let (access, places) = match i {
            0 => (&gr.a_access, gr.a()),
            1 => (&gr.b_access, gr.b()),
            _ => (&gr.c_access, gr.c()),
        };
        if !access.is_packed() || gr.thin.is_some_and(|(s, _)| s.index() == i) {
            continue;
        }
        let col_major = col_major_wins(places, blocks[i], axes);
        let (r, c) = shapes[i];
        col_majors[i] = col_major;
        starts[i] = packs.ops.len() as u32;
        for p in places {
            let l = &blocks[i][p.block as usize].layout;
            if col_major {
                packs.push(l, (axes.1, axes.0), r as isize, p.col * r + p.row);
            } else {
                packs.push(l, axes, c as isize, p.row * c + p.col);
            }
        }
    }
    (gr.packs, gr.packed_col_major) = (starts, col_majors);
}

/// Whether a concatenating group's packed matrix is better laid out column-major: its copies
/// then run along rows at least [`COL_MAJOR_GAIN`] times longer (a row: a run contiguous in
/// both the block and the matrix). Row-major runs along the blocks' column axes, column-major
/// along their row axes: on the MPO steps the rows `(a, z)` of a block `(a, w, t, z)` run along
/// its last axis and its columns `(w, t)` are one or two long, so row-major copies one or two
/// elements per row. Decided on the first block: a group's blocks share their axis order.
fn col_major_wins(places: &[Place], blocks: &[Block], (rows, cols): (&[usize], &[usize])) -> bool {
    let Some(p) = places.first() else {
        return false;
    };
    let l = &blocks[p.block as usize].layout;
    let (dims, strides) = (l.dims.as_slice(), l.strides.as_slice());
    // the run contiguous in both: the matrix's innermost axes, while the block nests them
    let run = |axes: &[usize]| {
        let mut run = 1usize;
        for &ax in axes.iter().rev() {
            match dims[ax] {
                1 => continue,
                d if strides[ax] == run as isize => run *= d,
                _ => break,
            }
        }
        run
    };
    run(rows) >= COL_MAJOR_GAIN * run(cols)
}

/// How many times fewer rows a column-major pack must copy to be chosen (a short row costs a
/// loop iteration whichever way, a strided one more; a small gain is not worth a change).
const COL_MAJOR_GAIN: usize = 4;

/// Zero-copy access when the placed blocks already form one strided matrix.
pub(super) fn matrix_access(
    places: &[Place],
    mats: &[Option<MatShape>],
    offsets: &[usize],
) -> Access {
    let mut rs: Option<isize> = None;
    let mut cs: Option<isize> = None;
    for p in places {
        let Some(m) = mats[p.block as usize] else {
            return Access::Packed;
        };
        if m.m > 1 {
            rs.get_or_insert(m.rs);
        }
        if m.n > 1 {
            cs.get_or_insert(m.cs);
        }
    }
    let cs = cs.unwrap_or(1);
    let p0 = places[0];
    let o0 = offsets[p0.block as usize] as isize;
    let rs = match rs {
        Some(r) => r,
        None => match places.iter().find(|p| p.row != p0.row) {
            Some(p) => {
                let d = offsets[p.block as usize] as isize
                    - o0
                    - (p.col as isize - p0.col as isize) * cs;
                d / (p.row as isize - p0.row as isize)
            }
            None => 1,
        },
    };
    let base = o0 - p0.row as isize * rs - p0.col as isize * cs;
    if base < 0 {
        return Access::Packed;
    }
    let (mut m, mut n) = (0, 0);
    for p in places {
        let mat = mats[p.block as usize].expect("checked");
        let ok = offsets[p.block as usize] as isize
            == base + p.row as isize * rs + p.col as isize * cs
            && (mat.m <= 1 || mat.rs == rs)
            && (mat.n <= 1 || mat.cs == cs);
        if !ok {
            return Access::Packed;
        }
        m = m.max(p.row + mat.m);
        n = n.max(p.col + mat.n);
    }
    Access::Direct(MatShape { m, rs, n, cs }, base as usize)
}

pub(super) fn scratch_of(g: &Group) -> usize {
    match g.kind {
        GroupKind::Single | GroupKind::Batched | GroupKind::Grouped => member_scratch(g),
        _ => {
            let mut s = 0;
            if g.a_access.is_packed() {
                s += g.m * g.k;
            }
            if g.b_access.is_packed() {
                s += g.k * g.n;
            }
            if g.c_access.is_packed() {
                s += g.m * g.n;
            }
            s
        }
    }
}

/// Marks each group's first writes (execution order: ascending group index, which is also
/// the order inside each hazard-free component); returns the blocks that must be zeroed before
/// the step when it overwrites its output: blocks no group writes, and the first-written
/// blocks of a direct concatenated GEMM that cannot overwrite all of its blocks at once.
pub(super) fn first_writes(groups: &mut [Group], nout: usize) -> Vec<u32> {
    let mut written = vec![false; nout];
    let mut zero = Vec::new();
    for g in groups.iter_mut() {
        for p in g.c_mut() {
            p.first = !std::mem::replace(&mut written[p.block as usize], true);
        }
        let direct_concat = !g.is_members() && !g.c_access.is_packed();
        if direct_concat && !g.c().iter().all(|p| p.first) {
            for p in g.c_mut() {
                if std::mem::replace(&mut p.first, false) {
                    zero.push(p.block);
                }
            }
        }
    }
    zero.extend((0..nout as u32).filter(|&b| !written[b as usize]));
    zero.sort_unstable();
    zero
}

/// Groups linked by a shared output block end up in one component; components are independent.
pub(super) fn components(groups: &[Group], nout: usize) -> Components {
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            p[r] = p[p[r]];
            r = p[r];
        }
        r
    }
    let mut owner: Vec<Option<usize>> = vec![None; nout];
    for (gi, g) in groups.iter().enumerate() {
        for c in g.c() {
            match owner[c.block as usize] {
                None => owner[c.block as usize] = Some(gi),
                Some(o) => {
                    let (x, y) = (find(&mut parent, o), find(&mut parent, gi));
                    parent[x] = y;
                }
            }
        }
    }
    // numbered by their first group: ascending by first group, each ascending (a counting
    // pass, then each group placed in its set)
    let mut id = vec![u32::MAX; groups.len()];
    let mut sizes: Vec<u32> = Vec::new();
    let of: Vec<u32> = (0..groups.len())
        .map(|gi| {
            let r = find(&mut parent, gi);
            if id[r] == u32::MAX {
                id[r] = sizes.len() as u32;
                sizes.push(0);
            }
            sizes[id[r] as usize] += 1;
            id[r]
        })
        .collect();
    let mut starts = Vec::with_capacity(sizes.len() + 1);
    let mut at = 0u32;
    starts.push(0);
    for n in &sizes {
        at += n;
        starts.push(at);
    }
    let mut next: Vec<u32> = starts[..sizes.len()].to_vec();
    let mut list = vec![0u32; groups.len()];
    for (gi, &c) in of.iter().enumerate() {
        list[next[c as usize] as usize] = gi as u32;
        next[c as usize] += 1;
    }
    Components {
        groups: list,
        starts,
    }
}

/// Scratch of a member group: per operand, room for one member's packed block, when any
/// member's block is not GEMM-addressable in place.
pub(super) fn member_scratch(g: &Group) -> usize {
    let need = |a: &Access, len: usize| if a.is_packed() { len } else { 0 };
    need(&g.a_access, g.m * g.k) + need(&g.b_access, g.k * g.n) + need(&g.c_access, g.m * g.n)
}

/// The most rows (or columns) of the output, and the longest inner dimension, of a
/// contraction-axis group that reads its other operand in place as thin (see `assign_thin`):
/// each of its contributions is then a thin GEMM the tiny kernel runs in one pass (A's side
/// also needs `n * k <= 16`, B in registers).
pub const THIN_MAX_R: usize = 4;
/// See [`THIN_MAX_R`].
pub const THIN_MAX_K: usize = 16;
/// The shortest run of a thin group's in-place sub-matrices when a block splits into
/// several: each is a kernel call of its own (about 25 ns), so shorter runs lost to gathering
/// them (measured on the Hubbard MPO steps, runs of 10-58 elements: step 1 1.6 -> 2.4 ms). A
/// block read whole is one call, as its gather would be, whatever its length (Heisenberg m =
/// 512 `heff2` step 2: 0.85 -> 0.64 ms; Hubbard m = 256 `heff2` step 2, blocks of 25-3364
/// rows: 167-175 -> 143-146 us against runs of 256 or more only).
const THIN_MIN_RUN: usize = 256;

/// Contraction-axis groups whose output is written in place and whose other two extents are
/// thin (`m` or `n` at most [`THIN_MAX_R`], `k` at most [`THIN_MAX_K`]: the MPO steps,
/// `W0 * X` and `Y * W1`) read the big operand's blocks in place instead of gathering them:
/// each block's view as `count` sub-matrices of contiguous runs along the free side (one when
/// it fuses), which the executor walks one sub-matrix at a time, one thin GEMM per
/// contribution. Chosen when every block of that side has such a view with the same runs (at
/// least [`THIN_MIN_RUN`] long when a block splits); the group is then priced as what the
/// executor does: one tiny-kernel call per contribution and sub-matrix, and one pass over its
/// big operand and its output at the streaming rate, the big operand being the previous
/// step's output, read from memory. Over the 1638 thin groups of the 30 `heff` workloads
/// (shipped and `workloads/other/`), explain's measured times were 3.0x their prediction
/// when priced as one pass at the in-cache copy rate, and 1.16x priced so (1.09x on those
/// moving over 20000 elements). The grouping was decided with the gather priced in.
pub(super) fn assign_thin(
    sp: &mut StepPlan,
    groups: &mut [Group],
    blocks: [&[Block]; 2],
    model: &super::cost::CostModel,
) {
    let mut thin = Vec::new();
    for gr in groups.iter_mut() {
        gr.thin = None;
        let Some(side) = thin_side(gr) else {
            continue;
        };
        let axes = sp.geometry.mat_axes(side);
        let Some(views) = thin_views(gr.places(side), blocks[side.index()], axes, side) else {
            continue;
        };
        gr.thin = Some((side, thin.len() as u32));
        let calls = views.len() * views.first().map_or(0, |v| v.split.count);
        thin.extend(views);
        let (big, small) = match side {
            Side::A => (gr.m, gr.n),
            Side::B => (gr.n, gr.m),
        };
        gr.packed_elems = gr.packed_elems.saturating_sub(big * gr.k);
        gr.predicted_s = model.call_s
            + calls as f64 * model.tiny_call_s
            + (big * (gr.k + small)) as f64 * model.elem_s
            + model.pack_s(gr.packed_elems);
    }
    sp.thin = thin;
}

/// The side a group may read in place as thin, if any ([`assign_thin`]): the packed operand
/// whose partner and the inner dimension are thin (for A, `n * k <= 16` too: the tiny
/// kernel's pass down long columns); of two, the larger.
fn thin_side(gr: &Group) -> Option<Side> {
    if gr.kind != GroupKind::ContractionAxis || gr.c_access.is_packed() || gr.k > THIN_MAX_K {
        return None;
    }
    // B's side: rows of C from rows of B (any k); A's: B in registers (n * k <= 16)
    let b = gr.b_access.is_packed() && gr.m <= THIN_MAX_R;
    let a = gr.a_access.is_packed() && gr.n <= THIN_MAX_R && gr.n * gr.k <= 16;
    match (a, b) {
        (true, true) if gr.m >= gr.n => Some(Side::A),
        (_, true) => Some(Side::B),
        (true, false) => Some(Side::A),
        _ => None,
    }
}

/// Each placed block's in-place view for the thin kernel: `k x inner` sub-matrices (B) or
/// `inner x k` ones (A), `count` along the free side, the runs contiguous; None unless every
/// block has one with the same `count` and `inner`.
fn thin_views(
    places: &[Place],
    blocks: &[Block],
    (rows, cols): (&[usize], &[usize]),
    side: Side,
) -> Option<Vec<crate::plan::SplitAt>> {
    let mut views = Vec::with_capacity(places.len());
    for p in places {
        let l = &blocks[p.block as usize].layout;
        let split = match mat_shape(l, rows, cols) {
            Some(mat) => SplitShape {
                count: 1,
                stride: 0,
                mat,
            },
            None => split_shape(l, rows, cols, side == Side::A, 2)?,
        };
        let (inner, inner_stride) = match side {
            Side::A => (split.mat.m, split.mat.rs),
            Side::B => (split.mat.n, split.mat.cs),
        };
        // a whole block is one call, as its gather would be; split ones need long runs
        let short = split.count > 1 && inner < THIN_MIN_RUN;
        if short || (inner_stride != 1 && inner > 1) {
            return None;
        }
        if let Some(v) = views.first() {
            let v: &crate::plan::SplitAt = v;
            let first = match side {
                Side::A => v.split.mat.m,
                Side::B => v.split.mat.n,
            };
            if v.split.count != split.count || first != inner {
                return None;
            }
        }
        views.push(crate::plan::SplitAt {
            at: l.offset,
            split,
        });
    }
    Some(views)
}
