//! The finished plan of one pairwise step: what the executors read (the step, its pairs and
//! groups, each operand's access, the output's layout, the step's copies and its hazard-free
//! sets of groups). The planner's decisions (`family`, `members`, `layout`, `price`, `reach`)
//! fill it in; `step` drives them.

use super::group::{Group, Member, SplitAt};
use super::keys::Keys;
use crate::block::{BlockIndex, BlockKey, DynTensor};
use crate::scalar::Scalar;
use crate::step::{Geometry, PairGemm, Side, StepDesc};
use crate::view::{mat_shape, split_shape, Layout, MatShape, Packs, SplitShape};
use std::sync::Arc;

/// The plan of one pairwise step.
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// The step as written.
    pub desc: StepDesc,
    /// Its geometry.
    pub geometry: Geometry,
    /// Every block pair.
    pub pairs: Vec<PairGemm>,
    /// Output block keys (sorted); their layouts are in [`StepPlan::out_index`]. Shared with
    /// the plans made from this one as a template (the same keys).
    pub out_keys: Arc<[BlockKey]>,
    /// Output buffer length.
    pub out_len: usize,
    /// Useful flops (2mnk summed over the pairs), counted once when planned: a run reports
    /// them without a pass over thousands of pairs per call.
    pub flops: f64,
    /// What the plan knows of its two operands' blocks, indexed by [`Side::index`].
    pub operands: [OperandPlan; 2],
    /// Matrix view of each output block.
    pub c_mats: Vec<Option<MatShape>>,
    /// Offset of each output block in the output buffer (its layout's, kept in one compact
    /// list for the executor's member loop, which reads one per member).
    pub c_offsets: Vec<usize>,
    /// The groups (plan nodes).
    pub groups: Vec<Group>,
    /// Hazard-free sets: groups in different sets write disjoint output blocks.
    pub components: Components,
    /// Scratch elements the largest group needs.
    pub scratch_elems: usize,
    /// Output blocks to zero before the step when it overwrites its output (blocks no group
    /// writes, or whose first writer cannot overwrite): every other element is overwritten
    /// by its first writer (BLAS beta = 0), so the output needs no zero-fill.
    pub zero_blocks: Vec<u32>,
    /// The output's blocks and their layouts in the output buffer, shared by every output
    /// this plan makes.
    pub out_index: Arc<BlockIndex>,
    /// Every copy between a block and a packed matrix the step makes, worked out here.
    pub packs: Packs,
    /// Per output block: its copy from a member's packed result (`u32::MAX`: written in
    /// place).
    pub c_pack: Vec<u32>,
    /// The member GEMMs of the single, batched and grouped groups, in execution order (each
    /// group's from its [`Group::members`]).
    pub members: Vec<Member>,
    /// The sub-matrices of the members that read an operand block in place as strided
    /// sub-GEMMs ([`Reach::Split`](super::Reach::Split)), one per such member.
    pub splits: Vec<SplitAt>,
    /// The in-place views of the thin groups' operand blocks ([`Group::thin`]), each a
    /// block's `k x inner` (B) or `inner x k` (A) sub-matrices, `count` of them along the
    /// free side.
    pub thin: Vec<SplitAt>,
    /// Per pair, the ids of its row, contracted and column keys (they depend on block keys
    /// only, so a plan made from this one as a template shares them).
    pub(crate) keys: Arc<Keys>,
}

/// One operand of a step, as the plan sees its blocks.
#[derive(Debug, Clone, Default)]
pub struct OperandPlan {
    /// Matrix view of each block (None: its strides need a transpose).
    pub mats: Vec<Option<MatShape>>,
    /// The blocks without a matrix view whose free side (A's rows, B's columns) fuses into
    /// two strides, ascending, with their view as strided sub-matrices (most steps: none).
    pub splits: Vec<(u32, SplitShape)>,
    /// Buffer offset of each block.
    pub offsets: Vec<usize>,
    /// Blocks that need a transpose and feed several single/batched GEMMs are transposed
    /// once per step into a cache: per block, its offset there.
    pub cache: Vec<Option<usize>>,
    /// The cache's length.
    pub cache_len: usize,
    /// Per block: its copy into a row-major matrix of its own (members and the transpose
    /// cache) in the step's [`Packs`]; `u32::MAX` for a block used in place.
    pub block_pack: Vec<u32>,
}

