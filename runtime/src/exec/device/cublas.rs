//! The one row-major -> column-major adapter: cuBLAS arguments for a row-major product.

use super::{Accum, GemmOp, Ptr, Trans};
use crate::view::MatShape;

/// A row-major-strided matrix as cuBLAS sees it: `(op needed to get X^T, ld)` when the
/// caller wants `X^T`, or `(op to get X, ld)` when it wants X. None when no unit stride.
pub(super) fn form(x: &MatShape, want_transposed: bool) -> Option<(Trans, usize)> {
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
    accum: Accum,
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
            accum,
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
            accum,
        })
    } else {
        None
    }
}
