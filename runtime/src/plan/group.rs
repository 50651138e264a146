//! Groups: the plan's nodes. Each group is one kernel call covering one or more block pairs.

use crate::step::Side;
use crate::view::{MatShape, SplitShape};
use std::fmt;

/// How a group's block pairs become kernel calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupKind {
    /// One block pair, one GEMM.
    Single,
    /// Same-shape pairs, one batched call (strided or pointer-array batched on a GPU).
    Batched,
    /// Pairs of different shapes writing different output blocks, one grouped call
    /// (cuBLAS grouped-batched GEMM on a GPU; a loop of GEMMs on a CPU).
    Grouped,
    /// One contracted block key; the A blocks sharing it are stacked as rows and the B blocks
    /// sharing it as columns: one taller (and wider) GEMM. Every output tile is a real block.
    FreeAxis,
    /// One output block; its contributing pairs concatenated along k: one wider-K GEMM.
    ContractionAxis,
    /// A whole coupled sector whose rows x inner x columns are all populated: one dense GEMM.
    Rectangle,
}

impl GroupKind {
    /// Lower-case name for printing.
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Single => "single",
            GroupKind::Batched => "batched",
            GroupKind::Grouped => "grouped",
            GroupKind::FreeAxis => "free-axis",
            GroupKind::ContractionAxis => "contraction-axis",
            GroupKind::Rectangle => "rectangle",
        }
    }
    /// Every kind.
    pub const ALL: [GroupKind; 6] = [
        GroupKind::Single,
        GroupKind::Batched,
        GroupKind::Grouped,
        GroupKind::FreeAxis,
        GroupKind::ContractionAxis,
        GroupKind::Rectangle,
    ];
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a kernel reaches one operand of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Zero-copy: the group's blocks already form one strided matrix in the tensor's buffer.
    Direct(MatShape, usize),
    /// Gathered into (or, for the output, scattered from) a contiguous scratch matrix.
    Packed,
}

impl Access {
    /// Whether this access needs a copy.
    pub fn is_packed(&self) -> bool {
        matches!(self, Access::Packed)
    }
    /// `zero-copy` or `packed`.
    pub fn word(&self) -> &'static str {
        match self {
            Access::Direct(..) => "zero-copy",
            Access::Packed => "packed",
        }
    }
}

/// Where a block sits in a group's matrix: block position and its row/column offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Block position in its tensor.
    pub block: u32,
    /// For an output place: whether this is the first write to that block in execution order
    /// (it may then overwrite, BLAS beta = 0, instead of adding into a zeroed block); false for
    /// an operand's place and until the step is finished.
    pub first: bool,
    /// First row in the group's matrix.
    pub row: usize,
    /// First column in the group's matrix.
    pub col: usize,
}

/// How one member GEMM reaches one of its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// In place: the block's offset in its buffer and its matrix view's row and column strides.
    Direct {
        /// Offset in the buffer.
        at: usize,
        /// Row stride.
        rs: isize,
        /// Column stride.
        cs: isize,
    },
    /// Its row-major copy at this offset of the step's transpose cache (operands only).
    Cached(usize),
    /// Copied at each call by this entry of the step's [`Packs`](crate::view::Packs): into
    /// scratch for an operand, out of it for the output.
    Packed(u32),
    /// In place as strided sub-matrices, one GEMM each: this entry of the step's
    /// [`splits`](super::StepPlan::splits) (operands only).
    Split(u32),
}

/// A member's operand block read in place as sub-matrices (see [`SplitShape`]): the block's
/// offset in its buffer and the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitAt {
    /// Offset of the first sub-matrix in the buffer.
    pub at: usize,
    /// The sub-matrices.
    pub split: SplitShape,
}

/// One member GEMM of a single, batched or grouped group, as the executor runs it: how it
/// reaches A's block, B's and the output's, in one record. A step's records lie in execution
/// order, so running a group reads one list front to back instead of each block's view,
/// scattered over the plan (which, among the step's data, misses the cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// A's block.
    pub a: Reach,
    /// B's block.
    pub b: Reach,
    /// The output block.
    pub c: Reach,
    /// Whether this is the first write to its output block (see [`Place::first`]).
    pub first: bool,
}