impl OperandPlan {
    /// Block `b`'s view as strided sub-matrices, if it has one (see [`OperandPlan::splits`]).
    pub fn split_of(&self, b: u32) -> Option<&SplitShape> {
        if self.splits.is_empty() {
            return None;
        }
        let i = self.splits.binary_search_by_key(&b, |x| x.0).ok()?;
        Some(&self.splits[i].1)
    }

    pub(super) fn new<T: Scalar>(t: &DynTensor<T>, g: &Geometry, side: Side) -> Self {
        let (rows, cols) = g.mat_axes(side);
        let mats: Vec<Option<MatShape>> = t
            .blocks()
            .iter()
            .map(|x| mat_shape(&x.layout, rows, cols))
            .collect();
        let splits: Vec<(u32, SplitShape)> = t
            .blocks()
            .iter()
            .zip(&mats)
            .enumerate()
            .filter(|(_, (_, m))| m.is_none())
            .filter_map(|(i, (x, _))| {
                let s = split_shape(&x.layout, rows, cols, side == Side::A, SPLIT_MIN_ROW)?;
                Some((i as u32, s))
            })
            .collect();
        OperandPlan {
            mats,
            splits,
            offsets: t.blocks().iter().map(|x| x.layout.offset).collect(),
            cache: Vec::new(),
            cache_len: 0,
            block_pack: Vec::new(),
        }
    }
}

impl StepPlan {
    /// A plan with its pairs, output keys, operands and keys, nothing decided yet.
    pub(super) fn undecided(
        desc: StepDesc,
        geometry: Geometry,
        (pairs, out_keys): (Vec<PairGemm>, Arc<[BlockKey]>),
        operands: [OperandPlan; 2],
        keys: Arc<Keys>,
    ) -> StepPlan {
        StepPlan {
            desc,
            geometry,
            pairs,
            out_keys,
            out_len: 0,
            flops: 0.0,
            operands,
            c_mats: Vec::new(),
            c_offsets: Vec::new(),
            groups: Vec::new(),
            components: Components::default(),
            scratch_elems: 0,
            out_index: Arc::new(BlockIndex::new(Vec::new())),
            zero_blocks: Vec::new(),
            packs: Packs::default(),
            c_pack: Vec::new(),
            members: Vec::new(),
            splits: Vec::new(),
            thin: Vec::new(),
            keys,
        }
    }

    /// The plan of one operand.
    pub fn operand(&self, side: Side) -> &OperandPlan {
        &self.operands[side.index()]
    }
    /// The layout of output block `i` in the output buffer.
    pub fn out_layout(&self, i: usize) -> &Layout {
        &self.out_index.blocks()[i].layout
    }
    /// Kernel calls of this step.
    pub fn kernel_calls(&self) -> usize {
        self.groups.iter().map(Group::kernel_calls).sum()
    }
    /// Predicted time of this step, seconds.
    pub fn predicted_s(&self) -> f64 {
        self.groups.iter().map(|g| g.predicted_s).sum()
    }
}

/// The shortest sub-matrix rows (or columns) worth a sub-GEMM each when a block is read as
/// strided sub-matrices ([`SplitShape`]): copying rows this long runs near memory speed,
/// while a sub-GEMM's call costs ~20 ns whatever its size (measured on the MPO steps:
/// 1 x 58 x 2 sub-GEMMs lost to copying the block, 1 x 145 x 3 won).
const SPLIT_MIN_ROW: usize = 128;

/// A step's hazard-free sets of groups (groups in different sets write disjoint output
/// blocks), each ascending, numbered by their first group: one list, no allocation per set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Components {
    /// Every group, set after set.
    pub(super) groups: Vec<u32>,
    /// Where each set starts in `groups`, and the end.
    pub(super) starts: Vec<u32>,
}

impl Components {
    /// Number of sets.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }
    /// Whether there is no set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The sets in order, each its groups ascending.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u32]> + '_ {
        (0..self.len()).map(move |c| &self[c])
    }
    /// Approximate memory held, in bytes.
    pub fn approx_bytes(&self) -> usize {
        (self.groups.len() + self.starts.len()) * 4
    }
}

impl std::ops::Index<usize> for Components {
    type Output = [u32];
    fn index(&self, c: usize) -> &[u32] {
        &self.groups[self.starts[c] as usize..self.starts[c + 1] as usize]
    }
}
