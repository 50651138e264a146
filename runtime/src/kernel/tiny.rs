//! A GEMM kernel for tiny shapes, where a library call's fixed cost dominates.

use super::{Accum, RawMat, RawMatMut};
use crate::scalar::{Conj, Scalar};

/// The largest `m*n*k` the tiny-GEMM kernel takes for any shape.
pub const TINY_MNK: usize = 64;

/// Whether batched members run on the tiny-GEMM kernel rather than faer: very small
/// products, and thin ones (`n*k <= 16`: B fits in registers; `m*k <= 8`: few long rows).
/// On isolated contiguous shapes faer is often as fast (`examples/kernel_probe`), but on the
/// MPO steps of the m = 512 workloads this rule measured 3-5% faster in the same run.
pub fn tiny_wins(m: usize, n: usize, k: usize) -> bool {
    let small = |x: usize, y: usize, lim: usize| x.checked_mul(y).is_some_and(|p| p <= lim);
    small(m, n, TINY_MNK) && small(m * n, k, TINY_MNK) || small(n, k, 16) || small(m, k, 8)
}

/// Whether a GEMM of any size runs faster on the tiny-GEMM kernel than on faer because it is
/// thin, judged on its views: C with at most [`THIN_MAX_N`] columns, row-major, and A's
/// columns contiguous (B, `n * k <= 16`, in registers, one pass down A and C); or a single
/// row of C, contiguous, from rows of B that are contiguous (a scaled sum of B's rows). The
/// MPO steps at large m are made of these (for example 21025 x 3 x 4 and 1 x 21025 x 3),
/// where faer ran 1.3-5x slower (`kernel_probe`); with 4 or more columns, or several rows
/// of C, faer was as fast or faster. Conjugated operands stay with faer.
pub fn thin_wins<T>(c: &RawMatMut<T>, a: &RawMat<T>, b: &RawMat<T>) -> bool {
    let (cs, k) = (c.shape, a.shape.n);
    if a.conj != Conj::No || b.conj != Conj::No {
        return false;
    }
    let long_cols = cs.n <= THIN_MAX_N
        && cs.n * k <= 16
        && a.shape.rs == 1
        && cs.cs == 1
        && cs.rs == cs.n as isize;
    let one_row = cs.m == 1 && cs.cs == 1 && b.shape.cs == 1;
    long_cols || one_row
}

/// The most columns of C for which [`thin_wins`] takes a long, thin GEMM off faer.
pub const THIN_MAX_N: usize = 3;

/// `C = alpha * op(A) * op(B)` (`Accum::Replace`: C is not read) or `C += ...`, by a plain
/// triple loop; for `m*n*k` up to a few hundred, or thin shapes.
///
/// # Safety
/// The three views must lie inside live buffers; `c` must not alias `a` or `b`.
#[inline]
pub unsafe fn tiny_gemm<T: Scalar>(
    c: RawMatMut<T>,
    accum: Accum,
    a: RawMat<T>,
    b: RawMat<T>,
    alpha: T,
) {
    let plain = a.conj == Conj::No && b.conj == Conj::No;
    let add = accum == Accum::Add;
    // rows of C longer than the thin path's specialised widths (1-4) with B's rows
    // contiguous: scaled rows of B, vectorised along the row
    let long_rows = c.shape.n > 4 && c.shape.cs == 1 && b.shape.cs == 1;
    if plain && c.shape.n * a.shape.n <= 16 && !long_rows {
        // SAFETY: the caller vouches for the views.
        unsafe { thin(c, add, a, b, alpha) }
    } else if plain && c.shape.cs == 1 && b.shape.cs == 1 {
        // SAFETY: as above.
        unsafe { simd::rows_of_b(c, add, a, b, alpha) }
    } else {
        // SAFETY: as above.
        unsafe { general(c, add, a, b, alpha) }
    }
}

