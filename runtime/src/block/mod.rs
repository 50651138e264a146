//! The block-sparse tensor: legs, a total charge, and blocks as strided views into one buffer.

mod assign;
mod dense;
mod elementwise;
mod identity;
mod index;
mod permute;
mod sum;
mod tensor;
mod trace;

pub use index::BlockIndex;
pub(crate) use index::{allowed_keys, block_charge, check_rank, common_symmetry};
use index::{check_charge, check_key, visit_elements};
pub use tensor::Tensor;

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::symmetry::{Charge, Leg, Symmetry};
use crate::view::Layout;
use std::sync::Arc;

/// Sector positions of a block, one per leg.
pub type BlockKey = std::sync::Arc<[u32]>;

/// One stored block: its sectors and where it lives in the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Sector position on each leg.
    pub key: BlockKey,
    /// Dims (the sectors' dims), strides and offset in the tensor's buffer.
    pub layout: Layout,
}

/// The most elements one tensor may hold (an allocation of at most `isize::MAX` bytes).
pub(crate) fn max_elements<T>() -> usize {
    isize::MAX as usize / std::mem::size_of::<T>().max(1)
}

/// The product of `dims`, or None when it overflows.
pub(crate) fn checked_len(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

/// A tensor's legs in words, for errors: `a tensor of dense shape [..]`.
pub(crate) fn describe(legs: &[Leg]) -> String {
    let dims: Vec<usize> = legs.iter().map(|l| l.space.dim()).collect();
    format!("a tensor of {} legs, dense shape {dims:?}", legs.len())
}

/// `n` zero elements, allocated zeroed (fresh pages cost no memset), or `TooLarge` naming
/// `what` when the memory is not there: never an abort.
pub(crate) fn zeroed_buffer<T: Scalar>(n: usize, what: impl FnOnce() -> String) -> Result<Vec<T>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let too_large = |what: String| Error::TooLarge {
        what,
        reason: format!(
            "cannot allocate {n} elements ({:.2} GB)",
            n as f64 * std::mem::size_of::<T>() as f64 / 1e9
        ),
    };
    let Ok(layout) = std::alloc::Layout::array::<T>(n) else {
        return Err(too_large(what()));
    };
    // SAFETY: `layout` has a nonzero size (n > 0 and every Scalar is nonzero-sized).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return Err(too_large(what()));
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `n` elements of
    // `T`; every Scalar (f64, f32, Complex64) is valid, and zero, as all-zero bytes.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Whether a new tensor gets its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Buffer {
    /// Sized and zero-filled.
    Zeroed,
    /// None: a structure only (planning).
    None,
}

/// A symmetric block-sparse tensor whose rank is known at run time.
#[derive(Debug, Clone)]
pub struct DynTensor<T> {
    legs: Vec<Leg>,
    symmetry: Symmetry,
    charge: Charge,
    st: Arc<BlockIndex>,
    data: Vec<T>,
    /// Fingerprint of the structure (legs, charge, keys, layouts), computed on first use.
    fp: std::sync::OnceLock<u64>,
    /// Slices known to be identity matrices ([`Self::mark_identity`]): `(leg, dense index)`,
    /// sorted; forgotten when the values change.
    identity: Vec<(u32, u32)>,
}

impl<T: Scalar> DynTensor<T> {
    /// A tensor storing every block the selection rule allows, all zero.
    pub fn zeros(legs: Vec<Leg>, charge: Charge) -> Result<Self> {
        let symmetry = common_symmetry(&legs)?;
        Self::zeros_in(&symmetry, legs, charge)
    }

    /// Like [`Self::zeros`] with the symmetry given (needed for rank 0, where no leg names it).
    pub fn zeros_in(symmetry: &Symmetry, legs: Vec<Leg>, charge: Charge) -> Result<Self> {
        if let Some(l) = legs.iter().position(|l| l.space.symmetry() != symmetry) {
            return Err(Error::SymmetryMismatch {
                what: format!("leg {l}"),
                left: symmetry.to_string(),
                right: legs[l].space.symmetry().to_string(),
            });
        }
        check_rank(legs.len())?;
        let symmetry = symmetry.clone();
        check_charge(&symmetry, &charge)?;
        let keys = allowed_keys(&legs, &symmetry, &charge);
        Self::from_valid_keys(legs, symmetry, charge, keys)
    }