/// One node of a step's plan.
#[derive(Debug, Clone)]
pub struct Group {
    /// The kind.
    pub kind: GroupKind,
    /// The block pairs it covers (positions in the step's pair list).
    pub pairs: Vec<u32>,
    /// Rows of the (concatenated) GEMM; for `Batched`, of each member; for `Grouped`, of the
    /// largest member (each member's shape is its pair's).
    pub m: usize,
    /// Columns.
    pub n: usize,
    /// Inner dimension.
    pub k: usize,
    /// The places of A's blocks, then of B's, then of the output's, in one list (one
    /// allocation per group): read them with [`Group::a`], [`Group::b`] and [`Group::c`].
    pub(crate) place_list: Vec<Place>,
    /// Where B's places and the output's start in `place_list`.
    pub(crate) ends: [u32; 2],
    /// How A is reached (concatenating kinds; per member otherwise).
    pub a_access: Access,
    /// How B is reached.
    pub b_access: Access,
    /// How the output is reached.
    pub c_access: Access,
    /// Useful flops.
    pub flops: f64,
    /// Flops spent on structural zeros (zero by construction for every kind).
    pub wasted_flops: f64,
    /// Elements gathered or scattered.
    pub packed_elems: usize,
    /// Predicted time of this group, seconds.
    pub predicted_s: f64,
    /// Member kinds: members that read an operand block in place as strided sub-GEMMs
    /// instead of copying it ([`Reach::Split`]).
    pub split_members: u32,
    /// Predicted time of its pairs as separate GEMMs, seconds.
    pub uncoalesced_s: f64,
    /// Concatenating kinds: where the precomputed copies of the packed operands (A, B) and
    /// of the packed output start in the step's [`Packs`](crate::view::Packs), one per place
    /// in order; `u32::MAX` for an operand reached in place (and for member kinds).
    pub packs: [u32; 3],
    /// Concatenating kinds: whether the packed A, B and output are column-major in scratch
    /// (chosen per operand when that makes the copies' contiguous rows longer, as on the MPO
    /// steps, whose rows run along the blocks' last axis); row-major otherwise.
    pub packed_col_major: [bool; 3],
    /// Member kinds: where the group's member records (one per pair, in order) start in the
    /// step's [`StepPlan::members`](super::StepPlan::members); `u32::MAX` for concatenating
    /// kinds.
    pub members: u32,
    /// A contraction-axis group whose other two extents are thin reads the operand on this
    /// side in place, no copy (the MPO steps: `W0 * X`, `Y * W1`): its places' views start
    /// here in the step's [`thin`](super::StepPlan::thin), one per place in order. None:
    /// every operand is reached as [`Group::a_access`] and [`Group::b_access`] say.
    pub thin: Option<(crate::step::Side, u32)>,
}

impl Group {
    /// A group of `kind` over `pairs` with GEMM extents `[m, n, k]` and `flops` useful flops:
    /// no places yet, every operand packed, nothing priced, copied or read in place (the
    /// planner's later passes set those).
    pub(crate) fn new(kind: GroupKind, pairs: Vec<u32>, [m, n, k]: [usize; 3], flops: f64) -> Self {
        Group {
            kind,
            pairs,
            m,
            n,
            k,
            place_list: Vec::new(),
            ends: [0; 2],
            a_access: Access::Packed,
            b_access: Access::Packed,
            c_access: Access::Packed,
            flops,
            wasted_flops: 0.0,
            packed_elems: 0,
            predicted_s: 0.0,
            split_members: 0,
            uncoalesced_s: 0.0,
            packs: [u32::MAX; 3],
            packed_col_major: [false; 3],
            members: u32::MAX,
            thin: None,
        }
    }

    /// Whether the group runs its pairs as separate member GEMMs (single, batched, grouped).
    pub fn is_members(&self) -> bool {
        matches!(
            self.kind,
            GroupKind::Single | GroupKind::Batched | GroupKind::Grouped
        )
    }

    /// Kernel calls this group issues (one for every kind).
    pub fn kernel_calls(&self) -> usize {
        1
    }

    /// Sets the places of A's, B's and the output's blocks.
    pub(crate) fn set_places(&mut self, [a, b, c]: [&[Place]; 3]) {
        self.place_list.clear();
        self.place_list.reserve_exact(a.len() + b.len() + c.len());
        for x in [a, b, c] {
            self.place_list.extend_from_slice(x);
        }
        self.ends = [a.len() as u32, (a.len() + b.len()) as u32];
    }