/// Thin B (n * k <= 16): the whole of B in registers, one pass down the rows of A and C.
///
/// # Safety
/// As [`tiny_gemm`].
unsafe fn thin<T: Scalar>(c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    let (c, a, b) = (c.ptr, a.ptr, b.ptr);
    let (m, n, k) = (cs.m, cs.n, ash.n);
    let mut bv = [T::zero(); 16];
    for p in 0..k {
        for j in 0..n {
            // SAFETY: (p, j) is inside B's view.
            bv[p * n + j] = alpha * unsafe { *b.offset(p as isize * bsh.rs + j as isize * bsh.cs) };
        }
    }
    // A's columns contiguous and C row-major (the MPO steps' usual shapes): specialised on n,
    // so that the pass down the rows vectorises
    if ash.rs == 1 && cs.cs == 1 && cs.rs == n as isize {
        let cols = ThinCols {
            c,
            m,
            k,
            a,
            a_cs: ash.cs,
            add,
        };
        // SAFETY: C is m x n row-major, A's columns are m contiguous elements (caller's
        // guarantee on the views).
        unsafe {
            match n {
                1 => return simd::thin_cols::<T, 1>(&cols, &bv),
                2 => return simd::thin_cols::<T, 2>(&cols, &bv),
                3 => return simd::thin_cols::<T, 3>(&cols, &bv),
                4 => return simd::thin_cols::<T, 4>(&cols, &bv),
                _ => {}
            }
        }
    }
    for i in 0..m as isize {
        for j in 0..n {
            let mut acc = T::zero();
            for p in 0..k {
                // SAFETY: (i, p) is inside A's view.
                acc += unsafe { *a.offset(i * ash.rs + p as isize * ash.cs) } * bv[p * n + j];
            }
            // SAFETY: (i, j) is inside C's view.
            let cij = unsafe { &mut *c.offset(i * cs.rs + j as isize * cs.cs) };
            *cij = if add { *cij + acc } else { acc };
        }
    }
}

/// [`thin`] with contiguous columns of A and a row-major C.
struct ThinCols<T> {
    c: *mut T,
    m: usize,
    k: usize,
    a: *const T,
    a_cs: isize,
    add: bool,
}

impl<T: Scalar> ThinCols<T> {
    /// `C (m x N) = or += A (m x k) * B`, B (already scaled by alpha) in `bv`, row-major: for a
    /// C of [`Self::TILED_FROM`] elements or more and k > 1, in tiles of `TILE / N` rows, one
    /// pass over the tile per column of A, so that the tile stays in L1 between its passes
    /// and the k columns of A stream side by side. With A and C out of cache (the MPO steps at
    /// large m) that ran 1.3-1.8x faster than passes over the whole of C (tiles of 64 to 128
    /// elements best); with a small C in cache, the per-tile overhead made it up to 1.2x
    /// slower, hence whole passes there.
    ///
    /// # Safety
    /// `c` addresses `m * N` elements, each column of A `m` elements, `a_cs` apart.
    #[inline(always)]
    unsafe fn run<const N: usize>(&self, bv: &[T; 16]) {
        // SAFETY: the caller's guarantee.
        let c = unsafe { std::slice::from_raw_parts_mut(self.c, self.m * N) };
        if self.k == 0 {
            if !self.add {
                c.fill(T::zero());
            }
            return;
        }
        if self.k == 1 || self.m * N < Self::TILED_FROM {
            // one column, or a C that fits in L1 whole (and, at the sizes this comes in, its
            // A in L2): passes over the whole of C, no per-tile overhead
            // SAFETY: the caller's guarantee.
            return unsafe { self.tiles::<N>(c, self.m.max(1), bv) };
        }
        // SAFETY: the caller's guarantee.
        unsafe { self.tiles::<N>(c, Self::TILE / N, bv) }
    }

    /// The passes over `c` (this C) in tiles of `rows` rows (at least one).
    ///
    /// # Safety
    /// As [`Self::run`].
    #[inline(always)]
    unsafe fn tiles<const N: usize>(&self, c: &mut [T], rows: usize, bv: &[T; 16]) {
        for (t, tile) in c.chunks_mut(rows * N).enumerate() {
            for p in 0..self.k {
                // SAFETY: rows t * rows.. of column p of A: inside its `m` contiguous elements.
                let col = unsafe {
                    std::slice::from_raw_parts(
                        self.a.offset(p as isize * self.a_cs).add(t * rows),
                        tile.len() / N,
                    )
                };
                let mut b = [T::zero(); N];
                b.copy_from_slice(&bv[p * N..p * N + N]);
                pass(tile, col, b, p == 0 && !self.add);
            }
        }
    }

    /// Elements of C per tile.
    const TILE: usize = 128;

    /// Elements of C from which it is tiled.
    const TILED_FROM: usize = 4096;
}

/// Rows of C (`N` wide) `=` (when `set`) or `+=` `col[i] * b`.
#[inline(always)]
fn pass<T: Scalar, const N: usize>(c: &mut [T], col: &[T], b: [T; N], set: bool) {
    if set {
        for (row, &x) in c.chunks_exact_mut(N).zip(col) {
            for j in 0..N {
                row[j] = x * b[j];
            }
        }
    } else {
        for (row, &x) in c.chunks_exact_mut(N).zip(col) {
            for j in 0..N {
                row[j] += x * b[j];
            }
        }
    }
}