    /// A tensor storing exactly the listed blocks (sector positions per leg), all zero.
    pub fn zeros_with_blocks(
        legs: Vec<Leg>,
        charge: Charge,
        blocks: &[Vec<usize>],
    ) -> Result<Self> {
        let symmetry = common_symmetry(&legs)?;
        Self::zeros_with_blocks_in(&symmetry, legs, charge, blocks)
    }

    /// Like [`Self::zeros_with_blocks`] with the symmetry given (needed for rank 0).
    pub fn zeros_with_blocks_in(
        symmetry: &Symmetry,
        legs: Vec<Leg>,
        charge: Charge,
        blocks: &[Vec<usize>],
    ) -> Result<Self> {
        check_rank(legs.len())?;
        if let Some(l) = legs.iter().position(|l| l.space.symmetry() != symmetry) {
            return Err(Error::SymmetryMismatch {
                what: format!("leg {l}"),
                left: symmetry.to_string(),
                right: legs[l].space.symmetry().to_string(),
            });
        }
        let symmetry = symmetry.clone();
        check_charge(&symmetry, &charge)?;
        let mut keys: Vec<BlockKey> = Vec::with_capacity(blocks.len());
        for b in blocks {
            keys.push(check_key(&legs, &symmetry, &charge, b)?);
        }
        keys.sort();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::InvalidBlock {
                key: w[0].iter().map(|&x| x as usize).collect(),
                reason: "listed twice".into(),
            });
        }
        Self::from_valid_keys(legs, symmetry, charge, keys)
    }

    /// Checks a block list against legs and charge without allocating the tensor.
    pub fn validate_blocks(legs: &[Leg], charge: &Charge, blocks: &[Vec<usize>]) -> Result<()> {
        let symmetry = common_symmetry(legs)?;
        check_charge(&symmetry, charge)?;
        let mut keys = Vec::with_capacity(blocks.len());
        for b in blocks {
            keys.push(check_key(legs, &symmetry, charge, b)?);
        }
        keys.sort();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::InvalidBlock {
                key: w[0].iter().map(|&x| x as usize).collect(),
                reason: "listed twice".into(),
            });
        }
        Ok(())
    }

    /// A tensor with blocks from `blocks` (or all allowed when `None`), element values from `f(dense index)`.
    pub fn from_fn(
        legs: Vec<Leg>,
        charge: Charge,
        blocks: Option<&[Vec<usize>]>,
        mut f: impl FnMut(&[usize]) -> T,
    ) -> Result<Self> {
        let mut t = match blocks {
            Some(b) => Self::zeros_with_blocks(legs, charge, b)?,
            None => Self::zeros(legs, charge)?,
        };
        t.fill_with(|idx| f(idx));
        Ok(t)
    }

    /// Builds from sorted, already-validated keys, blocks contiguous row-major in key order;
    /// sizes checked (`TooLarge`, never an overflow or an abort).
    pub(crate) fn from_valid_keys(
        legs: Vec<Leg>,
        symmetry: Symmetry,
        charge: Charge,
        keys: Vec<BlockKey>,
    ) -> Result<Self> {
        Self::from_valid_keys_sized(legs, symmetry, charge, keys, Buffer::Zeroed)
    }

    fn from_valid_keys_sized(
        legs: Vec<Leg>,
        symmetry: Symmetry,
        charge: Charge,
        keys: Vec<BlockKey>,
        buffer: Buffer,
    ) -> Result<Self> {
        let mut blocks = Vec::with_capacity(keys.len());
        let mut offset = 0usize;
        let limit = max_elements::<T>();
        for key in keys {
            let dims: Vec<usize> = key
                .iter()
                .zip(&legs)
                .map(|(&s, l)| l.space.dim_of(s as usize))
                .collect();
            let next = checked_len(&dims)
                .and_then(|n| offset.checked_add(n))
                .filter(|&n| n <= limit)
                .ok_or_else(|| Error::TooLarge {
                    what: describe(&legs),
                    reason: format!(
                        "block {:?} of dims {dims:?} takes the tensor past {limit} elements",
                        key.iter().map(|&x| x as usize).collect::<Vec<_>>()
                    ),
                })?;
            let layout = Layout::row_major(&dims, offset);
            offset = next;
            blocks.push(Block { key, layout });
        }
        let data = match buffer {
            Buffer::Zeroed => zeroed_buffer(offset, || describe(&legs))?,
            Buffer::None => Vec::new(),
        };
        Ok(DynTensor {
            legs,
            symmetry,
            charge,
            st: Arc::new(BlockIndex::new(blocks)),
            data,
            fp: Default::default(),
            identity: Vec::new(),
        })
    }

    /// The same tensor with every block re-stored so that its axes lie in memory in
    /// `axis_order` (slowest first): `[r-1, .., 0]` gives column-major blocks.
    pub fn relayout(&self, axis_order: &[usize]) -> Result<Self> {
        let r = self.rank();
        let mut seen = vec![false; r];
        if axis_order.len() != r
            || axis_order
                .iter()
                .any(|&a| a >= r || std::mem::replace(&mut seen[a], true))
        {
            return Err(Error::NotAPermutation {
                order: axis_order.to_vec(),
                rank: r,
            });
        }
        let mut data = vec![T::zero(); self.st.blocks.iter().map(|b| b.layout.len()).sum()];
        let mut blocks = Vec::with_capacity(self.st.blocks.len());
        let mut offset = 0;
        for b in &self.st.blocks {
            let mem_dims: Vec<usize> = axis_order.iter().map(|&a| b.layout.dims[a]).collect();
            let mem_strides = crate::view::row_major_strides(&mem_dims);
            let mut strides = crate::view::Strides::from_elem(0, r);
            for (k, &a) in axis_order.iter().enumerate() {
                strides[a] = mem_strides[k];
            }
            let layout = Layout {
                dims: b.layout.dims.clone(),
                strides,
                offset,
            };
            if !layout.is_empty() {
                // SAFETY: source block inside `self.data`; destination inside `data` (fresh, disjoint).
                unsafe {
                    crate::view::strided_copy(
                        &layout.dims,
                        self.data.as_ptr().add(b.layout.offset),
                        &b.layout.strides,
                        data.as_mut_ptr().add(offset),
                        &layout.strides,
                        crate::view::CopyMode::Set,
                    );
                }
            }
            offset += layout.len();
            blocks.push(Block {
                key: b.key.clone(),
                layout,
            });
        }
        Ok(Self::from_parts(
            self.legs.clone(),
            self.symmetry.clone(),
            self.charge.clone(),
            blocks,
            data,
        ))
    }

    /// The structure alone (legs, charge, blocks, layouts) with no buffer: for planning only.
    pub(crate) fn skeleton(&self) -> Self {
        Self::skeleton_from(
            self.legs.clone(),
            self.symmetry.clone(),
            self.charge.clone(),
            self.st.blocks.clone(),
        )
    }

    /// A structure-only tensor from blocks with layouts.
    pub(crate) fn skeleton_from(
        legs: Vec<Leg>,
        symmetry: Symmetry,
        charge: Charge,
        blocks: Vec<Block>,
    ) -> Self {
        DynTensor {
            legs,
            symmetry,
            charge,
            st: Arc::new(BlockIndex::new(blocks)),
            data: Vec::new(),
            fp: Default::default(),
            identity: Vec::new(),
        }
    }

    /// A structure-only tensor from sorted keys, blocks row-major.
    pub(crate) fn skeleton_keys(
        legs: Vec<Leg>,
        symmetry: Symmetry,
        charge: Charge,
        keys: Vec<BlockKey>,
    ) -> Result<Self> {
        Self::from_valid_keys_sized(legs, symmetry, charge, keys, Buffer::None)
    }

    /// Same structure (legs, charge, blocks, layouts: the block index shared), all elements
    /// zero.
    pub fn zeros_like(&self) -> Self {
        DynTensor {
            legs: self.legs.clone(),
            symmetry: self.symmetry.clone(),
            charge: self.charge.clone(),
            st: self.st.clone(),
            data: vec![T::zero(); self.data.len()],
            fp: if self.identity.is_empty() {
                self.fp.clone()
            } else {
                Default::default()
            },
            identity: Vec::new(),
        }
    }

    /// Sets every stored element to `f(dense index)`.
    pub fn fill_with(&mut self, mut f: impl FnMut(&[usize]) -> T) {
        self.forget_identity();
        let data = &mut self.data;
        visit_elements(&self.legs, &self.st.blocks, |idx, addr| data[addr] = f(idx));
    }

    /// Calls `f(dense index, value)` for every stored element.
    pub fn for_each_element(&self, mut f: impl FnMut(&[usize], T)) {
        visit_elements(&self.legs, &self.st.blocks, |idx, addr| {
            f(idx, self.data[addr])
        });
    }

    /// The legs.
    pub fn legs(&self) -> &[Leg] {
        &self.legs
    }
    /// Number of legs.
    pub fn rank(&self) -> usize {
        self.legs.len()
    }
    /// The symmetry shared by all legs.
    pub fn symmetry(&self) -> &Symmetry {
        &self.symmetry
    }
    /// The total charge.
    pub fn charge(&self) -> &Charge {
        &self.charge
    }
    /// Stored blocks, sorted by key.
    pub fn blocks(&self) -> &[Block] {
        &self.st.blocks
    }
    /// Number of stored blocks.
    pub fn num_blocks(&self) -> usize {
        self.st.blocks.len()
    }
    /// Position in [`Self::blocks`] of the block with these sector positions.
    pub fn find_block(&self, key: &[u32]) -> Option<usize> {
        self.st.find(key)
    }
    /// The whole buffer.
    pub fn data(&self) -> &[T] {
        &self.data
    }
    /// The same structure with another buffer (same length as the layouts need).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn with_data(&self, data: Vec<T>) -> Self {
        DynTensor {
            legs: self.legs.clone(),
            symmetry: self.symmetry.clone(),
            charge: self.charge.clone(),
            st: self.st.clone(),
            data,
            fp: Default::default(),
            identity: Vec::new(),
        }
    }

    /// Takes the buffer out (to be written through raw pointers, then restored).
    pub(crate) fn take_data(&mut self) -> Vec<T> {
        self.forget_identity();
        std::mem::take(&mut self.data)
    }
    /// Puts back a buffer taken by [`Self::take_data`] (same length).
    pub(crate) fn restore_data(&mut self, data: Vec<T>) {
        self.data = data;
    }
    /// Gives up the buffer (for reuse).
    pub(crate) fn into_data(self) -> Vec<T> {
        self.data
    }
    /// The value of a rank-0 tensor (a full contraction): its one element, or zero when its
    /// charge forbids any; `RankMismatch` for a tensor with legs.
    pub fn scalar(&self) -> Result<T> {
        if self.rank() != 0 {
            return Err(Error::RankMismatch {
                what: "scalar() of a tensor".into(),
                expected: 0,
                found: self.rank(),
            });
        }
        Ok(self.data.first().copied().unwrap_or_else(T::zero))
    }
    /// The whole buffer, mutable.
    pub fn data_mut(&mut self) -> &mut [T] {
        self.forget_identity();
        &mut self.data
    }
    /// Dense shape (sum of sector dims per leg).
    pub fn dense_shape(&self) -> Vec<usize> {
        self.legs.iter().map(|l| l.space.dim()).collect()
    }

    /// Copies block `key` out as a row-major `ndarray`, or `None` if not stored.
    pub fn block_array(&self, key: &[usize]) -> Option<ndarray::ArrayD<T>> {
        let k: Vec<u32> = key.iter().map(|&x| x as u32).collect();
        let b = &self.st.blocks[self.find_block(&k)?];
        let mut out = ndarray::ArrayD::from_elem(ndarray::IxDyn(&b.layout.dims), T::zero());
        let dst = crate::view::row_major_strides(&b.layout.dims);
        if !b.layout.is_empty() {
            // SAFETY: the block's layout lies inside `data`; `out` is row-major of the same dims.
            unsafe {
                crate::view::strided_copy(
                    &b.layout.dims,
                    self.data.as_ptr().add(b.layout.offset),
                    &b.layout.strides,
                    out.as_mut_ptr(),
                    &dst,
                    crate::view::CopyMode::Set,
                );
            }
        }
        Some(out)
    }

    /// Borrows every part at once: legs, symmetry, charge, blocks and buffer.
    pub(crate) fn parts(&self) -> (&[Leg], &Symmetry, &Charge, &[Block], &[T]) {
        (
            &self.legs,
            &self.symmetry,
            &self.charge,
            &self.st.blocks,
            &self.data,
        )
    }

    /// A tensor on a shared block index (planned outputs): no per-block allocation.
    pub(crate) fn from_shared(
        legs: Vec<Leg>,
        symmetry: Symmetry,
        charge: Charge,
        st: Arc<BlockIndex>,
        data: Vec<T>,
    ) -> Self {
        DynTensor {
            legs,
            symmetry,
            charge,
            st,
            data,
            fp: Default::default(),
            identity: Vec::new(),
        }
    }

    /// A tensor from explicit parts, validating layouts against the buffer.
    pub(crate) fn from_parts(
        legs: Vec<Leg>,
        symmetry: Symmetry,
        charge: Charge,
        blocks: Vec<Block>,
        data: Vec<T>,
    ) -> Self {
        debug_assert!(blocks.windows(2).all(|w| w[0].key < w[1].key));
        debug_assert!(blocks
            .iter()
            .all(|b| b.layout.span().is_none_or(|(_, hi)| hi <= data.len())));
        DynTensor {
            legs,
            symmetry,
            charge,
            st: Arc::new(BlockIndex::new(blocks)),
            data,
            fp: Default::default(),
            identity: Vec::new(),
        }
    }

    /// A fingerprint of the structure: element type, legs (spaces, kinds, flows), charge, block
    /// keys and layouts. Equal structures give equal fingerprints; computed once per tensor.
    pub fn structure_fingerprint(&self) -> u64 {
        *self.fp.get_or_init(|| {
            let mut h = self.type_hash();
            h.write(self.legs.len() as u64);
            for l in &self.legs {
                h.write(l.space.fingerprint());
                h.write(l.flow.sign() as u64);
            }
            for &q in self.charge.values() {
                h.write(q as u64);
            }
            h.write(self.st.blocks.len() as u64);
            h.write(self.st.fingerprint());
            for &(leg, i) in &self.identity {
                h.write(((leg as u64) << 32) | i as u64);
            }
            h.finish()
        })
    }

    /// Whether `other` stores exactly these blocks at exactly these places in its buffer, so
    /// that the two buffers can be combined element by element.
    pub fn same_layout(&self, other: &Self) -> bool {
        (Arc::ptr_eq(&self.st, &other.st) || self.st.blocks == other.st.blocks)
            && self.data.len() == other.data.len()
    }

    /// Whether every leg, the charge and the stored blocks equal `other`'s (values not compared).
    pub fn same_structure(&self, other: &Self) -> bool {
        self.legs == other.legs
            && self.charge == other.charge
            && self.st.blocks.len() == other.st.blocks.len()
            && self
                .st
                .blocks
                .iter()
                .zip(&other.st.blocks)
                .all(|(a, b)| a.key == b.key)
    }
}
