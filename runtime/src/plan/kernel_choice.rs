//! Which kernel runs each GEMM a plan issues: the tiny kernel (a plain loop, for products too
//! small or too thin for a library call to pay its fixed cost) or faer. Decided here, from
//! what the plan fixes; the executors ask these functions and `explain` prints their answer.
//! The rules and their measurements are [`tiny_wins`]' and [`thin_wins`]'.

use super::GroupKind;
use crate::kernel::{thin_wins, tiny_wins, RawMat, RawMatMut, THIN_MAX_N};

/// The kernel of a GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The tiny kernel.
    Tiny,
    /// faer.
    Faer,
    /// The tiny kernel where the views are contiguous as [`thin_wins`] asks (known when the
    /// operands are packed or read in place), else faer.
    ThinIfContiguous,
}

impl Kernel {
    /// A short name for `explain`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Tiny => "tiny",
            Kernel::Faer => "faer",
            Kernel::ThinIfContiguous => "tiny if contiguous, else faer",
        }
    }
}

/// The kernel of a group's member GEMMs (`m x n x k` each): batched members small enough
/// for [`tiny_wins`] on the tiny kernel, every other GEMM by its views ([`view_kernel`]).
pub fn member_kernel(kind: GroupKind, m: usize, n: usize, k: usize) -> Kernel {
    if kind == GroupKind::Batched && tiny_wins(m, n, k) {
        Kernel::Tiny
    } else {
        by_shape(m, n, k)
    }
}

/// The kernel of the sub-matrix GEMMs of a split operand (`m x n x k` each).
pub fn split_kernel(m: usize, n: usize, k: usize) -> Kernel {
    if tiny_wins(m, n, k) {
        Kernel::Tiny
    } else {
        by_shape(m, n, k)
    }
}

/// The kernel of a coefficient-form GEMM (`m x n x k`).
pub fn coefficient_kernel(m: usize, n: usize, k: usize) -> Kernel {
    if tiny_wins(m, n, k) {
        Kernel::Tiny
    } else {
        Kernel::Faer
    }
}

/// Whether a GEMM that [`Kernel::ThinIfContiguous`] (or any not on the tiny kernel) leaves
/// to its views runs on the tiny kernel: [`thin_wins`] on them.
pub fn view_kernel<T>(c: &RawMatMut<T>, a: &RawMat<T>, b: &RawMat<T>) -> Kernel {
    if thin_wins(c, a, b) {
        Kernel::Tiny
    } else {
        Kernel::Faer
    }
}

/// What a shape alone says of [`thin_wins`]: a thin C (at most [`THIN_MAX_N`] columns,
/// `n * k <= 16`) or a single row may run on the tiny kernel, by its views.
fn by_shape(m: usize, n: usize, k: usize) -> Kernel {
    if (n <= THIN_MAX_N && n * k <= 16) || m == 1 {
        Kernel::ThinIfContiguous
    } else {
        Kernel::Faer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::Conj;
    use crate::view::MatShape;

    #[test]
    fn batched_tiny_products_run_on_the_tiny_kernel_and_large_ones_on_faer() {
        assert_eq!(member_kernel(GroupKind::Batched, 4, 4, 1), Kernel::Tiny);
        // not batched: faer, or by its views where C is thin
        assert_eq!(member_kernel(GroupKind::Grouped, 4, 4, 1), Kernel::Faer);
        assert_eq!(
            member_kernel(GroupKind::Grouped, 4, 2, 1),
            Kernel::ThinIfContiguous
        );
        assert_eq!(member_kernel(GroupKind::Batched, 64, 64, 64), Kernel::Faer);
        // long and thin (the MPO steps at large m): by the views
        assert_eq!(
            member_kernel(GroupKind::FreeAxis, 21025, 3, 4),
            Kernel::ThinIfContiguous
        );
        assert_eq!(split_kernel(2, 2, 2), Kernel::Tiny);
        assert_eq!(coefficient_kernel(128, 128, 128), Kernel::Faer);
        assert_eq!(coefficient_kernel(1, 8, 8), Kernel::Tiny);
    }

    #[test]
    fn a_thin_gemm_runs_on_the_tiny_kernel_only_on_contiguous_unconjugated_views() {
        let (a, b, mut c) = (vec![0.0f64; 400], vec![0.0f64; 8], vec![0.0f64; 200]);
        let cm = RawMatMut::new(c.as_mut_ptr(), MatShape::row_major(100, 2));
        // A 100 x 4 column-major (its columns contiguous), B 4 x 2
        let am = RawMat::new(
            a.as_ptr(),
            MatShape {
                m: 100,
                rs: 1,
                n: 4,
                cs: 100,
            },
        );
        let bm = RawMat::new(b.as_ptr(), MatShape::row_major(4, 2));
        assert_eq!(view_kernel(&cm, &am, &bm), Kernel::Tiny);
        // A row-major: its columns strided, faer
        let ar = RawMat::new(a.as_ptr(), MatShape::row_major(100, 4));
        assert_eq!(view_kernel(&cm, &ar, &bm), Kernel::Faer);
        // conjugated operands stay with faer
        assert_eq!(
            view_kernel(&cm, &am.with_conj(Conj::Yes), &bm),
            Kernel::Faer
        );
    }
}