/// Row-major C and B: rows of C accumulate scaled rows of B (vectorisable).
///
/// # Safety
/// As [`tiny_gemm`].
#[inline(always)]
unsafe fn rows_of_b<T: Scalar>(c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    let (c, a, b) = (c.ptr, a.ptr, b.ptr);
    let (m, n, k) = (cs.m, cs.n, ash.n);
    for i in 0..m as isize {
        // SAFETY: rows i of C and p of B are inside their views (caller's guarantee).
        let crow = unsafe { std::slice::from_raw_parts_mut(c.offset(i * cs.rs), n) };
        if k == 0 && !add {
            crow.fill(T::zero());
        }
        // up to four rows of B per pass over the row of C (one store per element, not one
        // per row of B); the first pass overwrites C when C is not read (no zero-fill pass)
        let mut p = 0;
        while p < k {
            let q = (k - p).min(4);
            // SAFETY: (i, p..p + q) are inside A's view.
            let x = |r: usize| alpha * unsafe { *a.offset(i * ash.rs + (p + r) as isize * ash.cs) };
            // SAFETY: rows p..p + q of B (n contiguous elements each, `bsh.cs == 1`) are inside
            // its view.
            let row = |r: usize| unsafe {
                std::slice::from_raw_parts(b.offset((p + r) as isize * bsh.rs), n)
            };
            let set = p == 0 && !add;
            match q {
                1 => rows_pass::<T, 1>(crow, [row(0)], [x(0)], set),
                2 => rows_pass::<T, 2>(crow, [row(0), row(1)], [x(0), x(1)], set),
                3 => rows_pass::<T, 3>(crow, [row(0), row(1), row(2)], [x(0), x(1), x(2)], set),
                _ => rows_pass::<T, 4>(
                    crow,
                    [row(0), row(1), row(2), row(3)],
                    [x(0), x(1), x(2), x(3)],
                    set,
                ),
            }
            p += q;
        }
    }
}

/// One pass of [`rows_of_b`]: `crow = or += sum_r xs[r] * rows[r]`.
#[inline(always)]
fn rows_pass<T: Scalar, const Q: usize>(crow: &mut [T], rows: [&[T]; Q], xs: [T; Q], set: bool) {
    let n = crow.len();
    let rows = rows.map(|r| &r[..n]);
    for j in 0..n {
        let mut acc = xs[0] * rows[0][j];
        for r in 1..Q {
            acc += xs[r] * rows[r][j];
        }
        crow[j] = if set { acc } else { crow[j] + acc };
    }
}

/// The two loops that run along contiguous memory ([`rows_of_b`], [`ThinCols::run`]),
/// compiled for AVX-512 or AVX2 where the CPU has them and chosen at run time, as faer picks
/// its kernels: the crate is built for baseline x86-64 (SSE2, two doubles per instruction).
/// The same operations in the same order (no fused multiply-add): the same results. The
/// other paths stay baseline (vectorised across strided rows they gather, and measured
/// slower so).
mod simd {
    use super::{RawMat, RawMatMut, Scalar, ThinCols};