    /// A blocks and their places in the `m x k` matrix (concatenating kinds), or one per member.
    pub fn a(&self) -> &[Place] {
        &self.place_list[..self.ends[0] as usize]
    }

    /// B blocks and their places in the `k x n` matrix.
    pub fn b(&self) -> &[Place] {
        &self.place_list[self.ends[0] as usize..self.ends[1] as usize]
    }

    /// Output blocks and their places in the `m x n` matrix.
    pub fn c(&self) -> &[Place] {
        &self.place_list[self.ends[1] as usize..]
    }

    /// The output's places, to mark first writes.
    pub(crate) fn c_mut(&mut self) -> &mut [Place] {
        &mut self.place_list[self.ends[1] as usize..]
    }

    /// The blocks of one operand and their places.
    pub fn places(&self, side: Side) -> &[Place] {
        match side {
            Side::A => self.a(),
            Side::B => self.b(),
        }
    }

    /// How one operand is reached.
    pub fn access(&self, side: Side) -> &Access {
        match side {
            Side::A => &self.a_access,
            Side::B => &self.b_access,
        }
    }

    /// Why the cost model chose it, from the numbers the group keeps (written when asked, so
    /// that planning formats nothing).
    pub fn reason(&self) -> String {
        let mut s = self.reason_of_kind();
        if self.split_members > 0 {
            let k = self.split_members;
            s.push_str(&format!(
                "; {k} member(s) read a block in place as strided sub-GEMMs (no copy)"
            ));
        }
        s
    }

    /// [`Group::reason`] without the note on split members.
    fn reason_of_kind(&self) -> String {
        let (n, us, sep) = (
            self.pairs.len(),
            self.predicted_s * 1e6,
            self.uncoalesced_s * 1e6,
        );
        let what = match self.kind {
            GroupKind::Single => {
                return "no coalescing candidate predicted faster than one GEMM".into();
            }
            GroupKind::Batched => {
                return format!(
                    "{n} pairs of shape {}x{}x{}: one batched call predicted {us:.2} us vs {sep:.2} us as {n} GEMMs",
                    self.m, self.n, self.k
                );
            }
            GroupKind::Grouped => {
                return format!(
                    "{n} pairs of different shapes, each output block once: one grouped call predicted {us:.2} us vs {sep:.2} us as {n} GEMMs"
                );
            }
            GroupKind::FreeAxis => format!(
                "one contracted block shared: {} A blocks stacked as rows, {} B blocks as columns",
                self.a().len(),
                self.b().len()
            ),
            GroupKind::ContractionAxis => {
                format!("one output block: {n} contributions concatenated along k")
            }
            GroupKind::Rectangle => format!(
                "coupled sector fully populated ({} A x {} B blocks, every pair present)",
                self.a().len(),
                self.b().len()
            ),
        };
        let word = |acc: &Access, i: usize| match (acc, self.packed_col_major[i]) {
            _ if self.thin.is_some_and(|(side, _)| side.index() == i) => "read in place (thin)",
            (Access::Packed, true) => "packed column-major",
            _ => acc.word(),
        };
        format!(
            "{what}; one {}x{}x{} GEMM predicted {us:.2} us vs {sep:.2} us as {n} GEMMs; A {}, B {}, C {}",
            self.m,
            self.n,
            self.k,
            word(&self.a_access, 0),
            word(&self.b_access, 1),
            word(&self.c_access, 2)
        )
    }
}

/// Kernel calls by group kind, as executed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// Calls per [`GroupKind`], in [`GroupKind::ALL`] order.
    pub by_kind: [usize; GroupKind::ALL.len()],
    /// Block pairs covered.
    pub pairs: usize,
}

impl KernelCounts {
    /// Calls of one kind.
    pub fn of(&self, k: GroupKind) -> usize {
        self.by_kind[k as usize]
    }
    /// All calls.
    pub fn total(&self) -> usize {
        self.by_kind.iter().sum()
    }
    /// Adds another count.
    pub fn add(&mut self, o: &KernelCounts) {
        for (x, y) in self.by_kind.iter_mut().zip(o.by_kind) {
            *x += y;
        }
        self.pairs += o.pairs;
    }
}