    /// 2: AVX-512F, 1: AVX2, 0: neither (the standard library caches the detection).
    #[inline]
    fn level() -> u8 {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return 2;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return 1;
            }
        }
        0
    }

    /// [`super::rows_of_b`] on the widest vectors the CPU has.
    ///
    /// # Safety
    /// As [`super::tiny_gemm`].
    #[inline]
    pub(super) unsafe fn rows_of_b<T: Scalar>(
        c: RawMatMut<T>,
        add: bool,
        a: RawMat<T>,
        b: RawMat<T>,
        alpha: T,
    ) {
        // SAFETY: the variant runs only where the CPU has its features; views forwarded.
        unsafe {
            match level() {
                #[cfg(target_arch = "x86_64")]
                2 => x86::rows_of_b_512(c, add, a, b, alpha),
                #[cfg(target_arch = "x86_64")]
                1 => x86::rows_of_b_256(c, add, a, b, alpha),
                _ => super::rows_of_b(c, add, a, b, alpha),
            }
        }
    }

    /// [`ThinCols::run`] on the widest vectors the CPU has.
    ///
    /// # Safety
    /// As [`ThinCols::run`].
    #[inline]
    pub(super) unsafe fn thin_cols<T: Scalar, const N: usize>(t: &ThinCols<T>, bv: &[T; 16]) {
        // SAFETY: as above.
        unsafe {
            match level() {
                #[cfg(target_arch = "x86_64")]
                2 => x86::thin_cols_512::<T, N>(t, bv),
                #[cfg(target_arch = "x86_64")]
                1 => x86::thin_cols_256::<T, N>(t, bv),
                _ => t.run::<N>(bv),
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use super::super::{RawMat, RawMatMut, Scalar, ThinCols};

        /// One loop in both instruction-set variants, `[AVX-512F, AVX2]`: the same body,
        /// compiled for each.
        macro_rules! variants {
            ($(#[$doc:meta])* [$wide:ident, $narrow:ident] [$($gen:tt)*] ($($arg:ident: $ty:ty),*) $body:block) => {
                $(#[$doc])*
                #[target_feature(enable = "avx512f,avx2,fma")]
                pub(super) unsafe fn $wide<$($gen)*>($($arg: $ty),*) $body

                $(#[$doc])*
                #[target_feature(enable = "avx2,fma")]
                pub(super) unsafe fn $narrow<$($gen)*>($($arg: $ty),*) $body
            };
        }

        variants! {
            /// # Safety
            /// As [`super::super::tiny_gemm`], on a CPU with the variant's features.
            [rows_of_b_512, rows_of_b_256] [T: Scalar]
            (c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
                // SAFETY: forwarded.
                unsafe { super::super::rows_of_b(c, add, a, b, alpha) }
            }
        }

        variants! {
            /// # Safety
            /// As [`ThinCols::run`], on a CPU with the variant's features.
            [thin_cols_512, thin_cols_256] [T: Scalar, const N: usize]
            (t: &ThinCols<T>, bv: &[T; 16]) {
                // SAFETY: forwarded.
                unsafe { t.run::<N>(bv) }
            }
        }
    }
}

/// Any strides, either side conjugated: one dot product per element of C.
///
/// # Safety
/// As [`tiny_gemm`].
unsafe fn general<T: Scalar>(c: RawMatMut<T>, add: bool, a: RawMat<T>, b: RawMat<T>, alpha: T) {
    let (cs, ash, bsh) = (c.shape, a.shape, b.shape);
    let (conj_a, conj_b) = (a.conj, b.conj);
    let (c, a, b) = (c.ptr, a.ptr, b.ptr);
    let (m, n, k) = (cs.m, cs.n, ash.n);
    for i in 0..m as isize {
        for j in 0..n as isize {
            let mut acc = T::zero();
            for p in 0..k as isize {
                // SAFETY: indices are inside the views the caller vouches for.
                let (mut x, mut y) = unsafe {
                    (
                        *a.offset(i * ash.rs + p * ash.cs),
                        *b.offset(p * bsh.rs + j * bsh.cs),
                    )
                };
                if conj_a == Conj::Yes {
                    x = x.conj();
                }
                if conj_b == Conj::Yes {
                    y = y.conj();
                }
                acc += x * y;
            }
            // SAFETY: as above, for `c`.
            let cij = unsafe { &mut *c.offset(i * cs.rs + j * cs.cs) };
            *cij = if add { *cij + alpha * acc } else { alpha * acc };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::MatShape;

    /// The thin rule takes the MPO steps' long, thin GEMMs (C of one to three columns,
    /// row-major, A's columns contiguous; or one contiguous row of C from contiguous rows of
    /// B) and leaves faer the rest: four columns, several rows, other strides, conjugation.
    #[test]
    fn thin_rule_takes_long_thin_gemms_only() {
        let col_major = |m: usize, k: usize| MatShape {
            m,
            rs: 1,
            n: k,
            cs: m as isize,
        };
        let p = std::ptr::null::<f64>();
        let q = std::ptr::null_mut::<f64>();
        let wins = |c: MatShape, a: MatShape, b: MatShape, conj: Conj| {
            thin_wins(
                &RawMatMut::new(q, c),
                &RawMat::new(p, a).with_conj(conj),
                &RawMat::new(p, b),
            )
        };
        let rm = MatShape::row_major;
        // long columns: n = 1..3 with n * k <= 16
        assert!(wins(rm(21025, 3), col_major(21025, 4), rm(4, 3), Conj::No));
        assert!(wins(rm(3364, 2), col_major(3364, 8), rm(8, 2), Conj::No));
        assert!(wins(rm(50, 1), col_major(50, 16), rm(16, 1), Conj::No));
        // one row of C
        assert!(wins(rm(1, 21025), rm(1, 3), rm(3, 21025), Conj::No));
        // four columns, n * k > 16, A row-major, C column-major, several rows, conjugated
        assert!(!wins(rm(3364, 4), col_major(3364, 4), rm(4, 4), Conj::No));
        assert!(!wins(rm(3364, 3), col_major(3364, 6), rm(6, 3), Conj::No));
        assert!(!wins(rm(21025, 3), rm(21025, 4), rm(4, 3), Conj::No));
        assert!(!wins(
            col_major(21025, 3),
            col_major(21025, 4),
            rm(4, 3),
            Conj::No
        ));
        assert!(!wins(rm(3, 21025), rm(3, 4), rm(4, 21025), Conj::No));
        assert!(!wins(
            rm(21025, 3),
            col_major(21025, 4),
            rm(4, 3),
            Conj::Yes
        ));
        assert!(!wins(rm(1, 21025), rm(1, 3), col_major(3, 21025), Conj::No));
    }

    /// Every path (thin B, with A row-major or column-major, whole or tiled, row-major rows of
    /// B, general strides) against a plain triple loop, overwriting a C full of garbage (NaN) and adding
    /// into one, including k = 0.
    #[test]
    fn tiny_paths_match_a_triple_loop() {
        let shapes = [
            (3, 4, 2),
            (5, 9, 3),
            (2, 40, 1),
            (4, 17, 0),
            (1, 1, 1),
            (6, 2, 8),
            (37, 1, 3),
            (29, 2, 1),
            (29, 2, 2),
            (11, 3, 4),
            (13, 4, 4),
            (9, 4, 0),
            (7, 1, 16),
            // rows of B in passes of up to four: one, two and three passes, with remainders
            (3, 20, 5),
            (2, 33, 9),
            (4, 25, 4),
            (1, 145, 3),
            (2, 19, 7),
            // A's columns into a C tiled by rows (m * n >= TILED_FROM, k >= 2), the last tile
            // short, for each width; and one column of A, not tiled
            (4100, 1, 3),
            (2100, 2, 3),
            (1400, 3, 2),
            (1030, 4, 4),
            (4200, 3, 1),
            // B thin but C's rows longer than four: scaled rows of B
            (2, 8, 1),
            (3, 5, 3),
            (8, 16, 1),
        ];
        for &(m, n, k) in &shapes {
            let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..k * n).map(|i| (i as f64 * 0.11).cos()).collect();
            let c0: Vec<f64> = (0..m * n).map(|i| i as f64 * 0.5).collect();
            let alpha = 1.5;
            // A column-major as well (thin's specialised columns)
            let mut a_cols = vec![0.0; m * k];
            for i in 0..m {
                for p in 0..k {
                    a_cols[p * m + i] = a[i * k + p];
                }
            }
            let a_views = [
                (a.as_ptr(), MatShape::row_major(m, k)),
                (
                    a_cols.as_ptr(),
                    MatShape {
                        m,
                        rs: 1,
                        n: k,
                        cs: m as isize,
                    },
                ),
            ];
            // B row-major (rows_of_b / thin) and B column-major (general)
            for (b_col_major, a_view) in [false, true]
                .into_iter()
                .flat_map(|x| a_views.iter().map(move |v| (x, *v)))
            {
                let (bdata, bsh) = if b_col_major {
                    let mut t = vec![0.0; k * n];
                    for p in 0..k {
                        for j in 0..n {
                            t[j * k + p] = b[p * n + j];
                        }
                    }
                    (
                        t,
                        MatShape {
                            m: k,
                            rs: 1,
                            n,
                            cs: k as isize,
                        },
                    )
                } else {
                    (b.clone(), MatShape::row_major(k, n))
                };
                for add in [false, true] {
                    let mut c = if add {
                        c0.clone()
                    } else {
                        vec![f64::NAN; m * n]
                    };
                    // SAFETY: the views cover exactly the vectors above.
                    unsafe {
                        tiny_gemm(
                            RawMatMut::new(c.as_mut_ptr(), MatShape::row_major(m, n)),
                            if add { Accum::Add } else { Accum::Replace },
                            RawMat::new(a_view.0, a_view.1),
                            RawMat::new(bdata.as_ptr(), bsh),
                            alpha,
                        )
                    };
                    for i in 0..m {
                        for j in 0..n {
                            let dot: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                            let want = alpha * dot + if add { c0[i * n + j] } else { 0.0 };
                            let got = c[i * n + j];
                            assert!(
                                (got - want).abs() < 1e-12,
                                "{m}x{n}x{k} add {add} b col-major {b_col_major} a {:?}: ({i},{j}) {got} vs {want}",
                                a_view.1
                            );
                        }
                    }
                }
            }
        }
    }
}
